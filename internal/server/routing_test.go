package server_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	anthropicopt "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	openaiopt "github.com/openai/openai-go/v3/option"
	"github.com/tidwall/gjson"

	fp "github.com/switchyard-gw/switchyard/internal/fakeprovider"
)

// routingCatalog: model chat is served by cheap (cheapest), mid and dear (an Anthropic
// deployment, most expensive), in that price order; backup-model only by fb; even by three
// deployments at one price (one tie band: the order inside it is the session's).
const routingCatalog = `
auth: {required: false}
routing:
  timeouts: {headers: 2s, stream_headers: 2s, stream_idle: 2s}
models:
  - id: chat
  - id: backup-model
  - id: "meta/llama3.1:70b"
  - id: even
deployments:
  - name: cheap
    provider: cheapco
    dialect: openai
    base_url: "{{cheap}}"
    routes: [{model: chat, price: {input: 1, output: 1}}, {model: "meta/llama3.1:70b", upstream_model: "llama3.1:70b"}, {model: even, price: {input: 1, output: 1}}]
  - name: mid
    provider: midco
    dialect: openai
    base_url: "{{mid}}"
    routes: [{model: chat, price: {input: 2, output: 2}}, {model: even, price: {input: 1, output: 1}}]
  - name: dear
    provider: dearco
    dialect: anthropic
    base_url: "{{dear}}"
    routes: [{model: chat, price: {input: 3, output: 3}}, {model: even, price: {input: 1, output: 1}}]
  - name: fb
    provider: fbco
    dialect: openai
    base_url: "{{fb}}"
    routes: [{model: backup-model, price: {input: 1, output: 1}}]
`

func startRouting(t *testing.T, extra string) *gateway {
	t.Helper()
	return startGateway(t, routingCatalog+extra, oa("cheap"), oa("mid"), an("dear"), oa("fb"))
}

func chatBody(model, extra string) string {
	return `{"model":"` + model + `","messages":[{"role":"user","content":"Hello"}]` + extra + `}`
}

// hits returns the model-request counts of the named fakes.
func hits(g *gateway, names ...string) []int {
	out := make([]int, len(names))
	for i, n := range names {
		out[i] = g.Fakes[n].Hits()
	}
	return out
}

// attemptDeps is the deployments of a request's attempts, in order.
func attemptDeps(t *testing.T, g *gateway, resp *http.Response) []string {
	t.Helper()
	rec := g.generation(t, resp.Header.Get("X-Request-Id"))
	var deps []string
	for _, a := range rec.Attempts {
		deps = append(deps, a.Deployment)
	}
	return deps
}

// TestSuffixPin: R-SUFFIX-1: `model:provider` (provider or deployment name) narrows the pool to
// that provider; if its routes fail the request fails with no switching. R-MODEL-6 / contract:
// the echoed model is the caller's string, suffix included.
func TestSuffixPin(t *testing.T) {
	t.Parallel()
	g := startRouting(t, "")
	for _, model := range []string{"chat:midco", "chat:mid"} {
		resp, b := icPost(t, g.URL, "/v1/chat/completions", chatBody(model, ""))
		if resp.StatusCode != 200 || resp.Header.Get("X-Switchyard-Deployment") != "mid" {
			t.Fatalf("%s: status %d deployment %q; body %s", model, resp.StatusCode, resp.Header.Get("X-Switchyard-Deployment"), b)
		}
		if got := gjson.GetBytes(b, "model").String(); got != model {
			t.Errorf("%s: echoed %q, want the caller's string", model, got)
		}
		if got := g.Fakes["mid"].Requests()[0].Model; got != "chat" {
			t.Errorf("%s: provider received model %q, want chat", model, got)
		}
	}
	g.Fakes["mid"].SetDefault(fp.Behavior{Kind: fp.KindStatus, Status: 500})
	before := hits(g, "cheap", "dear")
	resp, b := icPost(t, g.URL, "/v1/chat/completions", chatBody("chat:midco", `,"extra":{"fallbacks":["backup-model"]}`))
	if resp.StatusCode < 500 {
		t.Fatalf("pinned provider failing: status %d, want a 5xx; body %s", resp.StatusCode, b)
	}
	if after := hits(g, "cheap", "dear"); !slices.Equal(before, after) || g.Fakes["fb"].Hits() != 0 {
		t.Errorf("a pinned request switched provider: cheap/dear hits %v -> %v, fb %d", before, after, g.Fakes["fb"].Hits())
	}
	if deps := attemptDeps(t, g, resp); !slices.Equal(deps, []string{"mid"}) {
		t.Errorf("attempts %v, want [mid]", deps)
	}
	// A pin to a provider that does not serve the model is a 400 naming it.
	resp, b = icPost(t, g.URL, "/v1/chat/completions", chatBody("chat:fbco", ""))
	if resp.StatusCode != 400 || !strings.Contains(gjson.GetBytes(b, "error.message").String(), `"fbco"`) {
		t.Errorf("pin to a provider without the model: status %d body %s, want 400 naming fbco", resp.StatusCode, b)
	}
}

// TestColonIDNotSplit: R-MODEL-5 (issue 4's failure kind): `llama3.1:70b` is an id, not a pin
// of provider "70b": the whole id resolves first.
func TestColonIDNotSplit(t *testing.T) {
	t.Parallel()
	g := startRouting(t, "")
	resp, b := icPost(t, g.URL, "/v1/chat/completions", chatBody("meta/llama3.1:70b", ""))
	if resp.StatusCode != 200 || gjson.GetBytes(b, "model").String() != "meta/llama3.1:70b" {
		t.Fatalf("status %d body %s", resp.StatusCode, b)
	}
	if got := g.Fakes["cheap"].Requests()[0].Model; got != "llama3.1:70b" {
		t.Errorf("provider received %q, want llama3.1:70b", got)
	}
	// And a pin after a colon id splits only the last suffix.
	resp, b = icPost(t, g.URL, "/v1/chat/completions", chatBody("meta/llama3.1:70b:cheapco", ""))
	if resp.StatusCode != 200 || resp.Header.Get("X-Switchyard-Deployment") != "cheap" {
		t.Errorf("colon id with a pin: status %d body %s", resp.StatusCode, b)
	}
}

// TestStrategyOverrideLock: R-SUFFIX-2: `model:@strategy` and provider.sort are refused with a
// typed 400 unless the key has allow_request_override; R-SUFFIX-3: both suffixes are a 400.
func TestStrategyOverrideLock(t *testing.T) {
	t.Parallel()
	g := startRouting(t, `
keys:
  - {name: locked, secret: sk-locked}
  - {name: open, secret: sk-open, allow_request_override: true}
`)
	post := func(key, body string) (*http.Response, []byte) {
		return icPost(t, g.URL, "/v1/chat/completions", body, "Authorization", "Bearer "+key)
	}
	for _, body := range []string{chatBody("chat:@balanced", ""), chatBody("chat", `,"provider":{"sort":"latency"}`)} {
		resp, b := post("sk-locked", body)
		if resp.StatusCode != 400 || errorType(b) != "invalid_request" || !strings.Contains(string(b), "allow_request_override") {
			t.Errorf("locked key, %s: status %d body %s, want a typed 400", body, resp.StatusCode, b)
		}
		if resp, b := post("sk-open", body); resp.StatusCode != 200 {
			t.Errorf("open key, %s: status %d body %s", body, resp.StatusCode, b)
		}
	}
	for _, model := range []string{"chat:midco:@price", "chat:@price:midco"} {
		resp, b := post("sk-open", chatBody(model, ""))
		if resp.StatusCode != 400 || errorType(b) != "invalid_request" {
			t.Errorf("%s: status %d body %s, want 400 invalid_request", model, resp.StatusCode, b)
		}
	}
	if n := g.Fakes["mid"].Hits() + g.Fakes["dear"].Hits(); n != 0 {
		t.Errorf("refused requests reached a provider")
	}
}

// TestProviderPreferencesOpenAISDK: R-ORDER-6 through the official OpenAI SDK (extra body
// field provider): only and ignore narrow the pool, order goes first, allow_fallbacks false
// tries one candidate; provider is consumed and never forwarded.
func TestProviderPreferencesOpenAISDK(t *testing.T) {
	t.Parallel()
	g := startRouting(t, "")
	c := g.openaiClient()
	params := openai.ChatCompletionNewParams{Model: "chat", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello")}}
	for _, tc := range []struct {
		name string
		pref map[string]any
		dep  string
	}{
		{"none", nil, "cheap"},
		{"only", map[string]any{"only": []string{"dearco"}}, "dear"},
		{"ignore", map[string]any{"ignore": []string{"cheapco"}}, "mid"},
		{"order", map[string]any{"order": []string{"dear", "midco"}}, "dear"},
	} {
		var hr *http.Response
		opts := []openaiopt.RequestOption{openaiopt.WithResponseInto(&hr)}
		if tc.pref != nil {
			opts = append(opts, openaiopt.WithJSONSet("provider", tc.pref))
		}
		if _, err := c.Chat.Completions.New(t.Context(), params, opts...); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := hr.Header.Get("X-Switchyard-Deployment"); got != tc.dep {
			t.Errorf("%s: served by %q, want %q", tc.name, got, tc.dep)
		}
	}
	for _, f := range []string{"cheap", "mid", "dear"} {
		for _, r := range g.Fakes[f].Requests() {
			if gjson.GetBytes(r.Body, "provider").Exists() {
				t.Errorf("%s received the provider object: %s", f, r.Body)
			}
		}
	}
	g.Fakes["cheap"].SetDefault(fp.Behavior{Kind: fp.KindStatus, Status: 500})
	var hr *http.Response
	_, err := c.Chat.Completions.New(t.Context(), params, openaiopt.WithResponseInto(&hr),
		openaiopt.WithJSONSet("provider", map[string]any{"allow_fallbacks": false}))
	if err == nil {
		t.Fatalf("allow_fallbacks false with the first candidate failing: served")
	}
	midBefore := g.Fakes["mid"].Hits()
	if got := hr.Header.Get("X-Switchyard-Attempts"); got != "1" || g.Fakes["mid"].Hits() != midBefore {
		t.Errorf("allow_fallbacks false: attempts %q, want 1 and no second candidate", got)
	}
}

// TestProviderPreferencesAnthropicSDK: R-ORDER-6 on the Anthropic surface, through the SDK.
func TestProviderPreferencesAnthropicSDK(t *testing.T) {
	t.Parallel()
	g := startRouting(t, "")
	var hr *http.Response
	c := g.anthropicClient()
	_, err := c.Messages.New(t.Context(), anthropic.MessageNewParams{Model: "chat", MaxTokens: 64,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello"))}},
		anthropicopt.WithResponseInto(&hr), anthropicopt.WithJSONSet("provider", map[string]any{"only": []string{"midco", "dearco"}, "order": []string{"dearco"}}))
	if err != nil {
		t.Fatal(err)
	}
	if got := hr.Header.Get("X-Switchyard-Deployment"); got != "dear" {
		t.Errorf("served by %q, want dear", got)
	}
	if r := g.Fakes["dear"].Requests()[0]; gjson.GetBytes(r.Body, "provider").Exists() {
		t.Errorf("the provider object was forwarded: %s", r.Body)
	}
}

// TestModelFallbacks: R-FAIL-8: fallback models (extra.fallbacks, or the models list) are tried
// after every route of the requested model; the echoed model is the fallback id and
// x-switchyard-model says so; a caller-fault error stops the chain.
func TestModelFallbacks(t *testing.T) {
	t.Parallel()
	g := startRouting(t, "")
	// A caller-fault error stops the whole chain.
	g.Fakes["cheap"].Script(fp.Behavior{Kind: fp.KindStatus, Status: 400})
	resp, b := icPost(t, g.URL, "/v1/chat/completions", chatBody("chat", `,"extra":{"fallbacks":["backup-model"]}`))
	if resp.StatusCode != 400 || !slices.Equal(hits(g, "mid", "dear", "fb"), []int{0, 0, 0}) {
		t.Errorf("caller fault: status %d, mid/dear/fb hits %v, want 400 and none; body %s", resp.StatusCode, hits(g, "mid", "dear", "fb"), b)
	}
	for _, f := range []string{"cheap", "mid", "dear"} {
		g.Fakes[f].SetDefault(fp.Behavior{Kind: fp.KindStatus, Status: 503})
	}
	for _, extra := range []string{`,"extra":{"fallbacks":["backup-model"]}`, `,"models":["chat","backup-model"]`} {
		resp, b := icPost(t, g.URL, "/v1/chat/completions", chatBody("chat", extra))
		if resp.StatusCode != 200 || resp.Header.Get("X-Switchyard-Deployment") != "fb" {
			t.Fatalf("%s: status %d body %s", extra, resp.StatusCode, b)
		}
		if got := gjson.GetBytes(b, "model").String(); got != "backup-model" {
			t.Errorf("%s: echoed %q, want the fallback id", extra, got)
		}
		if got := resp.Header.Get("X-Switchyard-Model"); got != "backup-model" {
			t.Errorf("%s: x-switchyard-model %q", extra, got)
		}
		if deps := attemptDeps(t, g, resp); !slices.Equal(deps, []string{"cheap", "mid", "dear", "fb"}) {
			t.Errorf("%s: attempts %v, want every route of chat, then fb", extra, deps)
		}
	}
	for _, r := range g.Fakes["fb"].Requests() {
		if gjson.GetBytes(r.Body, "extra").Exists() || gjson.GetBytes(r.Body, "models").Exists() || r.Model != "backup-model" {
			t.Errorf("fb received %s", r.Body)
		}
	}
	// An unknown fallback id is refused before anything is sent.
	resp, _ = icPost(t, g.URL, "/v1/chat/completions", chatBody("chat", `,"models":["nope"]`))
	if resp.StatusCode != 404 {
		t.Errorf("unknown fallback: status %d, want 404", resp.StatusCode)
	}
}

// TestAttemptLimit: R-FAIL-10: routing.attempt_limit caps the attempts of the whole request,
// fallback models included.
func TestAttemptLimit(t *testing.T) {
	t.Parallel()
	g2 := startGateway(t, strings.Replace(routingCatalog, "routing:\n", "routing:\n  attempt_limit: 2\n", 1), oa("cheap"), oa("mid"), an("dear"), oa("fb"))
	for _, f := range []string{"cheap", "mid", "dear"} {
		g2.Fakes[f].SetDefault(fp.Behavior{Kind: fp.KindStatus, Status: 503})
	}
	resp, b := icPost(t, g2.URL, "/v1/chat/completions", chatBody("chat", `,"extra":{"fallbacks":["backup-model"]}`))
	if resp.StatusCode < 500 || resp.Header.Get("X-Switchyard-Attempts") != "2" {
		t.Fatalf("status %d attempts %q, want a 5xx after 2; body %s", resp.StatusCode, resp.Header.Get("X-Switchyard-Attempts"), b)
	}
	if n := g2.Fakes["dear"].Hits() + g2.Fakes["fb"].Hits(); n != 0 {
		t.Errorf("attempts beyond the limit: dear+fb hits %d", n)
	}
	_, b = icPost(t, g2.URL, "/v1/route", chatBody("chat", ""))
	if got := gjson.GetBytes(b, "attempt_limit").Int(); got != 2 {
		t.Errorf("the plan states attempt_limit %d, want 2; %s", got, b)
	}
}

// TestRetriesNeverRepeatADeployment: issue 4's "A, A, A, then B" must be impossible: every
// attempt of a request is a different route.
func TestRetriesNeverRepeatADeployment(t *testing.T) {
	t.Parallel()
	g := startRouting(t, "")
	for _, f := range []string{"cheap", "mid"} {
		g.Fakes[f].SetDefault(fp.Behavior{Kind: fp.KindStatus, Status: 500})
	}
	resp, b := icPost(t, g.URL, "/v1/chat/completions", chatBody("chat", ""))
	if resp.StatusCode != 200 {
		t.Fatalf("status %d body %s", resp.StatusCode, b)
	}
	if deps := attemptDeps(t, g, resp); !slices.Equal(deps, []string{"cheap", "mid", "dear"}) {
		t.Errorf("attempts %v, want [cheap mid dear]: one attempt per route", deps)
	}
	if h := hits(g, "cheap", "mid", "dear"); !slices.Equal(h, []int{1, 1, 1}) {
		t.Errorf("hits %v, want one each", h)
	}
}

// TestStickinessNeverBlocksFailover: R-ORDER-5 and issue 4's failure kind "stickiness keeps
// sending a conversation to a provider that is rate-limiting it": one session gets the same
// deployment every turn, but a 429ed provider is paused and skipped; another one serves.
func TestStickinessNeverBlocksFailover(t *testing.T) {
	t.Parallel()
	g := startRouting(t, "")
	body := func(turn string) string {
		return `{"model":"even","prompt_cache_key":"conversation-7","messages":[{"role":"user","content":"Hello"}` + turn + `]}`
	}
	resp, b := icPost(t, g.URL, "/v1/chat/completions", body(""))
	if resp.StatusCode != 200 {
		t.Fatalf("status %d body %s", resp.StatusCode, b)
	}
	sticky := resp.Header.Get("X-Switchyard-Deployment")
	for i := range 3 {
		resp, _ := icPost(t, g.URL, "/v1/chat/completions", body(`,{"role":"assistant","content":"hi"},{"role":"user","content":"turn `+string(rune('a'+i))+`"}`))
		if got := resp.Header.Get("X-Switchyard-Deployment"); got != sticky {
			t.Fatalf("turn %d served by %q, want the session's %q", i+2, got, sticky)
		}
	}
	g.Fakes[sticky].Script(fp.Behavior{Kind: fp.KindStatus, Status: 429, RetryAfter: 30})
	resp, b = icPost(t, g.URL, "/v1/chat/completions", body(""))
	if resp.StatusCode != 200 || resp.Header.Get("X-Switchyard-Deployment") == sticky {
		t.Fatalf("sticky provider 429: status %d served by %q; body %s", resp.StatusCode, resp.Header.Get("X-Switchyard-Deployment"), b)
	}
	stickyHits := g.Fakes[sticky].Hits()
	resp, b = icPost(t, g.URL, "/v1/chat/completions", body(""))
	if resp.StatusCode != 200 || resp.Header.Get("X-Switchyard-Attempts") != "1" || g.Fakes[sticky].Hits() != stickyHits {
		t.Errorf("next turn: status %d attempts %q sticky hits %d -> %d: the paused provider must be skipped; body %s",
			resp.StatusCode, resp.Header.Get("X-Switchyard-Attempts"), stickyHits, g.Fakes[sticky].Hits(), b)
	}
}

// TestRouteEndpoint: R-ORDER-8 / contract.md: POST /v1/route answers the plan (candidates in
// order, fallback models' after the requested model's, dropped routes with reasons, strategy,
// session key) and calls no provider.
func TestRouteEndpoint(t *testing.T) {
	t.Parallel()
	g := startRouting(t, "")
	resp, b := icPost(t, g.URL, "/v1/route", chatBody("chat", `,"extra":{"fallbacks":["backup-model"]},"provider":{"ignore":["midco"]}`))
	if resp.StatusCode != 200 {
		t.Fatalf("status %d body %s", resp.StatusCode, b)
	}
	var deps []string
	for _, c := range gjson.GetBytes(b, "candidates").Array() {
		deps = append(deps, c.Get("deployment").Str)
	}
	if !slices.Equal(deps, []string{"cheap", "dear", "fb"}) {
		t.Errorf("candidates %v, want [cheap dear fb]; %s", deps, b)
	}
	for _, f := range []string{"model", "resolved_model", "strategy", "session_key", "dropped"} {
		if !gjson.GetBytes(b, f).Exists() {
			t.Errorf("plan lacks %q: %s", f, b)
		}
	}
	if s := gjson.GetBytes(b, "strategy").Str; s != "price" {
		t.Errorf("strategy %q", s)
	}
	if c := gjson.GetBytes(b, "candidates.2"); c.Get("model").Str != "backup-model" || c.Get("upstream_model").Str != "backup-model" || c.Get("score").Num != 4 {
		t.Errorf("fallback candidate %s", c.Raw)
	}
	if gjson.GetBytes(b, "session_key").Str == "" {
		t.Errorf("no session key: %s", b)
	}
	resp, b = icPost(t, g.URL, "/v1/route", `{"surface":"anthropic","model":"chat:dearco","max_tokens":8,"messages":[{"role":"user","content":"x"}]}`)
	if resp.StatusCode != 200 || gjson.GetBytes(b, "candidates.#").Int() != 1 || gjson.GetBytes(b, "model").Str != "chat:dearco" {
		t.Errorf("anthropic surface, pinned: status %d %s", resp.StatusCode, b)
	}
	if n := hits(g, "cheap", "mid", "dear", "fb"); !slices.Equal(n, []int{0, 0, 0, 0}) {
		t.Errorf("POST /v1/route called providers: %v", n)
	}
	resp, _ = icPost(t, g.URL, "/v1/route", chatBody("nope", ""))
	if resp.StatusCode != 404 {
		t.Errorf("unknown model: status %d", resp.StatusCode)
	}
}
