package relay_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/circuit"
	"github.com/switchyard-gw/switchyard/internal/config"
	"github.com/switchyard-gw/switchyard/internal/plan"
	"github.com/switchyard-gw/switchyard/internal/relay"
	"github.com/switchyard-gw/switchyard/internal/upstream"
)

// pipeListener is an in-memory network: every Dial is one net.Pipe whose server end Accept
// returns. It stands in for the provider's TCP listener through upstream.Deadlines.Dial, so that
// the benchmarks measure the gateway's code and Go's HTTP stack, not the kernel's loopback.
type pipeListener struct {
	dials atomic.Int64 // connections opened: the upstream pool's reuse shows here
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error { l.once.Do(func() { close(l.done) }); return nil }

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

func (l *pipeListener) Dial(ctx context.Context, _, _ string) (net.Conn, error) {
	l.dials.Add(1)
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

// cannedProvider answers every request with pre-rendered bytes, flushing each stream frame
// separately as a provider does: its own cost stays small and allocation-free in the handler.
type cannedProvider struct {
	status int
	ctype  string
	frames [][]byte // written and flushed one by one
}

func (p *cannedProvider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	h := w.Header()
	h["Content-Type"] = []string{p.ctype}
	w.WriteHeader(p.status)
	f, _ := w.(http.Flusher)
	for _, fr := range p.frames {
		_, _ = w.Write(fr)
		if f != nil && len(p.frames) > 1 {
			f.Flush()
		}
	}
}

// discardWriter is an http.ResponseWriter that keeps nothing and supports Flush, standing in for
// the caller's connection.
type discardWriter struct {
	h      http.Header
	status int
	n      int
	frames int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) WriteHeader(code int)        { w.status = code }
func (w *discardWriter) Write(p []byte) (int, error) { w.n += len(p); return len(p), nil }
func (w *discardWriter) Flush()                      { w.frames++ }
func (w *discardWriter) reset()                      { clear(w.h); w.status, w.n, w.frames = 0, 0, 0 }

// openaiStream renders a chat-completions stream of n content deltas: role chunk, n deltas,
// finish chunk, usage chunk, [DONE] (wire.md §1.5).
func openaiStream(n int) [][]byte {
	head := `{"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1767225600,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_44709d6fcb","choices":[{"index":0,"delta":`
	tail := `,"logprobs":null,"finish_reason":null}]}`
	var fs [][]byte
	add := func(s string) { fs = append(fs, []byte("data: "+s+"\n\n")) }
	add(head + `{"role":"assistant","content":"","refusal":null}` + tail)
	for i := range n {
		add(head + `{"content":" word` + strconv.Itoa(i) + `"}` + tail)
	}
	add(head + `{}` + `,"logprobs":null,"finish_reason":"stop"}]}`)
	add(`{"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1767225600,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_44709d6fcb","choices":[],"usage":{"prompt_tokens":92,"completion_tokens":41,"total_tokens":133,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}`)
	add(`[DONE]`)
	return fs
}

const openaiCompletion = `{"id":"chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG","object":"chat.completion","created":1767225600,"model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"message":{"role":"assistant","content":"Paris is the capital of France, with about two million people in the city itself.","refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":92,"completion_tokens":19,"total_tokens":111,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}},"service_tier":"default","system_fingerprint":"fp_44709d6fcb"}`

const benchRequest = `{"model":"gpt-4o-mini","messages":[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":"What is the capital of France?"}],"temperature":0.7,"max_tokens":256%s}`

// benchRig is one relay with one OpenAI deployment served in memory by p.
type benchRig struct {
	ln   *pipeListener
	rl   *relay.Relay
	req  relay.Request
	plan plan.Plan
	w    *discardWriter
}

func newBenchRig(b *testing.B, p *cannedProvider, stream bool) *benchRig {
	b.Helper()
	ln := newPipeListener()
	hs := &http.Server{Handler: p}
	served := make(chan struct{})
	go func() { defer close(served); _ = hs.Serve(ln) }()
	cfg, err := config.Parse("bench.yaml", []byte(`
auth: {required: false}
models: [{id: gpt-4o-mini}]
deployments:
  - name: oa
    dialect: openai
    base_url: http://provider.invalid/v1
    api_key: sk-bench
    routes: [{model: gpt-4o-mini, upstream_model: gpt-4o-mini-2024-07-18, price: {input: 0.15, output: 0.6}}]
`))
	if err != nil {
		b.Fatal(err)
	}
	cat, err := catalog.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	client := upstream.New(cat.Deployment("oa"), upstream.Deadlines{Dial: ln.Dial})
	b.Cleanup(func() {
		client.Close()
		_ = hs.Close()
		<-served
	})
	circuits := circuit.NewSet(circuit.Settings{}, circuit.Settings{})
	r := &benchRig{ln: ln, rl: relay.New(circuits, map[string]*upstream.Client{"oa": client}), w: &discardWriter{h: http.Header{}}}
	extra := ""
	if stream {
		extra = `,"stream":true`
	}
	body := []byte(fmt.Sprintf(benchRequest, extra))
	codec := relay.CodecFor(catalog.OpenAI)
	info, err := codec.ParseRequest(body)
	if err != nil {
		b.Fatal(err)
	}
	res, err := cat.Resolve(info.Model)
	if err != nil {
		b.Fatal(err)
	}
	plan.Build(&r.plan, plan.Input{Resolution: res, Surface: catalog.OpenAI}, circuits)
	r.req = relay.Request{ID: "req_bench", Codec: codec, Body: body, Info: info, Resolution: res}
	return r
}

// run sends one request through relay.Run and checks it completed.
func (r *benchRig) run(b *testing.B, ctx context.Context) {
	r.w.reset()
	res := r.rl.Run(ctx, r.w, &r.req, &r.plan)
	if res.Status != http.StatusOK || res.Class != "" || !res.Committed {
		b.Fatalf("status %d class %q committed %v", res.Status, res.Class, res.Committed)
	}
}

// BenchmarkRelayStreamSameDialect is one OpenAI stream through relay.Run: the upstream call over
// an in-memory connection, the SSE read, the commit gate, the per-frame scan and model echo, the
// writes and flushes to the caller. ns/op and allocs/op are per request; ns/frame divides by
// the frames forwarded. The marginal cost of a frame is the difference between the two sizes
// divided by the difference in frames; dials/op is the upstream connections opened per request
// (0 when the pool reuses them). "baseline" is the same upstream exchange read by a plain
// http.Client, so relay's own cost is the difference.
func BenchmarkRelayStreamSameDialect(b *testing.B) {
	for _, n := range []int{20, 200} {
		frames := openaiStream(n)
		p := &cannedProvider{status: 200, ctype: "text/event-stream", frames: frames}
		b.Run(fmt.Sprintf("deltas=%d", n), func(b *testing.B) {
			r := newBenchRig(b, p, true)
			ctx := context.Background()
			r.run(b, ctx) // warm the pools and the connection
			d0 := r.ln.dials.Load()
			b.ReportAllocs()
			for b.Loop() {
				r.run(b, ctx)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(r.w.frames), "ns/frame")
			b.ReportMetric(float64(r.ln.dials.Load()-d0)/float64(b.N), "dials/op")
		})
		b.Run(fmt.Sprintf("baseline-deltas=%d", n), func(b *testing.B) {
			benchPlainClient(b, p, true)
		})
	}
}

// BenchmarkRelayNonStream is one non-stream chat completion through relay.Run.
func BenchmarkRelayNonStream(b *testing.B) {
	p := &cannedProvider{status: 200, ctype: "application/json", frames: [][]byte{[]byte(openaiCompletion)}}
	b.Run("relay", func(b *testing.B) {
		r := newBenchRig(b, p, false)
		ctx := context.Background()
		r.run(b, ctx)
		d0 := r.ln.dials.Load()
		b.ReportAllocs()
		for b.Loop() {
			r.run(b, ctx)
		}
		b.ReportMetric(float64(r.ln.dials.Load()-d0)/float64(b.N), "dials/op")
	})
	b.Run("baseline", func(b *testing.B) { benchPlainClient(b, p, false) })
}

// benchPlainClient is the upstream exchange alone: a plain http.Client over the same in-memory
// network posts the body and reads the answer to the end.
func benchPlainClient(b *testing.B, p *cannedProvider, stream bool) {
	ln := newPipeListener()
	hs := &http.Server{Handler: p}
	served := make(chan struct{})
	go func() { defer close(served); _ = hs.Serve(ln) }()
	tr := &http.Transport{DialContext: ln.Dial, MaxIdleConnsPerHost: 16}
	hc := &http.Client{Transport: tr}
	b.Cleanup(func() {
		tr.CloseIdleConnections()
		_ = hs.Close()
		<-served
	})
	extra := ""
	if stream {
		extra = `,"stream":true`
	}
	body := []byte(fmt.Sprintf(benchRequest, extra))
	buf := make([]byte, 32<<10)
	do := func() {
		req, err := http.NewRequest(http.MethodPost, "http://provider.invalid/v1/chat/completions", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		req.Header["Content-Type"] = []string{"application/json"}
		resp, err := hc.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		for {
			_, err := resp.Body.Read(buf)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
		}
		resp.Body.Close()
	}
	do()
	d0 := ln.dials.Load()
	b.ReportAllocs()
	for b.Loop() {
		do()
	}
	b.ReportMetric(float64(ln.dials.Load()-d0)/float64(b.N), "dials/op")
}
