package server_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	openaiopt "github.com/openai/openai-go/v3/option"
	"github.com/tidwall/gjson"

	"github.com/switchyard-gw/switchyard/internal/catalog"
	fp "github.com/switchyard-gw/switchyard/internal/fakeprovider"
)

// TestRouteExplainsRefusals: issue 11 item 10: when no route is admitted (allowlist, a pin
// against the key's providers, context fit, circuits; disabled routes in TestRoutableState)
// POST /v1/route answers 200 with empty candidates, every route of the model in dropped with
// its reason, and under refusal the status and class the real request gets; the real request,
// made with the official OpenAI SDK, gets exactly that and reaches no provider.
func TestRouteExplainsRefusals(t *testing.T) {
	t.Parallel()
	yaml := strings.Replace(settingsCatalog, "  - id: claude-haiku-4-5\n", "  - id: claude-haiku-4-5\n    context_window: 40\n", 1)
	g := startGateway(t, yaml, oa("oa-primary"), oa("oa-backup"), an("an-primary"))
	onlyHaiku, _ := storedKey(t, g, "", "", `{"models":["claude-haiku-4-5"]}`)
	reseller, _ := storedKey(t, g, "", "", `{"providers":["reseller"]}`)
	long := strings.Repeat("lorem ipsum dolor sit amet ", 60)

	cases := []struct {
		name, key, model, content string
		open                      bool // open both gpt-4o-mini circuits first
		status                    int
		class, reason             string
		retryAfter                int64
	}{
		{"allowlist", onlyHaiku, "gpt-4o-mini", "Hi", false, 403, "permission", "not in the key's models", 0},
		{"pin outside the key's providers", reseller, "gpt-4o-mini:openai", "Hi", false, 400, "invalid_request", "not in the key's providers", 0},
		{"context fit", "sk-static", "claude-haiku-4-5", long, false, 400, "context_overflow", "context window too small", 0},
		{"circuits", "sk-static", "gpt-4o-mini", "Hi", true, 503, "gateway_error", "circuit open", 5},
	}
	for _, tc := range cases {
		if tc.open {
			for _, d := range []string{"oa-primary", "oa-backup"} {
				g.Fakes[d].Script(icFail503, icFail503)
			}
			for range 2 {
				icPost(t, g.URL, "/v1/chat/completions", `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hi"}]}`, "Authorization", "Bearer sk-static")
			}
		}
		body := `{"model":"` + tc.model + `","messages":[{"role":"user","content":"` + tc.content + `"}]}`
		resp, b := icPost(t, g.URL, "/v1/route", body, "Authorization", "Bearer "+tc.key)
		if resp.StatusCode != 200 {
			t.Errorf("%s: POST /v1/route %d %s, want 200", tc.name, resp.StatusCode, b)
			continue
		}
		p := gjson.ParseBytes(b)
		if p.Get("candidates.#").Int() != 0 || !p.Get("candidates").IsArray() {
			t.Errorf("%s: candidates %s, want []", tc.name, p.Get("candidates").Raw)
		}
		routes := 2
		if strings.HasPrefix(tc.model, "claude") {
			routes = 1
		}
		if ds := p.Get("dropped").Array(); len(ds) != routes {
			t.Errorf("%s: dropped %s, want %d routes", tc.name, p.Get("dropped").Raw, routes)
		} else {
			for _, d := range ds {
				if d.Get("reason").String() != tc.reason {
					t.Errorf("%s: dropped %s, want reason %q", tc.name, d.Raw, tc.reason)
				}
			}
		}
		rf := p.Get("refusal")
		if rf.Get("status").Int() != int64(tc.status) || rf.Get("error_type").String() != tc.class ||
			rf.Get("message").String() == "" || rf.Get("retry_after").Int() != tc.retryAfter {
			t.Errorf("%s: refusal %s, want %d %s retry_after %d", tc.name, rf.Raw, tc.status, tc.class, tc.retryAfter)
		}

		// The real request gets what the plan says, and calls nothing.
		hits := fakeHits(g)
		oc := g.openaiClient(openaiopt.WithAPIKey(tc.key))
		_, err := oc.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{Model: tc.model,
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(tc.content)}})
		var oe *openai.Error
		if !errors.As(err, &oe) || oe.StatusCode != tc.status || errorType([]byte(oe.RawJSON())) != tc.class || oe.Message != rf.Get("message").String() {
			t.Errorf("%s: the real request got %v, want %d %s %q", tc.name, err, tc.status, tc.class, rf.Get("message").String())
		}
		if fakeHits(g) != hits {
			t.Errorf("%s: a refused request reached a provider", tc.name)
		}
	}

	// A routable request has no refusal member (the answer is unchanged).
	_, b := icPost(t, g.URL, "/v1/route", `{"model":"claude-haiku-4-5","messages":[{"role":"user","content":"Hi"}]}`, "Authorization", "Bearer sk-static")
	if gjson.GetBytes(b, "refusal").Exists() || gjson.GetBytes(b, "candidates.#").Int() != 1 {
		t.Errorf("routable plan: %s", b)
	}
}

// TestRouteNamesProviderPause: issue 25 item 5: after an upstream 429 pauses a provider
// (R-CIRCUIT-4), POST /v1/route names its route's drop "provider paused", the fact the audit's
// admission event calls provider_paused, not "circuit open"; an open circuit keeps that name.
func TestRouteNamesProviderPause(t *testing.T) {
	t.Parallel()
	g := startTwo(t)
	g.Fakes["oa-primary"].Script(fp.Behavior{Kind: fp.KindStatus, Status: 429, RetryAfter: 30})
	resp, _ := icCall(t, g.URL, catalog.OpenAI, "gpt-4o-mini", false)
	icServed(t, g, resp, "oa-backup", 2)
	_, b := icPost(t, g.URL, "/v1/route", `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hi"}]}`)
	ds := gjson.GetBytes(b, "dropped").Array()
	if len(ds) != 1 || ds[0].Get("deployment").String() != "oa-primary" || ds[0].Get("reason").String() != "provider paused" {
		t.Fatalf("dropped %s, want oa-primary as \"provider paused\"", gjson.GetBytes(b, "dropped").Raw)
	}
	resp, _ = icCall(t, g.URL, catalog.OpenAI, "gpt-4o-mini", false)
	rec := g.generation(t, resp.Header.Get("X-Request-Id"))
	found := false
	for i := range rec.AdmissionEvents.Len() {
		e := rec.AdmissionEvents.At(i)
		found = found || (e.Kind == "provider_paused" && e.Deployment == "oa-primary")
	}
	if !found {
		t.Errorf("the audit's admission events %+v lack provider_paused for oa-primary", rec.AdmissionEvents)
	}
}
