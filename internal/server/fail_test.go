package server_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	anthropicopt "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	openaiopt "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/tidwall/gjson"

	"github.com/switchyard-gw/switchyard/internal/audit"
	"github.com/switchyard-gw/switchyard/internal/circuit"
	fp "github.com/switchyard-gw/switchyard/internal/fakeprovider"
)

// surface is one caller dialect of the twoDeployments catalog: its path, model and the primary
// (tried first) and backup deployments that serve the model.
type surface struct {
	name, path, model, primary, backup string
}

var (
	oaSurface = surface{"openai", "/v1/chat/completions", "gpt-4o-mini", "oa-primary", "oa-backup"}
	anSurface = surface{"anthropic", "/v1/messages", "claude-haiku-4-5", "an-primary", "an-backup"}
	surfaces  = []surface{oaSurface, anSurface}
)

func (s surface) anthropic() bool { return s.name == "anthropic" }

// body is a minimal request body of the surface.
func (s surface) body(stream bool) string {
	if s.anthropic() {
		return fmt.Sprintf(`{"model":%q,"max_tokens":64,"messages":[{"role":"user","content":"Hello"}],"stream":%t}`, s.model, stream)
	}
	return fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"Hello"}],"stream":%t}`, s.model, stream)
}

// hello is the default answer of a fake deployment.
func hello(dep string) string { return "Hello from " + dep + "." }

// rawClient is a plain HTTP client whose idle connections are closed at the end of the test.
func rawClient(t *testing.T, tr *http.Transport) *http.Client {
	if tr == nil {
		tr = &http.Transport{}
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// newRawRequest builds a POST of body to the surface's path, with the headers its SDK sends.
func (s surface) newRawRequest(ctx context.Context, g *gateway, body string) *http.Request {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.URL+s.path, strings.NewReader(body))
	if err != nil {
		panic(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if s.anthropic() {
		req.Header.Set("Anthropic-Version", "2023-06-01")
	}
	return req
}

// post sends body raw to the surface and returns the response with its whole body read.
func (s surface) post(t *testing.T, g *gateway, body string) (*http.Response, []byte) {
	t.Helper()
	resp, err := rawClient(t, nil).Do(s.newRawRequest(t.Context(), g, body))
	if err != nil {
		t.Fatalf("POST %s: %v", s.path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the response: %v", err)
	}
	return resp, b
}

// sdkResult is what an official SDK saw of one call.
type sdkResult struct {
	Text   string      // the (accumulated) text answer
	Header http.Header // the response headers, on success or API error
	Err    error
	// Of an API error (HTTP status, or an in-stream error event): the HTTP status (200 for an
	// in-stream error), the native error type, the OpenAI error code and the raw error JSON.
	Status          int
	Type, Code, Raw string
}

// call makes one call with the surface's official SDK (retries off), streaming or not.
func (s surface) call(ctx context.Context, g *gateway, stream bool) sdkResult {
	var r sdkResult
	var hr *http.Response
	if s.anthropic() {
		c := g.anthropicClient(anthropicopt.WithResponseInto(&hr))
		p := anthropic.MessageNewParams{Model: anthropic.Model(s.model), MaxTokens: 64,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello"))}}
		var msg anthropic.Message
		if stream {
			st := c.Messages.NewStreaming(ctx, p)
			for st.Next() {
				if err := msg.Accumulate(st.Current()); err != nil {
					r.Err = fmt.Errorf("accumulate: %w", err)
					return r
				}
			}
			r.Err = st.Err()
		} else {
			m, err := c.Messages.New(ctx, p)
			if m != nil {
				msg = *m
			}
			r.Err = err
		}
		for _, b := range msg.Content {
			r.Text += b.Text
		}
		var ae *anthropic.Error
		if errors.As(r.Err, &ae) {
			r.Status, r.Type, r.Raw = ae.StatusCode, string(ae.Type()), ae.RawJSON()
			if ae.Response != nil {
				hr = ae.Response
			}
		}
	} else {
		c := g.openaiClient(openaiopt.WithResponseInto(&hr))
		p := openai.ChatCompletionNewParams{Model: s.model,
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello")}}
		if stream {
			st := c.Chat.Completions.NewStreaming(ctx, p)
			acc := openai.ChatCompletionAccumulator{}
			for st.Next() {
				acc.AddChunk(st.Current())
			}
			r.Err = st.Err()
			if len(acc.Choices) > 0 {
				r.Text = acc.Choices[0].Message.Content
			}
		} else {
			cc, err := c.Chat.Completions.New(ctx, p)
			if err == nil && len(cc.Choices) > 0 {
				r.Text = cc.Choices[0].Message.Content
			}
			r.Err = err
		}
		var oe *openai.Error
		var se *ssestream.StreamError
		switch {
		case errors.As(r.Err, &oe):
			r.Status, r.Type, r.Code, r.Raw = oe.StatusCode, oe.Type, oe.Code, oe.RawJSON()
			if oe.Response != nil {
				hr = oe.Response
			}
		case errors.As(r.Err, &se):
			e := gjson.GetBytes(se.Event.Data, "error")
			r.Status, r.Type, r.Code, r.Raw = http.StatusOK, e.Get("type").String(), e.Get("code").String(), e.Raw
		}
	}
	if hr != nil {
		r.Header = hr.Header
	}
	return r
}

// errorType is the canonical class in a gateway error body of either dialect (OpenAI
// error.metadata.error_type, Anthropic error.error_type).
// It also reads an error object alone (openai-go's RawJSON is the object under "error").
func errorType(raw []byte) string {
	for _, path := range []string{"error.metadata.error_type", "error.error_type", "metadata.error_type"} {
		if v := gjson.GetBytes(raw, path); v.Exists() {
			return v.String()
		}
	}
	return ""
}

// circuitState is the state of a deployment circuit (model "") or a (deployment, model) circuit;
// a circuit never used is closed.
func circuitState(g *gateway, dep, model string) circuit.State {
	for _, s := range g.Srv.Circuits().States() {
		if s.Deployment == dep && s.Model == model {
			return s.State
		}
	}
	return circuit.Closed
}

// requireAllClosed fails the test when any circuit of the gateway is not closed.
func requireAllClosed(t *testing.T, g *gateway) {
	t.Helper()
	for _, s := range g.Srv.Circuits().States() {
		if s.State != circuit.Closed {
			t.Errorf("circuit %s/%q is %v, want closed", s.Deployment, s.Model, s.State)
		}
	}
}

// withTimeouts is the twoDeployments catalog with other upstream deadlines.
func withTimeouts(headers, streamHeaders string) string {
	return strings.Replace(twoDeployments, "timeouts: {headers: 5s, stream_headers: 5s, stream_idle: 5s}",
		"timeouts: {headers: "+headers+", stream_headers: "+streamHeaders+", stream_idle: 5s}", 1)
}

// withFailures is yaml (a twoDeployments variant) with circuits that open after n failures.
func withFailures(yaml string, n int) string {
	return strings.Replace(yaml, "routing:\n", fmt.Sprintf("routing:\n  circuit: {failures: %d}\n", n), 1)
}

// startTwoYAML starts the four fakes of twoDeployments behind a variant of its YAML.
func startTwoYAML(t *testing.T, yaml string) *gateway {
	return startGateway(t, yaml, oa("oa-primary"), oa("oa-backup"), an("an-primary"), an("an-backup"))
}

// checkFailover checks a call served by the backup after one failed attempt on the primary of
// class wantClass: the SDK got the backup's answer, the headers and the audit name the backup
// and two attempts, each deployment was called once, and the backup was called at once after
// the primary failed (no backoff).
func checkFailover(t *testing.T, g *gateway, s surface, r sdkResult, wantClass string) {
	t.Helper()
	if r.Err != nil {
		t.Fatalf("call failed: %v (raw %s)", r.Err, r.Raw)
	}
	if r.Text != hello(s.backup) {
		t.Fatalf("text %q, want the backup's %q", r.Text, hello(s.backup))
	}
	if got := r.Header.Get("X-Switchyard-Deployment"); got != s.backup {
		t.Errorf("x-switchyard-deployment %q, want %q", got, s.backup)
	}
	if got := r.Header.Get("X-Switchyard-Attempts"); got != "2" {
		t.Errorf("x-switchyard-attempts %q, want 2", got)
	}
	ph, bh := g.Fakes[s.primary].Hits(), g.Fakes[s.backup].Hits()
	if ph != 1 || bh != 1 {
		t.Fatalf("hits primary %d backup %d, want 1 and 1", ph, bh)
	}
	pr, br := g.Fakes[s.primary].Requests()[0], g.Fakes[s.backup].Requests()[0]
	limit := time.Second // no backoff: the backup is called as soon as the primary failed
	if wantClass == "upstream_timeout" {
		limit += 3 * time.Second // the primary failed only at its headers deadline
	}
	if gap := br.At.Sub(pr.At); gap > limit {
		t.Errorf("the backup was called %v after the primary", gap)
	}
	rec := waitGeneration(t, g, r.Header.Get("X-Request-Id"))
	if len(rec.Attempts) != 2 {
		t.Fatalf("attempts %+v, want 2", rec.Attempts)
	}
	a0, a1 := rec.Attempts[0], rec.Attempts[1]
	if a0.Deployment != s.primary || a0.Outcome != audit.OutcomeFailed || a0.ErrorCode != wantClass {
		t.Errorf("attempt 1 = %s %s %s, want %s failed %s", a0.Deployment, a0.Outcome, a0.ErrorCode, s.primary, wantClass)
	}
	if a1.Deployment != s.backup || a1.Outcome != audit.OutcomeCompleted || a1.ErrorCode != "" {
		t.Errorf("attempt 2 = %s %s %s, want %s completed", a1.Deployment, a1.Outcome, a1.ErrorCode, s.backup)
	}
}

// TestFailoverBeforeCommit: R-FAIL-1, R-FAIL-5: every failover-eligible failure before commit
// (5xx, 529, upstream 429, reset before headers, an HTML 502 page, a garbage body, the
// provider's 401/402/403 about the house key, provider-side model-not-found) moves to the next
// deployment at once, with both SDKs, streaming and not; the audit records the failed attempt
// with its canonical class (R-FAIL-7).
func TestFailoverBeforeCommit(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		b     fp.Behavior
		class string
	}{
		{"500", fp.Behavior{Kind: fp.KindStatus, Status: 500}, "upstream_error"},
		{"503", fp.Behavior{Kind: fp.KindStatus, Status: 503}, "upstream_error"},
		{"529", fp.Behavior{Kind: fp.KindStatus, Status: 529}, "upstream_error"},
		{"429", fp.Behavior{Kind: fp.KindStatus, Status: 429, RetryAfter: 7}, "upstream_rate_limited"},
		{"reset", fp.Behavior{Kind: fp.KindReset}, "upstream_error"},
		{"html502", fp.Behavior{Kind: fp.KindHTML502}, "upstream_error"},
		{"garbage", fp.Behavior{Kind: fp.KindGarbage}, "upstream_error"},
		{"401-house-key", fp.Behavior{Kind: fp.KindStatus, Status: 401}, "upstream_auth"},
		{"402-house-balance", fp.Behavior{Kind: fp.KindStatus, Status: 402}, "upstream_auth"},
		{"403-house-key", fp.Behavior{Kind: fp.KindStatus, Status: 403}, "upstream_auth"},
		{"404-model-not-found", fp.Behavior{Kind: fp.KindStatus, Status: 404}, "upstream_error"},
	}
	for _, s := range surfaces {
		for _, stream := range []bool{false, true} {
			for _, tc := range cases {
				t.Run(fmt.Sprintf("%s/stream=%t/%s", s.name, stream, tc.name), func(t *testing.T) {
					t.Parallel()
					g := startTwo(t)
					g.Fakes[s.primary].Script(tc.b)
					checkFailover(t, g, s, s.call(t.Context(), g, stream), tc.class)
				})
			}
		}
	}
}

// TestUpstreamAuthNeverShown: R-FAIL-5, R-FAIL-7: a provider 401/403 about the gateway's own key
// fails over and counts on the circuit, and when it is the final failure the caller gets 502
// upstream_auth without the provider's text or the house key, in the body or the headers.
func TestUpstreamAuthNeverShown(t *testing.T) {
	t.Parallel()
	for _, s := range surfaces {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			g := startTwo(t)
			prefix := "sk-house-"
			if s.anthropic() {
				prefix = "sk-ant-house-"
			}
			g.Fakes[s.primary].SetDefault(fp.Behavior{Kind: fp.KindStatus, Status: 401,
				Message: "Incorrect API key provided: " + prefix + "primary. provider-secret-text"})
			g.Fakes[s.backup].SetDefault(fp.Behavior{Kind: fp.KindStatus, Status: 403,
				Message: "Key " + prefix + "backup is not allowed. provider-secret-text"})
			for i := range 2 {
				resp, body := s.post(t, g, s.body(false))
				if resp.StatusCode != http.StatusBadGateway || errorType(body) != "upstream_auth" {
					t.Fatalf("request %d: %d %s, want 502 upstream_auth", i, resp.StatusCode, body)
				}
				dump := string(body) + fmt.Sprint(resp.Header)
				for _, secret := range []string{"provider-secret-text", "sk-house", "sk-ant-house", "Incorrect API key"} {
					if strings.Contains(dump, secret) {
						t.Errorf("the caller sees %q: %s %v", secret, body, resp.Header)
					}
				}
			}
			if h := g.Fakes[s.backup].Hits(); h != 2 {
				t.Errorf("backup hits %d, want 2 (upstream_auth fails over)", h)
			}
			if st := circuitState(g, s.primary, ""); st != circuit.Open {
				t.Errorf("primary circuit %v after two upstream_auth failures, want open", st)
			}
		})
	}
}

// TestHangFailsOverAndCountsOnModelCircuit: R-FAIL-5, R-CIRCUIT-5: a provider that sends no
// headers within the deadline is an upstream_timeout that fails over to the next deployment;
// the hang counts on the (deployment, model) circuit only, so two hangs open that circuit and
// leave the deployment's closed, whereas two plain 5xx open only the deployment circuit.
func TestHangFailsOverAndCountsOnModelCircuit(t *testing.T) {
	t.Parallel()
	for _, s := range surfaces {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%t", s.name, stream), func(t *testing.T) {
				t.Parallel()
				g := startTwoYAML(t, withTimeouts("300ms", "300ms"))
				for i := range 2 {
					g.Fakes[s.backup].Reset()
					g.Fakes[s.primary].Reset()
					g.Fakes[s.primary].Script(fp.Behavior{Kind: fp.KindHang})
					checkFailover(t, g, s, s.call(t.Context(), g, stream), "upstream_timeout")
					if i == 0 {
						requireAllClosed(t, g)
					}
				}
				if st := circuitState(g, s.primary, ""); st != circuit.Closed {
					t.Errorf("deployment circuit %v after two hangs, want closed (hangs pause the model only)", st)
				}
				if st := circuitState(g, s.primary, s.model); st != circuit.Open {
					t.Errorf("(deployment, model) circuit %v after two hangs, want open", st)
				}
			})
		}
		t.Run(s.name+"/5xx-not-a-hang", func(t *testing.T) {
			t.Parallel()
			g := startTwo(t)
			g.Fakes[s.primary].Script(fp.Behavior{Kind: fp.KindStatus, Status: 503}, fp.Behavior{Kind: fp.KindStatus, Status: 503})
			for range 2 {
				if r := s.call(t.Context(), g, false); r.Err != nil || r.Text != hello(s.backup) {
					t.Fatalf("call: %q %v", r.Text, r.Err)
				}
			}
			if st := circuitState(g, s.primary, ""); st != circuit.Open {
				t.Errorf("deployment circuit %v after two 503, want open", st)
			}
			if st := circuitState(g, s.primary, s.model); st != circuit.Closed {
				t.Errorf("(deployment, model) circuit %v after two 503, want closed (only hangs count there)", st)
			}
		})
	}
}

// TestCallerFaultNeverFailsOver: R-FAIL-6, R-CIRCUIT-3: content policy and context overflow are
// returned directly after one attempt, status 400 with the canonical error_type and the SDK's
// native type and code, and no circuit moves however many times they happen.
func TestCallerFaultNeverFailsOver(t *testing.T) {
	t.Parallel()
	cases := []struct {
		kind          fp.Kind
		class, oaCode string
	}{
		{fp.KindContentPolicy, "content_policy", "content_policy_violation"},
		{fp.KindContextOverflow, "context_overflow", "context_length_exceeded"},
	}
	for _, s := range surfaces {
		for _, tc := range cases {
			t.Run(s.name+"/"+tc.class, func(t *testing.T) {
				t.Parallel()
				g := startTwo(t)
				g.Fakes[s.primary].SetDefault(fp.Behavior{Kind: tc.kind})
				for i := range 5 {
					r := s.call(t.Context(), g, i%2 == 1)
					if r.Status != http.StatusBadRequest || r.Type != "invalid_request_error" {
						t.Fatalf("call %d: status %d type %q (%v), want 400 invalid_request_error", i, r.Status, r.Type, r.Err)
					}
					if got := errorType([]byte(r.Raw)); got != tc.class {
						t.Errorf("call %d: error_type in %s, want %s", i, r.Raw, tc.class)
					}
					if !s.anthropic() && r.Code != tc.oaCode {
						t.Errorf("call %d: code %q, want %q", i, r.Code, tc.oaCode)
					}
					if got := r.Header.Get("X-Switchyard-Attempts"); got != "1" {
						t.Errorf("call %d: x-switchyard-attempts %q, want 1", i, got)
					}
				}
				if ph, bh := g.Fakes[s.primary].Hits(), g.Fakes[s.backup].Hits(); ph != 5 || bh != 0 {
					t.Errorf("hits primary %d backup %d, want 5 and 0", ph, bh)
				}
				requireAllClosed(t, g)
			})
		}
	}
}

// TestMalformedRequestTriedOnce: R-FAIL-6, R-CIRCUIT-3: a request every provider rejects with
// 400 is returned after one attempt (the backup is never called) and never counts on a circuit,
// however many times it is repeated.
func TestMalformedRequestTriedOnce(t *testing.T) {
	t.Parallel()
	for _, s := range surfaces {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			g := startTwo(t)
			bad := fp.Behavior{Kind: fp.KindStatus, Status: 400}
			g.Fakes[s.primary].SetDefault(bad)
			g.Fakes[s.backup].SetDefault(bad)
			for i := range 10 {
				resp, body := s.post(t, g, s.body(i%2 == 0))
				if resp.StatusCode != http.StatusBadRequest || errorType(body) != "invalid_request" {
					t.Fatalf("request %d: %d %s, want 400 invalid_request", i, resp.StatusCode, body)
				}
			}
			if ph, bh := g.Fakes[s.primary].Hits(), g.Fakes[s.backup].Hits(); ph != 10 || bh != 0 {
				t.Errorf("hits primary %d backup %d, want 10 and 0", ph, bh)
			}
			requireAllClosed(t, g)
		})
	}
}

// TestNoRawProviderErrorBody: R-FAIL-7: whatever the provider's error, the caller never sees
// its text (the message of every error kind carries a marker that must not come back), and the
// dialect's native type string and status are set so that the SDKs act on them.
func TestNoRawProviderErrorBody(t *testing.T) {
	t.Parallel()
	const marker = "provider-secret-text sk-house-leak"
	cases := []struct {
		name          string
		b             fp.Behavior
		msgPrefix     string // kept in front of the marker where classification reads the message
		status        int
		class         string
		oaType, anTyp string
	}{
		{"500", fp.Behavior{Kind: fp.KindStatus, Status: 500}, "", 502, "upstream_error", "api_error", "api_error"},
		{"529", fp.Behavior{Kind: fp.KindStatus, Status: 529}, "", 502, "upstream_error", "api_error", "api_error"},
		{"429", fp.Behavior{Kind: fp.KindStatus, Status: 429, RetryAfter: 3}, "", 429, "upstream_rate_limited", "rate_limit_error", "rate_limit_error"},
		{"401", fp.Behavior{Kind: fp.KindStatus, Status: 401}, "", 502, "upstream_auth", "api_error", "api_error"},
		{"404", fp.Behavior{Kind: fp.KindStatus, Status: 404}, "", 502, "upstream_error", "api_error", "api_error"},
		{"400", fp.Behavior{Kind: fp.KindStatus, Status: 400}, "", 400, "invalid_request", "invalid_request_error", "invalid_request_error"},
		{"content-policy", fp.Behavior{Kind: fp.KindContentPolicy}, "Output blocked by content filtering policy: ", 400, "content_policy", "invalid_request_error", "invalid_request_error"},
		{"context-overflow", fp.Behavior{Kind: fp.KindContextOverflow}, "prompt is too long: ", 400, "context_overflow", "invalid_request_error", "invalid_request_error"},
		{"preamble-error", fp.Behavior{Kind: fp.KindPreambleError}, "", 502, "upstream_error", "api_error", "api_error"},
	}
	for _, s := range surfaces {
		for _, tc := range cases {
			t.Run(s.name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				g := startTwoYAML(t, withFailures(twoDeployments, 100)) // repeated failures keep the circuits closed
				b := tc.b
				b.Message = tc.msgPrefix + marker
				g.Fakes[s.primary].SetDefault(b)
				g.Fakes[s.backup].SetDefault(b)
				for _, stream := range []bool{false, true} {
					resp, body := s.post(t, g, s.body(stream))
					g.Clock.Advance(2 * circuit.MaxPause)
					wantStatus := tc.status
					if tc.name == "preamble-error" && !stream && !s.anthropic() {
						wantStatus = 503 // the OpenAI fake answers a non-stream request 503: relayed as 503
					}
					if resp.StatusCode != wantStatus || errorType(body) != tc.class {
						t.Fatalf("stream=%t: %d %s, want %d %s", stream, resp.StatusCode, body, wantStatus, tc.class)
					}
					if dump := string(body) + fmt.Sprint(resp.Header); strings.Contains(dump, "provider-secret-text") || strings.Contains(dump, "sk-house") {
						t.Errorf("stream=%t: the provider's text reached the caller: %s %v", stream, body, resp.Header)
					}
					r := s.call(t.Context(), g, stream)
					want := tc.oaType
					if s.anthropic() {
						want = tc.anTyp
					}
					if r.Status != wantStatus || r.Type != want {
						t.Errorf("stream=%t: SDK sees %d %q (%v), want %d %q", stream, r.Status, r.Type, r.Err, wantStatus, want)
					}
					if strings.Contains(r.Raw, "provider-secret-text") {
						t.Errorf("stream=%t: the SDK error carries the provider's text: %s", stream, r.Raw)
					}
					g.Clock.Advance(2 * circuit.MaxPause) // end the provider pauses a 429 starts
				}
			})
		}
	}
}

// TestAllFailedReturnsLastClass: R-FAIL-9, R-ERR: when every deployment failed, the caller gets
// the class of the last failure, with retry-after the smallest seen for upstream_rate_limited;
// when every candidate was refused before any call (circuits open), 503 gateway_error with
// retry-after 5 and limit kind health (R-CIRCUIT-6), and no provider is called.
func TestAllFailedReturnsLastClass(t *testing.T) {
	t.Parallel()
	st := func(status, ra int) fp.Behavior {
		return fp.Behavior{Kind: fp.KindStatus, Status: status, RetryAfter: ra}
	}
	cases := []struct {
		name            string
		primary, backup fp.Behavior
		status          int
		class           string
		retryAfter      string // "" means not checked
	}{
		{"503-then-429", st(503, 0), st(429, 7), 429, "upstream_rate_limited", "7"},
		{"429-then-smaller-429", st(429, 9), st(429, 4), 429, "upstream_rate_limited", "4"},
		{"smaller-429-then-429", st(429, 2), st(429, 8), 429, "upstream_rate_limited", "2"},
		{"429-then-503", st(429, 3), st(503, 0), 503, "upstream_error", ""},
		{"429-then-503-retry-after", st(429, 3), st(503, 2), 503, "upstream_error", "2"},
		{"429-then-500", st(429, 3), st(500, 0), 502, "upstream_error", ""},
		{"503-then-401", st(503, 0), st(401, 0), 502, "upstream_auth", ""},
	}
	for _, s := range surfaces {
		for _, tc := range cases {
			t.Run(s.name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				g := startTwo(t)
				g.Fakes[s.primary].Script(tc.primary)
				g.Fakes[s.backup].Script(tc.backup)
				resp, body := s.post(t, g, s.body(false))
				if resp.StatusCode != tc.status || errorType(body) != tc.class || resp.Header.Get("X-Switchyard-Error-Code") != tc.class {
					t.Fatalf("%d %s %v, want %d %s", resp.StatusCode, body, resp.Header, tc.status, tc.class)
				}
				if tc.retryAfter != "" && resp.Header.Get("Retry-After") != tc.retryAfter {
					t.Errorf("retry-after %q, want %q", resp.Header.Get("Retry-After"), tc.retryAfter)
				}
				if got := resp.Header.Get("X-Switchyard-Attempts"); got != "2" {
					t.Errorf("x-switchyard-attempts %q, want 2", got)
				}
			})
		}
		t.Run(s.name+"/all-circuits-open", func(t *testing.T) {
			t.Parallel()
			g := startTwo(t)
			g.Fakes[s.primary].SetDefault(st(500, 0))
			g.Fakes[s.backup].SetDefault(st(500, 0))
			for range 2 { // two failures in a row open both deployment circuits
				if resp, body := s.post(t, g, s.body(false)); resp.StatusCode != http.StatusBadGateway {
					t.Fatalf("%d %s, want 502", resp.StatusCode, body)
				}
			}
			resp, body := s.post(t, g, s.body(true))
			if resp.StatusCode != http.StatusServiceUnavailable || errorType(body) != "gateway_error" ||
				resp.Header.Get("Retry-After") != "5" || resp.Header.Get("X-Switchyard-Limit-Kind") != "health" ||
				!strings.Contains(string(body), "all deployments cooling down") {
				t.Fatalf("%d %s %v, want 503 gateway_error, retry-after 5, limit kind health", resp.StatusCode, body, resp.Header)
			}
			if ph, bh := g.Fakes[s.primary].Hits(), g.Fakes[s.backup].Hits(); ph != 2 || bh != 2 {
				t.Errorf("hits primary %d backup %d, want 2 and 2 (no call while open)", ph, bh)
			}
			r := s.call(t.Context(), g, false)
			want := "api_error"
			if s.anthropic() {
				want = "overloaded_error"
			}
			if r.Status != http.StatusServiceUnavailable || r.Type != want {
				t.Errorf("SDK sees %d %q, want 503 %q", r.Status, r.Type, want)
			}
		})
	}
}

// TestEmpty200FailsOver: nothing ends in an empty 200 (R-FAIL-1, R-FAIL-2). A provider that
// answers status 200 with a body that answers nothing (here an error object sent with 200)
// fails over before commit, with both SDKs, streaming and not, and is never billed; on the
// embeddings surface too.
func TestEmpty200FailsOver(t *testing.T) {
	t.Parallel()
	for _, s := range surfaces {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%t", s.name, stream), func(t *testing.T) {
				t.Parallel()
				g := startTwo(t)
				g.Fakes[s.primary].Script(fp.Behavior{Kind: fp.KindStatus, Status: http.StatusOK})
				checkFailover(t, g, s, s.call(t.Context(), g, stream), "upstream_error")
			})
		}
	}
	t.Run("embeddings", func(t *testing.T) {
		t.Parallel()
		g := startGateway(t, embeddingsCatalog, oa("e1"), oa("e2"), an("an"))
		g.Fakes["e1"].Script(fp.Behavior{Kind: fp.KindStatus, Status: http.StatusOK})
		var raw *http.Response
		oc := g.openaiClient()
		res, err := oc.Embeddings.New(t.Context(), openai.EmbeddingNewParams{
			Model: "text-embedding-3-small",
			Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("a")},
		}, openaiopt.WithResponseInto(&raw))
		if err != nil || len(res.Data) != 1 {
			t.Fatalf("%v %+v", err, res)
		}
		if raw.Header.Get("x-switchyard-deployment") != "e2" || raw.Header.Get("x-switchyard-attempts") != "2" {
			t.Fatalf("headers %v", raw.Header)
		}
	})
}
