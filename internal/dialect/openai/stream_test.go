package openai_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	sdk "github.com/openai/openai-go/v3"

	"github.com/switchyard-gw/switchyard/internal/dialect"
	"github.com/switchyard-gw/switchyard/internal/dialect/openai"
	"github.com/switchyard-gw/switchyard/internal/sse"
)

// upstreamTranscript is an OpenAI upstream stream with reasoning, text, two parallel tool calls
// whose argument fragments interleave, a finish reason, a usage chunk with cached tokens, a
// keep-alive and [DONE] (wire.md §1.5).
var upstreamTranscript = []string{
	`{"id":"chatcmpl-up1","object":"chat.completion.chunk","created":1,"model":"gpt-x","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"finish_reason":null}],"usage":null}`,
	`{"id":"chatcmpl-up1","object":"chat.completion.chunk","created":1,"model":"gpt-x","choices":[{"index":0,"delta":{"reasoning_content":"think \"hard\""},"finish_reason":null}],"usage":null}`,
	`{"id":"chatcmpl-up1","object":"chat.completion.chunk","created":1,"model":"gpt-x","choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}],"usage":null}`,
	`: keep-alive`,
	`{"id":"chatcmpl-up1","object":"chat.completion.chunk","created":1,"model":"gpt-x","choices":[{"index":0,"delta":{"content":"lo\n\u00e9"},"finish_reason":null}],"usage":null}`,
	`{"id":"chatcmpl-up1","object":"chat.completion.chunk","created":1,"model":"gpt-x","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_A","type":"function","function":{"name":"weather","arguments":""}}]},"finish_reason":null}],"usage":null}`,
	`{"id":"chatcmpl-up1","object":"chat.completion.chunk","created":1,"model":"gpt-x","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_B","type":"function","function":{"name":"time","arguments":"{\"tz\":"}}]},"finish_reason":null}],"usage":null}`,
	`{"id":"chatcmpl-up1","object":"chat.completion.chunk","created":1,"model":"gpt-x","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]},"finish_reason":null}],"usage":null}`,
	`{"id":"chatcmpl-up1","object":"chat.completion.chunk","created":1,"model":"gpt-x","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"\"CET\"}"}}]},"finish_reason":null}],"usage":null}`,
	`{"id":"chatcmpl-up1","object":"chat.completion.chunk","created":1,"model":"gpt-x","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}},{"index":1,"function":{"arguments":""}}]},"finish_reason":null}],"usage":null}`,
	`{"id":"chatcmpl-up1","object":"chat.completion.chunk","created":1,"model":"gpt-x","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"usage":null}`,
	`{"id":"chatcmpl-up1","object":"chat.completion.chunk","created":1,"model":"gpt-x","choices":[],"usage":{"prompt_tokens":100,"completion_tokens":20,"total_tokens":120,"prompt_tokens_details":{"cached_tokens":30},"completion_tokens_details":{"reasoning_tokens":5}}}`,
	`[DONE]`,
}

func decodeAll(t testing.TB, frames []string) []dialect.Event {
	var d openai.StreamDecoder
	d.Reset()
	var out []dialect.Event
	for _, f := range frames {
		ev := sse.Event{Data: []byte(f)}
		if strings.HasPrefix(f, ":") { // a comment line carries no data
			ev.Data = nil
		}
		n := len(out)
		out = d.Decode(ev, out)
		for i := n; i < len(out); i++ { // Text aliases the frame: copy, as a consumer must
			out[i].Text = bytes.Clone(out[i].Text)
		}
	}
	return out
}

func evString(e dialect.Event) string {
	switch e.Type {
	case dialect.EventStart:
		return "start " + e.ID
	case dialect.EventText:
		return "text " + string(e.Text)
	case dialect.EventReasoning:
		return "reasoning " + string(e.Text)
	case dialect.EventRefusal:
		return "refusal " + string(e.Text)
	case dialect.EventToolCall:
		return fmt.Sprintf("call %d %s %s", e.ToolIndex, e.ID, e.Name)
	case dialect.EventToolArgs:
		return fmt.Sprintf("args %d %s", e.ToolIndex, e.Text)
	case dialect.EventFinish:
		return "finish " + string(e.Stop)
	case dialect.EventUsage:
		return fmt.Sprintf("usage %+v", e.Usage)
	case dialect.EventDone:
		return "done"
	case dialect.EventError:
		return "error " + string(e.Raw)
	}
	return "?"
}

// TestStreamDecode runs a realistic upstream transcript through the decoder (wire.md §5.5):
// text is the raw literal, tool indexes are the chunk's, empty fragments are skipped, usage is
// canonical additive (Input = prompt - cached).
func TestStreamDecode(t *testing.T) {
	got := decodeAll(t, upstreamTranscript)
	want := []string{
		"start chatcmpl-up1",
		`reasoning "think \"hard\""`,
		`text "Hel"`,
		`text "lo\n\u00e9"`,
		"call 0 call_A weather",
		"call 1 call_B time",
		`args 1 "{\"tz\":"`,
		`args 0 "{\"city\":"`,
		`args 1 "\"CET\"}"`,
		`args 0 "\"Paris\"}"`,
		"finish tool_use",
		"usage {Input:70 Cached:30 CacheWrite:0 CacheWrite1h:0 Output:20 Reasoning:5 WebSearchRequests:0}",
		"done",
	}
	var gs []string
	for _, e := range got {
		gs = append(gs, evString(e))
	}
	if strings.Join(gs, "\n") != strings.Join(want, "\n") {
		t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(gs, "\n"), strings.Join(want, "\n"))
	}
	for _, e := range got {
		if e.Type == dialect.EventStart && e.Type.Semantic() {
			t.Fatal("the role chunk must not commit (R-FAIL-2)")
		}
	}
}

// TestStreamDecodeEdges: finish reasons, refusals, in-stream errors, ids repeated on every
// fragment, and a tool call whose first fragment carries arguments.
func TestStreamDecodeEdges(t *testing.T) {
	chunk := func(delta, finish string) string {
		return `{"id":"c","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + finish + `}]}`
	}
	for _, c := range []struct {
		name   string
		frames []string
		want   []string
	}{
		{"stop", []string{chunk(`{}`, `"stop"`)}, []string{"start c", "finish end_turn"}},
		{"length", []string{chunk(`{}`, `"length"`)}, []string{"start c", "finish max_tokens"}},
		{"function_call", []string{chunk(`{}`, `"function_call"`)}, []string{"start c", "finish tool_use"}},
		{"content_filter", []string{chunk(`{}`, `"content_filter"`)}, []string{"start c", "finish refusal"}},
		{"refusal", []string{chunk(`{"refusal":"no"}`, `null`)}, []string{"start c", `refusal "no"`}},
		{"reasoning field", []string{chunk(`{"reasoning":"r"}`, `null`)}, []string{"start c", `reasoning "r"`}},
		{"error frame", []string{chunk(`{"content":"a"}`, `null`), `{"error":{"message":"boom","type":"server_error"}}`},
			[]string{"start c", `text "a"`, `error {"error":{"message":"boom","type":"server_error"}}`}},
		{"id on every fragment, args in first",
			[]string{chunk(`{"tool_calls":[{"index":0,"id":"x","function":{"name":"f","arguments":"{"}}]}`, `null`),
				chunk(`{"tool_calls":[{"index":0,"id":"x","function":{"arguments":"}"}}]}`, `null`)},
			[]string{"start c", "call 0 x f", `args 0 "{"`, `args 0 "}"`}},
		{"garbage and empty data ignored", []string{``, `not json`, chunk(`{"content":""}`, `null`)}, []string{"start c"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var gs []string
			for _, e := range decodeAll(t, c.frames) {
				gs = append(gs, evString(e))
			}
			if strings.Join(gs, "|") != strings.Join(c.want, "|") {
				t.Fatalf("got  %q\nwant %q", gs, c.want)
			}
		})
	}
}

// anthropicStyleEvents is a canonical event sequence as an Anthropic upstream decoder yields it:
// thinking with a signature, text, and two tool calls whose argument fragments interleave.
func anthropicStyleEvents() []dialect.Event {
	lit := func(s string) []byte { b, _ := json.Marshal(s); return b }
	return []dialect.Event{
		{Type: dialect.EventStart, ID: "msg_01"},
		{Type: dialect.EventReasoning, Text: lit("let me think")},
		{Type: dialect.EventSignature, Text: lit("sig")},
		{Type: dialect.EventText, Text: lit("Hello <b> & \"you\"\n")},
		{Type: dialect.EventToolCall, ToolIndex: 0, ID: "toolu_A", Name: "weather"},
		{Type: dialect.EventToolArgs, ToolIndex: 0, Text: lit("")},
		{Type: dialect.EventToolCall, ToolIndex: 1, ID: "toolu_B", Name: "time"},
		{Type: dialect.EventToolArgs, ToolIndex: 1, Text: lit(`{"tz":`)},
		{Type: dialect.EventToolArgs, ToolIndex: 0, Text: lit(`{"city": "Par`)},
		{Type: dialect.EventToolArgs, ToolIndex: 1, Text: lit(`"CET"}`)},
		{Type: dialect.EventToolArgs, ToolIndex: 0, Text: lit(`is"}`)},
		{Type: dialect.EventUsage, Usage: dialect.Usage{Input: 10, Cached: 20, CacheWrite: 5, Output: 7, Reasoning: 3}},
		{Type: dialect.EventFinish, Stop: dialect.StopToolUse},
		{Type: dialect.EventUsage, Usage: dialect.Usage{Input: 10, Cached: 20, CacheWrite: 5, Output: 30, Reasoning: 3}},
		{Type: dialect.EventDone},
	}
}

// sdkAccumulate parses the encoder's frames with openai-go's own types and accumulator, as an
// OpenAI SDK client would. It returns the accumulation, the chunk ids seen, how many chunks had
// choices == [] (usage chunks) and whether [DONE] ended the stream.
func sdkAccumulate(t *testing.T, stream []byte) (acc sdk.ChatCompletionAccumulator, ids map[string]bool, usageChunks int, done bool) {
	acc, ids, usageChunks, done, _ = sdkAccumulateUsage(t, stream)
	return
}

// sdkAccumulateUsage is sdkAccumulate that also returns the usage of the last usage chunk as the
// SDK parsed it (the v3 accumulator does not copy cache_write_tokens).
func sdkAccumulateUsage(t *testing.T, stream []byte) (acc sdk.ChatCompletionAccumulator, ids map[string]bool, usageChunks int, done bool, usage sdk.CompletionUsage) {
	t.Helper()
	ids = map[string]bool{}
	if !bytes.HasSuffix(stream, []byte("\n\n")) {
		t.Fatalf("stream does not end with a blank line: %q", stream)
	}
	for _, frame := range strings.Split(strings.TrimSuffix(string(stream), "\n\n"), "\n\n") {
		data, ok := strings.CutPrefix(frame, "data: ")
		if !ok || strings.Contains(data, "\n") {
			t.Fatalf("bad frame %q", frame)
		}
		if done {
			t.Fatalf("frame after [DONE]: %q", frame)
		}
		if data == "[DONE]" {
			done = true
			continue
		}
		var chunk sdk.ChatCompletionChunk
		if err := json.Unmarshal([]byte(data), &chunk); err != nil {
			t.Fatalf("SDK cannot parse %s: %v", data, err)
		}
		if chunk.Object != "chat.completion.chunk" || chunk.Model != "gpt-caller" {
			t.Fatalf("object/model wrong: %s", data)
		}
		ids[chunk.ID] = true
		if len(chunk.Choices) == 0 {
			usageChunks++
			usage = chunk.Usage
		}
		if !acc.AddChunk(chunk) {
			t.Fatalf("accumulator rejected %s", data)
		}
	}
	return acc, ids, usageChunks, done, usage
}

// TestStreamEncodeSDK: canonical events through the encoder, parsed and accumulated by openai-go.
// Interleaved argument fragments of parallel calls must accumulate into valid JSON under the
// right call id, the id is constant, and the usage chunk appears exactly when asked (the two
// failure kinds of issue 3).
func TestStreamEncodeSDK(t *testing.T) {
	for _, includeUsage := range []bool{false, true} {
		t.Run(fmt.Sprintf("include_usage=%v", includeUsage), func(t *testing.T) {
			var e openai.StreamEncoder
			e.Reset("gpt-caller", "req_123", includeUsage)
			var stream []byte
			for _, ev := range anthropicStyleEvents() {
				stream = e.Append(stream, ev)
			}
			acc, ids, usageChunks, done, chunkUsage := sdkAccumulateUsage(t, stream)
			if !done || len(ids) != 1 || !ids["chatcmpl-req_123"] {
				t.Fatalf("done=%v ids=%v", done, ids)
			}
			if !strings.HasPrefix(string(stream), `data: {"id":"chatcmpl-req_123","object":"chat.completion.chunk","created":`) ||
				!strings.Contains(string(stream[:200]), `"delta":{"role":"assistant","content":""}`) {
				t.Fatalf("first chunk is not the role chunk: %.200s", stream)
			}
			m := acc.Choices[0].Message
			if m.Content != "Hello <b> & \"you\"\n" || acc.Choices[0].FinishReason != "tool_calls" {
				t.Fatalf("content %q finish %q", m.Content, acc.Choices[0].FinishReason)
			}
			want := map[string]string{"toolu_A": `{"city":"Paris"}`, "toolu_B": `{"tz":"CET"}`}
			names := map[string]string{"toolu_A": "weather", "toolu_B": "time"}
			if len(m.ToolCalls) != 2 {
				t.Fatalf("tool calls %+v", m.ToolCalls)
			}
			for _, tc := range m.ToolCalls {
				var got, w any
				if err := json.Unmarshal([]byte(tc.Function.Arguments), &got); err != nil {
					t.Fatalf("call %s arguments %q are not JSON: %v", tc.ID, tc.Function.Arguments, err)
				}
				_ = json.Unmarshal([]byte(want[tc.ID]), &w)
				if fmt.Sprint(got) != fmt.Sprint(w) || tc.Function.Name != names[tc.ID] {
					t.Fatalf("call %s %s args %s, want %s %s", tc.ID, tc.Function.Name, tc.Function.Arguments, names[tc.ID], want[tc.ID])
				}
			}
			if !strings.Contains(string(stream), `"delta":{"reasoning_content":"let me think"}`) {
				t.Fatal("reasoning not sent as reasoning_content")
			}
			if !includeUsage {
				if usageChunks != 0 || strings.Contains(string(stream), `"usage"`) {
					t.Fatal("usage sent to a caller that did not ask for it")
				}
				return
			}
			u := acc.Usage
			if usageChunks != 1 || u.PromptTokens != 35 || u.CompletionTokens != 30 || u.TotalTokens != 65 ||
				u.PromptTokensDetails.CachedTokens != 20 || chunkUsage.PromptTokensDetails.CacheWriteTokens != 5 ||
				u.CompletionTokensDetails.ReasoningTokens != 3 {
				t.Fatalf("usage chunks %d usage %+v", usageChunks, u)
			}
			if strings.Count(string(stream), `"usage":null`) != strings.Count(string(stream), "data: ")-2 {
				t.Fatal(`every chunk but the usage chunk must carry "usage":null`)
			}
		})
	}
}

// TestStreamEncodeNoUsageReported: a caller that asked for usage gets a usage chunk even when the
// upstream reported none (zeros), never a missing one.
func TestStreamEncodeNoUsageReported(t *testing.T) {
	var e openai.StreamEncoder
	e.Reset("gpt-caller", "r", true)
	out := e.Append(nil, dialect.Event{Type: dialect.EventDone})
	_, _, usageChunks, done := sdkAccumulate(t, out)
	if usageChunks != 1 || !done {
		t.Fatalf("usage chunks %d done %v: %s", usageChunks, done, out)
	}
}

// TestStreamFinishReasons maps every canonical stop reason (wire.md §5.3).
func TestStreamFinishReasons(t *testing.T) {
	for stop, want := range map[dialect.StopReason]string{
		dialect.StopEndTurn: "stop", dialect.StopSequence: "stop", dialect.StopPauseTurn: "stop",
		dialect.StopMaxTokens: "length", dialect.StopContextWindow: "length",
		dialect.StopToolUse: "tool_calls", dialect.StopRefusal: "content_filter",
	} {
		var e openai.StreamEncoder
		e.Reset("gpt-caller", "r", false)
		out := e.Append(nil, dialect.Event{Type: dialect.EventFinish, Stop: stop})
		acc, _, _, _ := sdkAccumulate(t, out)
		if got := acc.Choices[0].FinishReason; got != want {
			t.Errorf("%s -> %q, want %q", stop, got, want)
		}
	}
}

// TestStreamOpenAIThroughCanonical: an OpenAI upstream transcript decoded and re-encoded
// accumulates in openai-go to what the upstream said.
func TestStreamOpenAIThroughCanonical(t *testing.T) {
	var e openai.StreamEncoder
	e.Reset("gpt-caller", "r9", true)
	var stream []byte
	for _, ev := range decodeAll(t, upstreamTranscript) {
		stream = e.Append(stream, ev)
	}
	acc, _, _, _ := sdkAccumulate(t, stream)
	m := acc.Choices[0].Message
	if m.Content != "Hello\né" || len(m.ToolCalls) != 2 || m.ToolCalls[0].Function.Arguments != `{"city":"Paris"}` ||
		m.ToolCalls[1].ID != "call_B" || m.ToolCalls[1].Function.Arguments != `{"tz":"CET"}` || acc.Usage.PromptTokens != 100 ||
		acc.Usage.PromptTokensDetails.CachedTokens != 30 {
		t.Fatalf("accumulated %+v usage %+v", m, acc.Usage)
	}
}

// steadyFrames are the per-event hot paths: a text delta and a tool-argument fragment.
var steadyFrames = map[string][]byte{
	"text":      []byte(`{"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1767225600,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_44709d6fcb","choices":[{"index":0,"delta":{"content":" Paris"},"logprobs":null,"finish_reason":null}],"usage":null}`),
	"tool-args": []byte(`{"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1767225600,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_44709d6fcb","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{\"city\":"}}]},"logprobs":null,"finish_reason":null}],"usage":null}`),
	"usage":     frameUsage,
}

// TestStreamNoAllocs: Decode and Append allocate nothing per steady-state event.
func TestStreamNoAllocs(t *testing.T) {
	var d openai.StreamDecoder
	d.Reset()
	out := make([]dialect.Event, 0, 8)
	out = d.Decode(sse.Event{Data: frameRole}, out)
	for name, f := range steadyFrames {
		ev := sse.Event{Data: f}
		if n := testing.AllocsPerRun(100, func() { out = d.Decode(ev, out[:0]) }); n != 0 {
			t.Errorf("Decode %s: %.1f allocs per event", name, n)
		}
	}
	var e openai.StreamEncoder
	e.Reset("gpt-caller", "req", true)
	dst := e.Append(make([]byte, 0, 1024), dialect.Event{Type: dialect.EventStart})
	for _, ev := range anthropicStyleEvents()[1:] {
		if n := testing.AllocsPerRun(100, func() { dst = e.Append(dst[:0], ev) }); n != 0 {
			t.Errorf("Append %s: %.1f allocs per event", evString(ev), n)
		}
	}
}

// BenchmarkStreamDecode is the per-event cost of decoding an OpenAI upstream chunk.
func BenchmarkStreamDecode(b *testing.B) {
	for _, name := range []string{"text", "tool-args", "usage"} {
		b.Run(name, func(b *testing.B) {
			var d openai.StreamDecoder
			d.Reset()
			out := d.Decode(sse.Event{Data: frameRole}, make([]dialect.Event, 0, 8))
			ev := sse.Event{Data: steadyFrames[name]}
			b.ReportAllocs()
			for b.Loop() {
				out = d.Decode(ev, out[:0])
			}
		})
	}
}

// BenchmarkStreamEncode is the per-event cost of encoding a canonical event as an OpenAI chunk.
func BenchmarkStreamEncode(b *testing.B) {
	lit := []byte(`" Paris, the capital of France"`)
	for _, c := range []struct {
		name string
		ev   dialect.Event
	}{
		{"text", dialect.Event{Type: dialect.EventText, Text: lit}},
		{"tool-args", dialect.Event{Type: dialect.EventToolArgs, ToolIndex: 1, Text: []byte(`"{\"city\":"`)}},
		{"done-with-usage", dialect.Event{Type: dialect.EventDone}},
	} {
		b.Run(c.name, func(b *testing.B) {
			var e openai.StreamEncoder
			e.Reset("gpt-4o-mini", "req_0123456789abcdef", true)
			dst := e.Append(make([]byte, 0, 1024), dialect.Event{Type: dialect.EventStart})
			b.ReportAllocs()
			for b.Loop() {
				dst = e.Append(dst[:0], c.ev)
			}
		})
	}
}

// FuzzStreamDecode: the decoder never panics on any frame, and every text it passes on is a
// JSON string literal.
func FuzzStreamDecode(f *testing.F) {
	for _, fr := range upstreamTranscript {
		f.Add([]byte(fr))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var d openai.StreamDecoder
		for _, e := range d.Decode(sse.Event{Data: data}, nil) {
			if e.Text != nil {
				var s string
				if json.Unmarshal(e.Text, &s) != nil && json.Valid(data) {
					t.Fatalf("text %q is not a string literal", e.Text)
				}
			}
		}
	})
}
