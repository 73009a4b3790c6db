package anthropic

import (
	"strings"
	"testing"

	"github.com/switchyard-gw/switchyard/internal/dialect"
	"github.com/switchyard-gw/switchyard/internal/failure"
	"github.com/switchyard-gw/switchyard/internal/sse"
)

func TestParseRequest(t *testing.T) {
	for _, tc := range []struct{ name, body, param string }{
		{"ok", `{"model":"c","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`, "-"},
		{"messages empty", `{"model":"c","max_tokens":10,"messages":[]}`, "messages"},
		{"no max_tokens", `{"model":"c","messages":[]}`, "max_tokens"},
		{"model number", `{"model":1,"max_tokens":10,"messages":[]}`, "model"},
		{"messages object", `{"model":"c","max_tokens":10,"messages":{}}`, "messages"},
		{"stream string", `{"model":"c","max_tokens":10,"messages":[],"stream":"y"}`, "stream"},
		{"garbage", `nope`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			info, err := ParseRequest([]byte(tc.body))
			if tc.param == "-" {
				if err != nil || info.Model != "c" || info.MaxTokens != 10 {
					t.Fatalf("%+v %v", info, err)
				}
				return
			}
			if fe := failure.From(err); fe == nil || fe.Class != failure.InvalidRequest || fe.Param != tc.param {
				t.Fatalf("got %v", err)
			}
		})
	}
}

// R-FAIL-2's decision: message_start, ping and an empty content_block_start are lifecycle;
// deltas, a tool_use block start and message_delta with a stop_reason (the finish and final
// usage report) are semantic; a message_delta without one (usage as it goes) is lifecycle;
// message_stop ends; `event: error` is an in-stream error.
func TestScanFrame(t *testing.T) {
	for _, tc := range []struct {
		name, event, data string
		kind              dialect.FrameKind
	}{
		{"message_start", "message_start", `{"type":"message_start","message":{"id":"m","model":"up","usage":{"input_tokens":12,"output_tokens":1}}}`, dialect.FrameLifecycle},
		{"ping", "ping", `{"type":"ping"}`, dialect.FrameLifecycle},
		{"empty text block", "content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`, dialect.FrameLifecycle},
		{"tool block", "content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"f","input":{}}}`, dialect.FrameSemantic},
		{"text delta", "content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}`, dialect.FrameSemantic},
		{"thinking delta", "content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm"}}`, dialect.FrameSemantic},
		{"json delta", "content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":""}}`, dialect.FrameSemantic},
		{"message_delta", "message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":7}}`, dialect.FrameSemantic},
		{"usage-only message_delta", "message_delta", `{"type":"message_delta","delta":{"stop_reason":null},"usage":{"output_tokens":7}}`, dialect.FrameLifecycle},
		{"stop", "message_stop", `{"type":"message_stop"}`, dialect.FrameDone},
		{"error", "error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, dialect.FrameError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var st dialect.StreamState
			st.Reset("mine", false)
			out, kind := ScanFrame(nil, sse.Event{Name: []byte(tc.event), Data: []byte(tc.data)}, &st)
			if kind != tc.kind {
				t.Fatalf("kind %d want %d", kind, tc.kind)
			}
			if kind == dialect.FrameError {
				if len(out) != 0 {
					t.Fatalf("forwarded %q", out)
				}
				return
			}
			if !strings.HasPrefix(string(out), "event: "+tc.event+"\ndata: ") {
				t.Fatalf("frame %q", out)
			}
			if tc.event == "message_start" && (!strings.Contains(string(out), `"model":"mine"`) || strings.Contains(string(out), `"up"`)) {
				t.Fatalf("model not echoed: %q", out)
			}
		})
	}
}

// Usage: message_start's input preamble plus message_delta's cumulative output.
func TestScanFrameUsage(t *testing.T) {
	var st dialect.StreamState
	st.Reset("m", false)
	ScanFrame(nil, sse.Event{Name: []byte("message_start"), Data: []byte(`{"type":"message_start","message":{"usage":{"input_tokens":12,"cache_read_input_tokens":4,"cache_creation_input_tokens":2,"output_tokens":1}}}`)}, &st)
	ScanFrame(nil, sse.Event{Name: []byte("message_delta"), Data: []byte(`{"type":"message_delta","usage":{"output_tokens":9}}`)}, &st)
	want := dialect.Usage{Input: 12, Cached: 4, CacheWrite: 2, Output: 9}
	if !st.UsageSeen || st.Usage != want {
		t.Fatalf("usage %+v", st.Usage)
	}
}

// A duplicated key is refused: routing reads the first `model`, a provider may read the last.
func TestParseRequestDuplicateKeys(t *testing.T) {
	_, err := ParseRequest([]byte(`{"model":"a","max_tokens":1,"messages":[],"model":"b"}`))
	if fe := failure.From(err); fe == nil || fe.Class != failure.InvalidRequest || fe.Param != "model" {
		t.Fatalf("%v", err)
	}
}

// The finish is message_delta's stop_reason: it sets Finished; a usage-only message_delta does
// not, and its usage is kept.
func TestScanFrameFinished(t *testing.T) {
	var st dialect.StreamState
	st.Reset("m", false)
	ScanFrame(nil, sse.Event{Name: []byte("message_delta"), Data: []byte(`{"type":"message_delta","delta":{},"usage":{"output_tokens":3}}`)}, &st)
	if st.Finished || st.Usage.Output != 3 {
		t.Fatalf("usage-only: %+v", st)
	}
	ScanFrame(nil, sse.Event{Name: []byte("message_delta"), Data: []byte(`{"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{"output_tokens":4}}`)}, &st)
	if !st.Finished || st.Usage.Output != 4 {
		t.Fatalf("finish: %+v", st)
	}
}

// TestOneHourCacheWrites: cache_creation.ephemeral_1h_input_tokens is the one-hour part of
// cache_creation_input_tokens (CacheWrite1h), in a stream's message_start and in a message; a
// breakdown without its total gives the total.
func TestOneHourCacheWrites(t *testing.T) {
	var st dialect.StreamState
	st.Reset("m", false)
	ScanFrame(nil, sse.Event{Name: []byte("message_start"), Data: []byte(`{"type":"message_start","message":{"usage":{"input_tokens":12,` +
		`"cache_read_input_tokens":4,"cache_creation_input_tokens":30,"cache_creation":{"ephemeral_5m_input_tokens":10,"ephemeral_1h_input_tokens":20},"output_tokens":1}}}`)}, &st)
	ScanFrame(nil, sse.Event{Name: []byte("message_delta"), Data: []byte(`{"type":"message_delta","usage":{"output_tokens":9}}`)}, &st)
	if want := (dialect.Usage{Input: 12, Cached: 4, CacheWrite: 30, CacheWrite1h: 20, Output: 9}); st.Usage != want {
		t.Errorf("stream usage %+v, want %+v", st.Usage, want)
	}
	_, u, ok, err := RewriteResponse(nil, []byte(`{"id":"msg_1","type":"message","role":"assistant","model":"x","content":[],`+
		`"usage":{"input_tokens":1,"output_tokens":2,"cache_creation":{"ephemeral_5m_input_tokens":3,"ephemeral_1h_input_tokens":4}}}`), "m")
	if err != nil || !ok || u != (dialect.Usage{Input: 1, CacheWrite: 7, CacheWrite1h: 4, Output: 2}) {
		t.Errorf("message usage %+v ok %v err %v", u, ok, err)
	}
}
