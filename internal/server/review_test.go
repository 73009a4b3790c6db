package server_test

import (
	"bufio"
	"context"
	"math"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/circuit"
	"github.com/switchyard-gw/switchyard/internal/failure"
	"github.com/switchyard-gw/switchyard/internal/fakeprovider"
)

// R-MODEL-3 with R-CIRCUIT-3: a dated snapshot the provider does not know is the caller's fault:
// 404 model_unavailable, no failover, and no circuit moves however often it is repeated — a
// caller cannot take a model down with made-up dates.
func TestUnknownSnapshotIsCallerFault(t *testing.T) {
	g := startTwo(t)
	notFound := fakeprovider.Behavior{Kind: fakeprovider.KindStatus, Status: 404, ErrorCode: "model_not_found"}
	g.Fakes["oa-primary"].SetDefault(notFound)
	g.Fakes["oa-backup"].SetDefault(notFound)
	for range 4 {
		resp, b := icPost(t, g.URL, "/v1/chat/completions", icChatBody("gpt-4o-mini-2031-01-01", false))
		icCheckError(t, catalog.OpenAI, resp, b, 404, "model_unavailable", "invalid_request_error")
		if resp.Header.Get("x-switchyard-attempts") != "1" {
			t.Fatalf("attempts %s, want 1 (no failover)", resp.Header.Get("x-switchyard-attempts"))
		}
	}
	if g.Fakes["oa-backup"].Hits() != 0 {
		t.Fatalf("backup hit %d times", g.Fakes["oa-backup"].Hits())
	}
	for _, s := range g.Srv.Circuits().States() {
		if s.State != circuit.Closed {
			t.Fatalf("circuit %+v moved", s)
		}
	}
	g.Fakes["oa-primary"].SetDefault(fakeprovider.Behavior{})
	if resp, b := icCall(t, g.URL, catalog.OpenAI, "gpt-4o-mini", false); resp.StatusCode != 200 || resp.Header.Get("x-switchyard-deployment") != "oa-primary" {
		t.Fatalf("after: %d %s", resp.StatusCode, b)
	}
}

// R-AUDIT-2: with authentication optional, an anonymous caller cannot read a record made with a
// key; only that key's account can.
func TestGenerationAnonymousCannotReadAccountRecords(t *testing.T) {
	g := startGateway(t, `
auth: {required: false}
keys: [{name: a, secret: key-aaaa-1111, account: acct-a}]
models: [{id: m}]
deployments: [{name: oa, dialect: openai, base_url: "{{oa}}", api_key: k, routes: [{model: m}]}]
`, oa("oa"))
	resp, _ := icPost(t, g.URL, "/v1/chat/completions", icChatBody("m", false), "Authorization", "Bearer key-aaaa-1111")
	id := resp.Header.Get("x-request-id")
	g.generation(t, id)
	if r, b := icGet(t, g.URL, "/v1/generation?id="+id); r.StatusCode != 404 {
		t.Fatalf("anonymous read: %d %s", r.StatusCode, b)
	}
	if r, b := icGet(t, g.URL, "/v1/generation?id="+id, "Authorization", "Bearer key-aaaa-1111"); r.StatusCode != 200 {
		t.Fatalf("owner read: %d %s", r.StatusCode, b)
	}
}

// R-AUDIT-2, R-BILL-3: the attempt carries the price snapshot used (the model's price when set,
// else the route's) and the cost of the provider-reported usage; a failed attempt has unknown
// usage and no cost.
func TestAttemptPriceAndCost(t *testing.T) {
	g := startGateway(t, `
auth: {required: false}
models:
  - {id: routed}
  - {id: modelpriced, price: {input: 10, output: 20}}
deployments:
  - name: a
    dialect: openai
    base_url: "{{a}}"
    api_key: k
    routes: [{model: routed, price: {input: 2, output: 8}}, {model: modelpriced, price: {input: 1, output: 1}}]
  - name: b
    dialect: openai
    base_url: "{{b}}"
    api_key: k
    routes: [{model: routed, price: {input: 3, output: 9}}]
`, oa("a"), oa("b"))
	g.Fakes["a"].Script(fakeprovider.Behavior{Kind: fakeprovider.KindStatus, Status: 500})
	resp, _ := icCall(t, g.URL, catalog.OpenAI, "routed", false)
	rec := g.generation(t, resp.Header.Get("x-request-id"))
	if len(rec.Attempts) != 2 {
		t.Fatalf("attempts %+v", rec.Attempts)
	}
	failed, served := rec.Attempts[0], rec.Attempts[1]
	if failed.UsageProvenance != "unknown" || failed.CostUSD != 0 || failed.BillingSource != "route_price" {
		t.Fatalf("failed attempt %+v", failed)
	}
	tk := served.Tokens
	want := (float64(tk.Input+tk.Cached+tk.CacheWrite)*3 + float64(tk.Output)*9) / 1e6
	if served.BillingSource != "route_price" || served.Price == nil || served.Price.InputPerMTokUSD != 3 || math.Abs(served.CostUSD-want) > 1e-12 || want == 0 {
		t.Fatalf("served attempt %+v (want cost %v)", served, want)
	}
	resp, _ = icCall(t, g.URL, catalog.OpenAI, "modelpriced", false)
	rec = g.generation(t, resp.Header.Get("x-request-id"))
	a := rec.Attempts[0]
	if a.BillingSource != "model_price" || a.Price.InputPerMTokUSD != 10 || a.Price.OutputPerMTokUSD != 20 {
		t.Fatalf("model price not used: %+v", a)
	}
}

// Graceful shutdown, past the grace: a stream still running when the gateway ends in-flight
// requests (their base context cancelled with failure.ErrShutdown) ends with one terminal error
// event in the caller's dialect, not a silent cut, and its audit is recorded (R-FAIL-4).
func TestShutdownPastGraceEndsStreamsWithAnError(t *testing.T) {
	g := startTwo(t)
	g.Fakes["oa-primary"].SetDefault(fakeprovider.Behavior{Deltas: 50, Delay: 50 * time.Millisecond})
	base, stop := context.WithCancelCause(context.Background())
	defer stop(nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: g.Srv, BaseContext: func(net.Listener) context.Context { return base }}
	go func() { _ = hs.Serve(ln) }()
	defer hs.Close()

	resp, err := http.Post("http://"+ln.Addr().String()+"/v1/chat/completions", "application/json",
		strings.NewReader(icChatBody("gpt-4o-mini", true)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	var frames []string
	for {
		line, err := br.ReadString('\n')
		if strings.HasPrefix(line, "data: ") {
			frames = append(frames, line)
			if len(frames) == 3 { // the role chunk and two deltas: the stream is committed
				stop(failure.ErrShutdown)
			}
		}
		if err != nil {
			break
		}
	}
	last := frames[len(frames)-1]
	if !strings.Contains(last, `"error"`) || !strings.Contains(last, "upstream_truncated") || !strings.Contains(last, "shutting down") {
		t.Fatalf("last frame %q, want the terminal error", last)
	}
	for _, f := range frames[:len(frames)-1] {
		if strings.Contains(f, `"error"`) || strings.Contains(f, "[DONE]") {
			t.Fatalf("frame %q before the end", f)
		}
	}
	rec := g.generation(t, resp.Header.Get("x-request-id"))
	if rec.Attempts[0].Outcome != "truncated" {
		t.Fatalf("audit %+v", rec.Attempts)
	}
}

// R-FAIL-8: a fallback that resolves to the requested model (here an alias of it) tries no
// route a second time: every attempt of a request goes to a different route.
func TestFallbackNeverRetriesARoute(t *testing.T) {
	g := startTwo(t)
	fail := fakeprovider.Behavior{Kind: fakeprovider.KindStatus, Status: 500}
	g.Fakes["oa-primary"].SetDefault(fail)
	g.Fakes["oa-backup"].SetDefault(fail)
	resp, b := icPost(t, g.URL, "/v1/chat/completions",
		`{"model":"gpt-4o-mini","models":["mini"],"messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != 502 || resp.Header.Get("x-switchyard-attempts") != "2" {
		t.Fatalf("%d attempts %s: %s", resp.StatusCode, resp.Header.Get("x-switchyard-attempts"), b)
	}
}

// R-BILL-2: a stream the provider cut before reporting usage is not recorded at zero: the
// attempt is truncated, its output estimated at one token per delta the caller received, its
// provenance "estimated", and it has a cost.
func TestCutStreamUsageEstimated(t *testing.T) {
	g := startTwo(t)
	g.Fakes["oa-primary"].Script(fakeprovider.Behavior{Kind: fakeprovider.KindCut, After: 3})
	resp, _ := icPost(t, g.URL, "/v1/chat/completions", icChatBody("gpt-4o-mini", true))
	rec := g.generation(t, resp.Header.Get("x-request-id"))
	a := rec.Attempts[0]
	if a.Outcome != "truncated" || a.UsageProvenance != "estimated" || a.Tokens.Output != 3 || a.CostUSD <= 0 {
		t.Fatalf("attempt %+v", a)
	}
}
