package responses_test

import (
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/switchyard-gw/switchyard/internal/dialect"
	"github.com/switchyard-gw/switchyard/internal/dialect/responses"
	"github.com/switchyard-gw/switchyard/internal/failure"
)

func ptr[T any](v T) *T { return &v }

func text(s string) dialect.Part { return dialect.Part{Type: dialect.PartText, Text: s} }

// TestDecodeRequest: every input item kind, tools, tool_choice, text.format and the dropped
// parameters decode into the canonical form (R-DIALECT-2).
func TestDecodeRequest(t *testing.T) {
	for _, c := range []struct {
		name string
		body string
		want dialect.Request
	}{
		{
			name: "string input and sampling",
			body: `{"model":"m","input":"hi","instructions":"be brief","max_output_tokens":100,"temperature":0.5,"top_p":0.9,"stream":true,"prompt_cache_key":"k","safety_identifier":"s","user":"u"}`,
			want: dialect.Request{Model: "m", System: []string{"be brief"}, Messages: []dialect.Message{{Role: dialect.RoleUser, Parts: []dialect.Part{text("hi")}}},
				MaxTokens: 100, Temperature: ptr(0.5), TopP: ptr(0.9), Stream: true, IncludeUsage: true, PromptCacheKey: "k", User: "s"},
		},
		{
			name: "user falls back when no safety_identifier",
			body: `{"model":"m","input":"hi","user":"u"}`,
			want: dialect.Request{Model: "m", Messages: []dialect.Message{{Role: dialect.RoleUser, Parts: []dialect.Part{text("hi")}}}, IncludeUsage: true, User: "u"},
		},
		{
			name: "messages: system and developer hoisted after instructions, easy and typed messages, parts",
			body: `{"input":[
				{"role":"developer","content":"dev"},
				{"type":"message","role":"user","content":[{"type":"input_text","text":"look"},
					{"type":"input_image","image_url":"https://x/a.png","detail":"high"},
					{"type":"input_image","image_url":"data:image/png;base64,AAAA"},
					{"type":"input_file","file_data":"data:application/pdf;base64,JVBE","filename":"a.pdf"},
					{"type":"input_file","file_url":"https://x/b.pdf"}]},
				{"role":"system","content":[{"type":"input_text","text":"sys"}]}
			],"model":"m","instructions":"ins"}`,
			want: dialect.Request{Model: "m", System: []string{"ins", "dev", "sys"}, IncludeUsage: true, Dropped: []string{"input_image.detail"},
				Messages: []dialect.Message{{Role: dialect.RoleUser, Parts: []dialect.Part{text("look"),
					{Type: dialect.PartImage, ImageURL: "https://x/a.png"},
					{Type: dialect.PartImage, MediaType: "image/png", Data: "AAAA"},
					{Type: dialect.PartDocument, MediaType: "application/pdf", Data: "JVBE"},
					{Type: dialect.PartDocument, ImageURL: "https://x/b.pdf"}}}}},
		},
		{
			name: "assistant turn: reasoning, message with refusal, function calls merge; outputs merge",
			body: `{"model":"m","input":[
				{"role":"user","content":"q"},
				{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"sum"}],"content":[{"type":"reasoning_text","text":"think"}],"encrypted_content":"SIG"},
				{"type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":"ok","annotations":[]},{"type":"refusal","refusal":"no"}]},
				{"type":"function_call","call_id":"c1","name":"f","arguments":"{\"a\":1}"},
				{"type":"function_call","call_id":"c2","name":"g","arguments":""},
				{"type":"function_call_output","call_id":"c1","output":"r1"},
				{"type":"function_call_output","call_id":"c2","output":[{"type":"input_text","text":"r2"},{"type":"input_image","image_url":"https://x/i.png"}]},
				{"type":"reasoning","summary":[{"type":"summary_text","text":"only summary"}]},
				{"role":"assistant","content":"done"}
			]}`,
			want: dialect.Request{Model: "m", IncludeUsage: true, Messages: []dialect.Message{
				{Role: dialect.RoleUser, Parts: []dialect.Part{text("q")}},
				{Role: dialect.RoleAssistant, Parts: []dialect.Part{
					{Type: dialect.PartThinking, Text: "think", Signature: "SIG"}, text("ok"), {Type: dialect.PartRefusal, Text: "no"},
					{Type: dialect.PartToolCall, ToolCallID: "c1", ToolName: "f", Arguments: `{"a":1}`},
					{Type: dialect.PartToolCall, ToolCallID: "c2", ToolName: "g", Arguments: `{}`}}},
				{Role: dialect.RoleUser, Parts: []dialect.Part{
					{Type: dialect.PartToolResult, ToolCallID: "c1", Content: []dialect.Part{text("r1")}},
					{Type: dialect.PartToolResult, ToolCallID: "c2", Content: []dialect.Part{text("r2"), {Type: dialect.PartImage, ImageURL: "https://x/i.png"}}}}},
				{Role: dialect.RoleAssistant, Parts: []dialect.Part{{Type: dialect.PartThinking, Text: "only summary"}, text("done")}},
			}},
		},
		{
			name: "tools, tool_choice, parallel, reasoning, json_schema, dropped",
			body: `{"model":"m","input":"x","tools":[{"type":"function","name":"f","description":"d","parameters":{"type":"object"},"strict":true},{"type":"function","name":"g"}],
				"tool_choice":{"type":"function","name":"f"},"parallel_tool_calls":false,"reasoning":{"effort":"high","summary":"auto"},
				"text":{"format":{"type":"json_schema","name":"out","schema":{"type":"object"},"strict":true},"verbosity":"low"},
				"store":true,"include":["reasoning.encrypted_content"],"truncation":"auto","metadata":{"a":"b"},"background":false,"previous_response_id":null,"store_false":false}`,
			want: dialect.Request{Model: "m", IncludeUsage: true, Messages: []dialect.Message{{Role: dialect.RoleUser, Parts: []dialect.Part{text("x")}}},
				Tools:           []dialect.Tool{{Name: "f", Description: "d", Parameters: []byte(`{"type":"object"}`), Strict: ptr(true)}, {Name: "g"}},
				ToolChoice:      dialect.ToolChoice{Mode: "tool", Name: "f", DisableParallel: true},
				ReasoningEffort: "high",
				ResponseFormat:  &dialect.ResponseFormat{Name: "out", Schema: []byte(`{"type":"object"}`), Strict: true},
				Dropped:         []string{"reasoning.summary", "text.verbosity", "store", "include", "truncation", "metadata"}},
		},
		{
			name: "tool_choice string and json_object format",
			body: `{"model":"m","input":[],"tool_choice":"required","text":{"format":{"type":"json_object"}}}`,
			want: dialect.Request{Model: "m", IncludeUsage: true, ToolChoice: dialect.ToolChoice{Mode: "required"}, Dropped: []string{"text.format"}},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := responses.DecodeRequest([]byte(c.body))
			if err != nil {
				t.Fatalf("DecodeRequest: %v", err)
			}
			if !reflect.DeepEqual(withoutArgumentsParam(*got), c.want) {
				t.Errorf("got  %+v\nwant %+v", *got, c.want)
			}
		})
	}
}

// TestDecodeRequestRefusals: what needs provider-side state and untranslatable inputs are a typed 400 naming the field, never silently dropped (wire.md §2.1, §5.7).
func TestDecodeRequestRefusals(t *testing.T) {
	for _, c := range []struct{ name, body, param string }{
		{"not json", `{`, ""},
		{"not an object", `[]`, ""},
		{"no model", `{"input":"x"}`, "model"},
		{"no input", `{"model":"m"}`, "input"},
		{"input number", `{"model":"m","input":3}`, "input"},
		{"previous_response_id", `{"model":"m","input":"x","previous_response_id":"resp_1"}`, "previous_response_id"},
		{"conversation", `{"model":"m","input":"x","conversation":"conv_1"}`, "conversation"},
		{"background", `{"model":"m","input":"x","background":true}`, "background"},
		{"prompt", `{"model":"m","input":"x","prompt":{"id":"pmpt_1"}}`, "prompt"},
		{"tool without name", `{"model":"m","input":"x","tools":[{"type":"function"}]}`, "tools[0].name"},
		{"allowed_tools", `{"model":"m","input":"x","tool_choice":{"type":"allowed_tools","mode":"auto","tools":[]}}`, "tool_choice.type"},
		{"bad tool_choice", `{"model":"m","input":"x","tool_choice":"sometimes"}`, "tool_choice"},
		{"item_reference", `{"model":"m","input":[{"type":"item_reference","id":"msg_1"}]}`, "input[0].type"},
		{"hosted call item", `{"model":"m","input":["x"]}`, "input[0]"},
		{"web_search_call item", `{"model":"m","input":[{"role":"user","content":"a"},{"type":"web_search_call","id":"ws"}]}`, "input[1].type"},
		{"file_id image", `{"model":"m","input":[{"role":"user","content":[{"type":"input_image","file_id":"file-1"}]}]}`, "input[0].content[0].file_id"},
		{"file_id file", `{"model":"m","input":[{"role":"user","content":[{"type":"input_file","file_id":"file-1"}]}]}`, "input[0].content[0].file_id"},
		{"non-pdf file", `{"model":"m","input":[{"role":"user","content":[{"type":"input_file","file_data":"data:text/plain;base64,AAAA"}]}]}`, "input[0].content[0].file_data"},
		{"audio", `{"model":"m","input":[{"role":"user","content":[{"type":"input_audio"}]}]}`, "input[0].content[0].type"},
		{"call without id", `{"model":"m","input":[{"type":"function_call","name":"f"}]}`, "input[0]"},
		{"output without id", `{"model":"m","input":[{"type":"function_call_output","output":"x"}]}`, "input[0].call_id"},
		{"bad role", `{"model":"m","input":[{"role":"tool","content":"x"}]}`, "input[0].role"},
		{"assistant image", `{"model":"m","input":[{"role":"assistant","content":[{"type":"input_image","image_url":"https://x"}]}]}`, "input[0].content[0].type"},
		{"bad temperature", `{"model":"m","input":"x","temperature":"hot"}`, "temperature"},
		{"bad max_output_tokens", `{"model":"m","input":"x","max_output_tokens":-1}`, "max_output_tokens"},
		{"schema missing", `{"model":"m","input":"x","text":{"format":{"type":"json_schema","name":"n"}}}`, "text.format.schema"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := responses.DecodeRequest([]byte(c.body))
			var fe *failure.Error
			if !errors.As(err, &fe) || fe.Class != failure.InvalidRequest {
				t.Fatalf("err = %v, want invalid_request", err)
			}
			if fe.Param != c.param {
				t.Errorf("param = %q, want %q (%s)", fe.Param, c.param, fe.Msg)
			}
		})
	}
}

// TestParseRequest: the light read gives model offsets, stream and max_output_tokens; usage is
// always included on this surface.
func TestParseRequest(t *testing.T) {
	body := []byte(`{"input":"x","model":"gpt-x","stream":true,"max_output_tokens":64}`)
	info, err := responses.ParseRequest(body)
	if err != nil {
		t.Fatal(err)
	}
	if info.Model != "gpt-x" || !info.Stream || info.MaxTokens != 64 || !info.IncludeUsage || string(body[info.ModelStart:info.ModelEnd]) != `"gpt-x"` {
		t.Errorf("info = %+v", info)
	}
	for _, bad := range []string{`{`, `{"input":"x"}`, `{"model":"m"}`, `{"model":"m","input":"x","stream":"yes"}`, `{"model":"m","input":"x","max_output_tokens":1.5}`} {
		if _, err := responses.ParseRequest([]byte(bad)); failure.From(err).Class != failure.InvalidRequest {
			t.Errorf("%s: err = %v, want invalid_request", bad, err)
		}
	}
}

// FuzzDecodeRequest: no input panics, and every error is a typed invalid_request.
func FuzzDecodeRequest(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","input":"hi"}`,
		`{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"a"},{"type":"input_image","image_url":"data:image/png;base64,AA"}]},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"x"},{"type":"reasoning","summary":[],"encrypted_content":"s"}],"tools":[{"type":"function","name":"f"}],"tool_choice":"auto","text":{"format":{"type":"json_schema","schema":{}}}}`,
		`{"model":"m","input":[{"type":"item_reference"}],"previous_response_id":"x"}`,
		`[]`, `null`, `{"model":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := responses.DecodeRequest(body)
		if err != nil {
			if fe := failure.From(err); fe.Class != failure.InvalidRequest {
				t.Fatalf("error class %q, want invalid_request", fe.Class)
			}
			return
		}
		if r == nil || r.Model == "" {
			t.Fatalf("success without a model: %+v", r)
		}
		// The pass-through parser (routing) reads what the decoder reads.
		info, err := responses.ParseRequest(body)
		if err == nil && (info.Model != r.Model || info.Stream != r.Stream) {
			t.Fatalf("ParseRequest read %q stream=%t, DecodeRequest %q stream=%t", info.Model, info.Stream, r.Model, r.Stream)
		}
	})
}

// A duplicated top-level key is refused before routing: a stream flag read one way by the
// gateway and the other way by the decoder would make the provider's answer look broken and
// count on its circuit.
func TestParseRequestDuplicateKeys(t *testing.T) {
	for _, body := range []string{
		`{"model":"m","input":"x","stream":true,"stream":false}`,
		`{"model":"a","model":"b","input":"x"}`,
		`{"model":"m","input":"x","input":"y"}`,
	} {
		if _, err := responses.ParseRequest([]byte(body)); err == nil {
			t.Errorf("%s accepted", body)
		}
	}
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
