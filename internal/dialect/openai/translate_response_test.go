package openai_test

import (
	"encoding/json"
	"reflect"
	"testing"

	sdk "github.com/openai/openai-go/v3"

	"github.com/switchyard-gw/switchyard/internal/dialect"
	"github.com/switchyard-gw/switchyard/internal/dialect/openai"
	"github.com/switchyard-gw/switchyard/internal/failure"
)

// TestDecodeResponse: an upstream chat.completion with reasoning, text, refusal, parallel tool
// calls and cached usage decodes into canonical parts in order, stop reasons per wire.md §5.3.
func TestDecodeResponse(t *testing.T) {
	body := `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-x","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","reasoning_content":"hmm","content":"ok","refusal":null,` +
		`"tool_calls":[{"id":"call_1","type":"function","function":{"name":"a","arguments":"{\"x\":1}"}},{"id":"call_2","type":"function","function":{"name":"b","arguments":"{}"}}]}}],` +
		`"usage":{"prompt_tokens":50,"completion_tokens":12,"total_tokens":62,"prompt_tokens_details":{"cached_tokens":20,"cache_write_tokens":10},"completion_tokens_details":{"reasoning_tokens":4}}}`
	r, err := openai.DecodeResponse([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	want := dialect.Response{ID: "chatcmpl-1", Stop: dialect.StopToolUse, UsageSeen: true,
		Usage: dialect.Usage{Input: 20, Cached: 20, CacheWrite: 10, Output: 12, Reasoning: 4},
		Parts: []dialect.Part{{Type: dialect.PartThinking, Text: "hmm"}, text("ok"), call("call_1", "a", `{"x":1}`), call("call_2", "b", "{}")}}
	if !reflect.DeepEqual(*r, want) {
		t.Fatalf("got  %+v\nwant %+v", *r, want)
	}
	for finish, stop := range map[string]dialect.StopReason{"stop": dialect.StopEndTurn, "length": dialect.StopMaxTokens,
		"function_call": dialect.StopToolUse, "content_filter": dialect.StopRefusal} {
		r, err := openai.DecodeResponse([]byte(`{"choices":[{"message":{"content":null,"refusal":"no"},"finish_reason":"` + finish + `"}]}`))
		if err != nil || r.Stop != stop || r.UsageSeen || len(r.Parts) != 1 || r.Parts[0].Type != dialect.PartRefusal {
			t.Errorf("%s: %+v %v", finish, r, err)
		}
	}
	for _, bad := range []string{``, `[]`, `{"choices":[]}`, `{"error":{"message":"x"}}`, `<html>`} {
		if _, err := openai.DecodeResponse([]byte(bad)); failure.From(err) == nil || failure.From(err).Class != failure.UpstreamError {
			t.Errorf("%q: err %v, want upstream_error", bad, err)
		}
	}
}

// TestAppendResponse: the caller's chat.completion as openai-go parses it: model echoed, id
// derived from the request id, content/refusal/tool calls, finish reason and usage per §5.4.
func TestAppendResponse(t *testing.T) {
	r := &dialect.Response{ID: "msg_01", Stop: dialect.StopToolUse, UsageSeen: true,
		Usage: dialect.Usage{Input: 10, Cached: 20, CacheWrite: 5, Output: 7, Reasoning: 3},
		Parts: []dialect.Part{{Type: dialect.PartThinking, Text: "t", Signature: "s"}, text("Hello "), text("<world>"),
			call("toolu_1", "a", `{"x":1}`), call("toolu_2", "b", "")}}
	out := openai.AppendResponse(nil, r, "gpt-caller", "req_1")
	var c sdk.ChatCompletion
	if err := json.Unmarshal(out, &c); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	m := c.Choices[0].Message
	if c.ID != "chatcmpl-req_1" || c.Model != "gpt-caller" || c.Object != "chat.completion" || m.Content != "Hello <world>" ||
		c.Choices[0].FinishReason != "tool_calls" || len(m.ToolCalls) != 2 || m.ToolCalls[1].ID != "toolu_2" || m.ToolCalls[1].Function.Arguments != "{}" ||
		c.Usage.PromptTokens != 35 || c.Usage.TotalTokens != 42 || c.Usage.PromptTokensDetails.CachedTokens != 20 ||
		c.Usage.PromptTokensDetails.CacheWriteTokens != 5 || c.Usage.CompletionTokensDetails.ReasoningTokens != 3 {
		t.Fatalf("parsed %+v from %s", c, out)
	}
	if got := dialectGet(out, "choices.0.message.reasoning_content"); got != "t" {
		t.Fatalf("reasoning_content %q", got)
	}
	// No text: content null; an OpenAI-shaped id is kept.
	out = openai.AppendResponse(nil, &dialect.Response{ID: "chatcmpl-x", Stop: dialect.StopRefusal,
		Parts: []dialect.Part{{Type: dialect.PartRefusal, Text: "no"}}}, "m", "r")
	jsonEqPaths(t, out, map[string]string{"id": `"chatcmpl-x"`, "choices.0.message.content": "null",
		"choices.0.message.refusal": `"no"`, "choices.0.finish_reason": `"content_filter"`, "usage.prompt_tokens": "0"})
}

func dialectGet(b []byte, path string) string { return dialect.Get(b, path).String() }

func jsonEqPaths(t *testing.T, b []byte, want map[string]string) {
	t.Helper()
	if !json.Valid(b) {
		t.Fatalf("invalid JSON %s", b)
	}
	for p, w := range want {
		if got := dialect.Get(b, p).Raw; got != w {
			t.Errorf("%s = %s, want %s in %s", p, got, w, b)
		}
	}
}
