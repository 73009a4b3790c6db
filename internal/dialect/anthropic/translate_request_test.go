package anthropic

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/switchyard-gw/switchyard/internal/dialect"
	"github.com/switchyard-gw/switchyard/internal/failure"
)

func ptr[T any](v T) *T { return &v }

// TestDecodeRequest covers the Anthropic-side rows of wire.md §5.2 (decode of an Anthropic
// caller's request).
func TestDecodeRequest(t *testing.T) {
	const head = `{"model":"m","max_tokens":100,`
	cases := []struct {
		name string
		body string
		want func(r *dialect.Request) bool
	}{
		{"system string", head + `"system":"be terse","messages":[]}`,
			func(r *dialect.Request) bool { return slices.Equal(r.System, []string{"be terse"}) }},
		{"system blocks, cache_control dropped", head + `"system":[{"type":"text","text":"a","cache_control":{"type":"ephemeral"}},{"type":"text","text":"b"}],"messages":[]}`,
			func(r *dialect.Request) bool {
				return slices.Equal(r.System, []string{"a", "b"}) && slices.Contains(r.Dropped, "cache_control")
			}},
		{"system message inside messages hoisted in order", head + `"system":"s1","messages":[{"role":"user","content":"hi"},{"role":"system","content":"s2"},{"role":"assistant","content":"yo"}]}`,
			func(r *dialect.Request) bool {
				return slices.Equal(r.System, []string{"s1", "s2"}) && len(r.Messages) == 2 && r.Messages[1].Role == dialect.RoleAssistant
			}},
		{"string content", head + `"messages":[{"role":"user","content":"hello"}]}`,
			func(r *dialect.Request) bool {
				return reflect.DeepEqual(r.Messages[0].Parts, []dialect.Part{{Type: dialect.PartText, Text: "hello"}})
			}},
		{"images base64 and url", head + `"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBO"}},{"type":"image","source":{"type":"url","url":"https://x/y.jpg"}}]}]}`,
			func(r *dialect.Request) bool {
				p := r.Messages[0].Parts
				return p[0].Type == dialect.PartImage && p[0].MediaType == "image/png" && p[0].Data == "iVBO" && p[1].ImageURL == "https://x/y.jpg"
			}},
		{"document pdf", head + `"messages":[{"role":"user","content":[{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBE"}}]}]}`,
			func(r *dialect.Request) bool {
				p := r.Messages[0].Parts[0]
				return p.Type == dialect.PartDocument && p.MediaType == "application/pdf" && p.Data == "JVBE"
			}},
		{"tool_use and tool_result with is_error and blocks", head + `"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"f","input":{"a":1}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","is_error":true,"content":[{"type":"text","text":"boom"}]}]}]}`,
			func(r *dialect.Request) bool {
				c, res := r.Messages[0].Parts[0], r.Messages[1].Parts[0]
				return c.Type == dialect.PartToolCall && c.ToolCallID == "toolu_1" && c.ToolName == "f" && c.Arguments == `{"a":1}` &&
					res.Type == dialect.PartToolResult && res.ToolCallID == "toolu_1" && res.IsError && res.Content[0].Text == "boom"
			}},
		{"thinking with signature, redacted", head + `"messages":[{"role":"assistant","content":[{"type":"thinking","thinking":"hmm","signature":"sig"},{"type":"redacted_thinking","data":"opaque"}]}]}`,
			func(r *dialect.Request) bool {
				p := r.Messages[0].Parts
				return p[0].Type == dialect.PartThinking && p[0].Text == "hmm" && p[0].Signature == "sig" && p[1].Data == "opaque"
			}},
		{"sampling and stops", head + `"temperature":0.5,"top_p":0.9,"top_k":40,"stop_sequences":["X","Y"],"stream":true,"messages":[]}`,
			func(r *dialect.Request) bool {
				return *r.Temperature == 0.5 && *r.TopP == 0.9 && *r.TopK == 40 && slices.Equal(r.Stop, []string{"X", "Y"}) && r.Stream && r.MaxTokens == 100
			}},
		{"tools client and server", head + `"tools":[{"name":"f","description":"d","input_schema":{"type":"object"},"strict":true},{"type":"web_search_20250305","name":"web_search"}],"messages":[]}`,
			func(r *dialect.Request) bool {
				return r.Tools[0].Name == "f" && string(r.Tools[0].Parameters) == `{"type":"object"}` && *r.Tools[0].Strict &&
					r.Tools[0].Type == "" && r.Tools[1].Type == "web_search_20250305"
			}},
		{"tool_choice any", head + `"tool_choice":{"type":"any","disable_parallel_tool_use":true},"messages":[]}`,
			func(r *dialect.Request) bool {
				return r.ToolChoice == dialect.ToolChoice{Mode: "required", DisableParallel: true}
			}},
		{"tool_choice tool", head + `"tool_choice":{"type":"tool","name":"f"},"messages":[]}`,
			func(r *dialect.Request) bool { return r.ToolChoice == dialect.ToolChoice{Mode: "tool", Name: "f"} }},
		{"tool_choice none", head + `"tool_choice":{"type":"none"},"messages":[]}`,
			func(r *dialect.Request) bool { return r.ToolChoice.Mode == "none" }},
		{"metadata, thinking, output_config", head + `"metadata":{"user_id":"u1"},"thinking":{"type":"enabled","budget_tokens":2048},"output_config":{"effort":"high","format":{"type":"json_schema","schema":{"type":"object"}}},"messages":[]}`,
			func(r *dialect.Request) bool {
				return r.User == "u1" && r.ThinkingBudget == 2048 && r.ReasoningEffort == "high" &&
					string(r.ResponseFormat.Schema) == `{"type":"object"}` && r.ResponseFormat.Name != "" && r.ResponseFormat.Strict
			}},
		{"adaptive thinking", head + `"thinking":{"type":"adaptive"},"messages":[]}`,
			func(r *dialect.Request) bool { return r.ThinkingAdaptive && r.ThinkingBudget == 0 }},
		{"anthropic-only params dropped", head + `"service_tier":"auto","container":"c","speed":"fast","inference_geo":"us","messages":[]}`,
			func(r *dialect.Request) bool {
				return slices.Equal(r.Dropped, []string{"service_tier", "container", "speed", "inference_geo"})
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := DecodeRequest([]byte(c.body))
			if err != nil {
				t.Fatal(err)
			}
			if !c.want(r) {
				t.Fatalf("unexpected decode: %+v", r)
			}
		})
	}
}

func TestDecodeRequestErrors(t *testing.T) {
	cases := []struct{ name, body, param string }{
		{"not json", `{`, ""},
		{"not object", `[]`, ""},
		{"no model", `{"max_tokens":1,"messages":[]}`, "model"},
		{"no messages", `{"model":"m","max_tokens":1}`, "messages"},
		{"no max_tokens", `{"model":"m","messages":[]}`, "max_tokens"},
		{"fractional max_tokens", `{"model":"m","max_tokens":1.5,"messages":[]}`, "max_tokens"},
		{"bad role", `{"model":"m","max_tokens":1,"messages":[{"role":"tool","content":"x"}]}`, "messages.0.role"},
		{"server block", `{"model":"m","max_tokens":1,"messages":[{"role":"assistant","content":[{"type":"server_tool_use","id":"srvtoolu_1"}]}]}`, "messages.0.content.0.type"},
		{"bad stop", `{"model":"m","max_tokens":1,"stop_sequences":[1],"messages":[]}`, "stop_sequences"},
		{"bad tool_choice", `{"model":"m","max_tokens":1,"tool_choice":{"type":"x"},"messages":[]}`, "tool_choice.type"},
		{"mcp", `{"model":"m","max_tokens":1,"mcp_servers":[],"messages":[]}`, "mcp_servers"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := DecodeRequest([]byte(c.body))
			var fe *failure.Error
			if !errors.As(err, &fe) || fe.Class != failure.InvalidRequest || fe.Param != c.param {
				t.Fatalf("err %v, want invalid_request param %q", err, c.param)
			}
			if fe.Class.FailsOver() {
				t.Fatal("a refusal to translate must not fail over")
			}
		})
	}
}

func encode(t *testing.T, r *dialect.Request, maxOut int64) gjson.Result {
	t.Helper()
	b, err := AppendRequest(nil, r, "claude-up", maxOut)
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(b) {
		t.Fatalf("invalid JSON: %s", b)
	}
	return gjson.ParseBytes(b)
}

func text(s string) dialect.Part { return dialect.Part{Type: dialect.PartText, Text: s} }

// TestAppendRequest covers the Anthropic-side rows of wire.md §5.1 (encode for an Anthropic
// upstream from an OpenAI caller's canonical request).
func TestAppendRequest(t *testing.T) {
	user := func(p ...dialect.Part) dialect.Message { return dialect.Message{Role: dialect.RoleUser, Parts: p} }
	asst := func(p ...dialect.Part) dialect.Message { return dialect.Message{Role: dialect.RoleAssistant, Parts: p} }
	cases := []struct {
		name   string
		req    dialect.Request
		maxOut int64
		checks map[string]string // gjson path -> raw JSON expected
	}{
		{"system joined, model", dialect.Request{System: []string{"a", "b"}, Messages: []dialect.Message{user(text("hi"))}},
			0, map[string]string{"system": `"a\nb"`, "model": `"claude-up"`, "messages.#": "1"}},
		{"default max_tokens from catalog", dialect.Request{Messages: []dialect.Message{user(text("hi"))}}, 8192, map[string]string{"max_tokens": "8192"}},
		{"default max_tokens fallback", dialect.Request{}, 0, map[string]string{"max_tokens": "4096"}},
		{"explicit max_tokens", dialect.Request{MaxTokens: 77}, 8192, map[string]string{"max_tokens": "77"}},
		{"default above thinking budget", dialect.Request{ThinkingBudget: 10000}, 8192,
			map[string]string{"max_tokens": "14096", "thinking": `{"type":"enabled","budget_tokens":10000}`}},
		{"temperature clamped, stops", dialect.Request{Temperature: ptr(1.7), TopP: ptr(0.5), Stop: []string{"x", "", "y"}}, 0,
			map[string]string{"temperature": "1", "top_p": "0.5", "stop_sequences": `["x","y"]`}},
		{"merge same role, empty text skipped, results first",
			dialect.Request{Messages: []dialect.Message{
				user(text("q")),
				asst(text(""), dialect.Part{Type: dialect.PartToolCall, ToolCallID: "call_1", ToolName: "f", Arguments: `{"a":1}`},
					dialect.Part{Type: dialect.PartToolCall, ToolCallID: "call_2", ToolName: "g", Arguments: ``}),
				user(dialect.Part{Type: dialect.PartToolResult, ToolCallID: "call_1", Content: []dialect.Part{text("r1")}}),
				user(text("more"), dialect.Part{Type: dialect.PartToolResult, ToolCallID: "call_2", IsError: true, Content: []dialect.Part{text("r2")}}),
			}}, 0,
			map[string]string{"messages.#": "3", "messages.1.content": `[{"type":"tool_use","id":"call_1","name":"f","input":{"a":1}},{"type":"tool_use","id":"call_2","name":"g","input":{}}]`,
				"messages.2.content": `[{"type":"tool_result","tool_use_id":"call_1","content":[{"type":"text","text":"r1"}]},{"type":"tool_result","tool_use_id":"call_2","content":[{"type":"text","text":"r2"}],"is_error":true},{"type":"text","text":"more"}]`}},
		{"tool id rewritten alike", dialect.Request{Messages: []dialect.Message{
			asst(dialect.Part{Type: dialect.PartToolCall, ToolCallID: "call:1/x", ToolName: "f", Arguments: `{}`}),
			user(dialect.Part{Type: dialect.PartToolResult, ToolCallID: "call:1/x", Content: []dialect.Part{text("ok")}}),
		}}, 0, map[string]string{"messages.0.content.0.id": `"` + toolIDString("call:1/x") + `"`, "messages.1.content.0.tool_use_id": `"` + toolIDString("call:1/x") + `"`}},
		{"images data and http", dialect.Request{Messages: []dialect.Message{user(
			dialect.Part{Type: dialect.PartImage, ImageURL: "data:image/jpg;base64,AAAA"},
			dialect.Part{Type: dialect.PartImage, ImageURL: "https://h/i.png"},
			dialect.Part{Type: dialect.PartImage, MediaType: "image/webp", Data: "BBBB"},
			dialect.Part{Type: dialect.PartDocument, ImageURL: "data:application/pdf;base64,JVBE"},
		)}}, 0, map[string]string{
			"messages.0.content.0": `{"type":"image","source":{"type":"base64","media_type":"image/jpeg","data":"AAAA"}}`,
			"messages.0.content.1": `{"type":"image","source":{"type":"url","url":"https://h/i.png"}}`,
			"messages.0.content.2": `{"type":"image","source":{"type":"base64","media_type":"image/webp","data":"BBBB"}}`,
			"messages.0.content.3": `{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBE"}}`}},
		{"thinking kept with signature, dropped without", dialect.Request{Messages: []dialect.Message{asst(
			dialect.Part{Type: dialect.PartThinking, Text: "t", Signature: "s"}, dialect.Part{Type: dialect.PartThinking, Text: "u"}, text("x"))}}, 0,
			map[string]string{"messages.0.content": `[{"type":"thinking","thinking":"t","signature":"s"},{"type":"text","text":"x"}]`}},
		{"refusal history as text", dialect.Request{Messages: []dialect.Message{asst(dialect.Part{Type: dialect.PartRefusal, Text: "no"})}}, 0,
			map[string]string{"messages.0.content": `[{"type":"text","text":"no"}]`}},
		{"tools and choice required", dialect.Request{Tools: []dialect.Tool{{Name: "f", Description: "d"}}, ToolChoice: dialect.ToolChoice{Mode: "required"}}, 0,
			map[string]string{"tools": `[{"name":"f","description":"d","input_schema":{"type":"object","properties":{}}}]`, "tool_choice": `{"type":"any"}`}},
		{"choice function + disable parallel", dialect.Request{Tools: []dialect.Tool{{Name: "f", Parameters: json.RawMessage(`{"type":"object"}`), Strict: ptr(true)}}, ToolChoice: dialect.ToolChoice{Mode: "tool", Name: "f", DisableParallel: true}}, 0,
			map[string]string{"tools.0.strict": "true", "tools.0.input_schema": `{"type":"object"}`, "tool_choice": `{"type":"tool","name":"f","disable_parallel_tool_use":true}`}},
		{"disable parallel alone -> auto", dialect.Request{Tools: []dialect.Tool{{Name: "f"}}, ToolChoice: dialect.ToolChoice{DisableParallel: true}}, 0,
			map[string]string{"tool_choice": `{"type":"auto","disable_parallel_tool_use":true}`}},
		{"none", dialect.Request{Tools: []dialect.Tool{{Name: "f"}}, ToolChoice: dialect.ToolChoice{Mode: "none"}}, 0, map[string]string{"tool_choice": `{"type":"none"}`}},
		{"format, effort, user, stream, cache key not sent", dialect.Request{Stream: true, User: "u", PromptCacheKey: "k", ReasoningEffort: "minimal",
			ResponseFormat: &dialect.ResponseFormat{Name: "n", Schema: json.RawMessage(`{"type":"object"}`)}}, 0,
			map[string]string{"stream": "true", "metadata": `{"user_id":"u"}`, "output_config": `{"effort":"low","format":{"type":"json_schema","schema":{"type":"object"}}}`, "prompt_cache_key": ""}},
		{"effort none omitted", dialect.Request{ReasoningEffort: "none"}, 0, map[string]string{"output_config": ""}},
		{"adaptive", dialect.Request{ThinkingAdaptive: true}, 0, map[string]string{"thinking": `{"type":"adaptive"}`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := encode(t, &c.req, c.maxOut)
			for path, want := range c.checks {
				if g := got.Get(path).Raw; g != want {
					t.Errorf("%s = %s, want %s\nbody %s", path, g, want, got.Raw)
				}
			}
		})
	}
}

func TestAppendRequestDropsJSONMode(t *testing.T) {
	r := &dialect.Request{ResponseFormat: &dialect.ResponseFormat{}}
	for range 2 { // one entry however many attempts encode it
		got := encode(t, r, 0)
		if got.Get("output_config").Exists() {
			t.Fatal("json mode must not be sent")
		}
	}
	if !slices.Equal(r.Dropped, []string{"response_format"}) {
		t.Fatalf("dropped %v", r.Dropped)
	}
}

func TestAppendRequestRefuses(t *testing.T) {
	call := func(args string) dialect.Message {
		return dialect.Message{Role: dialect.RoleAssistant, Parts: []dialect.Part{{Type: dialect.PartToolCall, ToolCallID: "c", ToolName: "f", Arguments: args}}}
	}
	img := func(p dialect.Part) dialect.Message {
		return dialect.Message{Role: dialect.RoleUser, Parts: []dialect.Part{p}}
	}
	cases := []struct {
		name  string
		req   dialect.Request
		param string
	}{
		{"invalid arguments", dialect.Request{Messages: []dialect.Message{call(`{"a":`)}}, "messages.0.content.0"},
		{"array arguments", dialect.Request{Messages: []dialect.Message{call(`[1]`)}}, "messages.0.content.0"},
		{"arguments nested too deep, named where the caller sent them", dialect.Request{Messages: []dialect.Message{{Role: dialect.RoleAssistant,
			Parts: []dialect.Part{{Type: dialect.PartToolCall, ToolCallID: "c", ToolName: "f", ArgumentsParam: "messages[3].tool_calls[0].function.arguments",
				Arguments: strings.Repeat(`{"a":`, 129) + "1" + strings.Repeat("}", 129)}}}}}, "messages[3].tool_calls[0].function.arguments"},
		{"bmp image", dialect.Request{Messages: []dialect.Message{img(dialect.Part{Type: dialect.PartImage, ImageURL: "data:image/bmp;base64,AA"})}}, "messages.0.content.0"},
		{"ftp image", dialect.Request{Messages: []dialect.Message{img(dialect.Part{Type: dialect.PartImage, ImageURL: "ftp://x"})}}, "messages.0.content.0"},
		{"non-pdf document", dialect.Request{Messages: []dialect.Message{img(dialect.Part{Type: dialect.PartDocument, MediaType: "text/csv", Data: "AA"})}}, "messages.0.content.0"},
		{"custom tool", dialect.Request{Tools: []dialect.Tool{{Name: "x", Type: "custom"}}}, "tools.0.type"},
		{"server tool", dialect.Request{Tools: []dialect.Tool{{Name: "x", Type: "web_search_20250305"}}}, "tools.0.type"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dst := []byte("prefix")
			out, err := AppendRequest(dst, &c.req, "m", 0)
			var fe *failure.Error
			if !errors.As(err, &fe) || fe.Class != failure.InvalidRequest || fe.Param != c.param {
				t.Fatalf("err %v, want invalid_request %q", err, c.param)
			}
			if string(out) != "prefix" {
				t.Fatalf("dst changed on error: %q", out)
			}
		})
	}
}

func TestToolIDRewrite(t *testing.T) {
	for _, id := range []string{"call_abc-1", "toolu_01"} {
		if toolIDString(id) != id {
			t.Fatalf("valid id %q rewritten", id)
		}
	}
	a, b := toolIDString("call.1"), toolIDString("call:1")
	if a == b || !isToolID(a) || !isToolID(b) || a != toolIDString("call.1") || !isToolID(toolIDString("")) {
		t.Fatalf("rewrite not deterministic/distinct/valid: %q %q", a, b)
	}
}

// TestRequestRoundTrip: decode(append(decode(x))) equals decode(x) for requests whose content
// Anthropic can carry as is.
func TestRequestRoundTrip(t *testing.T) {
	bodies := []string{
		`{"model":"m","max_tokens":100,"system":"s","messages":[{"role":"user","content":[{"type":"text","text":"a\"b\n<c>"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA"}}]},{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"sig"},{"type":"tool_use","id":"toolu_1","name":"f","input":{"x":[1,2]}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"ok"}],"is_error":true},{"type":"text","text":"next"}]}],"temperature":0.2,"top_k":5,"stop_sequences":["END"],"tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"any","disable_parallel_tool_use":true},"metadata":{"user_id":"u"},"thinking":{"type":"enabled","budget_tokens":1024},"output_config":{"effort":"high"},"stream":true}`,
		`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"x"}]}`,
	}
	for _, body := range bodies {
		r1, err := DecodeRequest([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		b, err := AppendRequest(nil, r1, "m", 0)
		if err != nil {
			t.Fatal(err)
		}
		r2, err := DecodeRequest(b)
		if err != nil {
			t.Fatalf("%v: %s", err, b)
		}
		if !reflect.DeepEqual(r1, r2) {
			t.Fatalf("round trip differs:\n%+v\n%+v\n%s", r1, r2, b)
		}
	}
}

func FuzzDecodeRequest(f *testing.F) {
	f.Add([]byte(`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"x"}]}`))
	f.Add([]byte(`{"model":"m","max_tokens":1,"system":[{"type":"text","text":"s"}],"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"a.b","name":"f","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"a.b","content":"r"},{"type":"image","source":{"type":"url","url":"http://x"}}]}],"tools":[{"name":"f"}],"tool_choice":{"type":"tool","name":"f"}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := DecodeRequest(body)
		if err != nil {
			return
		}
		b, err := AppendRequest(nil, r, "m", 0)
		if err != nil {
			return
		}
		if !json.Valid(b) {
			t.Fatalf("invalid JSON from %q: %s", body, b)
		}
		if _, err := DecodeRequest(b); err != nil {
			t.Fatalf("re-encoded request does not decode: %v\n%s", err, b)
		}
	})
}
