package anthropic_test

import (
	"bytes"
	"testing"

	"github.com/switchyard-gw/switchyard/internal/dialect"
	"github.com/switchyard-gw/switchyard/internal/dialect/anthropic"
	"github.com/switchyard-gw/switchyard/internal/sse"
)

// benchBody is a typical messages request: a system prompt, three turns, sampling parameters
// (about 1 KB).
var benchBody = []byte(`{"model":"claude-haiku-4-5","max_tokens":256,` +
	`"system":"You are a helpful assistant that answers in one or two short sentences, citing no sources.",` +
	`"messages":[{"role":"user","content":"What is the capital of France? Please also say something about its history in a sentence or two."},` +
	`{"role":"assistant","content":[{"type":"text","text":"Paris is the capital of France. It grew from a Gallo-Roman town on the Seine into the seat of the French kings."}]},` +
	`{"role":"user","content":[{"type":"text","text":"And what is its population today, roughly, and how does it compare with the whole metropolitan area?"}]}],` +
	`"temperature":0.7,"top_k":40,"metadata":{"user_id":"bench-user-0001"}}`)

var streamBody = bytes.Replace(benchBody, []byte(`"max_tokens":256`), []byte(`"max_tokens":256,"stream":true`), 1)

// Frames as the provider sends them (wire.md §4.5), event name included.
var (
	frameStart      = []byte(`{"type":"message_start","message":{"id":"msg_01XFDUDYJgAACzvnptvVoYEL","type":"message","role":"assistant","content":[],"model":"claude-haiku-4-5-20251001","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":92,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}`)
	frameBlockStart = []byte(`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
	framePing       = []byte(`{"type": "ping"}`)
	frameDelta      = []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" Paris"}}`)
	frameBlockStop  = []byte(`{"type":"content_block_stop","index":0}`)
	frameMsgDelta   = []byte(`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":41}}`)
	frameStop       = []byte(`{"type":"message_stop"}`)
)

var scanCases = []struct {
	name, event string
	data        []byte
	want        dialect.FrameKind
}{
	{"message_start", "message_start", frameStart, dialect.FrameLifecycle},
	{"content_block_start", "content_block_start", frameBlockStart, dialect.FrameLifecycle},
	{"ping", "ping", framePing, dialect.FrameLifecycle},
	{"text_delta", "content_block_delta", frameDelta, dialect.FrameSemantic},
	{"content_block_stop", "content_block_stop", frameBlockStop, dialect.FrameLifecycle},
	{"message_delta", "message_delta", frameMsgDelta, dialect.FrameSemantic},
	{"message_stop", "message_stop", frameStop, dialect.FrameDone},
}

// TestScanFrameNoAllocs: the per-frame scan of the same-dialect pass-through allocates nothing
// once its buffers are warm (architecture.md, performance shape; R-DIALECT-3).
func TestScanFrameNoAllocs(t *testing.T) {
	for _, c := range scanCases {
		t.Run(c.name, func(t *testing.T) {
			var st dialect.StreamState
			st.Reset("claude-haiku-4-5", false)
			dst := make([]byte, 0, 1024)
			ev := sse.Event{Name: []byte(c.event), Data: c.data}
			out, kind := anthropic.ScanFrame(dst[:0], ev, &st)
			if kind != c.want {
				t.Fatalf("kind %d, want %d", kind, c.want)
			}
			if !bytes.HasPrefix(out, []byte("event: "+c.event+"\ndata: ")) {
				t.Fatalf("frame not re-framed: %q", out)
			}
			if n := testing.AllocsPerRun(100, func() { dst, _ = anthropic.ScanFrame(dst[:0], ev, &st) }); n != 0 {
				t.Fatalf("ScanFrame allocates %.1f times per frame, want 0", n)
			}
		})
	}
}

// BenchmarkScanFrame is the per-frame cost of the commit-gate scan, usage read and model echo.
func BenchmarkScanFrame(b *testing.B) {
	for _, c := range scanCases {
		b.Run(c.name, func(b *testing.B) {
			var st dialect.StreamState
			st.Reset("claude-haiku-4-5", false)
			dst := make([]byte, 0, 1024)
			ev := sse.Event{Name: []byte(c.event), Data: c.data}
			b.ReportAllocs()
			b.SetBytes(int64(len(c.data)))
			for b.Loop() {
				dst, _ = anthropic.ScanFrame(dst[:0], ev, &st)
			}
		})
	}
}

// BenchmarkParseRequest reads the routing fields of a ~1 KB body without decoding it.
func BenchmarkParseRequest(b *testing.B) {
	for _, c := range []struct {
		name string
		body []byte
	}{{"non-stream", benchBody}, {"stream", streamBody}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(c.body)))
			for b.Loop() {
				if _, err := anthropic.ParseRequest(c.body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAppendUpstreamBody is the byte-level model splice of the body sent upstream.
func BenchmarkAppendUpstreamBody(b *testing.B) {
	info, err := anthropic.ParseRequest(streamBody)
	if err != nil {
		b.Fatal(err)
	}
	dst := make([]byte, 0, 2*len(streamBody))
	b.ReportAllocs()
	b.SetBytes(int64(len(streamBody)))
	for b.Loop() {
		dst = anthropic.AppendUpstreamBody(dst[:0], streamBody, &info, "claude-haiku-4-5-20251001")
	}
}
