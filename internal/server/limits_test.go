package server_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	anthropicopt "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	openaiopt "github.com/openai/openai-go/v3/option"
	"github.com/tidwall/gjson"

	"github.com/switchyard-gw/switchyard/internal/admission"
	"github.com/switchyard-gw/switchyard/internal/audit"
	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/config"
	fp "github.com/switchyard-gw/switchyard/internal/fakeprovider"
	"github.com/switchyard-gw/switchyard/internal/server"
)

// limitsCatalog is twoDeployments with authentication on and keys with limits. gpt-4o-mini is
// billed at its catalog price (1 USD/MTok in, 100 USD/MTok out: 1 and 100 micro-USD a token);
// claude-haiku-4-5 at its routes' prices.
const limitsCatalog = `
routing:
  timeouts: {headers: 5s, stream_headers: 5s, stream_idle: 5s}
models:
  - id: gpt-4o-mini
    price: {input: 1, output: 100}
  - id: claude-haiku-4-5
deployments:
  - name: oa-primary
    provider: openai
    dialect: openai
    base_url: "{{oa-primary}}"
    routes: [{model: gpt-4o-mini, price: {input: 0.15, output: 0.6}}]
  - name: oa-backup
    provider: reseller
    dialect: openai
    base_url: "{{oa-backup}}"
    routes: [{model: gpt-4o-mini, price: {input: 0.2, output: 0.8}}]
  - name: an-primary
    provider: anthropic
    dialect: anthropic
    base_url: "{{an-primary}}"
    routes: [{model: claude-haiku-4-5, price: {input: 1, output: 5}}]
  - name: an-backup
    provider: cloud
    dialect: anthropic
    base_url: "{{an-backup}}"
    routes: [{model: claude-haiku-4-5, price: {input: 2, output: 10}}]
keys:
  - {name: rpm2, secret: sk-rpm2, limits: {rpm: 2}}
  - {name: tpm, secret: sk-tpm, limits: {tpm: 300}}
  - {name: one-at-a-time, secret: sk-conc1, limits: {concurrency: 1}}
  - {name: budget, secret: sk-budget, account: acme, limits: {budget_usd: 0.005, budget_period: total}}
  - {name: spender, secret: sk-spender, account: acme}
  - {name: free, secret: sk-free}
accounts:
  - id: acme
    limits: {budget_usd: 1, budget_period: day}
`

func startLimits(t *testing.T) *gateway {
	return startGateway(t, limitsCatalog, oa("oa-primary"), oa("oa-backup"), an("an-primary"), an("an-backup"))
}

// limitBody is a small request of the surface with max_tokens set.
func limitBody(s surface, stream bool) string {
	return fmt.Sprintf(`{"model":%q,"max_tokens":5,"messages":[{"role":"user","content":"Hello"}],"stream":%t}`, s.model, stream)
}

func postKey(t *testing.T, g *gateway, s surface, key, body string) (*http.Response, []byte) {
	t.Helper()
	hdr := []string{"Authorization", "Bearer " + key}
	if s.anthropic() {
		hdr = append(hdr, "Anthropic-Version", "2023-06-01")
	}
	return icPost(t, g.URL, s.path, body, hdr...)
}

// requireRefusal checks a limit refusal on the wire: status, error class in the caller's
// dialect, x-switchyard-limit-kind, retry-after, zero attempts, and its audit record.
func requireRefusal(t *testing.T, g *gateway, resp *http.Response, body []byte, status int, class, kind, retry string) {
	t.Helper()
	h := resp.Header
	if resp.StatusCode != status || errorType(body) != class || h.Get("X-Switchyard-Error-Code") != class ||
		h.Get("X-Switchyard-Limit-Kind") != kind || h.Get("Retry-After") != retry || h.Get("X-Switchyard-Attempts") != "0" {
		t.Fatalf("got %d %s limit-kind %q retry-after %q attempts %q body %s; want %d %s %q %q 0",
			resp.StatusCode, errorType(body), h.Get("X-Switchyard-Limit-Kind"), h.Get("Retry-After"),
			h.Get("X-Switchyard-Attempts"), body, status, class, kind, retry)
	}
	if rid := gjson.GetBytes(body, "request_id").String(); rid != h.Get("X-Request-Id") {
		t.Errorf("request_id %q != x-request-id %q", rid, h.Get("X-Request-Id"))
	}
	rec := g.generation(t, h.Get("X-Request-Id"))
	if rec.Status != status || rec.ErrorCode != class || len(rec.Attempts) != 0 {
		t.Errorf("audit: status %d class %q attempts %d; want %d %s 0", rec.Status, rec.ErrorCode, len(rec.Attempts), status, class)
	}
}

func fakeHits(g *gateway) int {
	n := 0
	for _, f := range g.Fakes {
		n += f.Hits()
	}
	return n
}

// TestLimitRPM: R-BILL-1, contract.md x-switchyard-limit-kind: the third request within a
// rolling minute to a key with rpm 2 is a 429 rate_limited in the caller's dialect, with limit
// kind rpm and a retry-after until the oldest request leaves the window, and never reaches a
// provider; a minute after the first two, the key admits again.
func TestLimitRPM(t *testing.T) {
	t.Parallel()
	for _, s := range surfaces {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			g := startLimits(t)
			g.Clock.Advance(15 * time.Second) // 12:00:15
			for range 2 {
				if resp, b := postKey(t, g, s, "sk-rpm2", limitBody(s, false)); resp.StatusCode != 200 {
					t.Fatalf("status %d %s", resp.StatusCode, b)
				}
			}
			g.Clock.Advance(15 * time.Second) // 12:00:30: the first two leave at 12:01:15
			resp, b := postKey(t, g, s, "sk-rpm2", limitBody(s, false))
			requireRefusal(t, g, resp, b, 429, "rate_limited", "rpm", "45")
			native := gjson.GetBytes(b, "error.type").String()
			if native != "rate_limit_error" {
				t.Errorf("native error type %q, want rate_limit_error", native)
			}
			if n := fakeHits(g); n != 2 {
				t.Errorf("providers saw %d requests, want 2", n)
			}
			// Other keys are not affected; the next window admits.
			if resp, b := postKey(t, g, s, "sk-free", limitBody(s, false)); resp.StatusCode != 200 {
				t.Fatalf("unlimited key: %d %s", resp.StatusCode, b)
			}
			g.Clock.Advance(45 * time.Second)
			if resp, b := postKey(t, g, s, "sk-rpm2", limitBody(s, false)); resp.StatusCode != 200 {
				t.Fatalf("next minute: %d %s", resp.StatusCode, b)
			}
		})
	}
}

// TestLimitTPM: R-BILL-1: the tpm charge is the input estimate plus max_tokens; once a window
// holds tokens, a request that would pass the limit is a 429 with limit kind tpm.
func TestLimitTPM(t *testing.T) {
	t.Parallel()
	g := startLimits(t)
	body := `{"model":"gpt-4o-mini","max_tokens":200,"messages":[{"role":"user","content":"Hello"}]}`
	if resp, b := postKey(t, g, oaSurface, "sk-tpm", body); resp.StatusCode != 200 {
		t.Fatalf("status %d %s", resp.StatusCode, b)
	}
	// Settled to the provider's usage (a few tokens): 200 more still fit in 300.
	u, _ := g.Admission.Usage(t.Context(), admission.Layer{Scope: admission.ScopeKey, ID: "tpm"})
	if u.Tokens <= 0 || u.Tokens >= 100 {
		t.Fatalf("tokens after settle = %d, want the provider's usage", u.Tokens)
	}
	if resp, b := postKey(t, g, oaSurface, "sk-tpm", body); resp.StatusCode != 200 {
		t.Fatalf("second request: %d %s", resp.StatusCode, b)
	}
	big := `{"model":"gpt-4o-mini","max_tokens":290,"messages":[{"role":"user","content":"Hello"}]}`
	resp, b := postKey(t, g, oaSurface, "sk-tpm", big)
	requireRefusal(t, g, resp, b, 429, "rate_limited", "tpm", "60")
}

// TestLimitConcurrency: R-BILL-1: a key with concurrency 1 holding a slow stream open is
// refused a second request (429, limit kind concurrency, retry-after 1) that reaches no
// provider; once the stream ends, the key is admitted again.
func TestLimitConcurrency(t *testing.T) {
	t.Parallel()
	g := startLimits(t)
	g.Fakes["oa-primary"].Script(fp.Behavior{Text: "slow answer", Deltas: 3, Delay: 30 * time.Second})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req := oaSurface.newRawRequest(ctx, g, limitBody(oaSurface, true))
	req.Header.Set("Authorization", "Bearer sk-conc1")
	// The fake waits Delay before the first delta, so the gateway holds the request (no commit,
	// no headers yet) until the caller goes away: wait until the provider has it.
	type result struct {
		resp *http.Response
		err  error
	}
	done := make(chan result, 1)
	client := rawClient(t, nil)
	go func() {
		resp, err := client.Do(req)
		done <- result{resp, err}
	}()
	waitHits(t, g.Fakes["oa-primary"], 1)
	resp, b := postKey(t, g, oaSurface, "sk-conc1", limitBody(oaSurface, false))
	requireRefusal(t, g, resp, b, 429, "rate_limited", "concurrency", "1")
	if n := fakeHits(g); n != 1 {
		t.Errorf("providers saw %d requests, want 1", n)
	}
	cancel() // the caller goes away: the hold is released
	if r := <-done; r.err == nil {
		r.resp.Body.Close()
	}
	waitUsage(t, g, admission.ScopeKey, "one-at-a-time", func(u admission.Usage) bool { return u.InFlight == 0 })
	if resp, b := postKey(t, g, oaSurface, "sk-conc1", limitBody(oaSurface, false)); resp.StatusCode != 200 {
		t.Fatalf("after the stream: %d %s", resp.StatusCode, b)
	}
}

// waitHits waits until the fake has received n requests.
func waitHits(t *testing.T, f *fp.Provider, n int) {
	t.Helper()
	waitFor(t, func() bool { return f.Hits() >= n })
}

func waitUsage(t *testing.T, g *gateway, scope admission.Scope, id string, ok func(admission.Usage) bool) admission.Usage {
	t.Helper()
	var u admission.Usage
	waitFor(t, func() bool {
		u, _ = g.Admission.Usage(t.Context(), admission.Layer{Scope: scope, ID: id})
		return ok(u)
	})
	return u
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatal("condition never met")
		case <-tick.C:
		}
	}
}

// TestBudgetBurst: R-BILL-1, R-BILL-4: 100 parallel requests against a budget of $0.005 (a
// reserve is about $0.0005: 5 output tokens at 100 USD/MTok plus the input): the key never
// spends more than its budget plus one reserve, every refusal is a 402 insufficient_credit with
// limit kind budget, and what the store charged equals, to the micro-dollar, the sum of the
// audited costs of the served requests (each the provider's reported usage at the model price).
func TestBudgetBurst(t *testing.T) {
	t.Parallel()
	g := startLimits(t)
	const n = 100
	type outcome struct {
		status int
		id     string
		body   []byte
		hdr    http.Header
	}
	outs := make([]outcome, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			resp, b := postKey(t, g, oaSurface, "sk-budget", limitBody(oaSurface, i%2 == 0))
			outs[i] = outcome{resp.StatusCode, resp.Header.Get("X-Request-Id"), b, resp.Header}
		})
	}
	wg.Wait()
	var served, refused int
	var charged, maxReserve int64
	for _, o := range outs {
		rec := g.generation(t, o.id)
		switch o.status {
		case 200:
			served++
			a := rec.Attempts[len(rec.Attempts)-1]
			if a.UsageProvenance != "observed" || a.Tokens.Output == 0 {
				t.Errorf("served request %s: usage %+v %s", o.id, a.Tokens, a.UsageProvenance)
			}
			if want := float64(a.Tokens.Input)*1e-6 + float64(a.Tokens.Output)*100e-6; !near(a.CostUSD, want) {
				t.Errorf("cost %v, want %v at the model price", a.CostUSD, want)
			}
			charged += admission.MicroUSD(a.CostUSD)
			maxReserve = max(maxReserve, admission.MicroUSD(a.ReservedMaxUSD))
			if a.ReservedMaxUSD < a.CostUSD {
				t.Errorf("reserve %v below the cost %v", a.ReservedMaxUSD, a.CostUSD)
			}
		case 402:
			refused++
			if errorType(o.body) != "insufficient_credit" || o.hdr.Get("X-Switchyard-Limit-Kind") != "budget" || rec.ErrorCode != "insufficient_credit" {
				t.Errorf("refusal %s: %s limit-kind %q", o.id, o.body, o.hdr.Get("X-Switchyard-Limit-Kind"))
			}
		default:
			t.Errorf("status %d: %s", o.status, o.body)
		}
	}
	u, _ := g.Admission.Usage(t.Context(), admission.Layer{Scope: admission.ScopeKey, ID: "budget", Limits: admission.Limits{BudgetPeriod: admission.PeriodTotal}})
	const budget = 5000 // micro-USD
	t.Logf("served %d, refused %d, spent %d of %d micro-USD (reserve %d)", served, refused, u.SpentMicroUSD, budget, maxReserve)
	if served == 0 || refused == 0 {
		t.Fatalf("served %d refused %d: the burst did not reach the budget", served, refused)
	}
	if u.SpentMicroUSD > budget+maxReserve {
		t.Errorf("overspend: %d micro-USD spent of a %d budget (one reserve is %d)", u.SpentMicroUSD, budget, maxReserve)
	}
	if u.SpentMicroUSD != charged || u.ReservedMicroUSD != 0 || u.InFlight != 0 {
		t.Errorf("store %+v; audited costs sum to %d micro-USD", u, charged)
	}
	if a, _ := g.Admission.Usage(t.Context(), admission.Layer{Scope: admission.ScopeAccount, ID: "acme", Limits: admission.Limits{BudgetPeriod: admission.PeriodDay}}); a.SpentMicroUSD != charged {
		t.Errorf("account acme spent %d, want %d", a.SpentMicroUSD, charged)
	}
	if fakeHits(g) != served {
		t.Errorf("providers saw %d requests, %d were served: a refusal reached a provider", fakeHits(g), served)
	}
}

func near(a, b float64) bool { d := a - b; return d < 1e-12 && d > -1e-12 }

// TestFailedAttemptsCostNothing: R-BILL-2: an attempt that fails before commit is not billed,
// the request is settled to the serving attempt's cost only, and a request whose every attempt
// fails leaves nothing reserved or spent. Every attempt carries the request's reserve.
func TestFailedAttemptsCostNothing(t *testing.T) {
	t.Parallel()
	for _, s := range surfaces {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			g := startLimits(t)
			g.Fakes[s.primary].Script(fp.Behavior{Kind: fp.KindStatus, Status: 500})
			resp, b := postKey(t, g, s, "sk-spender", limitBody(s, true))
			if resp.StatusCode != 200 || resp.Header.Get("X-Switchyard-Deployment") != s.backup {
				t.Fatalf("status %d from %q: %s", resp.StatusCode, resp.Header.Get("X-Switchyard-Deployment"), b)
			}
			rec := g.generation(t, resp.Header.Get("X-Request-Id"))
			if len(rec.Attempts) != 2 {
				t.Fatalf("attempts %+v", rec.Attempts)
			}
			failed, served := rec.Attempts[0], rec.Attempts[1]
			if failed.CostUSD != 0 || served.CostUSD <= 0 {
				t.Errorf("failed attempt cost %v, served %v", failed.CostUSD, served.CostUSD)
			}
			if failed.ReservedMaxUSD <= 0 || failed.ReservedMaxUSD != served.ReservedMaxUSD {
				t.Errorf("reserved_max_usd %v / %v for a cost of %v", failed.ReservedMaxUSD, served.ReservedMaxUSD, served.CostUSD)
			}
			u, _ := g.Admission.Usage(t.Context(), admission.Layer{Scope: admission.ScopeAccount, ID: "acme", Limits: admission.Limits{BudgetPeriod: admission.PeriodDay}})
			if u.SpentMicroUSD != admission.MicroUSD(served.CostUSD) || u.ReservedMicroUSD != 0 || u.InFlight != 0 {
				t.Errorf("account usage %+v, want spent %d", u, admission.MicroUSD(served.CostUSD))
			}

			g.Fakes[s.primary].Script(fp.Behavior{Kind: fp.KindStatus, Status: 500})
			g.Fakes[s.backup].Script(fp.Behavior{Kind: fp.KindStatus, Status: 503})
			resp, b = postKey(t, g, s, "sk-spender", limitBody(s, false))
			if resp.StatusCode < 500 {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			g.generation(t, resp.Header.Get("X-Request-Id"))
			if u2, _ := g.Admission.Usage(t.Context(), admission.Layer{Scope: admission.ScopeAccount, ID: "acme", Limits: admission.Limits{BudgetPeriod: admission.PeriodDay}}); u2.SpentMicroUSD != u.SpentMicroUSD || u2.ReservedMicroUSD != 0 || u2.InFlight != 0 {
				t.Errorf("after a failed request: %+v, want spent unchanged at %d", u2, u.SpentMicroUSD)
			}
		})
	}
}

// TestLimitSDKErrors: R-BILL-1: the official SDKs see a limit refusal as their own API error
// type with the status, the native type and the limit headers.
func TestLimitSDKErrors(t *testing.T) {
	t.Parallel()
	g := startLimits(t)
	ctx := t.Context()
	// Exhaust the rpm of sk-rpm2 and the budget of sk-budget (one request's reserve at
	// max_tokens 64000 is more than $0.005).
	for range 2 {
		postKey(t, g, oaSurface, "sk-rpm2", limitBody(oaSurface, false))
	}
	var hr *http.Response
	oc := g.openaiClient(openaiopt.WithAPIKey("sk-rpm2"), openaiopt.WithResponseInto(&hr))
	_, err := oc.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt-4o-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello")}})
	var oe *openai.Error
	if !errors.As(err, &oe) || oe.StatusCode != 429 || oe.Type != "rate_limit_error" || oe.Code != "rate_limit_exceeded" ||
		oe.Response.Header.Get("X-Switchyard-Limit-Kind") != "rpm" || oe.Response.Header.Get("Retry-After") == "" {
		t.Errorf("openai SDK: %v", err)
	}
	oc = g.openaiClient(openaiopt.WithAPIKey("sk-budget"))
	_, err = oc.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt-4o-mini", MaxTokens: openai.Int(64000),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello")}})
	if !errors.As(err, &oe) || oe.StatusCode != 402 || oe.Type != "insufficient_quota" || oe.Response.Header.Get("X-Switchyard-Limit-Kind") != "budget" {
		t.Errorf("openai SDK budget: %v", err)
	}

	ac := g.anthropicClient(anthropicopt.WithAPIKey("sk-rpm2"))
	_, err = ac.Messages.New(ctx, anthropic.MessageNewParams{Model: "claude-haiku-4-5", MaxTokens: 64,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello"))}})
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != 429 || string(ae.Type()) != "rate_limit_error" || ae.Response.Header.Get("X-Switchyard-Limit-Kind") != "rpm" {
		t.Errorf("anthropic SDK: %v", err)
	}
	ac = g.anthropicClient(anthropicopt.WithAPIKey("sk-budget"))
	st := ac.Messages.NewStreaming(ctx, anthropic.MessageNewParams{Model: "claude-haiku-4-5", MaxTokens: 64000,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello"))}})
	for st.Next() {
	}
	if err := st.Err(); !errors.As(err, &ae) || ae.StatusCode != 402 || string(ae.Type()) != "invalid_request_error" {
		t.Errorf("anthropic SDK budget (stream): %v", err)
	}
}

// TestAnonymousHasNoLimits: R-BILL-1: with authentication off, a caller without a key has no
// limits, while a key with limits on the same gateway keeps them.
func TestAnonymousHasNoLimits(t *testing.T) {
	t.Parallel()
	g := startGateway(t, "auth: {required: false}\n"+limitsCatalog, oa("oa-primary"), oa("oa-backup"), an("an-primary"), an("an-backup"))
	for range 3 {
		if resp, b := oaSurface.post(t, g, limitBody(oaSurface, false)); resp.StatusCode != 200 {
			t.Fatalf("anonymous: %d %s", resp.StatusCode, b)
		}
		postKey(t, g, oaSurface, "sk-rpm2", limitBody(oaSurface, false))
	}
	resp, b := postKey(t, g, oaSurface, "sk-rpm2", limitBody(oaSurface, false))
	requireRefusal(t, g, resp, b, 429, "rate_limited", "rpm", "60")
}

// TestAdmissionURL: admission.url memory:// builds the in-memory store and redis:// the shared
// Redis store (R-BILL-4), which does not dial at start: a Redis down then is the degraded mode,
// not a refusal to start. A URL go-redis cannot read is an error.
func TestAdmissionURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ url, err string }{
		{"memory://", ""},
		{"redis://127.0.0.1:6379/0", ""},
		{"rediss://cache.internal:6380/1", ""},
		{"redis://127.0.0.1:6379/notadb", "admission: redis: invalid database number"},
	} {
		cfg, err := config.Parse("t.yaml", []byte("auth: {required: false}\nadmission: {url: \""+tc.url+"\"}\n"))
		if err != nil {
			t.Fatal(err)
		}
		cat, err := catalog.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		srv, err := server.New(cfg, cat, server.Options{Recorder: nopRecorder(t)})
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s: err = %v, want %q", tc.url, err, tc.err)
		}
		if srv != nil {
			srv.Close()
		}
	}
}

// nopRecorder is an audit recorder over a store that keeps nothing (its Run is never started).
func nopRecorder(t *testing.T) *audit.Recorder {
	return audit.NewRecorder(nopStore{}, audit.Options{})
}

type nopStore struct{}

func (nopStore) WriteRecords(context.Context, []*audit.Record) error { return nil }
func (nopStore) Record(context.Context, string) (*audit.Record, error) {
	return nil, audit.ErrNotFound
}
