package anthropic

import (
	"encoding/json"
	"errors"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/switchyard-gw/switchyard/internal/dialect"
	"github.com/switchyard-gw/switchyard/internal/failure"
)

func TestDecodeResponse(t *testing.T) {
	body := `{"id":"msg_01","type":"message","role":"assistant","model":"claude-x",
	 "content":[{"type":"thinking","thinking":"hm","signature":"sg"},{"type":"text","text":"Hi"},
	  {"type":"tool_use","id":"toolu_01","name":"get_weather","input":{"city":"Paris"}},{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[]}],
	 "stop_reason":"tool_use","stop_sequence":null,
	 "usage":{"input_tokens":12,"output_tokens":30,"cache_creation_input_tokens":3,"cache_read_input_tokens":5,"output_tokens_details":{"thinking_tokens":7}}}`
	r, err := DecodeResponse([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if r.ID != "msg_01" || r.Stop != dialect.StopToolUse || len(r.Parts) != 3 {
		t.Fatalf("%+v", r)
	}
	if p := r.Parts[0]; p.Type != dialect.PartThinking || p.Text != "hm" || p.Signature != "sg" {
		t.Fatalf("thinking %+v", p)
	}
	if p := r.Parts[2]; p.Type != dialect.PartToolCall || p.ToolCallID != "toolu_01" || p.Arguments != `{"city":"Paris"}` {
		t.Fatalf("tool %+v", p)
	}
	want := dialect.Usage{Input: 12, Cached: 5, CacheWrite: 3, Output: 30, Reasoning: 7}
	if !r.UsageSeen || r.Usage != want {
		t.Fatalf("usage %+v", r.Usage)
	}
	for _, bad := range []string{``, `[]`, `{"id":"x"}`, `<html>`} {
		_, err := DecodeResponse([]byte(bad))
		var fe *failure.Error
		if !errors.As(err, &fe) || fe.Class != failure.UpstreamError {
			t.Fatalf("%q: %v", bad, err)
		}
	}
}

// TestStopReasons: every canonical stop reason survives the Anthropic wire unflattened
// (wire.md §5.3); an empty one is end_turn, or tool_use after tool calls; a refusal part makes
// an end_turn a refusal.
func TestStopReasons(t *testing.T) {
	for _, s := range []dialect.StopReason{dialect.StopEndTurn, dialect.StopMaxTokens, dialect.StopSequence,
		dialect.StopToolUse, dialect.StopRefusal, dialect.StopPauseTurn, dialect.StopContextWindow} {
		if got := stopFromWire(stopToWire(s, false)); got != s {
			t.Errorf("%s -> %s", s, got)
		}
	}
	if stopToWire("", true) != "tool_use" || stopToWire("", false) != "end_turn" || stopFromWire("bogus") != dialect.StopEndTurn {
		t.Fatal("defaults")
	}
}

// TestAppendResponseSDK: the body parses as the official SDK's Message with the caller's model,
// a msg_ id, tool input objects, the stop reason and the §5.4 usage.
func TestAppendResponseSDK(t *testing.T) {
	r := &dialect.Response{ID: "chatcmpl-123", Parts: []dialect.Part{
		{Type: dialect.PartText, Text: ""},
		{Type: dialect.PartText, Text: "Hello <b>"},
		{Type: dialect.PartToolCall, ToolCallID: "call_1", ToolName: "f", Arguments: `{"a":1}`},
		{Type: dialect.PartToolCall, ToolCallID: "call.2", ToolName: "g", Arguments: `not json`},
	}, Stop: dialect.StopToolUse, Usage: dialect.Usage{Input: 40, Cached: 10, CacheWrite: 2, Output: 9, Reasoning: 4}, UsageSeen: true}
	b := AppendResponse(nil, r, "gpt-caller", "req-42/x")
	var m sdk.Message
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	if m.ID != "msg_req-42_x" || m.Model != "gpt-caller" || m.StopReason != "tool_use" || len(m.Content) != 3 {
		t.Fatalf("%s", b)
	}
	if m.Content[0].Text != "Hello <b>" || string(m.Content[1].Input) != `{"a":1}` || m.Content[1].ID != "call_1" ||
		string(m.Content[2].Input) != `{}` || !isToolID(m.Content[2].ID) {
		t.Fatalf("%s", b)
	}
	u := m.Usage
	if u.InputTokens != 40 || u.CacheReadInputTokens != 10 || u.CacheCreationInputTokens != 2 || u.OutputTokens != 9 || u.OutputTokensDetails.ThinkingTokens != 4 {
		t.Fatalf("usage %s", b)
	}
	// A refusal: text content, stop_reason refusal; an Anthropic-shaped id is kept.
	b = AppendResponse(nil, &dialect.Response{ID: "msg_abc", Parts: []dialect.Part{{Type: dialect.PartRefusal, Text: "no"}}, Stop: dialect.StopEndTurn}, "m", "r")
	if err := json.Unmarshal(b, &m); err != nil || m.StopReason != "refusal" || m.ID != "msg_abc" || m.Content[0].Text != "no" {
		t.Fatalf("%v %s", err, b)
	}
}

// TestResponseRoundTrip: decode(append(decode(x))) is stable.
func TestResponseRoundTrip(t *testing.T) {
	body := `{"id":"msg_1","type":"message","role":"assistant","model":"c","content":[{"type":"thinking","thinking":"a","signature":"s"},{"type":"text","text":"b\n\"q\""},{"type":"tool_use","id":"toolu_1","name":"f","input":{"k":[1]}}],"stop_reason":"stop_sequence","stop_sequence":"END","usage":{"input_tokens":1,"output_tokens":2,"cache_read_input_tokens":3,"cache_creation_input_tokens":4}}`
	r1, err := DecodeResponse([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	r2, err := DecodeResponse(AppendResponse(nil, r1, "c", "x"))
	if err != nil {
		t.Fatal(err)
	}
	b1, _ := json.Marshal(r1)
	b2, _ := json.Marshal(r2)
	if string(b1) != string(b2) {
		t.Fatalf("\n%s\n%s", b1, b2)
	}
}
