package relay_test

// The scenario rig: relay.Run against scripted providers, without the HTTP server or the SDKs.
// Every deployment is an http.Server on its own in-memory listener (pipeListener), reached
// through upstream.Deadlines.Dial, and every scenario runs inside a testing/synctest bubble, so
// the deadlines (first output, stream idle, headers) run on the bubble's virtual clock: a test
// asserts "failed over after exactly 30 s" without waiting 30 s and without a wall clock.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/circuit"
	"github.com/switchyard-gw/switchyard/internal/config"
	"github.com/switchyard-gw/switchyard/internal/plan"
	"github.com/switchyard-gw/switchyard/internal/relay"
	"github.com/switchyard-gw/switchyard/internal/stats"
	"github.com/switchyard-gw/switchyard/internal/upstream"
)

// script is what one deployment does with each request it receives; n counts its requests
// from 0.
type script func(w http.ResponseWriter, r *http.Request, n int)

// dep is one deployment of a scenario, in plan order (its priority is its position).
type dep struct {
	name    string
	dialect string // "openai" or "anthropic"
	play    script // nil: the deployment must not be called (the test fails if it is)
}

// rig is one relay over the scenario's deployments.
type rig struct {
	t        *testing.T
	cat      *catalog.Catalog
	circuits *circuit.Set
	rl       *relay.Relay
	calls    map[string]*int
	bodies   map[string][]byte // the last upstream request body of each deployment
	mu       sync.Mutex
	closers  []func()
}

// rigOptions tune a rig: the deadlines of every upstream client and the circuit settings.
type rigOptions struct {
	deadlines upstream.Deadlines
	circuit   circuit.Settings
	// fallback, when set, is the one deployment serving the fallback model "m2".
	fallback *dep
	stats    interface{ Record(stats.Observation) }
}

// newRig builds the catalog (model "m" on every dep, priced; "m2" on opts.fallback), one
// scripted provider per deployment and the relay. Call close (deferred) inside the bubble.
func newRig(t *testing.T, deps []dep, opts rigOptions) *rig {
	t.Helper()
	var y strings.Builder
	y.WriteString("auth: {required: false}\nrouting: {strategy: priority}\nmodels: [{id: m, max_output_tokens: 1000}, {id: m2}]\ndeployments:\n")
	all := deps
	if opts.fallback != nil {
		all = append(append([]dep(nil), deps...), *opts.fallback)
	}
	for i, d := range all {
		model := "m"
		if opts.fallback != nil && i == len(all)-1 {
			model = "m2"
		}
		fmt.Fprintf(&y, "  - {name: %s, provider: p%s, dialect: %s, base_url: http://%s.invalid/v1, api_key: k, priority: %d, routes: [{model: %s, upstream_model: up-%s, price: {input: 1, output: 2}}]}\n",
			d.name, d.name, d.dialect, d.name, i+1, model, d.name)
	}
	cfg, err := config.Parse("scenario.yaml", []byte(y.String()))
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	g := &rig{t: t, cat: cat, calls: map[string]*int{}, bodies: map[string][]byte{}}
	g.circuits = circuit.NewSet(opts.circuit, opts.circuit)
	clients := map[string]*upstream.Client{}
	for _, d := range all {
		d := d
		ln := newPipeListener()
		n := new(int)
		g.calls[d.name] = n
		hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			g.mu.Lock()
			k := *n
			*n++
			g.bodies[d.name] = b
			g.mu.Unlock()
			r.Body = io.NopCloser(bytes.NewReader(b))
			if d.play == nil {
				t.Errorf("deployment %s was called", d.name)
				w.WriteHeader(http.StatusInternalServerError)
				return
			}
			d.play(w, r, k)
		})}
		served := make(chan struct{})
		go func() { defer close(served); _ = hs.Serve(ln) }()
		dl := opts.deadlines
		dl.Dial = ln.Dial
		c := upstream.New(cat.Deployment(d.name), dl)
		clients[d.name] = c
		g.closers = append(g.closers, func() { c.Close(); _ = hs.Close(); <-served })
	}
	g.rl = relay.New(g.circuits, clients)
	if opts.stats != nil {
		g.rl.Stats = opts.stats
	}
	return g
}

func (g *rig) close() {
	for _, c := range g.closers {
		c()
	}
}

// body is the last upstream request body deployment name received.
func (g *rig) body(name string) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return string(g.bodies[name])
}

// callsTo is the number of requests deployment name received.
func (g *rig) callsTo(name string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return *g.calls[name]
}

// request builds a relay request of the caller's surface for model "m" (stream or not), its
// plan, and, when fallback, the fallback plan of "m2".
func (g *rig) request(surface catalog.Dialect, stream bool, fallback bool) (*relay.Request, *plan.Plan) {
	g.t.Helper()
	var body string
	if surface == catalog.Anthropic {
		body = fmt.Sprintf(`{"model":"m","max_tokens":100,"stream":%v,"messages":[{"role":"user","content":"hi"}]}`, stream)
	} else {
		body = fmt.Sprintf(`{"model":"m","stream":%v,"messages":[{"role":"user","content":"hi"}]}`, stream)
	}
	codec := relay.CodecFor(surface)
	info, err := codec.ParseRequest([]byte(body))
	if err != nil {
		g.t.Fatal(err)
	}
	res, err := g.cat.Resolve("m")
	if err != nil {
		g.t.Fatal(err)
	}
	p := new(plan.Plan)
	plan.Build(p, plan.Input{Resolution: res, Surface: surface, Strategy: "priority"}, g.circuits)
	req := &relay.Request{ID: "req_1", Surface: surface, Codec: codec, Body: []byte(body), Info: info, Resolution: res, InputTokens: 10}
	if fallback {
		fres, err := g.cat.Resolve("m2")
		if err != nil {
			g.t.Fatal(err)
		}
		fp := new(plan.Plan)
		plan.Build(fp, plan.Input{Resolution: fres, Surface: surface, Strategy: "priority"}, g.circuits)
		req.Fallbacks = []relay.Fallback{{Resolution: fres, Plan: fp}}
	}
	return req, p
}

// recorder is the caller's connection: it keeps what was written. panicOn, when set, is called
// on every Write and Flush and may panic (a panic in the gateway while it serves the caller).
type recorder struct {
	h       http.Header
	status  int
	body    bytes.Buffer
	writes  int
	panicOn func(w *recorder)
}

func newRecorder() *recorder { return &recorder{h: http.Header{}} }

func (w *recorder) Header() http.Header { return w.h }
func (w *recorder) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}
func (w *recorder) Write(p []byte) (int, error) {
	w.writes++
	if w.panicOn != nil {
		w.panicOn(w)
	}
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.body.Write(p)
}
func (w *recorder) Flush() {}

// run runs the request through relay.Run.
func (g *rig) run(ctx context.Context, w *recorder, req *relay.Request, p *plan.Plan) relay.Result {
	return g.rl.Run(ctx, w, req, p)
}

// Scripted provider building blocks.

// sse writes the frames, flushing each, then returns (a clean end of the body).
func sse(frames ...string) script {
	return func(w http.ResponseWriter, r *http.Request, _ int) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for _, f := range frames {
			_, _ = io.WriteString(w, f)
			w.(http.Flusher).Flush()
		}
	}
}

// every writes the preamble frames, then frame every d until the caller goes away: a provider
// that keeps the stream alive without ever producing output.
func every(d time.Duration, frame string, preamble ...string) script {
	return func(w http.ResponseWriter, r *http.Request, _ int) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for _, f := range preamble {
			_, _ = io.WriteString(w, f)
		}
		w.(http.Flusher).Flush()
		for range 1000 { // bounded: without a deadline the attempt fails late, not never
			select {
			case <-r.Context().Done():
				return
			case <-time.After(d):
			}
			if _, err := io.WriteString(w, frame); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
	}
}

// paced writes the frames with d before each one after the first.
func paced(d time.Duration, frames ...string) script {
	return func(w http.ResponseWriter, r *http.Request, _ int) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for i, f := range frames {
			if i > 0 {
				time.Sleep(d)
			}
			_, _ = io.WriteString(w, f)
			w.(http.Flusher).Flush()
		}
	}
}

// status answers code with body (a JSON error body of the deployment's dialect).
func status(code int, body string) script {
	return func(w http.ResponseWriter, r *http.Request, _ int) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = io.WriteString(w, body)
	}
}

// jsonBody answers 200 with a non-stream body.
func jsonBody(body string) script { return status(http.StatusOK, body) }

// OpenAI chat-completions stream frames.
const oaHead = `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"up","choices":[{"index":0,"delta":`

func oaFrame(data string) string { return "data: " + data + "\n\n" }

var (
	oaRole   = oaFrame(oaHead + `{"role":"assistant","content":""},"finish_reason":null}]}`)
	oaFinish = oaFrame(oaHead + `{},"finish_reason":"stop"}]}`)
	oaDone   = "data: [DONE]\n\n"
)

func oaText(s string) string {
	return oaFrame(oaHead + `{"content":"` + s + `"},"finish_reason":null}]}`)
}

func oaUsage(prompt, completion int) string {
	return oaFrame(fmt.Sprintf(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"up","choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`, prompt, completion, prompt+completion))
}

// oaWithUsage is a chunk whose choice delta is delta (and finish finish, "null" for none) that
// also carries a usage report, as providers that report usage on every chunk send it.
func oaWithUsage(delta, finish string, prompt, completion int) string {
	return oaFrame(fmt.Sprintf(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"up","choices":[{"index":0,"delta":%s,"finish_reason":%s}],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`, delta, finish, prompt, completion, prompt+completion))
}

const oaStreamError = "data: {\"error\":{\"message\":\"overloaded\",\"type\":\"server_error\",\"code\":null}}\n\n"

const oaCompletion = `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"up","choices":[{"index":0,"message":{"role":"assistant","content":"Hello there, caller."},"finish_reason":"stop"}],"usage":{"prompt_tokens":7,"completion_tokens":5,"total_tokens":12}}`

const oaCompletionNoUsage = `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"up","choices":[{"index":0,"message":{"role":"assistant","content":"Hello there, caller. This answer is forty bytes."},"finish_reason":"stop"}]}`

// Anthropic messages stream frames.
func anFrame(name, data string) string { return "event: " + name + "\ndata: " + data + "\n\n" }

var (
	anStart      = anFrame("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"up","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":9,"output_tokens":1}}}`)
	anBlockStart = anFrame("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
	anPing       = anFrame("ping", `{"type":"ping"}`)
	anBlockStop  = anFrame("content_block_stop", `{"type":"content_block_stop","index":0}`)
	anStop       = anFrame("message_stop", `{"type":"message_stop"}`)
	anOverloaded = anFrame("error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
)

func anText(s string) string {
	return anFrame("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"`+s+`"}}`)
}

func anDelta(stop string, output int) string {
	sr := "null"
	if stop != "" {
		sr = `"` + stop + `"`
	}
	return anFrame("message_delta", fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":%s,"stop_sequence":null},"usage":{"output_tokens":%d}}`, sr, output))
}

const oaServerError = `{"error":{"message":"boom","type":"server_error","param":null,"code":null}}`
