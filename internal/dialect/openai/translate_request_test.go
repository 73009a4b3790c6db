package openai_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/switchyard-gw/switchyard/internal/dialect"
	"github.com/switchyard-gw/switchyard/internal/dialect/openai"
	"github.com/switchyard-gw/switchyard/internal/failure"
)

func f64(f float64) *float64 { return &f }
func i64(i int64) *int64     { return &i }
func bptr(b bool) *bool      { return &b }

func text(s string) dialect.Part { return dialect.Part{Type: dialect.PartText, Text: s} }
func user(p ...dialect.Part) dialect.Message {
	return dialect.Message{Role: dialect.RoleUser, Parts: p}
}
func asst(p ...dialect.Part) dialect.Message {
	return dialect.Message{Role: dialect.RoleAssistant, Parts: p}
}
func call(id, name, args string) dialect.Part {
	return dialect.Part{Type: dialect.PartToolCall, ToolCallID: id, ToolName: name, Arguments: args}
}
func result(id string, content ...dialect.Part) dialect.Part {
	return dialect.Part{Type: dialect.PartToolResult, ToolCallID: id, Content: content}
}

const hi = `{"role":"user","content":"hi"}`

// TestDecodeRequest covers every OpenAI-side row of wire.md §5.1 (the decode of an OpenAI caller's
// request into canonical form).
func TestDecodeRequest(t *testing.T) {
	for _, c := range []struct {
		name, body string
		want       dialect.Request
	}{
		{"system and developer anywhere are hoisted in order",
			`{"model":"m","messages":[{"role":"system","content":"A"},` + hi + `,{"role":"developer","content":[{"type":"text","text":"B"},{"type":"text","text":"C"}]},{"role":"system","content":""}]}`,
			dialect.Request{Model: "m", System: []string{"A", "B\nC"}, Messages: []dialect.Message{user(text("hi"))}}},
		{"user parts: text, images by data URL and http URL, detail dropped",
			`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"what"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBOR","detail":"high"}},{"type":"image_url","image_url":{"url":"https://x/y.jpg"}}]}]}`,
			dialect.Request{Model: "m", Dropped: []string{"image_url.detail"}, Messages: []dialect.Message{user(text("what"),
				dialect.Part{Type: dialect.PartImage, MediaType: "image/png", Data: "iVBOR"},
				dialect.Part{Type: dialect.PartImage, ImageURL: "https://x/y.jpg"})}}},
		{"file part with PDF file_data is a document",
			`{"model":"m","messages":[{"role":"user","content":[{"type":"file","file":{"filename":"a.pdf","file_data":"data:application/pdf;base64,JVBER"}}]}]}`,
			dialect.Request{Model: "m", Messages: []dialect.Message{user(dialect.Part{Type: dialect.PartDocument, MediaType: "application/pdf", Data: "JVBER"})}}},
		{"assistant content, refusal and parallel tool calls; consecutive tool messages form one user turn",
			`{"model":"m","messages":[` + hi + `,{"role":"assistant","content":"let me see","refusal":"no","tool_calls":[{"id":"call_1","type":"function","function":{"name":"a","arguments":"{\"x\":1}"}},{"id":"call_2","type":"function","function":{"name":"b","arguments":"{}"}}]},` +
				`{"role":"tool","tool_call_id":"call_1","content":"r1"},{"role":"tool","tool_call_id":"call_2","content":[{"type":"text","text":"r2"}]},{"role":"user","content":"thanks"}]}`,
			dialect.Request{Model: "m", Messages: []dialect.Message{user(text("hi")),
				asst(text("let me see"), dialect.Part{Type: dialect.PartRefusal, Text: "no"}, call("call_1", "a", `{"x":1}`), call("call_2", "b", `{}`)),
				user(result("call_1", text("r1")), result("call_2", text("r2"))), user(text("thanks"))}}},
		{"assistant content parts and null content",
			`{"model":"m","messages":[{"role":"assistant","content":[{"type":"text","text":"t"},{"type":"refusal","refusal":"r"}]},{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":""}}]}]}`,
			dialect.Request{Model: "m", Messages: []dialect.Message{asst(text("t"), dialect.Part{Type: dialect.PartRefusal, Text: "r"}), asst(call("c", "f", "{}"))}}},
		{"legacy functions, function_call and function messages map to tools",
			`{"model":"m","functions":[{"name":"f","parameters":{"type":"object"}}],"function_call":{"name":"f"},"messages":[` + hi + `,{"role":"assistant","content":null,"function_call":{"name":"f","arguments":"{}"}},{"role":"function","name":"f","content":"out"}]}`,
			dialect.Request{Model: "m", Tools: []dialect.Tool{{Name: "f", Parameters: json.RawMessage(`{"type":"object"}`)}}, ToolChoice: dialect.ToolChoice{Mode: "tool", Name: "f"},
				Dropped:  []string{"messages.name"},
				Messages: []dialect.Message{user(text("hi")), asst(call("call_legacy_1", "f", "{}")), user(result("call_legacy_1", text("out")))}}},
		{"max_completion_tokens wins over max_tokens",
			`{"model":"m","messages":[` + hi + `],"max_tokens":10,"max_completion_tokens":20}`,
			dialect.Request{Model: "m", MaxTokens: 20, Messages: []dialect.Message{user(text("hi"))}}},
		{"max_tokens alone",
			`{"model":"m","messages":[` + hi + `],"max_tokens":10}`,
			dialect.Request{Model: "m", MaxTokens: 10, Messages: []dialect.Message{user(text("hi"))}}},
		{"stop string, sampling, top_k extension",
			`{"model":"m","messages":[` + hi + `],"stop":"END","temperature":1.5,"top_p":0.9,"top_k":40}`,
			dialect.Request{Model: "m", Stop: []string{"END"}, Temperature: f64(1.5), TopP: f64(0.9), TopK: i64(40), Messages: []dialect.Message{user(text("hi"))}}},
		{"stop array",
			`{"model":"m","messages":[` + hi + `],"stop":["a","b"]}`,
			dialect.Request{Model: "m", Stop: []string{"a", "b"}, Messages: []dialect.Message{user(text("hi"))}}},
		{"tools, tool_choice object and parallel_tool_calls false",
			`{"model":"m","messages":[` + hi + `],"tools":[{"type":"function","function":{"name":"w","description":"d","parameters":{"type":"object","properties":{}},"strict":true}}],"tool_choice":{"type":"function","function":{"name":"w"}},"parallel_tool_calls":false}`,
			dialect.Request{Model: "m", Messages: []dialect.Message{user(text("hi"))},
				Tools:      []dialect.Tool{{Name: "w", Description: "d", Parameters: json.RawMessage(`{"type":"object","properties":{}}`), Strict: bptr(true)}},
				ToolChoice: dialect.ToolChoice{Mode: "tool", Name: "w", DisableParallel: true}}},
		{"tool_choice required",
			`{"model":"m","messages":[` + hi + `],"tool_choice":"required","parallel_tool_calls":true}`,
			dialect.Request{Model: "m", Messages: []dialect.Message{user(text("hi"))}, ToolChoice: dialect.ToolChoice{Mode: "required"}}},
		{"response_format json_schema",
			`{"model":"m","messages":[` + hi + `],"response_format":{"type":"json_schema","json_schema":{"name":"out","schema":{"type":"object"},"strict":true}}}`,
			dialect.Request{Model: "m", Messages: []dialect.Message{user(text("hi"))}, ResponseFormat: &dialect.ResponseFormat{Name: "out", Schema: json.RawMessage(`{"type":"object"}`), Strict: true}}},
		{"response_format json_object is dropped and reported",
			`{"model":"m","messages":[` + hi + `],"response_format":{"type":"json_object"}}`,
			dialect.Request{Model: "m", Messages: []dialect.Message{user(text("hi"))}, Dropped: []string{"response_format"}}},
		{"reasoning_effort, safety_identifier over user, prompt_cache_key, stream with usage",
			`{"model":"m","messages":[` + hi + `],"reasoning_effort":"high","user":"u","safety_identifier":"s","prompt_cache_key":"k","stream":true,"stream_options":{"include_usage":true}}`,
			dialect.Request{Model: "m", Messages: []dialect.Message{user(text("hi"))}, ReasoningEffort: "high", User: "s", PromptCacheKey: "k", Stream: true, IncludeUsage: true}},
		{"user alone",
			`{"model":"m","messages":[` + hi + `],"user":"u","n":1}`,
			dialect.Request{Model: "m", Messages: []dialect.Message{user(text("hi"))}, User: "u"}},
		{"untranslatable parameters are reported only when set",
			`{"model":"m","messages":[` + hi + `],"logprobs":true,"seed":7,"presence_penalty":0,"frequency_penalty":0.5,"store":false,"metadata":{},"logit_bias":{"1":2},"service_tier":null}`,
			dialect.Request{Model: "m", Messages: []dialect.Message{user(text("hi"))}, Dropped: []string{"logprobs", "seed", "frequency_penalty", "logit_bias"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := openai.DecodeRequest([]byte(c.body))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(withoutArgumentsParam(*got), c.want) {
				t.Fatalf("got  %+v\nwant %+v", *got, c.want)
			}
		})
	}
}

// TestDecodeRequestRefusals: what cannot be translated without changing the meaning is a typed
// 400 that never fails over, naming the field (wire.md §5.7).
func TestDecodeRequestRefusals(t *testing.T) {
	for _, c := range []struct{ name, body, param string }{
		{"not json", `{"model":`, ""},
		{"not an object", `[1]`, ""},
		{"no messages", `{"model":"m"}`, "messages"},
		{"n>1", `{"model":"m","messages":[` + hi + `],"n":2}`, "n"},
		{"input_audio", `{"model":"m","messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"AA","format":"wav"}}]}]}`, "messages[0].content[0].type"},
		{"file_id", `{"model":"m","messages":[{"role":"user","content":[{"type":"file","file":{"file_id":"file-1"}}]}]}`, "messages[0].content[0].file.file_id"},
		{"non-PDF file", `{"model":"m","messages":[{"role":"user","content":[{"type":"file","file":{"file_data":"data:text/plain;base64,AA"}}]}]}`, "messages[0].content[0].file.file_data"},
		{"custom tool", `{"model":"m","messages":[` + hi + `],"tools":[{"type":"custom","custom":{"name":"x"}}]}`, "tools[0].type"},
		{"custom tool call", `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"custom","custom":{"name":"x","input":"y"}}]}]}`, "messages[0].tool_calls[0].type"},
		{"allowed_tools", `{"model":"m","messages":[` + hi + `],"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[]}}}`, "tool_choice.type"},
		{"bad tool_choice", `{"model":"m","messages":[` + hi + `],"tool_choice":"sometimes"}`, "tool_choice"},
		{"temperature type", `{"model":"m","messages":[` + hi + `],"temperature":"hot"}`, "temperature"},
		{"max_tokens negative", `{"model":"m","messages":[` + hi + `],"max_tokens":-1}`, "max_tokens"},
		{"stop type", `{"model":"m","messages":[` + hi + `],"stop":[1]}`, "stop"},
		{"bad role", `{"model":"m","messages":[{"role":"robot","content":"x"}]}`, "messages[0].role"},
		{"tool without id", `{"model":"m","messages":[{"role":"tool","content":"x"}]}`, "messages[0].tool_call_id"},
		{"image in system", `{"model":"m","messages":[{"role":"system","content":[{"type":"image_url","image_url":{"url":"https://x"}}]}]}`, "messages[0].content"},
		{"bad image url", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"ftp://x"}}]}]}`, "messages[0].content[0].image_url.url"},
		{"function without call", `{"model":"m","messages":[{"role":"function","name":"f","content":"x"}]}`, "messages[0].role"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := openai.DecodeRequest([]byte(c.body))
			var fe *failure.Error
			if !errors.As(err, &fe) || fe.Class != failure.InvalidRequest || fe.Param != c.param {
				t.Fatalf("err = %v (%#v), want invalid_request on %q", err, fe, c.param)
			}
			if fe.Class.FailsOver() {
				t.Fatal("a refusal to translate must never fail over")
			}
		})
	}
}

// jsonEq compares two JSON texts structurally.
func jsonEq(t *testing.T, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("invalid JSON %s: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want %s: %v", want, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

// TestAppendRequest covers every row of wire.md §5.2 (Anthropic caller, OpenAI upstream) that the
// OpenAI encoder owns.
func TestAppendRequest(t *testing.T) {
	tools := []dialect.Tool{{Name: "w", Description: "d", Parameters: json.RawMessage(`{"type":"object"}`)}, {Name: "v"}}
	const toolsJSON = `"tools":[{"type":"function","function":{"name":"w","description":"d","parameters":{"type":"object"}}},{"type":"function","function":{"name":"v","parameters":{"type":"object","properties":{}}}}]`
	for _, c := range []struct {
		name        string
		req         dialect.Request
		max         int64
		want        string
		wantDropped []string
	}{
		{"system first, text as string, max_tokens -> max_completion_tokens",
			dialect.Request{System: []string{"S1", "S2"}, MaxTokens: 100, Messages: []dialect.Message{user(text("hi"))}}, 0,
			`{"model":"up","messages":[{"role":"system","content":"S1"},{"role":"system","content":"S2"},{"role":"user","content":"hi"}],"max_completion_tokens":100}`, nil},
		{"no max_tokens: none sent (OpenAI does not require it)",
			dialect.Request{Messages: []dialect.Message{user(text("hi"))}}, 8192,
			`{"model":"up","messages":[{"role":"user","content":"hi"}]}`, nil},
		{"tool results first as tool messages, is_error prefixed, their images moved to the next user message",
			dialect.Request{Messages: []dialect.Message{
				asst(text("calling"), call("toolu_1", "a", `{"x":1}`), call("toolu_2", "b", "")),
				user(text("and now?"), result("toolu_1", text("r1")),
					dialect.Part{Type: dialect.PartToolResult, ToolCallID: "toolu_2", IsError: true, Content: []dialect.Part{text("boom"), {Type: dialect.PartImage, MediaType: "image/png", Data: "AAA"}}})}}, 0,
			`{"model":"up","messages":[{"role":"assistant","content":"calling","tool_calls":[{"id":"toolu_1","type":"function","function":{"name":"a","arguments":"{\"x\":1}"}},{"id":"toolu_2","type":"function","function":{"name":"b","arguments":"{}"}}]},` +
				`{"role":"tool","tool_call_id":"toolu_1","content":"r1"},{"role":"tool","tool_call_id":"toolu_2","content":"Error: boom"},` +
				`{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,AAA"}},{"type":"text","text":"and now?"}]}]}`, nil},
		{"thinking in history is dropped and reported; tool calls alone give content null",
			dialect.Request{Messages: []dialect.Message{user(text("q")), asst(dialect.Part{Type: dialect.PartThinking, Text: "hmm", Signature: "sig"}, call("c1", "f", "{}")), user(result("c1"))}}, 0,
			`{"model":"up","messages":[{"role":"user","content":"q"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":""}]}`,
			[]string{"thinking"}},
		{"images and documents: base64 to data URL, URL kept, PDF to file part",
			dialect.Request{Messages: []dialect.Message{user(text("look"), dialect.Part{Type: dialect.PartImage, ImageURL: "https://x/y.png"},
				dialect.Part{Type: dialect.PartImage, MediaType: "image/jpeg", Data: "/9j"}, dialect.Part{Type: dialect.PartDocument, MediaType: "application/pdf", Data: "JVBER"})}}, 0,
			`{"model":"up","messages":[{"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"https://x/y.png"}},{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,/9j"}},{"type":"file","file":{"filename":"document.pdf","file_data":"data:application/pdf;base64,JVBER"}}]}]}`, nil},
		{"sampling, top_k dropped, stop sequences, stream asks for usage",
			dialect.Request{Temperature: f64(0.5), TopP: f64(0.9), TopK: i64(5), Stop: []string{"a", "b", "c", "d"}, Stream: true, Messages: []dialect.Message{user(text("hi"))}}, 0,
			`{"model":"up","messages":[{"role":"user","content":"hi"}],"temperature":0.5,"top_p":0.9,"stop":["a","b","c","d"],"stream":true,"stream_options":{"include_usage":true}}`,
			[]string{"top_k"}},
		{"tools, tool_choice any -> required, disable_parallel -> parallel_tool_calls false",
			dialect.Request{Tools: tools, ToolChoice: dialect.ToolChoice{Mode: "required", DisableParallel: true}, Messages: []dialect.Message{user(text("hi"))}}, 0,
			`{"model":"up","messages":[{"role":"user","content":"hi"}],` + toolsJSON + `,"tool_choice":"required","parallel_tool_calls":false}`, nil},
		{"tool_choice tool",
			dialect.Request{Tools: tools, ToolChoice: dialect.ToolChoice{Mode: "tool", Name: "w"}, Messages: []dialect.Message{user(text("hi"))}}, 0,
			`{"model":"up","messages":[{"role":"user","content":"hi"}],` + toolsJSON + `,"tool_choice":{"type":"function","function":{"name":"w"}}}`, nil},
		{"tool_choice without tools is not sent",
			dialect.Request{ToolChoice: dialect.ToolChoice{Mode: "none", DisableParallel: true}, Messages: []dialect.Message{user(text("hi"))}}, 0,
			`{"model":"up","messages":[{"role":"user","content":"hi"}]}`, nil},
		{"output format, metadata.user_id, thinking budget, effort",
			dialect.Request{ResponseFormat: &dialect.ResponseFormat{Schema: json.RawMessage(`{"type":"object"}`), Strict: true}, User: "u1", ThinkingBudget: 8000, Messages: []dialect.Message{user(text("hi"))}}, 0,
			`{"model":"up","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_schema","json_schema":{"name":"response","schema":{"type":"object"},"strict":true}},"reasoning_effort":"medium","safety_identifier":"u1"}`, nil},
		{"explicit effort wins over budget",
			dialect.Request{ReasoningEffort: "low", ThinkingBudget: 30000, Messages: []dialect.Message{user(text("hi"))}}, 0,
			`{"model":"up","messages":[{"role":"user","content":"hi"}],"reasoning_effort":"low"}`, nil},
		{"assistant refusal",
			dialect.Request{Messages: []dialect.Message{asst(dialect.Part{Type: dialect.PartRefusal, Text: "no"})}}, 0,
			`{"model":"up","messages":[{"role":"assistant","content":null,"refusal":"no"}]}`, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := openai.AppendRequest([]byte("prefix"), &c.req, "up", c.max)
			if err != nil {
				t.Fatal(err)
			}
			if string(out[:6]) != "prefix" {
				t.Fatal("dst not appended to")
			}
			jsonEq(t, out[6:], c.want)
			if !slices.Equal(c.req.Dropped, c.wantDropped) {
				t.Fatalf("dropped %v, want %v", c.req.Dropped, c.wantDropped)
			}
		})
	}
}

// TestAppendRequestRefusals: more than 4 stop sequences and a document URL are typed 400s.
func TestAppendRequestRefusals(t *testing.T) {
	for _, c := range []struct {
		name, param string
		req         dialect.Request
	}{
		{"5 stop sequences", "stop_sequences", dialect.Request{Stop: []string{"a", "b", "c", "d", "e"}}},
		{"document by URL", "messages[0].content", dialect.Request{Messages: []dialect.Message{user(dialect.Part{Type: dialect.PartDocument, ImageURL: "https://x/a.pdf"})}}},
		{"server tool", "tools[0].type", dialect.Request{Tools: []dialect.Tool{{Name: "web_search", Type: "web_search_20250305"}}}},
		{"bad tool schema", "tools[0].input_schema", dialect.Request{Tools: []dialect.Tool{{Name: "t", Parameters: json.RawMessage(`[1]`)}}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := openai.AppendRequest([]byte("x"), &c.req, "up", 0)
			var fe *failure.Error
			if !errors.As(err, &fe) || fe.Class != failure.InvalidRequest || fe.Param != c.param {
				t.Fatalf("err = %v, want invalid_request on %q", err, c.param)
			}
			if string(out) != "x" {
				t.Fatalf("dst changed on error: %q", out)
			}
		})
	}
}

// roundTripBodies are OpenAI requests whose canonical form survives encode + decode.
var roundTripBodies = []string{
	`{"model":"m","messages":[{"role":"developer","content":"D"},` + hi + `,{"role":"system","content":"S"}],"max_tokens":5,"temperature":0.2,"top_p":0.5,"stop":["x"],"user":"u","prompt_cache_key":"k","reasoning_effort":"low"}`,
	`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a\"b\u2028<c>"},{"type":"image_url","image_url":{"url":"data:image/webp;base64,UklG"}},{"type":"image_url","image_url":{"url":"http://h/i.gif"}},{"type":"file","file":{"file_data":"data:application/pdf;base64,JVBER"}}]}]}`,
	`{"model":"m","tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"},"strict":false}}],"tool_choice":"auto","parallel_tool_calls":false,"messages":[` + hi + `,{"role":"assistant","content":"ok","tool_calls":[{"id":"call_a","type":"function","function":{"name":"f","arguments":"{\"q\":\"é\"}"}},{"id":"call_b","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"call_a","content":"1"},{"role":"tool","tool_call_id":"call_b","content":""},{"role":"user","content":"next"},{"role":"assistant","refusal":"no"}]}`,
	`{"model":"m","stream":true,"messages":[` + hi + `],"response_format":{"type":"json_schema","json_schema":{"name":"n","schema":{"type":"object","properties":{"a":{"type":"string"}}},"strict":true}}}`,
	`{"model":"m","functions":[{"name":"f"}],"function_call":"auto","messages":[` + hi + `,{"role":"assistant","function_call":{"name":"f","arguments":"{}"}},{"role":"function","name":"f","content":"r"}]}`,
}

// TestRoundTrip: decode(append(decode(x))) equals decode(x) (apart from the model, the dropped
// list and include_usage, which the encoder always turns on upstream).
func TestRoundTrip(t *testing.T) {
	for i, b := range roundTripBodies {
		r1, err := openai.DecodeRequest([]byte(b))
		if err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		checkRoundTrip(t, r1)
	}
}

func checkRoundTrip(t *testing.T, r1 *dialect.Request) {
	t.Helper()
	enc, err := openai.AppendRequest(nil, r1, r1.Model, 0)
	if err != nil {
		return // a refusal is a valid answer
	}
	if !json.Valid(enc) {
		t.Fatalf("invalid JSON: %s", enc)
	}
	r2, err := openai.DecodeRequest(enc)
	if err != nil {
		t.Fatalf("re-decode of %s: %v", enc, err)
	}
	a, b := *r1, *r2
	a.Dropped, b.Dropped, a.IncludeUsage, b.IncludeUsage = nil, nil, false, false
	if len(a.Tools) == 0 { // tool_choice is not sent without tools
		a.ToolChoice, b.ToolChoice = dialect.ToolChoice{}, dialect.ToolChoice{}
	}
	if a.ResponseFormat != nil && a.ResponseFormat.Name == "" {
		a.ResponseFormat.Name = "response"
	}
	if a.TopK != nil {
		a.TopK = nil
	}
	if !reflect.DeepEqual(canon(withoutArgumentsParam(a)), canon(withoutArgumentsParam(b))) {
		t.Fatalf("round trip changed the request\nfirst  %+v\nsecond %+v\nvia %s", a, b, enc)
	}
}

// canon normalizes raw JSON fields (schemas) so that equal JSON compares equal.
func canon(r dialect.Request) dialect.Request {
	norm := func(m json.RawMessage) json.RawMessage {
		if m == nil {
			return nil
		}
		var v any
		if json.Unmarshal(m, &v) != nil {
			return m
		}
		b, _ := json.Marshal(v)
		return b
	}
	tools := slices.Clone(r.Tools)
	for i := range tools {
		if tools[i].Parameters == nil {
			tools[i].Parameters = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		tools[i].Parameters = norm(tools[i].Parameters)
	}
	r.Tools = tools
	if r.ResponseFormat != nil {
		rf := *r.ResponseFormat
		rf.Schema = norm(rf.Schema)
		r.ResponseFormat = &rf
	}
	return r
}

// FuzzDecodeRequest: the decoder never panics, and a decoded request re-encodes to valid JSON that
// decodes to the same canonical request.
func FuzzDecodeRequest(f *testing.F) {
	for _, b := range roundTripBodies {
		f.Add([]byte(b))
	}
	f.Add(benchBody)
	f.Add([]byte(`{"model":"m","messages":[{"role":"tool","tool_call_id":"x","content":[{"type":"text","text":""}]}],"stop":"a"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := openai.DecodeRequest(body)
		if err != nil {
			if failure.From(err).Class != failure.InvalidRequest {
				t.Fatalf("error class %v", err)
			}
			return
		}
		checkRoundTrip(t, r)
	})
}

// withoutArgumentsParam is r with the caller paths of its tool call arguments cleared: they
// depend on where a decoder found the call, which the decode tables and round trips do not
// compare (TestArgumentsParam does).
func withoutArgumentsParam(r dialect.Request) dialect.Request {
	r.Messages = slices.Clone(r.Messages)
	for i := range r.Messages {
		r.Messages[i].Parts = slices.Clone(r.Messages[i].Parts)
		for j := range r.Messages[i].Parts {
			r.Messages[i].Parts[j].ArgumentsParam = ""
		}
	}
	return r
}

// TestArgumentsParam: the decoder records where the caller sent each tool call's arguments, in
// the caller's terms, for the encoders' errors.
func TestArgumentsParam(t *testing.T) {
	r, err := openai.DecodeRequest([]byte(`{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":"q"},` +
		`{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"b","type":"function","function":{"name":"g","arguments":"{}"}}]},` +
		`{"role":"assistant","function_call":{"name":"h","arguments":"{}"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range r.Messages {
		for _, p := range m.Parts {
			if p.Type == dialect.PartToolCall {
				got = append(got, p.ArgumentsParam)
			}
		}
	}
	want := []string{"messages[2].tool_calls[0].function.arguments", "messages[2].tool_calls[1].function.arguments", "messages[3].function_call.arguments"}
	if !slices.Equal(got, want) {
		t.Fatalf("ArgumentsParam %q, want %q", got, want)
	}
}
