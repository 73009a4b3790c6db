package server_test

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	anthropicopt "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	openaiopt "github.com/openai/openai-go/v3/option"

	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/fakeprovider"
)

var icFail503 = fakeprovider.Behavior{Kind: fakeprovider.KindStatus, Status: 503}

var icSurfaces = []catalog.Dialect{catalog.OpenAI, catalog.Anthropic}

// icServed checks that a call was served by dep in the given number of physical attempts
// (x-switchyard-attempts and the audit, R-AUDIT-1, R-AUDIT-3).
func icServed(t *testing.T, g *gateway, resp *http.Response, dep string, attempts int) {
	t.Helper()
	h := resp.Header
	if got := h.Get("X-Switchyard-Deployment"); got != dep {
		t.Errorf("served by %q, want %q", got, dep)
	}
	if got, want := h.Get("X-Switchyard-Attempts"), strconv.Itoa(attempts); got != want {
		t.Errorf("x-switchyard-attempts %s, want %s", got, want)
	}
	rec := g.generation(t, h.Get("X-Request-Id"))
	if len(rec.Attempts) != attempts || rec.Attempts[len(rec.Attempts)-1].Deployment != dep {
		t.Errorf("audit attempts %+v, want %d ending at %s", rec.Attempts, attempts, dep)
	}
}

func icPrimary(d catalog.Dialect) string {
	if d == catalog.Anthropic {
		return "an-primary"
	}
	return "oa-primary"
}

func icBackup(d catalog.Dialect) string {
	if d == catalog.Anthropic {
		return "an-backup"
	}
	return "oa-backup"
}

// icOpenPrimary makes the two failover-eligible failures in a row that open the circuit of the
// surface's primary deployment; both requests are served by the backup.
func icOpenPrimary(t *testing.T, g *gateway, d catalog.Dialect) {
	t.Helper()
	g.Fakes[icPrimary(d)].Script(icFail503, icFail503)
	for range 2 {
		resp, _ := icCall(t, g.URL, d, icModel(d), false)
		icServed(t, g, resp, icBackup(d), 2)
	}
}

// TestCircuitOpensAfterTwoFailures: R-CIRCUIT-1: two failover-eligible failures in a row open a
// deployment's circuit; the next requests skip it (no upstream call) and R-AUDIT-3: the skipped
// route is not an attempt (x-switchyard-attempts and the audit count 1).
func TestCircuitOpensAfterTwoFailures(t *testing.T) {
	t.Parallel()
	for _, d := range icSurfaces {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			g := startTwo(t)
			icOpenPrimary(t, g, d)
			p := g.Fakes[icPrimary(d)]
			for range 3 {
				resp, _ := icCall(t, g.URL, d, icModel(d), d == catalog.OpenAI)
				icServed(t, g, resp, icBackup(d), 1)
			}
			if p.Hits() != 2 {
				t.Errorf("open deployment got %d requests, want the 2 that opened it", p.Hits())
			}
		})
	}
}

// TestCircuitProbeAfterCooldown: R-CIRCUIT-2: after the cooldown exactly one live request probes;
// success closes the circuit, failure reopens it with a new cooldown (R-CIRCUIT-1 30 s default).
func TestCircuitProbeAfterCooldown(t *testing.T) {
	t.Parallel()
	t.Run("success closes", func(t *testing.T) {
		t.Parallel()
		g := startTwo(t)
		icOpenPrimary(t, g, catalog.OpenAI)
		p := g.Fakes["oa-primary"]
		g.Clock.Advance(29 * time.Second)
		resp, _ := icCall(t, g.URL, catalog.OpenAI, "gpt-4o-mini", false)
		icServed(t, g, resp, "oa-backup", 1)
		g.Clock.Advance(time.Second)
		resp, _ = icCall(t, g.URL, catalog.OpenAI, "gpt-4o-mini", false) // the probe
		icServed(t, g, resp, "oa-primary", 1)
		for range 2 { // closed: served as usual
			resp, _ = icCall(t, g.URL, catalog.OpenAI, "gpt-4o-mini", false)
			icServed(t, g, resp, "oa-primary", 1)
		}
		if p.Hits() != 5 {
			t.Errorf("primary hits %d, want 5", p.Hits())
		}
	})
	t.Run("failure reopens", func(t *testing.T) {
		t.Parallel()
		g := startTwo(t)
		icOpenPrimary(t, g, catalog.Anthropic)
		p := g.Fakes["an-primary"]
		g.Clock.Advance(30 * time.Second)
		p.Script(fakeprovider.Behavior{Kind: fakeprovider.KindStatus, Status: 529})
		resp, _ := icCall(t, g.URL, catalog.Anthropic, "claude-haiku-4-5", false) // the probe fails
		icServed(t, g, resp, "an-backup", 2)
		if p.Hits() != 3 {
			t.Fatalf("primary hits %d after the probe, want 3", p.Hits())
		}
		// One failed probe reopens at once, for a new full cooldown from the probe.
		resp, _ = icCall(t, g.URL, catalog.Anthropic, "claude-haiku-4-5", false)
		icServed(t, g, resp, "an-backup", 1)
		g.Clock.Advance(29 * time.Second)
		resp, _ = icCall(t, g.URL, catalog.Anthropic, "claude-haiku-4-5", false)
		icServed(t, g, resp, "an-backup", 1)
		if p.Hits() != 3 {
			t.Fatalf("primary hits %d during the new cooldown, want 3", p.Hits())
		}
		g.Clock.Advance(time.Second)
		resp, _ = icCall(t, g.URL, catalog.Anthropic, "claude-haiku-4-5", false)
		icServed(t, g, resp, "an-primary", 1)
	})
}

// TestCircuitOneProbeUnderConcurrency: R-CIRCUIT-2 "concurrent requests do not all become
// probes": while the half-open circuit's probe is in flight, 20 concurrent requests are all
// served by the backup; the recovering deployment sees exactly one request.
func TestCircuitOneProbeUnderConcurrency(t *testing.T) {
	t.Parallel()
	yaml := strings.Replace(twoDeployments, "headers: 2s", "headers: 30s", 1)
	hg := icStartHooked(t, yaml, oa("oa-primary"), oa("oa-backup"), an("an-primary"), an("an-backup"))
	g := hg.gateway
	icOpenPrimary(t, g, catalog.OpenAI)
	g.Fakes["oa-primary"].Reset()
	g.Fakes["oa-backup"].Reset()
	g.Clock.Advance(30 * time.Second)

	tap := hg.Taps["oa-primary"]
	for len(tap.Arrived) > 0 {
		<-tap.Arrived
	}
	tap.Hold()
	probe := make(chan *http.Response, 1)
	go func() {
		resp, _, err := icTry(g.URL, "/v1/chat/completions", icChatBody("gpt-4o-mini", false))
		if err != nil {
			t.Errorf("probe: %v", err)
			resp = &http.Response{Header: http.Header{}}
		}
		probe <- resp
	}()
	select {
	case <-tap.Arrived: // the probe is admitted and held before the provider
	case resp := <-probe:
		t.Fatalf("the request after the cooldown did not probe: served by %q", resp.Header.Get("X-Switchyard-Deployment"))
	}

	var wg sync.WaitGroup
	deps := make([]string, 20)
	for i := range deps {
		wg.Go(func() {
			resp, _, err := icTry(g.URL, "/v1/chat/completions", icChatBody("gpt-4o-mini", false))
			if err != nil {
				t.Errorf("concurrent request %d: %v", i, err)
				return
			}
			deps[i] = resp.Header.Get("X-Switchyard-Deployment")
		})
	}
	wg.Wait()
	tap.Release()
	resp := <-probe
	if got := resp.Header.Get("X-Switchyard-Deployment"); got != "oa-primary" || resp.StatusCode != 200 {
		t.Errorf("probe: %d served by %q, want 200 from oa-primary", resp.StatusCode, got)
	}
	for i, d := range deps {
		if d != "oa-backup" {
			t.Errorf("concurrent request %d served by %q during the probe, want oa-backup", i, d)
		}
	}
	if n := g.Fakes["oa-primary"].Hits(); n != 1 {
		t.Errorf("recovering deployment got %d requests, want exactly 1 (the probe)", n)
	}
	if n := g.Fakes["oa-backup"].Hits(); n != 20 {
		t.Errorf("backup got %d requests, want 20", n)
	}
	// The successful probe closed the circuit.
	resp, _ = icCall(t, g.URL, catalog.OpenAI, "gpt-4o-mini", false)
	icServed(t, g, resp, "oa-primary", 1)
}

// TestCircuitIgnoresCallerFaults: R-CIRCUIT-3: caller-fault errors (400, 413, content policy,
// context overflow) and client cancellations never count on a circuit: after three of them in a
// row (threshold 2) the deployment is still tried first.
func TestCircuitIgnoresCallerFaults(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		b      fakeprovider.Behavior
		status int
	}{
		{"400", fakeprovider.Behavior{Kind: fakeprovider.KindStatus, Status: 400}, 400},
		{"413", fakeprovider.Behavior{Kind: fakeprovider.KindStatus, Status: 413}, 413},
		{"content policy", fakeprovider.Behavior{Kind: fakeprovider.KindContentPolicy}, 400},
		{"context overflow", fakeprovider.Behavior{Kind: fakeprovider.KindContextOverflow}, 400},
	}
	for _, d := range icSurfaces {
		for _, tc := range cases {
			t.Run(string(d)+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				g := startTwo(t)
				p := g.Fakes[icPrimary(d)]
				p.Script(tc.b, tc.b, tc.b)
				for range 3 {
					resp, b := icPost(t, g.URL, icPath(d), icBody(d, icModel(d), false))
					if resp.StatusCode != tc.status {
						t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, b)
					}
				}
				resp, _ := icCall(t, g.URL, d, icModel(d), false)
				icServed(t, g, resp, icPrimary(d), 1)
				if p.Hits() != 4 || g.Fakes[icBackup(d)].Hits() != 0 {
					t.Errorf("hits primary %d backup %d, want 4 and 0", p.Hits(), g.Fakes[icBackup(d)].Hits())
				}
			})
		}
	}
	t.Run("client cancellation", func(t *testing.T) {
		t.Parallel()
		yaml := strings.Replace(twoDeployments, "headers: 5s, stream_headers: 5s", "headers: 30s, stream_headers: 30s", 1)
		hg := icStartHooked(t, yaml, oa("oa-primary"), oa("oa-backup"), an("an-primary"), an("an-backup"))
		p := hg.Fakes["oa-primary"]
		hang := fakeprovider.Behavior{Kind: fakeprovider.KindHang}
		p.Script(hang, hang, hang)
		for i := range 3 {
			ctx, cancel := context.WithCancel(context.Background())
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, hg.URL+"/v1/chat/completions",
				strings.NewReader(icChatBody("gpt-4o-mini", i%2 == 0)))
			errc := make(chan error, 1)
			go func() {
				resp, err := http.DefaultClient.Do(req)
				if err == nil {
					resp.Body.Close()
				}
				errc <- err
			}()
			select {
			case <-hg.Taps["oa-primary"].Arrived: // in flight at the provider
			case err := <-errc:
				cancel()
				t.Fatalf("request %d ended (%v) without reaching the primary: cancellations opened its circuit", i, err)
			}
			cancel()
			if err := <-errc; err == nil {
				t.Fatalf("cancelled request %d returned a response", i)
			}
			<-p.Closed() // the upstream call was cancelled at once (R-FAIL-11)
			<-hg.Served  // and the gateway's handler is done (its ticket reported)
		}
		resp, _ := icCall(t, hg.URL, catalog.OpenAI, "gpt-4o-mini", false)
		icServed(t, hg.gateway, resp, "oa-primary", 1)
		if n := hg.Fakes["oa-backup"].Hits(); n != 0 {
			t.Errorf("backup got %d requests, want none", n)
		}
	})
}

const icPauseYAML = `
auth: {required: false}
routing:
  timeouts: {headers: 10s, stream_headers: 10s}
models: [{id: m}]
deployments:
  - name: p1-a
    provider: p1
    dialect: openai
    base_url: "{{p1-a}}"
    routes: [{model: m, price: {input: 1, output: 1}}]
  - name: p1-b
    provider: p1
    dialect: openai
    base_url: "{{p1-b}}"
    routes: [{model: m, price: {input: 2, output: 2}}]
  - name: p2
    provider: p2
    dialect: openai
    base_url: "{{p2}}"
    routes: [{model: m, price: {input: 3, output: 3}}]
`

// TestUpstream429PausesProvider: R-CIRCUIT-4: an upstream 429 pauses every deployment of that
// provider for its retry-after, clamped to 1..60 s; paused routes are not attempts (R-AUDIT-3).
func TestUpstream429PausesProvider(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		retryAfter int
		pause      time.Duration
	}{{5, 5 * time.Second}, {120, 60 * time.Second}, {0, time.Second}} {
		t.Run("retry-after "+strconv.Itoa(tc.retryAfter), func(t *testing.T) {
			t.Parallel()
			g := startGateway(t, icPauseYAML, oa("p1-a"), oa("p1-b"), oa("p2"))
			g.Fakes["p1-a"].Script(fakeprovider.Behavior{Kind: fakeprovider.KindStatus, Status: 429, RetryAfter: tc.retryAfter})
			resp, _ := icCall(t, g.URL, catalog.OpenAI, "m", false)
			icServed(t, g, resp, "p2", 2) // p1-a failed, p1-b was skipped (paused), p2 served
			resp, _ = icCall(t, g.URL, catalog.OpenAI, "m", false)
			icServed(t, g, resp, "p2", 1)
			g.Clock.Advance(tc.pause - 100*time.Millisecond)
			resp, _ = icCall(t, g.URL, catalog.OpenAI, "m", false)
			icServed(t, g, resp, "p2", 1)
			if a, b := g.Fakes["p1-a"].Hits(), g.Fakes["p1-b"].Hits(); a != 1 || b != 0 {
				t.Fatalf("during the pause: p1-a %d, p1-b %d requests, want 1 and 0", a, b)
			}
			g.Clock.Advance(100 * time.Millisecond)
			resp, _ = icCall(t, g.URL, catalog.OpenAI, "m", false)
			icServed(t, g, resp, "p1-a", 1)
		})
	}
}

const icHangYAML = `
auth: {required: false}
routing:
  timeouts: {headers: 10s, stream_headers: 300ms, stream_idle: 10s}
models: [{id: model-a}, {id: model-b}]
deployments:
  - name: d
    provider: pd
    dialect: openai
    base_url: "{{d}}"
    routes: [{model: model-a, price: {input: 1, output: 1}}, {model: model-b, price: {input: 1, output: 1}}]
  - name: e
    provider: pe
    dialect: openai
    base_url: "{{e}}"
    routes: [{model: model-a, price: {input: 2, output: 2}}]
`

// TestHangPausesModelAtDeployment: R-CIRCUIT-5: two hangs (no headers within stream_headers) of
// model A at deployment D in a row, with a success of model B on D in between, pause (D, A): A
// is served elsewhere without calling D, while D keeps serving B; after the cooldown A probes D.
func TestHangPausesModelAtDeployment(t *testing.T) {
	t.Parallel()
	g := startGateway(t, icHangYAML, oa("d"), oa("e"))
	d := g.Fakes["d"]
	hang := fakeprovider.Behavior{Kind: fakeprovider.KindHang}
	d.Script(hang, fakeprovider.Behavior{}, hang)

	resp, _ := icCall(t, g.URL, catalog.OpenAI, "model-a", true)
	icServed(t, g, resp, "e", 2)
	rec := g.generation(t, resp.Header.Get("X-Request-Id"))
	if rec.Attempts[0].ErrorCode != "upstream_timeout" {
		t.Fatalf("first attempt %+v, want upstream_timeout", rec.Attempts[0])
	}
	resp, _ = icCall(t, g.URL, catalog.OpenAI, "model-b", false)
	icServed(t, g, resp, "d", 1)
	resp, _ = icCall(t, g.URL, catalog.OpenAI, "model-a", true)
	icServed(t, g, resp, "e", 2)
	if d.Hits() != 3 {
		t.Fatalf("d hits %d, want 3", d.Hits())
	}
	// (d, model-a) is paused; d's circuit is not (the success of model-b broke the run).
	for range 2 {
		resp, _ = icCall(t, g.URL, catalog.OpenAI, "model-a", true)
		icServed(t, g, resp, "e", 1)
		resp, _ = icCall(t, g.URL, catalog.OpenAI, "model-b", true)
		icServed(t, g, resp, "d", 1)
	}
	if d.Hits() != 5 {
		t.Fatalf("d hits %d, want 5 (model-b only)", d.Hits())
	}
	for _, r := range d.Requests()[3:] {
		if r.Model != "model-b" {
			t.Errorf("paused model reached d: %s", r.Model)
		}
	}
	g.Clock.Advance(30 * time.Second)
	resp, _ = icCall(t, g.URL, catalog.OpenAI, "model-a", true) // the probe
	icServed(t, g, resp, "d", 1)
}

// TestAllRoutesCoolingDown: R-CIRCUIT-6: when every route of the model is open the request is
// refused at once with no upstream call: 503, retry-after 5, x-switchyard-error-code
// gateway_error, x-switchyard-limit-kind health, "all deployments cooling down", as the SDKs'
// native types (OpenAI api_error, Anthropic overloaded_error).
func TestAllRoutesCoolingDown(t *testing.T) {
	t.Parallel()
	g := startTwo(t)
	for _, name := range []string{"oa-primary", "oa-backup", "an-primary", "an-backup"} {
		g.Fakes[name].Script(icFail503, icFail503)
	}
	for _, d := range icSurfaces {
		for range 2 {
			resp, b := icPost(t, g.URL, icPath(d), icBody(d, icModel(d), false))
			// A provider's 503 as the last failure is answered 503 (docs/errors.md).
			icCheckError(t, d, resp, b, 503, "upstream_error", "api_error")
		}
	}
	hits := func() int {
		n := 0
		for _, f := range g.Fakes {
			n += f.Hits()
		}
		return n
	}
	before := hits()
	ctx := context.Background()
	check := func(t *testing.T, resp *http.Response) {
		t.Helper()
		h := resp.Header
		if h.Get("Retry-After") != "5" || h.Get("X-Switchyard-Error-Code") != "gateway_error" ||
			h.Get("X-Switchyard-Limit-Kind") != "health" || h.Get("X-Switchyard-Attempts") != "0" {
			t.Errorf("headers %v", h)
		}
	}
	t.Run("openai", func(t *testing.T) {
		var hdr *http.Response
		oc := g.openaiClient()
		_, err := oc.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
			Model: "gpt-4o-mini", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello")},
		}, openaiopt.WithResponseInto(&hdr))
		var oe *openai.Error
		if !errors.As(err, &oe) || oe.StatusCode != 503 || oe.Type != "api_error" || oe.Message != "all deployments cooling down" {
			t.Fatalf("openai: %v %+v", err, oe)
		}
		check(t, oe.Response)
		st := oc.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
			Model: "gpt-4o-mini", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello")},
		})
		for st.Next() {
		}
		if !errors.As(st.Err(), &oe) || oe.StatusCode != 503 || oe.Type != "api_error" {
			t.Fatalf("openai stream: %v", st.Err())
		}
	})
	t.Run("anthropic", func(t *testing.T) {
		ac := g.anthropicClient()
		_, err := ac.Messages.New(ctx, anthropic.MessageNewParams{
			Model: "claude-haiku-4-5", MaxTokens: 64,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello"))},
		}, anthropicopt.WithMaxRetries(0))
		var ae *anthropic.Error
		if !errors.As(err, &ae) || ae.StatusCode != 503 || ae.Type() != "overloaded_error" || ae.Message != "all deployments cooling down" {
			t.Fatalf("anthropic: %v", err)
		}
		check(t, ae.Response)
		if ae.RequestID == "" || ae.RequestID != ae.Response.Header.Get("X-Request-Id") {
			t.Errorf("request-id %q vs x-request-id %q", ae.RequestID, ae.Response.Header.Get("X-Request-Id"))
		}
	})
	if n := hits(); n != before {
		t.Errorf("%d upstream calls while every route was cooling down", n-before)
	}
}

// TestCircuitSettingsFromConfig: R-CIRCUIT-7: routing.circuit {failures: 3, cooldown: 10s} is
// honoured: two failures leave the circuit closed, three open it, it cools down 10 s.
func TestCircuitSettingsFromConfig(t *testing.T) {
	t.Parallel()
	yaml := strings.Replace(twoDeployments, "routing:\n", "routing:\n  circuit: {failures: 3, cooldown: 10s}\n", 1)
	g := startGateway(t, yaml, oa("oa-primary"), oa("oa-backup"), an("an-primary"), an("an-backup"))
	p := g.Fakes["oa-primary"]
	p.Script(icFail503, icFail503, icFail503)
	for range 3 { // the third is still tried: two failures do not open it
		resp, _ := icCall(t, g.URL, catalog.OpenAI, "gpt-4o-mini", false)
		icServed(t, g, resp, "oa-backup", 2)
	}
	resp, _ := icCall(t, g.URL, catalog.OpenAI, "gpt-4o-mini", false)
	icServed(t, g, resp, "oa-backup", 1)
	g.Clock.Advance(9 * time.Second)
	resp, _ = icCall(t, g.URL, catalog.OpenAI, "gpt-4o-mini", false)
	icServed(t, g, resp, "oa-backup", 1)
	if p.Hits() != 3 {
		t.Fatalf("primary hits %d while open, want 3", p.Hits())
	}
	g.Clock.Advance(time.Second)
	resp, _ = icCall(t, g.URL, catalog.OpenAI, "gpt-4o-mini", false)
	icServed(t, g, resp, "oa-primary", 1)
}
