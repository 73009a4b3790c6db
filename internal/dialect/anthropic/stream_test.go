package anthropic

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/switchyard-gw/switchyard/internal/dialect"
	"github.com/switchyard-gw/switchyard/internal/sse"
)

// transcript is a realistic Anthropic upstream stream: thinking with a signature, text, two
// tool calls, message_delta usage and a ping (wire.md §4.5).
var transcript = [][2]string{
	{"message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":12,"cache_read_input_tokens":100,"cache_creation_input_tokens":7,"output_tokens":1}}}`},
	{"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`},
	{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me \"think\""}}`},
	{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBsig"}}`},
	{"content_block_stop", `{"type":"content_block_stop","index":0}`},
	{"content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`},
	{"ping", `{"type":"ping"}`},
	{"content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hello\n<there>"}}`},
	{"content_block_stop", `{"type":"content_block_stop","index":1}`},
	{"content_block_start", `{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}}`},
	{"content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":""}}`},
	{"content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"city\": \"Par"}}`},
	{"content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"is\"}"}}`},
	{"content_block_stop", `{"type":"content_block_stop","index":2}`},
	{"content_block_start", `{"type":"content_block_start","index":3,"content_block":{"type":"tool_use","id":"toolu_2","name":"get_time","input":{}}}`},
	{"content_block_delta", `{"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":"{\"tz\":\"CET\"}"}}`},
	{"content_block_stop", `{"type":"content_block_stop","index":3}`},
	{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":42}}`},
	{"message_stop", `{"type":"message_stop"}`},
}

func decodeAll(t testing.TB, frames [][2]string) []dialect.Event {
	var d StreamDecoder
	d.Reset()
	var all []dialect.Event
	for _, f := range frames {
		evs := d.Decode(sse.Event{Name: []byte(f[0]), Data: []byte(f[1])}, nil)
		for _, e := range evs { // Text aliases the frame: keep a copy
			e.Text = bytes.Clone(e.Text)
			e.Raw = bytes.Clone(e.Raw)
			all = append(all, e)
		}
	}
	return all
}

func TestStreamDecode(t *testing.T) {
	evs := decodeAll(t, transcript)
	type ev struct {
		typ  dialect.EventType
		text string
		idx  int
		id   string
	}
	want := []ev{
		{dialect.EventStart, "", 0, "msg_1"},
		{dialect.EventReasoning, `"Let me \"think\""`, 0, ""},
		{dialect.EventSignature, `"EqQBsig"`, 0, ""},
		{dialect.EventText, `"Hello\n<there>"`, 0, ""},
		{dialect.EventToolCall, "", 0, "toolu_1"},
		{dialect.EventToolArgs, `"{\"city\": \"Par"`, 0, ""},
		{dialect.EventToolArgs, `"is\"}"`, 0, ""},
		{dialect.EventToolCall, "", 1, "toolu_2"}, // tool index 1, though block index 3
		{dialect.EventToolArgs, `"{\"tz\":\"CET\"}"`, 1, ""},
		{dialect.EventFinish, "", 0, ""},
		{dialect.EventUsage, "", 0, ""},
		{dialect.EventDone, "", 0, ""},
	}
	if len(evs) != len(want) {
		for _, e := range evs {
			t.Logf("%+v %s", e, e.Text)
		}
		t.Fatalf("%d events, want %d", len(evs), len(want))
	}
	for i, w := range want {
		e := evs[i]
		if e.Type != w.typ || string(e.Text) != w.text || e.ToolIndex != w.idx || e.ID != w.id {
			t.Errorf("event %d = {%d %s %d %q}, want %+v", i, e.Type, e.Text, e.ToolIndex, e.ID, w)
		}
	}
	if evs[9].Stop != dialect.StopToolUse {
		t.Errorf("stop %q", evs[9].Stop)
	}
	// R-FAIL-2: usage only on the final report, with message_start's input counts merged in.
	if u := evs[10].Usage; u != (dialect.Usage{Input: 12, Cached: 100, CacheWrite: 7, Output: 42}) {
		t.Errorf("usage %+v", u)
	}
	for i, e := range evs[:10] {
		if e.Type == dialect.EventUsage {
			t.Errorf("EventUsage before message_delta at %d", i)
		}
	}
}

func TestStreamDecodeEdges(t *testing.T) {
	var d StreamDecoder
	d.Reset()
	// No event name: the data type decides. Error frames carry their data.
	out := d.Decode(sse.Event{Data: []byte(`{"type":"error","error":{"type":"overloaded_error","message":"x"}}`)}, nil)
	if len(out) != 1 || out[0].Type != dialect.EventError || !bytes.Contains(out[0].Raw, []byte("overloaded")) {
		t.Fatalf("%+v", out)
	}
	// redacted thinking is dropped; stop_sequence kept; start synthesized when missing.
	d.Reset()
	out = d.Decode(sse.Event{Name: []byte("content_block_start"), Data: []byte(`{"type":"content_block_start","index":0,"content_block":{"type":"redacted_thinking","data":"zz"}}`)}, nil)
	if len(out) != 1 || out[0].Type != dialect.EventStart {
		t.Fatalf("%+v", out)
	}
	out = d.Decode(sse.Event{Name: []byte("message_delta"), Data: []byte(`{"type":"message_delta","delta":{"stop_reason":"stop_sequence","stop_sequence":"END"},"usage":{"output_tokens":3}}`)}, nil)
	if out[0].Stop != dialect.StopSequence || out[0].StopSequence != "END" || out[1].Usage.Output != 3 {
		t.Fatalf("%+v", out)
	}
	// A tool_use that starts with a non-empty input passes it as arguments text.
	d.Reset()
	out = d.Decode(sse.Event{Name: []byte("content_block_start"), Data: []byte(`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"n","input":{"a":"b"}}}`)}, nil)
	if len(out) != 3 || out[2].Type != dialect.EventToolArgs || string(out[2].Text) != `"{\"a\":\"b\"}"` {
		t.Fatalf("%+v", out)
	}
}

// accumulate splits an Anthropic SSE byte stream, checking that every frame has an event line
// whose name matches the data type, and accumulates it with the official SDK.
func accumulate(t *testing.T, stream []byte) sdk.Message {
	t.Helper()
	var msg sdk.Message
	for _, frame := range strings.Split(strings.TrimSuffix(string(stream), "\n\n"), "\n\n") {
		name, data, ok := strings.Cut(frame, "\ndata: ")
		if !ok || !strings.HasPrefix(name, "event: ") || strings.Contains(data, "\n") {
			t.Fatalf("bad frame %q", frame)
		}
		var ev sdk.MessageStreamEventUnion
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("%v: %s", err, data)
		}
		if ev.Type != strings.TrimPrefix(name, "event: ") {
			t.Fatalf("event name %q, data type %q", name, ev.Type)
		}
		if err := msg.Accumulate(ev); err != nil {
			t.Fatalf("accumulate: %v\nstream:\n%s", err, stream)
		}
	}
	return msg
}

// checkOneOpenBlock: block starts are contiguous from 0 and a block stops before the next
// starts, as the Anthropic API streams.
func checkOneOpenBlock(t *testing.T, stream []byte) {
	t.Helper()
	open, next := -1, 0
	for _, frame := range strings.Split(string(stream), "\n\n") {
		_, data, _ := strings.Cut(frame, "\ndata: ")
		var f struct {
			Type  string `json:"type"`
			Index int    `json:"index"`
		}
		_ = json.Unmarshal([]byte(data), &f)
		switch f.Type {
		case "content_block_start":
			if open >= 0 || f.Index != next {
				t.Fatalf("block %d starts while %d open (next %d)\n%s", f.Index, open, next, stream)
			}
			open, next = f.Index, next+1
		case "content_block_delta", "content_block_stop":
			if f.Index != open {
				t.Fatalf("%s for %d while %d open\n%s", f.Type, f.Index, open, stream)
			}
			if f.Type == "content_block_stop" {
				open = -1
			}
		case "message_delta":
			if open >= 0 {
				t.Fatalf("message_delta with block %d open", open)
			}
		}
	}
}

func encodeAll(t *testing.T, evs []dialect.Event) []byte {
	var e StreamEncoder
	e.Reset("caller-model", "req_9", true)
	var out []byte
	for _, ev := range evs {
		out = e.Append(out, ev)
	}
	checkOneOpenBlock(t, out)
	return out
}

func lit(s string) []byte { b, _ := json.Marshal(s); return b }

func TestStreamEncodeSDK(t *testing.T) {
	evs := []dialect.Event{
		{Type: dialect.EventStart, ID: "chatcmpl-1"},
		{Type: dialect.EventReasoning, Text: lit("plan")},
		{Type: dialect.EventText, Text: lit("Hel")},
		{Type: dialect.EventText, Text: lit("lo \"x\"\n")},
		{Type: dialect.EventToolCall, ToolIndex: 0, ID: "call_a", Name: "f"},
		{Type: dialect.EventToolArgs, ToolIndex: 0, Text: lit(`{"q":`)},
		{Type: dialect.EventToolArgs, ToolIndex: 0, Text: lit(`"v"}`)},
		{Type: dialect.EventToolCall, ToolIndex: 1, ID: "call.b", Name: "g"},
		{Type: dialect.EventToolArgs, ToolIndex: 1, Text: lit(`{}`)},
		{Type: dialect.EventFinish, Stop: dialect.StopToolUse},
		{Type: dialect.EventUsage, Usage: dialect.Usage{Input: 30, Cached: 20, CacheWrite: 1, Output: 8, Reasoning: 3}},
		{Type: dialect.EventDone},
	}
	out := encodeAll(t, evs)
	m := accumulate(t, out)
	if m.ID != "msg_req_9" || m.Model != "caller-model" || m.StopReason != "tool_use" || len(m.Content) != 4 {
		t.Fatalf("%+v\n%s", m, out)
	}
	if m.Content[0].Thinking != "plan" || m.Content[1].Text != "Hello \"x\"\n" ||
		m.Content[2].ID != "call_a" || string(m.Content[2].Input) != `{"q":"v"}` ||
		m.Content[3].ID != toolIDString("call.b") || string(m.Content[3].Input) != `{}` {
		t.Fatalf("content %+v\n%s", m.Content, out)
	}
	if u := m.Usage; u.InputTokens != 30 || u.CacheReadInputTokens != 20 || u.CacheCreationInputTokens != 1 || u.OutputTokens != 8 || u.OutputTokensDetails.ThinkingTokens != 3 {
		t.Fatalf("usage %+v", u)
	}
}

// TestStreamEncodeInterleavedTools is the failure kind: fragments of parallel calls
// interleave upstream; each call's accumulated arguments must be valid JSON under its own id.
func TestStreamEncodeInterleavedTools(t *testing.T) {
	call := func(k int, id string) dialect.Event {
		return dialect.Event{Type: dialect.EventToolCall, ToolIndex: k, ID: id, Name: "fn" + id}
	}
	arg := func(k int, s string) dialect.Event {
		return dialect.Event{Type: dialect.EventToolArgs, ToolIndex: k, Text: lit(s)}
	}
	cases := map[string][]dialect.Event{
		"interleaved": {call(0, "a"), call(1, "b"), call(2, "c"), arg(1, `{"x":`), arg(0, `{"y":`), arg(2, `{"z":"}{"`), arg(0, `[1,{"k":2}]}`),
			arg(2, `}`), arg(1, `"\"}"}`), {Type: dialect.EventFinish, Stop: dialect.StopToolUse}, {Type: dialect.EventDone}},
		"sequential": {call(0, "a"), arg(0, `{"y":[1,{"k":2}]}`), call(1, "b"), arg(1, `{"x":"\"}"}`), call(2, "c"), arg(2, `{"z":"}{"}`),
			{Type: dialect.EventDone}},
		"args before start, text after tools": {arg(1, `{"x":"\"}"}`), call(0, "a"), arg(0, `{"y":[1,{"k":2}]`), call(1, "b"),
			{Type: dialect.EventText, Text: lit("late")}, arg(0, `}`), call(2, "c"), arg(2, `{"z":"}{"}`), {Type: dialect.EventDone}},
	}
	for name, evs := range cases {
		t.Run(name, func(t *testing.T) {
			out := encodeAll(t, evs)
			m := accumulate(t, out)
			want := map[string]string{"a": `{"y":[1,{"k":2}]}`, "b": `{"x":"\"}"}`, "c": `{"z":"}{"}`}
			got := map[string]string{}
			for _, c := range m.Content {
				if c.Type == "tool_use" {
					if !json.Valid(c.Input) {
						t.Fatalf("invalid arguments for %s: %s", c.ID, c.Input)
					}
					got[c.ID] = string(c.Input)
					if c.Name != "fn"+c.ID {
						t.Fatalf("name %s under id %s", c.Name, c.ID)
					}
				}
			}
			for id, w := range want {
				var a, b any
				_ = json.Unmarshal([]byte(got[id]), &a)
				_ = json.Unmarshal([]byte(w), &b)
				if !jsonEqual(a, b) {
					t.Fatalf("call %s: %s, want %s\n%s", id, got[id], w, out)
				}
			}
			if m.StopReason != "tool_use" {
				t.Fatalf("stop %s", m.StopReason)
			}
		})
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return a != nil && string(x) == string(y)
}

func TestStreamEncodeRefusalAndStops(t *testing.T) {
	out := encodeAll(t, []dialect.Event{{Type: dialect.EventRefusal, Text: lit("I can't")}, {Type: dialect.EventFinish, Stop: dialect.StopEndTurn}, {Type: dialect.EventDone}})
	m := accumulate(t, out)
	if m.StopReason != "refusal" || m.Content[0].Text != "I can't" {
		t.Fatalf("%s", out)
	}
	out = encodeAll(t, []dialect.Event{{Type: dialect.EventText, Text: lit("x")}, {Type: dialect.EventFinish, Stop: dialect.StopMaxTokens}, {Type: dialect.EventError}, {Type: dialect.EventDone}, {Type: dialect.EventText, Text: lit("after")}})
	m = accumulate(t, out)
	if m.StopReason != "max_tokens" || len(m.Content) != 1 || m.StopSequence != "" {
		t.Fatalf("%s", out)
	}
}

// TestStreamRoundTrip: an Anthropic transcript decoded to canonical events and encoded back
// accumulates (official SDK) to the same content as the original.
func TestStreamRoundTrip(t *testing.T) {
	var orig []byte
	for _, f := range transcript {
		orig = append(orig, "event: "+f[0]+"\ndata: "+f[1]+"\n\n"...)
	}
	a := accumulate(t, orig)
	b := accumulate(t, encodeAll(t, decodeAll(t, transcript)))
	ja, _ := json.Marshal(a.Content)
	jb, _ := json.Marshal(b.Content)
	if string(ja) != string(jb) || a.StopReason != b.StopReason || a.Usage.OutputTokens != b.Usage.OutputTokens ||
		a.Usage.InputTokens != b.Usage.InputTokens || a.Usage.CacheReadInputTokens != b.Usage.CacheReadInputTokens {
		t.Fatalf("\n%s\n%s", ja, jb)
	}
}

func TestStreamNoAllocs(t *testing.T) {
	ev := sse.Event{Name: []byte("content_block_delta"), Data: []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello \"w\"\n"}}`)}
	var d StreamDecoder
	var e StreamEncoder
	e.Reset("m", "r", false)
	out := make([]dialect.Event, 0, 4)
	dst := make([]byte, 0, 4096)
	dst = e.Append(dst, dialect.Event{Type: dialect.EventText, Text: lit("x")})
	n := testing.AllocsPerRun(100, func() {
		out = d.Decode(ev, out[:0])
		dst = e.Append(dst[:0], out[0])
	})
	if n > 0 {
		t.Fatalf("%v allocs per event", n)
	}
}

func BenchmarkStreamDecode(b *testing.B) {
	ev := sse.Event{Name: []byte("content_block_delta"), Data: []byte(`{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"city\": \"Par"}}`)}
	var d StreamDecoder
	d.Reset()
	d.Decode(sse.Event{Name: []byte("content_block_start"), Data: []byte(transcript[9][1])}, nil)
	d.blocks = append(d.blocks[:0], upBlock{}, upBlock{}, upBlock{kind: blockTool})
	out := make([]dialect.Event, 0, 4)
	b.ReportAllocs()
	for b.Loop() {
		out = d.Decode(ev, out[:0])
	}
}

func BenchmarkStreamEncode(b *testing.B) {
	var e StreamEncoder
	e.Reset("caller-model", "req_1", false)
	dst := make([]byte, 0, 4096)
	dst = e.Append(dst, dialect.Event{Type: dialect.EventText, Text: []byte(`"a"`)})
	ev := dialect.Event{Type: dialect.EventText, Text: []byte(`"Hello \"world\"\n, a typical delta"`)}
	b.ReportAllocs()
	for b.Loop() {
		dst = e.Append(dst[:0], ev)
	}
}
