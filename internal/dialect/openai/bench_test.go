package openai_test

import (
	"bytes"
	"testing"

	"github.com/switchyard-gw/switchyard/internal/dialect"
	"github.com/switchyard-gw/switchyard/internal/dialect/openai"
	"github.com/switchyard-gw/switchyard/internal/sse"
)

// benchBody is a typical chat-completions request: a system prompt, three turns, sampling
// parameters (about 1 KB).
var benchBody = []byte(`{"model":"gpt-4o-mini","messages":[` +
	`{"role":"system","content":"You are a helpful assistant that answers in one or two short sentences, citing no sources."},` +
	`{"role":"user","content":"What is the capital of France? Please also say something about its history in a sentence or two."},` +
	`{"role":"assistant","content":"Paris is the capital of France. It grew from a Gallo-Roman town on the Seine into the seat of the French kings."},` +
	`{"role":"user","content":"And what is its population today, roughly, and how does it compare with the whole metropolitan area?"}],` +
	`"temperature":0.7,"top_p":1,"max_tokens":256,"presence_penalty":0,"frequency_penalty":0,"user":"bench-user-0001"}`)

// streamBody is benchBody with stream set and no stream_options: the upstream body gets
// include_usage inserted (wire.md §8.1).
var streamBody = bytes.Replace(benchBody, []byte(`"max_tokens":256`), []byte(`"max_tokens":256,"stream":true`), 1)

// streamUsageBody already asks for usage: the model splice only.
var streamUsageBody = bytes.Replace(benchBody, []byte(`"max_tokens":256`), []byte(`"max_tokens":256,"stream":true,"stream_options":{"include_usage":true}`), 1)

// streamOptsBody has stream_options without include_usage: the rare rebuild path.
var streamOptsBody = bytes.Replace(benchBody, []byte(`"max_tokens":256`), []byte(`"max_tokens":256,"stream":true,"stream_options":{"continuous_usage_stats":false}`), 1)

// Frames as a provider sends them (wire.md §1.5): the provider's dated model id, which ScanFrame
// replaces with the caller's.
var (
	frameRole    = []byte(`{"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1767225600,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_44709d6fcb","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}]}`)
	frameContent = []byte(`{"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1767225600,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_44709d6fcb","choices":[{"index":0,"delta":{"content":" Paris"},"logprobs":null,"finish_reason":null}]}`)
	frameFinish  = []byte(`{"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1767225600,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_44709d6fcb","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]}`)
	frameUsage   = []byte(`{"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1767225600,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_44709d6fcb","choices":[],"usage":{"prompt_tokens":92,"completion_tokens":41,"total_tokens":133,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}`)
	frameDone    = []byte(`[DONE]`)
)

var scanCases = []struct {
	name         string
	data         []byte
	includeUsage bool
	want         dialect.FrameKind
}{
	{"role", frameRole, false, dialect.FrameLifecycle},
	{"content", frameContent, false, dialect.FrameSemantic},
	{"finish", frameFinish, false, dialect.FrameSemantic},
	{"usage-forwarded", frameUsage, true, dialect.FrameLifecycle},
	{"usage-dropped", frameUsage, false, dialect.FrameDrop},
	{"done", frameDone, false, dialect.FrameDone},
}

// TestScanFrameNoAllocs: the per-frame scan of the same-dialect pass-through allocates nothing
// once its buffers are warm (architecture.md, performance shape; R-DIALECT-3).
func TestScanFrameNoAllocs(t *testing.T) {
	for _, c := range scanCases {
		t.Run(c.name, func(t *testing.T) {
			var st dialect.StreamState
			st.Reset("gpt-4o-mini", c.includeUsage)
			dst := make([]byte, 0, 1024)
			ev := sse.Event{Data: c.data}
			out, kind := openai.ScanFrame(dst[:0], ev, &st)
			if kind != c.want {
				t.Fatalf("kind %d, want %d", kind, c.want)
			}
			if kind != dialect.FrameDrop && kind != dialect.FrameDone && !bytes.Contains(out, []byte(`"model":"gpt-4o-mini"`)) {
				t.Fatalf("model not echoed: %s", out)
			}
			if n := testing.AllocsPerRun(100, func() { dst, _ = openai.ScanFrame(dst[:0], ev, &st) }); n != 0 {
				t.Fatalf("ScanFrame allocates %.1f times per frame, want 0", n)
			}
		})
	}
}

// BenchmarkScanFrame is the per-frame cost of the commit-gate scan and model echo.
func BenchmarkScanFrame(b *testing.B) {
	for _, c := range scanCases {
		b.Run(c.name, func(b *testing.B) {
			var st dialect.StreamState
			st.Reset("gpt-4o-mini", c.includeUsage)
			dst := make([]byte, 0, 1024)
			ev := sse.Event{Data: c.data}
			b.ReportAllocs()
			b.SetBytes(int64(len(c.data)))
			for b.Loop() {
				dst, _ = openai.ScanFrame(dst[:0], ev, &st)
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
				if _, err := openai.ParseRequest(c.body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAppendUpstreamBody is the byte-level rewrite of the body sent upstream.
func BenchmarkAppendUpstreamBody(b *testing.B) {
	for _, c := range []struct {
		name string
		body []byte
	}{{"non-stream", benchBody}, {"stream-insert-usage", streamBody}, {"stream-with-usage", streamUsageBody}, {"stream-options-rebuild", streamOptsBody}} {
		b.Run(c.name, func(b *testing.B) {
			info, err := openai.ParseRequest(c.body)
			if err != nil {
				b.Fatal(err)
			}
			dst := make([]byte, 0, 2*len(c.body))
			b.ReportAllocs()
			b.SetBytes(int64(len(c.body)))
			for b.Loop() {
				dst = openai.AppendUpstreamBody(dst[:0], c.body, &info, "gpt-4o-mini-2024-07-18")
			}
		})
	}
}
