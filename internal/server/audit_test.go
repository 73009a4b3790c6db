package server_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/fakeprovider"
)

// TestEveryResponseSaysHowItWasServed: R-AUDIT-1: every response carries x-request-id (and the
// same request-id for the Anthropic SDKs), unique per request; served responses carry
// x-switchyard-deployment, -provider, -upstream-model and -attempts; every error response
// carries x-switchyard-error-code and its body's request_id equals x-request-id (R-ERR).
func TestEveryResponseSaysHowItWasServed(t *testing.T) {
	t.Parallel()
	g := startTwo(t)
	seen := map[string]bool{}
	rid := func(t *testing.T, resp *http.Response) string {
		t.Helper()
		id := resp.Header.Get("X-Request-Id")
		if id == "" || resp.Header.Get("Request-Id") != id {
			t.Fatalf("x-request-id %q, request-id %q", id, resp.Header.Get("Request-Id"))
		}
		if seen[id] {
			t.Fatalf("request id %s reused", id)
		}
		seen[id] = true
		return id
	}
	g.Fakes["oa-primary"].Script(icFail503) // one served response after a failover
	for _, tc := range []struct {
		d                        catalog.Dialect
		stream                   bool
		dep, provider, up, tried string
	}{
		{catalog.OpenAI, false, "oa-backup", "reseller", "gpt-4o-mini-2024-07-18", "2"},
		{catalog.OpenAI, true, "oa-primary", "openai", "gpt-4o-mini", "1"},
		{catalog.Anthropic, false, "an-primary", "anthropic", "claude-haiku-4-5", "1"},
		{catalog.Anthropic, true, "an-primary", "anthropic", "claude-haiku-4-5", "1"},
	} {
		resp, _ := icCall(t, g.URL, tc.d, icModel(tc.d), tc.stream)
		rid(t, resp)
		h := resp.Header
		if h.Get("X-Switchyard-Deployment") != tc.dep || h.Get("X-Switchyard-Provider") != tc.provider ||
			h.Get("X-Switchyard-Upstream-Model") != tc.up || h.Get("X-Switchyard-Attempts") != tc.tried {
			t.Errorf("%s stream=%v: served headers %v", tc.d, tc.stream, h)
		}
		if h.Get("X-Switchyard-Error-Code") != "" {
			t.Errorf("served response with an error code")
		}
	}
	// Error responses of every origin.
	g.Fakes["an-primary"].Script(icFail503, icFail503)
	g.Fakes["an-backup"].Script(icFail503)
	errs := []struct {
		name   string
		d      catalog.Dialect
		method string
		path   string
		body   string
		status int
		class  string
	}{
		{"unknown model", catalog.OpenAI, "POST", "/v1/chat/completions", icChatBody("nope", false), 404, "model_unavailable"},
		{"bad json", catalog.Anthropic, "POST", "/v1/messages", `{`, 400, "invalid_request"},
		{"n > 1", catalog.OpenAI, "POST", "/v1/chat/completions", `{"model":"gpt-4o-mini","n":2,"messages":[]}`, 400, "invalid_request"},
		{"every attempt failed", catalog.Anthropic, "POST", "/v1/messages", icMsgBody("claude-haiku-4-5", false), 503, "upstream_error"}, // the providers answered 503
		{"no such endpoint", catalog.OpenAI, "POST", "/v1/nothing-here", `{}`, 404, "invalid_request"},
		{"unknown generation", catalog.OpenAI, "GET", "/v1/generation?id=req_000000000000000000000000", "", 404, "invalid_request"},
		{"generation without id", catalog.OpenAI, "GET", "/v1/generation", "", 400, "invalid_request"},
	}
	for _, tc := range errs {
		t.Run(tc.name, func(t *testing.T) {
			var resp *http.Response
			var b []byte
			if tc.method == "GET" {
				resp, b = icGet(t, g.URL, tc.path)
			} else {
				resp, b = icPost(t, g.URL, tc.path, tc.body)
			}
			rid(t, resp)
			if resp.StatusCode != tc.status || resp.Header.Get("X-Switchyard-Error-Code") != tc.class {
				t.Errorf("status %d code %q, want %d %q: %s", resp.StatusCode, resp.Header.Get("X-Switchyard-Error-Code"), tc.status, tc.class, b)
			}
			if got := gjson.GetBytes(b, "request_id").String(); got != resp.Header.Get("X-Request-Id") {
				t.Errorf("body request_id %q, header %q", got, resp.Header.Get("X-Request-Id"))
			}
		})
	}
	for _, path := range []string{"/healthz", "/readyz", "/metrics", "/v1/models"} {
		resp, _ := icGet(t, g.URL, path)
		rid(t, resp)
	}
}

// icAuditYAML is twoDeployments with authentication on and keys of two accounts.
var icAuditYAML = strings.Replace(twoDeployments, "auth: {required: false}", `auth: {required: true}
keys:
  - {name: alice, secret: sk-sy-alice, account: acme}
  - {name: alice2, secret: sk-sy-alice2, account: acme}
  - {name: bob, secret: sk-sy-bob, account: globex}`, 1)

// icAttemptKeys are the keys of an attempt in GET /v1/generation (R-AUDIT-2).
var icAttemptKeys = []string{"attempt", "deployment", "provider", "model", "upstream_model", "outcome",
	"error_code", "tokens", "usage_provenance", "reserved_max_usd", "cost_usd", "billing_source", "price",
	"dispatched_at", "headers_ms", "first_token_ms", "dropped_params"}

// TestGenerationRecord: R-AUDIT-2: GET /v1/generation?id= answers request_id, model and every
// physical attempt in order with every field; tokens are the provider's reported usage (the
// emulated provider's formula: prompt = ceil(len(body)/4), cached as scripted, output = number of
// deltas); the record holds no prompt or completion text; an unknown id, or a key of another
// account, gets a 404; a key of the same account reads it.
func TestGenerationRecord(t *testing.T) {
	t.Parallel()
	g := startGateway(t, icAuditYAML, oa("oa-primary"), oa("oa-backup"), an("an-primary"), an("an-backup"))
	const prompt, completion = "zebra-quokka-7731 is my secret prompt", "marmoset completion 4242"
	alice := []string{"Authorization", "Bearer sk-sy-alice"}
	for _, tc := range []struct {
		d            catalog.Dialect
		stream       bool
		primary, bak string
	}{
		{catalog.OpenAI, false, "oa-primary", "oa-backup"},
		{catalog.OpenAI, true, "oa-primary", "oa-backup"},
		{catalog.Anthropic, false, "an-primary", "an-backup"},
		{catalog.Anthropic, true, "an-primary", "an-backup"},
	} {
		g.Fakes[tc.primary].Script(icFail503)
		g.Fakes[tc.bak].Script(fakeprovider.Behavior{Text: completion, Deltas: 4, CachedTokens: 7})
		body := strings.Replace(icBody(tc.d, icModel(tc.d), tc.stream), "Hello", prompt, 1)
		resp, b := icPost(t, g.URL, icPath(tc.d), body, alice...)
		if resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
		if !strings.Contains(string(b), "marmos") {
			t.Fatalf("the completion did not reach the caller: %s", b)
		}
		id := resp.Header.Get("X-Request-Id")
		g.generation(t, id) // wait until it is stored

		gr, rb := icGet(t, g.URL, "/v1/generation?id="+id, alice...)
		if gr.StatusCode != 200 {
			t.Fatalf("generation: %d %s", gr.StatusCode, rb)
		}
		rec := gjson.ParseBytes(rb)
		if rec.Get("request_id").String() != id || rec.Get("model").String() != icModel(tc.d) || rec.Get("stream").Bool() != tc.stream {
			t.Errorf("record head: %s", rb)
		}
		atts := rec.Get("attempts").Array()
		if len(atts) != 2 {
			t.Fatalf("attempts: %s", rb)
		}
		for i, a := range atts {
			for _, k := range icAttemptKeys {
				if !a.Get(k).Exists() {
					t.Errorf("attempt %d has no %q: %s", i, k, a.Raw)
				}
			}
			for _, k := range []string{"input", "cached", "cache_write", "output", "reasoning"} {
				if !a.Get("tokens." + k).Exists() {
					t.Errorf("attempt %d has no tokens.%s", i, k)
				}
			}
			if a.Get("attempt").Int() != int64(i+1) {
				t.Errorf("attempt %d numbered %d", i, a.Get("attempt").Int())
			}
			if _, err := time.Parse(time.RFC3339, a.Get("dispatched_at").String()); err != nil {
				t.Errorf("dispatched_at: %v", err)
			}
		}
		if a := atts[0]; a.Get("deployment").String() != tc.primary || a.Get("outcome").String() != "failed" || a.Get("error_code").String() != "upstream_error" {
			t.Errorf("first attempt %s", a.Raw)
		}
		a := atts[1]
		if a.Get("deployment").String() != tc.bak || a.Get("outcome").String() != "completed" || a.Get("error_code").String() != "" ||
			a.Get("usage_provenance").String() != "observed" {
			t.Errorf("second attempt %s", a.Raw)
		}
		reqs := g.Fakes[tc.bak].Requests()
		promptTokens := int64(len(reqs[len(reqs)-1].Body)+3) / 4
		if a.Get("tokens.input").Int() != promptTokens-7 || a.Get("tokens.cached").Int() != 7 ||
			a.Get("tokens.output").Int() != 4 || a.Get("tokens.cache_write").Int() != 0 {
			t.Errorf("%s stream=%v tokens %s, want input %d cached 7 output 4", tc.d, tc.stream, a.Get("tokens").Raw, promptTokens-7)
		}
		// Words only: digits could match timestamps or durations.
		for _, secret := range []string{"zebra", "quokka", "marmos", "secret prompt"} {
			if strings.Contains(string(rb), secret) {
				t.Errorf("the record holds prompt or completion text (%q): %s", secret, rb)
			}
		}

		// Same account, another key: readable. Another account: the same 404 as an unknown id.
		if r, _ := icGet(t, g.URL, "/v1/generation?id="+id, "X-Api-Key", "sk-sy-alice2"); r.StatusCode != 200 {
			t.Errorf("same account, other key: %d", r.StatusCode)
		}
		r, bb := icGet(t, g.URL, "/v1/generation?id="+id, "Authorization", "Bearer sk-sy-bob")
		icCheckError(t, catalog.OpenAI, r, bb, 404, "invalid_request", "invalid_request_error")
		if strings.Contains(string(bb), tc.bak) {
			t.Errorf("another account learns about the record: %s", bb)
		}
		r, bb = icGet(t, g.URL, "/v1/generation?id="+id)
		icCheckError(t, catalog.OpenAI, r, bb, 401, "authentication", "authentication_error")
	}
	r, bb := icGet(t, g.URL, "/v1/generation?id=req_ffffffffffffffffffffffff", alice...)
	icCheckError(t, catalog.OpenAI, r, bb, 404, "invalid_request", "invalid_request_error")
}
