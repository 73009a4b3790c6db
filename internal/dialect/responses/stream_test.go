package responses_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/switchyard-gw/switchyard/internal/dialect"
	resp "github.com/switchyard-gw/switchyard/internal/dialect/responses"
	"github.com/switchyard-gw/switchyard/internal/failure"
)

func lit(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}

// textEvents: reasoning with a signature, text with escapes and non-ASCII, then a refusal part in
// the same message, max tokens, usage.
var textEvents = []dialect.Event{
	{Type: dialect.EventStart, ID: "up_1"},
	{Type: dialect.EventReasoning, Text: lit("think ")},
	{Type: dialect.EventReasoning, Text: lit("\"hard\"")},
	{Type: dialect.EventSignature, Text: lit("SIG==")},
	{Type: dialect.EventText, Text: lit("Hel")},
	{Type: dialect.EventText, Text: lit("")},
	{Type: dialect.EventText, Text: lit("lo\n<é>")},
	{Type: dialect.EventRefusal, Text: lit("I can't")},
	{Type: dialect.EventRefusal, Text: lit(" do that")},
	{Type: dialect.EventFinish, Stop: dialect.StopMaxTokens},
	{Type: dialect.EventUsage, Usage: dialect.Usage{Input: 10, Cached: 30, CacheWrite: 2, Output: 20, Reasoning: 5}},
	{Type: dialect.EventDone},
}

// toolEvents: two parallel calls whose argument fragments interleave (as OpenAI upstreams send
// them), one with no arguments at all, after a text preamble; no EventStart.
var toolEvents = []dialect.Event{
	{Type: dialect.EventText, Text: lit("Checking.")},
	{Type: dialect.EventToolCall, ToolIndex: 0, ID: "call_A", Name: "weather"},
	{Type: dialect.EventToolCall, ToolIndex: 1, ID: "call_B", Name: "time"},
	{Type: dialect.EventToolArgs, ToolIndex: 1, Text: lit(`{"tz":`)},
	{Type: dialect.EventToolArgs, ToolIndex: 0, Text: lit(`{"city":`)},
	{Type: dialect.EventToolArgs, ToolIndex: 1, Text: lit(`"CET"}`)},
	{Type: dialect.EventToolArgs, ToolIndex: 0, Text: lit(`"Paris"}`)},
	{Type: dialect.EventToolArgs, ToolIndex: 0, Text: lit(``)},
	{Type: dialect.EventToolCall, ToolIndex: 2, ID: "call_C", Name: "noargs"},
	{Type: dialect.EventFinish, Stop: dialect.StopToolUse},
	{Type: dialect.EventUsage, Usage: dialect.Usage{Input: 7, Output: 3}},
	{Type: dialect.EventDone},
}

func encodeAll(events []dialect.Event) []byte {
	var e resp.StreamEncoder
	e.Reset("my-model", "req1", false)
	var out []byte
	for _, ev := range events {
		out = e.Append(out, ev)
	}
	return out
}

type frame struct {
	event string
	data  []byte
	ev    responses.ResponseStreamEventUnion
}

// parseFrames splits an SSE transcript and decodes every data object with the official type,
// checking the frame shape: an event line, a data line whose type repeats it, and
// sequence_number 0, 1, 2, ...
func parseFrames(t *testing.T, b []byte) []frame {
	t.Helper()
	if !bytes.HasSuffix(b, []byte("\n\n")) {
		t.Fatalf("transcript does not end with a blank line")
	}
	var out []frame
	for i, raw := range strings.Split(strings.TrimSuffix(string(b), "\n\n"), "\n\n") {
		lines := strings.Split(raw, "\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[0], "event: ") || !strings.HasPrefix(lines[1], "data: ") {
			t.Fatalf("frame %d is not event+data: %q", i, raw)
		}
		f := frame{event: strings.TrimPrefix(lines[0], "event: "), data: []byte(strings.TrimPrefix(lines[1], "data: "))}
		if !json.Valid(f.data) {
			t.Fatalf("frame %d: invalid JSON %s", i, f.data)
		}
		if err := json.Unmarshal(f.data, &f.ev); err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if f.ev.Type != f.event {
			t.Errorf("frame %d: event %q, data type %q", i, f.event, f.ev.Type)
		}
		if f.ev.SequenceNumber != int64(i) {
			t.Errorf("frame %d: sequence_number %d", i, f.ev.SequenceNumber)
		}
		out = append(out, f)
	}
	return out
}

func types(fs []frame) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.event)
	}
	return out
}

// TestStreamText: the event sequence of wire.md §2.2 for reasoning, text and a refusal; the
// deltas accumulate to the .done texts and to the terminal Response, which equal what was fed.
func TestStreamText(t *testing.T) {
	fs := parseFrames(t, encodeAll(textEvents))
	want := []string{
		"response.created", "response.in_progress",
		"response.output_item.added", "response.content_part.added", "response.reasoning_text.delta", "response.reasoning_text.delta",
		"response.reasoning_text.done", "response.content_part.done", "response.output_item.done",
		"response.output_item.added", "response.content_part.added", "response.output_text.delta", "response.output_text.delta",
		"response.output_text.done", "response.content_part.done",
		"response.content_part.added", "response.refusal.delta", "response.refusal.delta", "response.refusal.done", "response.content_part.done",
		"response.output_item.done", "response.incomplete",
	}
	if got := types(fs); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("events:\n got %v\nwant %v", got, want)
	}
	var text, reasoning, refusal string
	for _, f := range fs {
		switch f.event {
		case "response.output_text.delta":
			text += f.ev.AsResponseOutputTextDelta().Delta
		case "response.reasoning_text.delta":
			reasoning += f.ev.AsResponseReasoningTextDelta().Delta
		case "response.refusal.delta":
			refusal += f.ev.AsResponseRefusalDelta().Delta
		case "response.output_text.done":
			if d := f.ev.AsResponseOutputTextDone(); d.Text != text || d.ItemID != "msg_req1_1" || d.OutputIndex != 1 || d.ContentIndex != 0 {
				t.Errorf("output_text.done = %+v (accumulated %q)", d, text)
			}
		case "response.reasoning_text.done":
			if d := f.ev.AsResponseReasoningTextDone(); d.Text != reasoning {
				t.Errorf("reasoning_text.done %q, accumulated %q", d.Text, reasoning)
			}
		case "response.refusal.done":
			if d := f.ev.AsResponseRefusalDone(); d.Refusal != refusal || d.ContentIndex != 1 {
				t.Errorf("refusal.done = %+v, accumulated %q", d, refusal)
			}
		case "response.created", "response.in_progress":
			if r := f.ev.Response; r.Status != "in_progress" || r.Model != "my-model" || r.ID != "resp_req1" || len(r.Output) != 0 {
				t.Errorf("%s response = %s", f.event, f.data)
			}
		}
	}
	if text != "Hello\n<é>" || reasoning != `think "hard"` || refusal != "I can't do that" {
		t.Errorf("accumulated text %q reasoning %q refusal %q", text, reasoning, refusal)
	}
	final := fs[len(fs)-1].ev.AsResponseIncomplete().Response
	if final.Status != "incomplete" || final.IncompleteDetails.Reason != "max_output_tokens" || final.OutputText() != text {
		t.Errorf("final = %s", fs[len(fs)-1].data)
	}
	rs := final.Output[0].AsReasoning()
	if rs.EncryptedContent != "SIG==" || len(rs.Content) != 1 || rs.Content[0].Text != reasoning {
		t.Errorf("reasoning item = %+v", rs)
	}
	if m := final.Output[1].AsMessage(); m.Status != "incomplete" || len(m.Content) != 2 || m.Content[1].Refusal != refusal {
		t.Errorf("message item = %+v", m)
	}
	if u := final.Usage; u.InputTokens != 42 || u.InputTokensDetails.CachedTokens != 30 || u.OutputTokens != 20 || u.OutputTokensDetails.ReasoningTokens != 5 || u.TotalTokens != 62 {
		t.Errorf("usage = %+v", u)
	}
}

// TestStreamToolCalls: interleaved argument fragments land on the right call (item_id and
// output_index), the .done arguments and the terminal Response equal the concatenated
// fragments, and a call with no arguments ends with "{}".
func TestStreamToolCalls(t *testing.T) {
	fs := parseFrames(t, encodeAll(toolEvents))
	args := map[string]string{}
	items := map[int64]string{}
	for _, f := range fs {
		switch f.event {
		case "response.output_item.added":
			a := f.ev.AsResponseOutputItemAdded()
			items[a.OutputIndex] = a.Item.ID
		case "response.function_call_arguments.delta":
			d := f.ev.AsResponseFunctionCallArgumentsDelta()
			if items[d.OutputIndex] != d.ItemID {
				t.Errorf("delta item_id %q at output_index %d, added as %q", d.ItemID, d.OutputIndex, items[d.OutputIndex])
			}
			args[d.ItemID] += d.Delta
		case "response.function_call_arguments.done":
			d := f.ev.AsResponseFunctionCallArgumentsDone()
			if want := args[d.ItemID]; want != "" && d.Arguments != want {
				t.Errorf("%s done %q, accumulated %q", d.ItemID, d.Arguments, want)
			}
		}
	}
	final := fs[len(fs)-1]
	if final.event != "response.completed" {
		t.Fatalf("last event %q", final.event)
	}
	r := final.ev.AsResponseCompleted().Response
	want := []struct{ callID, name, args string }{{"call_A", "weather", `{"city":"Paris"}`}, {"call_B", "time", `{"tz":"CET"}`}, {"call_C", "noargs", "{}"}}
	if len(r.Output) != 4 || r.Output[0].Type != "message" || r.OutputText() != "Checking." {
		t.Fatalf("output = %s", final.data)
	}
	for i, w := range want {
		fc := r.Output[i+1].AsFunctionCall()
		if fc.CallID != w.callID || fc.Name != w.name || fc.Arguments != w.args || fc.Status != "completed" {
			t.Errorf("call %d = %+v, want %+v", i, fc, w)
		}
		if a, ok := args[fc.ID]; ok && a != w.args {
			t.Errorf("call %d deltas %q, want %q", i, a, w.args)
		}
	}
}

// TestStreamError: the terminal failure is one response.failed frame, the last one; it carries
// the failed Response (with the output so far) and the top-level error that SDKs turn into a
// stream error (R-FAIL-4, wire.md §7.4).
func TestStreamError(t *testing.T) {
	var e resp.StreamEncoder
	e.Reset("my-model", "req1", true)
	var out []byte
	for _, ev := range toolEvents[:4] {
		out = e.Append(out, ev)
	}
	fe := &failure.Error{Class: failure.UpstreamTruncated, Msg: "the provider failed after the response started; the response is incomplete"}
	out = e.AppendError(out, fe)
	out = e.Append(out, dialect.Event{Type: dialect.EventDone}) // nothing after the failure
	fs := parseFrames(t, out)
	last := fs[len(fs)-1]
	if last.event != "response.failed" {
		t.Fatalf("last event %q", last.event)
	}
	r := last.ev.AsResponseFailed().Response
	if r.Status != "failed" || r.Error.Code != "server_error" || r.Error.Message != fe.Msg || len(r.Output) != 3 {
		t.Errorf("failed response = %s", last.data)
	}
	var top struct {
		Error struct {
			Type, Message string
			Metadata      struct {
				ErrorType string `json:"error_type"`
			}
		}
		RequestID string `json:"request_id"`
	}
	if err := json.Unmarshal(last.data, &top); err != nil || top.Error.Type != "api_error" || top.Error.Metadata.ErrorType != "upstream_truncated" || top.RequestID != "req1" {
		t.Errorf("top-level error = %+v (%v)", top, err)
	}
	// The stateless form still parses and carries the code of a coded class.
	fs = parseFrames(t, resp.AppendStreamError(nil, &failure.Error{Class: failure.ContextOverflow}, "r2"))
	if f := fs[0].ev.AsResponseFailed().Response; len(fs) != 1 || f.Error.Code != "context_length_exceeded" || f.Error.Message == "" {
		t.Errorf("AppendStreamError = %s", fs[0].data)
	}
}

// serve answers every request with the transcript as an SSE stream.
func serve(t *testing.T, transcript []byte) *sdk.Client {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/responses" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(transcript)
	}))
	t.Cleanup(srv.Close)
	c := sdk.NewClient(option.WithBaseURL(srv.URL+"/v1/"), option.WithAPIKey("k"), option.WithMaxRetries(0))
	return &c
}

// TestSDKStream: openai-go's client.Responses.NewStreaming reads the text and tool-call streams
// to the end without error, and the completed Response equals what was fed.
func TestSDKStream(t *testing.T) {
	out := encodeAll(toolEvents)
	c := serve(t, out)
	st := c.Responses.NewStreaming(context.Background(), responses.ResponseNewParams{Model: "m", Input: responses.ResponseNewParamsInputUnion{OfString: sdk.String("hi")}})
	var last responses.ResponseStreamEventUnion
	n := 0
	for st.Next() {
		last = st.Current()
		n++
	}
	if err := st.Err(); err != nil {
		t.Fatalf("stream error: %v", err)
	}
	if n != len(parseFrames(t, out)) || last.Type != "response.completed" || last.Response.OutputText() != "Checking." || last.Response.Output[1].AsFunctionCall().Arguments != `{"city":"Paris"}` {
		t.Errorf("%d events, last %q", n, last.Type)
	}
}

// TestSDKStreamError: the terminal failure makes openai-go's Responses stream end with a
// non-nil Err() after the output already sent (R-FAIL-4).
func TestSDKStreamError(t *testing.T) {
	var e resp.StreamEncoder
	e.Reset("m", "req1", true)
	var out []byte
	for _, ev := range textEvents[:5] {
		out = e.Append(out, ev)
	}
	out = e.AppendError(out, &failure.Error{Class: failure.UpstreamTruncated, Msg: "truncated"})
	c := serve(t, out)
	st := c.Responses.NewStreaming(context.Background(), responses.ResponseNewParams{Model: "m", Input: responses.ResponseNewParamsInputUnion{OfString: sdk.String("hi")}})
	text := ""
	for st.Next() {
		if ev := st.Current(); ev.Type == "response.output_text.delta" {
			text += ev.Delta
		}
	}
	if st.Err() == nil || !strings.Contains(st.Err().Error(), "truncated") {
		t.Fatalf("Err() = %v, want the stream error", st.Err())
	}
	if text != "Hel" {
		t.Errorf("text before the error = %q", text)
	}
}

// TestStreamNoAllocs: once its buffers are warm, the encoder allocates nothing for a whole
// stream (Reset included), so nothing per delta.
func TestStreamNoAllocs(t *testing.T) {
	var e resp.StreamEncoder
	dst := make([]byte, 0, 64<<10)
	run := func() {
		for _, events := range [][]dialect.Event{textEvents, toolEvents} {
			e.Reset("my-model", "req1", true)
			dst = dst[:0]
			for _, ev := range events {
				dst = e.Append(dst, ev)
			}
		}
	}
	run()
	if a := testing.AllocsPerRun(50, run); a != 0 {
		t.Errorf("%.1f allocations per stream, want 0", a)
	}
	e.Reset("my-model", "req1", true)
	dst = e.Append(dst[:0], textEvents[4])
	delta := dialect.Event{Type: dialect.EventText, Text: lit("word ")}
	if a := testing.AllocsPerRun(1000, func() { dst = e.Append(dst[:0], delta) }); a != 0 {
		t.Errorf("%.1f allocations per text delta, want 0", a)
	}
}

// BenchmarkStreamEncodeDelta: one text delta encoded as response.output_text.delta.
func BenchmarkStreamEncodeDelta(b *testing.B) {
	var e resp.StreamEncoder
	e.Reset("my-model", "req-0123456789abcdef", true)
	dst := e.Append(nil, dialect.Event{Type: dialect.EventStart})
	delta := dialect.Event{Type: dialect.EventText, Text: lit(" Paris is")}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		dst = e.Append(dst[:0], delta)
		if n++; n%4096 == 0 { // bound the accumulated text
			e.Reset("my-model", "req-0123456789abcdef", true)
			dst = e.Append(dst[:0], dialect.Event{Type: dialect.EventStart})
		}
	}
}

// BenchmarkStreamEncodeTranscript: a whole tool-call stream, Reset included.
func BenchmarkStreamEncodeTranscript(b *testing.B) {
	var e resp.StreamEncoder
	var dst []byte
	b.ReportAllocs()
	for b.Loop() {
		e.Reset("my-model", "req-0123456789abcdef", true)
		dst = dst[:0]
		for _, ev := range toolEvents {
			dst = e.Append(dst, ev)
		}
	}
}

// A call whose last argument fragments arrive after text still ends with its whole arguments:
// call items stay open until the finish (an issue-3 failure kind: arguments must never be
// invalid JSON).
func TestStreamCallArgumentsAfterText(t *testing.T) {
	var e resp.StreamEncoder
	e.Reset("m", "req_1", true)
	var out []byte
	for _, ev := range []dialect.Event{
		{Type: dialect.EventStart, ID: "x"},
		{Type: dialect.EventToolCall, ToolIndex: 0, ID: "call_1", Name: "f"},
		{Type: dialect.EventToolArgs, ToolIndex: 0, Text: lit(`{"x":"a`)},
		{Type: dialect.EventText, Text: lit("hello")},
		{Type: dialect.EventToolArgs, ToolIndex: 0, Text: lit(`b"}`)},
		{Type: dialect.EventFinish, Stop: dialect.StopToolUse},
		{Type: dialect.EventDone},
	} {
		out = e.Append(out, ev)
	}
	s := string(out)
	if !strings.Contains(s, `"arguments":"{\"x\":\"ab\"}"`) {
		t.Fatalf("arguments not whole:\n%s", s)
	}
}
