package responses_test

import (
	"encoding/json"
	"testing"

	"github.com/openai/openai-go/v3/responses"
	"github.com/tidwall/gjson"

	"github.com/switchyard-gw/switchyard/internal/dialect"
	resp "github.com/switchyard-gw/switchyard/internal/dialect/responses"
	"github.com/switchyard-gw/switchyard/internal/failure"
)

// TestAppendResponse: the non-stream Response parses with the official openai-go type, with
// status, output items in order, and usage mapped per wire.md §2.3 (input_tokens includes cached
// and cache-write tokens).
func TestAppendResponse(t *testing.T) {
	usage := dialect.Usage{Input: 10, Cached: 30, CacheWrite: 5, Output: 20, Reasoning: 7}
	for _, c := range []struct {
		name       string
		r          dialect.Response
		status     string
		reason     string
		types      []string
		outputText string
	}{
		{
			name:   "text and tool calls",
			r:      dialect.Response{Stop: dialect.StopToolUse, Usage: usage, Parts: []dialect.Part{{Type: dialect.PartThinking, Text: "hmm", Signature: "SIG"}, {Type: dialect.PartText, Text: "Hel"}, {Type: dialect.PartText, Text: "lo \"<&>\"\n"}, {Type: dialect.PartToolCall, ToolCallID: "call_1", ToolName: "f", Arguments: `{"a":1}`}, {Type: dialect.PartToolCall, ToolCallID: "call_2", ToolName: "g"}, {Type: dialect.PartRedactedThinking, Data: "x"}}},
			status: "completed", types: []string{"reasoning", "message", "function_call", "function_call"}, outputText: "Hello \"<&>\"\n",
		},
		{
			name:   "max tokens is incomplete",
			r:      dialect.Response{Stop: dialect.StopMaxTokens, Usage: usage, Parts: []dialect.Part{{Type: dialect.PartText, Text: "cut"}}},
			status: "incomplete", reason: "max_output_tokens", types: []string{"message"}, outputText: "cut",
		},
		{
			name:   "refusal",
			r:      dialect.Response{Stop: dialect.StopRefusal, Usage: usage, Parts: []dialect.Part{{Type: dialect.PartRefusal, Text: "no"}}},
			status: "incomplete", reason: "content_filter", types: []string{"message"},
		},
		{
			name:   "empty",
			r:      dialect.Response{Stop: dialect.StopEndTurn},
			status: "completed", types: nil,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := resp.AppendResponse(nil, &c.r, "my-model", "req123")
			var got responses.Response
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatalf("unmarshal: %v\n%s", err, b)
			}
			if got.ID != "resp_req123" || got.Object != "response" || got.Model != "my-model" || string(got.Status) != c.status || got.IncompleteDetails.Reason != c.reason {
				t.Errorf("head: id %q object %q model %q status %q reason %q", got.ID, got.Object, got.Model, got.Status, got.IncompleteDetails.Reason)
			}
			if len(got.Output) != len(c.types) {
				t.Fatalf("output = %s", b)
			}
			for i, typ := range c.types {
				if got.Output[i].Type != typ {
					t.Errorf("output[%d].type = %q, want %q", i, got.Output[i].Type, typ)
				}
			}
			if got.OutputText() != c.outputText {
				t.Errorf("OutputText = %q, want %q", got.OutputText(), c.outputText)
			}
			u := got.Usage
			want := c.r.Usage
			if u.InputTokens != want.Input+want.Cached+want.CacheWrite || u.InputTokensDetails.CachedTokens != want.Cached ||
				u.OutputTokens != want.Output || u.OutputTokensDetails.ReasoningTokens != want.Reasoning || u.TotalTokens != want.Input+want.Cached+want.CacheWrite+want.Output {
				t.Errorf("usage = %+v, want from %+v", u, want)
			}
			if c.name == "text and tool calls" {
				rs := got.Output[0].AsReasoning()
				if len(rs.Content) != 1 || rs.Content[0].Text != "hmm" || rs.EncryptedContent != "SIG" {
					t.Errorf("reasoning = %+v", rs)
				}
				fc := got.Output[2].AsFunctionCall()
				if fc.CallID != "call_1" || fc.Name != "f" || fc.Arguments != `{"a":1}` || got.Output[3].AsFunctionCall().Arguments != "{}" {
					t.Errorf("function calls = %s", b)
				}
			}
			if c.name == "refusal" {
				m := got.Output[0].AsMessage()
				if len(m.Content) != 1 || m.Content[0].Type != "refusal" || m.Content[0].Refusal != "no" || m.Status != "incomplete" {
					t.Errorf("refusal message = %+v", m)
				}
			}
		})
	}
}

// An error naming a chat-completions parameter names the Responses request's own: a context
// overflow refused by routing says input, not messages.
func TestErrorParamNamesResponsesFields(t *testing.T) {
	for param, want := range map[string]string{"messages": "input", "max_tokens": "max_output_tokens", "system": "instructions", "model": "model", "": ""} {
		fe := &failure.Error{Class: failure.ContextOverflow, Param: param, Msg: "too long"}
		b := resp.AppendErrorBody(nil, fe, "req_1")
		got := gjson.GetBytes(b, "error.param")
		if (want == "" && got.Type != gjson.Null) || (want != "" && got.Str != want) {
			t.Errorf("param %q: body %s, want %q", param, b, want)
		}
		if fe.Param != param {
			t.Errorf("the caller's error was modified: %q", fe.Param)
		}
	}
}
