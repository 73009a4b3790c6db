package anthropic_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/switchyard-gw/switchyard/internal/dialect"
	"github.com/switchyard-gw/switchyard/internal/dialect/anthropic"
	"github.com/switchyard-gw/switchyard/internal/failure"
	"github.com/switchyard-gw/switchyard/internal/sse"
)

// FuzzParseRequest: the pass-through parsers of messages and count_tokens never panic, refuse
// only with invalid_request, refuse what is nested deeper than dialect.MaxDepth, and when they
// accept: the model offsets point at the model string, and the upstream body is valid JSON that
// parses back to the same request with the upstream model.
func FuzzParseRequest(f *testing.F) {
	f.Add([]byte(`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"x"}],"stream":true}`))
	f.Add([]byte(`{"messages":[],"max_tokens":0,"model":"m\u00e9\"x"}`))
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":"x"}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		if _, err := anthropic.ParseCountTokensRequest(body); err != nil && failure.From(err).Class != failure.InvalidRequest {
			t.Fatalf("count_tokens: error class %v", err)
		}
		info, err := anthropic.ParseRequest(body)
		if err != nil {
			if failure.From(err).Class != failure.InvalidRequest {
				t.Fatalf("error class %v", err)
			}
			return
		}
		if dialect.TooDeep(body) {
			t.Fatal("accepted a body nested deeper than the cap")
		}
		if got := gjson.Parse(string(body[info.ModelStart:info.ModelEnd])); got.Type != gjson.String || got.Str != info.Model {
			t.Fatalf("model offsets [%d,%d) hold %q, not %q", info.ModelStart, info.ModelEnd, body[info.ModelStart:info.ModelEnd], info.Model)
		}
		up := anthropic.AppendUpstreamBody(nil, body, &info, "up-model")
		info2, err := anthropic.ParseRequest(up)
		if err != nil || !json.Valid(up) {
			t.Fatalf("upstream body %s refused: %v", up, err)
		}
		if info2.Model != "up-model" || info2.Stream != info.Stream || info2.MaxTokens != info.MaxTokens {
			t.Fatalf("upstream body parses as %+v, from %+v", info2, info)
		}
	})
}

// FuzzProviderBytes: every parser of an Anthropic provider's bytes never panics: the non-stream
// rewrite and decode (errors only upstream_error; output valid JSON with the caller's model),
// the error normalizers (always a classified error), the stream scan under any event name
// (exactly one event whose name is of the fixed set, one data line) and the stream decoder.
func FuzzProviderBytes(f *testing.F) {
	f.Add("", []byte(`{"id":"msg","type":"message","role":"assistant","model":"c","content":[{"type":"text","text":"hi"},{"type":"tool_use","id":"t","name":"f","input":{"a":1}}],"stop_reason":"tool_use","usage":{"input_tokens":3,"output_tokens":2,"cache_read_input_tokens":1}}`))
	f.Add("error", []byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`))
	f.Add("message_start", []byte(`{"type":"message_start","message":{"id":"m","model":"c","usage":{"input_tokens":5}}}`))
	f.Add("content_block_delta", []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}`))
	f.Add("", []byte(`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}`))
	f.Add("message_delta", []byte(`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2,"server_tool_use":{"web_search_requests":3}}}`))
	f.Add("", []byte(`{"type":"ping\nevent: x"}`))
	f.Fuzz(func(t *testing.T, name string, b []byte) {
		out, _, _, err := anthropic.RewriteResponse(nil, b, "caller-model")
		if err != nil {
			if failure.From(err).Class != failure.UpstreamError {
				t.Fatalf("RewriteResponse error class %v", err)
			}
		} else {
			if !dialect.Valid(out) {
				t.Fatalf("RewriteResponse output is not JSON: %s", out)
			}
			if m := gjson.GetBytes(b, "model"); m.Type == gjson.String && gjson.GetBytes(out, "model").Str != "caller-model" {
				t.Fatalf("model not echoed: %s", out)
			}
		}
		if r, err := anthropic.DecodeResponse(b); err != nil {
			if failure.From(err).Class != failure.UpstreamError {
				t.Fatalf("DecodeResponse error class %v", err)
			}
		} else if enc := anthropic.AppendResponse(nil, r, "caller-model", "req"); !json.Valid(enc) {
			t.Fatalf("AppendResponse output is not JSON: %s", enc)
		}
		for _, status := range []int{400, 429, 529} {
			if fe := failure.From(anthropic.NormalizeError(status, nil, b)); fe == nil || fe.Class == "" {
				t.Fatalf("NormalizeError(%d) = %v", status, fe)
			}
		}
		if fe := failure.From(anthropic.NormalizeStreamError(b)); fe == nil || fe.Class == "" {
			t.Fatalf("NormalizeStreamError = %v", fe)
		}
		// The SSE reader never yields a name holding a line break; the name is otherwise free.
		if bytes.ContainsAny([]byte(name), "\r\n") {
			return
		}
		ev := sse.Event{Data: b}
		if name != "" {
			ev.Name = []byte(name)
		}
		var st dialect.StreamState
		st.Reset("caller-model", false)
		frame, kind := anthropic.ScanFrame(nil, ev, &st)
		switch kind {
		case dialect.FrameError, dialect.FrameDrop:
			if len(frame) != 0 {
				t.Fatalf("kind %v wrote %q", kind, frame)
			}
		default:
			lines := bytes.Split(frame, []byte("\n"))
			if len(lines) != 4 || !bytes.HasPrefix(lines[0], []byte("event: ")) || anthropic.EventName(string(lines[0][7:])) == "" ||
				!bytes.HasPrefix(lines[1], []byte("data: ")) || len(lines[2]) != 0 || len(lines[3]) != 0 || bytes.ContainsRune(frame, '\r') {
				t.Fatalf("not one event of the fixed set: %q", frame)
			}
		}
		if dialect.TooDeep(b) && kind != dialect.FrameError {
			t.Fatalf("a frame nested too deep was %v", kind)
		}
		var d anthropic.StreamDecoder
		for _, e := range d.Decode(ev, nil) {
			if e.Type == 0 {
				t.Fatal("an event without a type")
			}
		}
	})
}
