package server_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	anthropicopt "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	openaiopt "github.com/openai/openai-go/v3/option"
	"github.com/tidwall/gjson"

	"github.com/switchyard-gw/switchyard/internal/accounts"
	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/fakeprovider"
	"github.com/switchyard-gw/switchyard/internal/secret"
)

// policyCatalog: gpt-4o-mini at two house deployments (oa-primary of provider openai, the
// cheaper; oa-backup of provider reseller), claude-haiku-4-5 at one Anthropic deployment, the
// admin API on, circuits opening after 2 failures.
const policyCatalog = `
routing:
  timeouts: {headers: 5s, stream_headers: 5s, stream_idle: 5s}
  circuit: {failures: 2, cooldown: 30s}
models:
  - id: gpt-4o-mini
    max_output_tokens: 1000
  - id: claude-haiku-4-5
deployments:
  - name: oa-primary
    provider: openai
    dialect: openai
    base_url: "{{oa-primary}}"
    api_key: sk-house-primary
    routes: [{model: gpt-4o-mini, price: {input: 1, output: 10}}]
  - name: oa-backup
    provider: reseller
    dialect: openai
    base_url: "{{oa-backup}}"
    api_key: sk-house-backup
    routes: [{model: gpt-4o-mini, upstream_model: gpt-4o-mini-2024-07-18, price: {input: 2, output: 20}}]
  - name: an-primary
    provider: anthropic
    dialect: anthropic
    base_url: "{{an-primary}}"
    api_key: sk-ant-house
    routes: [{model: claude-haiku-4-5, price: {input: 1, output: 5}}]
admin:
  token: adm-secret-token
`

// ownKey is the customer's provider credential of the BYOK tests: it must reach the
// connection's provider and nothing else, and never appear in an admin answer.
const ownKey = "sk-customer-own-credential"

// byokFixture is a gateway with an account, a key of it, and an emulated provider outside the
// catalog that only accepts ownKey: the customer's own OpenAI account.
type byokFixture struct {
	g             *gateway
	acct, keyID   string
	secret        string
	own           *fakeprovider.Provider
	ownURL        string
	conn, connDep string
	// ownClosed counts the TCP connections to the own provider that were closed.
	ownClosed atomic.Int32
}

func startBYOK(t *testing.T, billing string) *byokFixture {
	t.Helper()
	return startBYOKCatalog(t, billing, policyCatalog)
}

// startBYOKCatalog is startBYOK on configuration yaml (policyCatalog's deployments).
func startBYOKCatalog(t *testing.T, billing, yaml string) *byokFixture {
	t.Helper()
	f := &byokFixture{g: startGateway(t, yaml, oa("oa-primary"), oa("oa-backup"), an("an-primary"))}
	f.own = fakeprovider.New("customer-openai", catalog.OpenAI)
	f.own.RequireKey(ownKey)
	ts := httptest.NewUnstartedServer(f.own)
	ts.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateClosed {
			f.ownClosed.Add(1)
		}
	}
	ts.Start()
	t.Cleanup(ts.Close)
	f.ownURL = ts.URL + "/v1"
	f.acct = mustAdmin(t, f.g, 201, "POST", "/admin/v1/accounts", `{"name":"Acme","settings":{"billing":"`+billing+`"}}`).Get("id").String()
	k := mustAdmin(t, f.g, 201, "POST", "/admin/v1/keys", `{"account_id":"`+f.acct+`","name":"team"}`)
	f.keyID, f.secret = k.Get("id").String(), k.Get("secret").String()
	c := mustAdmin(t, f.g, 201, "POST", "/admin/v1/keys/"+f.keyID+"/connections",
		`{"provider":"openai","dialect":"openai","base_url":"`+f.ownURL+`","api_key":"`+ownKey+`"}`)
	f.conn, f.connDep = c.Get("id").String(), c.Get("deployment").String()
	if !strings.HasPrefix(f.conn, "conn_") || f.connDep != "byok:"+f.conn || strings.Contains(c.Raw, ownKey) ||
		c.Get("models").Raw != `["gpt-4o-mini"]` || c.Get("key_id").String() != f.keyID {
		t.Fatalf("connection %s", c.Raw)
	}
	return f
}

// policy creates a routing policy of the fixture's account from the JSON members given and
// attaches it to the key; it returns the policy id.
func (f *byokFixture) policy(t *testing.T, members string) string {
	t.Helper()
	p := mustAdmin(t, f.g, 201, "POST", "/admin/v1/policies", `{"account_id":"`+f.acct+`","name":"p",`+members+`}`)
	id := p.Get("id").String()
	mustAdmin(t, f.g, 200, "PATCH", "/admin/v1/keys/"+f.keyID, `{"settings":{"policy":"`+id+`"}}`)
	return id
}

func (f *byokFixture) client() openai.Client {
	return f.g.openaiClient(openaiopt.WithAPIKey(f.secret))
}

// R-KEY-5, R-POLICY (funding byok_with_house_fallback), R-AUDIT-2: the key's own connection is
// tried first, with the customer's credential and the house's upstream model id, and appears
// as byok:<id> in headers, audit and ledger at cost 0 (billing_source byok); when it fails
// before commit the request fails over to the house deployment, billed at the house price;
// its circuit and 429 pause are its own (the house's provider openai keeps serving); the
// Anthropic SDK is served through it by translation.
func TestBYOKWithHouseFallback(t *testing.T) {
	t.Parallel()
	f := startBYOK(t, "unmetered")
	f.policy(t, `"order":["`+f.connDep+`"],"funding":"byok_with_house_fallback"`)
	ctx := context.Background()
	cl := f.client()

	// 1. Served by the connection.
	var hdr http.Header
	resp, err := cl.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt-4o-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello")}}, openaiopt.WithResponseInto(new(*http.Response)),
		openaiopt.WithMiddleware(func(r *http.Request, next openaiopt.MiddlewareNext) (*http.Response, error) {
			res, err := next(r)
			if res != nil {
				hdr = res.Header
			}
			return res, err
		}))
	if err != nil {
		t.Fatalf("call through the connection: %v", err)
	}
	if resp.Model != "gpt-4o-mini" || hdr.Get("X-Switchyard-Deployment") != f.connDep || hdr.Get("X-Switchyard-Provider") != "openai" {
		t.Fatalf("model %q, deployment %q, provider %q", resp.Model, hdr.Get("X-Switchyard-Deployment"), hdr.Get("X-Switchyard-Provider"))
	}
	reqs := f.own.Requests()
	if len(reqs) != 1 || reqs[0].Authorization != "Bearer "+ownKey || reqs[0].Model != "gpt-4o-mini" || reqs[0].Rejected != "" {
		t.Fatalf("own provider saw %+v", reqs)
	}
	if n := f.g.Fakes["oa-primary"].Hits() + f.g.Fakes["oa-backup"].Hits(); n != 0 {
		t.Fatalf("house deployments got %d requests", n)
	}
	rec := f.g.generation(t, hdr.Get("X-Request-Id"))
	if len(rec.Attempts) != 1 || rec.Attempts[0].Deployment != f.connDep || rec.Attempts[0].BillingSource != "byok" ||
		rec.Attempts[0].CostUSD != 0 || rec.Attempts[0].Price != nil || rec.Attempts[0].Tokens.Output == 0 {
		t.Fatalf("audit %+v", rec.Attempts)
	}

	// 2. The connection fails (500): failover to the house's cheapest deployment.
	f.own.Script(fakeprovider.Behavior{Kind: fakeprovider.KindStatus, Status: 500})
	r2, b := chat(t, f.g, f.secret)
	if r2.StatusCode != 200 || r2.Header.Get("X-Switchyard-Deployment") != "oa-primary" || r2.Header.Get("X-Switchyard-Attempts") != "2" {
		t.Fatalf("failover: %d %s %v", r2.StatusCode, b, r2.Header)
	}
	rec = f.g.generation(t, r2.Header.Get("X-Request-Id"))
	if len(rec.Attempts) != 2 || rec.Attempts[0].Deployment != f.connDep || rec.Attempts[0].Outcome != "failed" ||
		rec.Attempts[1].Deployment != "oa-primary" || rec.Attempts[1].BillingSource != "route_price" || rec.Attempts[1].CostUSD <= 0 {
		t.Fatalf("failover audit %+v", rec.Attempts)
	}
	if got := f.g.Fakes["oa-primary"].Requests(); len(got) != 1 || got[0].Authorization != "Bearer sk-house-primary" {
		t.Fatalf("house provider saw %+v", got)
	}

	// 3. A 429 of the connection pauses the connection only: the next request skips it (not an
	// attempt) and the house's openai deployment serves it.
	f.own.Script(fakeprovider.Behavior{Kind: fakeprovider.KindStatus, Status: 429, RetryAfter: 20})
	if r3, b := chat(t, f.g, f.secret); r3.StatusCode != 200 || r3.Header.Get("X-Switchyard-Deployment") != "oa-primary" {
		t.Fatalf("after the connection's 429: %d %s", r3.StatusCode, b)
	}
	before := f.own.Hits()
	r4, b := chat(t, f.g, f.secret)
	if r4.StatusCode != 200 || r4.Header.Get("X-Switchyard-Deployment") != "oa-primary" || r4.Header.Get("X-Switchyard-Attempts") != "1" || f.own.Hits() != before {
		t.Fatalf("while the connection is paused: %d %s attempts %s, own hits %d -> %d", r4.StatusCode, b,
			r4.Header.Get("X-Switchyard-Attempts"), before, f.own.Hits())
	}
	plan := routeAs(t, f.g, f.secret, `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"x"}]}`)
	if !strings.Contains(plan.Get("dropped").Raw, f.connDep) || plan.Get("candidates.0.deployment").String() != "oa-primary" {
		t.Fatalf("plan while paused %s", plan.Raw)
	}

	// 4. The Anthropic SDK is served through the connection by translation (after the pause).
	f.g.Clock.Advance(31e9) // past the connection's 429 pause (20 s) and its circuit's cooldown (30 s: it failed twice)
	f.own.Script()          // back to normal answers
	var ahdr http.Header
	acl := f.g.anthropicClient(anthropicopt.WithAPIKey(f.secret), anthropicopt.WithMiddleware(
		func(r *http.Request, next anthropicopt.MiddlewareNext) (*http.Response, error) {
			res, err := next(r)
			if res != nil {
				ahdr = res.Header
			}
			return res, err
		}))
	msg, err := acl.Messages.New(ctx, anthropic.MessageNewParams{Model: "gpt-4o-mini", MaxTokens: 50,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello"))}})
	if err != nil || len(msg.Content) == 0 || ahdr.Get("X-Switchyard-Deployment") != f.connDep {
		t.Fatalf("anthropic SDK through the connection: %v %+v %v", err, msg, ahdr)
	}

	// 5. The ledger: the connection's requests settle at 0, the house's at its cost.
	led := mustAdmin(t, f.g, 200, "GET", "/admin/v1/accounts/"+f.acct+"/ledger", "")
	var byokSettles, houseSettles int
	for _, e := range led.Get("entries").Array() {
		if e.Get("kind").String() != "settle" {
			continue
		}
		switch e.Get("deployment").String() {
		case f.connDep:
			byokSettles++
			if e.Get("cost_usd").Raw != "0" || e.Get("tokens.output").Int() == 0 {
				t.Errorf("byok settle %s", e.Raw)
			}
		case "oa-primary":
			houseSettles++
		}
	}
	if byokSettles != 2 || houseSettles != 3 {
		t.Errorf("settles: byok %d, house %d; want 2 and 3: %s", byokSettles, houseSettles, led.Raw)
	}
}

// routeAs posts body to POST /v1/route with key and returns the plan.
func routeAs(t *testing.T, g *gateway, key, body string) gjson.Result {
	t.Helper()
	resp, b := icPost(t, g.URL, "/v1/route", body, "Authorization", "Bearer "+key)
	if resp.StatusCode != 200 {
		t.Fatalf("POST /v1/route: %d %s", resp.StatusCode, b)
	}
	return gjson.ParseBytes(b)
}

// R-POLICY funding byok: only the key's connections serve; a failure there never reaches the
// house; a model no connection serves is refused naming settings.policy; nothing is reserved
// or billed, so a prepaid account with no balance is served.
func TestBYOKFundingOnly(t *testing.T) {
	t.Parallel()
	f := startBYOK(t, "prepaid")
	pol := f.policy(t, `"funding":"byok"`)

	resp, b := chat(t, f.g, f.secret)
	if resp.StatusCode != 200 || resp.Header.Get("X-Switchyard-Deployment") != f.connDep {
		t.Fatalf("prepaid account at 0 through byok: %d %s", resp.StatusCode, b)
	}
	plan := routeAs(t, f.g, f.secret, `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"x"}]}`)
	if plan.Get("policy").String() != pol || plan.Get("funding").String() != "byok" || len(plan.Get("candidates").Array()) != 1 ||
		!plan.Get("candidates.0.byok").Bool() || !strings.Contains(plan.Get("dropped").Raw, "not funded by the policy") {
		t.Fatalf("plan %s", plan.Raw)
	}

	f.own.Script(fakeprovider.Behavior{Kind: fakeprovider.KindStatus, Status: 500})
	resp, b = chat(t, f.g, f.secret)
	if resp.StatusCode != 502 || resp.Header.Get("X-Switchyard-Attempts") != "1" {
		t.Fatalf("connection failing under byok: %d %s %v", resp.StatusCode, b, resp.Header)
	}
	if n := f.g.Fakes["oa-primary"].Hits() + f.g.Fakes["oa-backup"].Hits(); n != 0 {
		t.Fatalf("house deployments got %d requests under funding byok", n)
	}

	resp, b = icPost(t, f.g.URL, "/v1/chat/completions", `{"model":"claude-haiku-4-5","max_tokens":5,"messages":[{"role":"user","content":"Hi"}]}`,
		"Authorization", "Bearer "+f.secret)
	if resp.StatusCode != 400 || gjson.GetBytes(b, "error.param").String() != "settings.policy" || f.g.Fakes["an-primary"].Hits() != 0 {
		t.Fatalf("a model no connection serves: %d %s", resp.StatusCode, b)
	}
	led := mustAdmin(t, f.g, 200, "GET", "/admin/v1/accounts/"+f.acct, "")
	if led.Get("balance_usd").Raw != "0" {
		t.Fatalf("balance after byok-only calls %s", led.Raw)
	}
}

// R-ORDER-7, R-FAIL-10: a key under a house-funded policy keeps the policy's saved order (the
// dearer oa-backup first, ahead of the request's provider.order) and its attempt limit; its
// connection is not used.
func TestPolicyOrderAndAttemptLimit(t *testing.T) {
	t.Parallel()
	f := startBYOK(t, "unmetered")
	pol := f.policy(t, `"order":["oa-backup","oa-primary"],"funding":"house","attempt_limit":1`)
	body := `{"model":"gpt-4o-mini","provider":{"order":["oa-primary"]},"max_tokens":5,"messages":[{"role":"user","content":"x"}]}`
	plan := routeAs(t, f.g, f.secret, body)
	if plan.Get("policy").String() != pol || plan.Get("funding").String() != "house" || plan.Get("attempt_limit").Int() != 1 ||
		plan.Get("candidates.#.deployment").Raw != `["oa-backup","oa-primary"]` {
		t.Fatalf("plan %s", plan.Raw)
	}
	resp, b := icPost(t, f.g.URL, "/v1/chat/completions", body, "Authorization", "Bearer "+f.secret)
	if resp.StatusCode != 200 || resp.Header.Get("X-Switchyard-Deployment") != "oa-backup" || f.own.Hits() != 0 {
		t.Fatalf("call: %d %s deployment %s", resp.StatusCode, b, resp.Header.Get("X-Switchyard-Deployment"))
	}
	f.g.Fakes["oa-backup"].Script(fakeprovider.Behavior{Kind: fakeprovider.KindStatus, Status: 503})
	resp, b = icPost(t, f.g.URL, "/v1/chat/completions", body, "Authorization", "Bearer "+f.secret)
	if resp.StatusCode != 503 || resp.Header.Get("X-Switchyard-Attempts") != "1" || f.g.Fakes["oa-primary"].Hits() != 0 {
		t.Fatalf("attempt limit 1: %d %s attempts %s, primary hits %d", resp.StatusCode, b,
			resp.Header.Get("X-Switchyard-Attempts"), f.g.Fakes["oa-primary"].Hits())
	}
}

// A key with a connection and no policy tries its connection first, then the house
// (docs/routing.md); another key of the same account never uses it.
func TestBYOKWithoutPolicy(t *testing.T) {
	t.Parallel()
	f := startBYOK(t, "unmetered")
	if resp, b := chat(t, f.g, f.secret); resp.StatusCode != 200 || resp.Header.Get("X-Switchyard-Deployment") != f.connDep {
		t.Fatalf("key with a connection: %d %s", resp.StatusCode, b)
	}
	other := mustAdmin(t, f.g, 201, "POST", "/admin/v1/keys", `{"account_id":"`+f.acct+`","name":"other"}`).Get("secret").String()
	if resp, b := chat(t, f.g, other); resp.StatusCode != 200 || resp.Header.Get("X-Switchyard-Deployment") != "oa-primary" {
		t.Fatalf("another key: %d %s", resp.StatusCode, b)
	}
	if f.own.Hits() != 1 {
		t.Fatalf("own provider hits %d", f.own.Hits())
	}
}

// Bad policies and connections are refused with 400 naming the field and change nothing;
// a policy of another account cannot be attached; the connection's API key is never shown.
func TestPolicyAdminValidation(t *testing.T) {
	t.Parallel()
	f := startBYOK(t, "unmetered")
	other := mustAdmin(t, f.g, 201, "POST", "/admin/v1/accounts", `{"name":"Other"}`).Get("id").String()
	otherPol := mustAdmin(t, f.g, 201, "POST", "/admin/v1/policies", `{"account_id":"`+other+`","name":"theirs"}`).Get("id").String()
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		param                    string
	}{
		{"unknown deployment", "POST", "/admin/v1/policies", `{"account_id":"` + f.acct + `","name":"p","order":["nope"]}`, 400, "order[0]"},
		{"repeated entry", "POST", "/admin/v1/policies", `{"account_id":"` + f.acct + `","name":"p","order":["oa-primary","oa-primary"]}`, 400, "order[1]"},
		{"unknown connection", "POST", "/admin/v1/policies", `{"account_id":"` + f.acct + `","name":"p","order":["byok:conn_nope"]}`, 400, "order[0]"},
		{"another account's connection", "POST", "/admin/v1/policies", `{"account_id":"` + other + `","name":"p","order":["` + f.connDep + `"]}`, 400, "order[0]"},
		{"bad funding", "POST", "/admin/v1/policies", `{"account_id":"` + f.acct + `","name":"p","funding":"free"}`, 400, "funding"},
		{"negative attempt limit", "POST", "/admin/v1/policies", `{"account_id":"` + f.acct + `","name":"p","attempt_limit":-1}`, 400, "attempt_limit"},
		{"unknown field", "POST", "/admin/v1/policies", `{"account_id":"` + f.acct + `","name":"p","strategy":"price"}`, 400, "strategy"},
		{"unknown account", "POST", "/admin/v1/policies", `{"account_id":"acct_nope","name":"p"}`, 404, ""},
		{"another account's policy", "PATCH", "/admin/v1/keys/" + f.keyID, `{"settings":{"policy":"` + otherPol + `"}}`, 400, "settings.policy"},
		{"unknown policy", "PATCH", "/admin/v1/keys/" + f.keyID, `{"settings":{"policy":"pol_nope"}}`, 400, "settings.policy"},
		{"bad dialect", "POST", "/admin/v1/keys/" + f.keyID + "/connections", `{"provider":"x","dialect":"responses","base_url":"https://x.example/v1","api_key":"k"}`, 400, "dialect"},
		{"bad base_url", "POST", "/admin/v1/keys/" + f.keyID + "/connections", `{"provider":"x","dialect":"openai","base_url":"ftp://x","api_key":"k"}`, 400, "base_url"},
		{"credentials in base_url", "POST", "/admin/v1/keys/" + f.keyID + "/connections", `{"provider":"x","dialect":"openai","base_url":"https://u:p@x.example/v1","api_key":"k"}`, 400, "base_url"},
		{"unknown model", "POST", "/admin/v1/keys/" + f.keyID + "/connections", `{"provider":"x","dialect":"openai","base_url":"https://x.example/v1","api_key":"k","models":["gpt-5"]}`, 400, "models[0]"},
		{"byok provider", "POST", "/admin/v1/keys/" + f.keyID + "/connections", `{"provider":"byok:x","dialect":"openai","base_url":"https://x.example/v1","api_key":"k"}`, 400, "provider"},
		{"missing api_key", "POST", "/admin/v1/keys/" + f.keyID + "/connections", `{"provider":"x","dialect":"openai","base_url":"https://x.example/v1"}`, 400, "api_key"},
		{"unknown key", "POST", "/admin/v1/keys/key_nope/connections", `{"provider":"x","dialect":"openai","base_url":"https://x.example/v1","api_key":"k"}`, 404, ""},
	} {
		resp, b := adminDo(t, f.g, tc.method, tc.path, tc.body)
		if resp.StatusCode != tc.status || (tc.param != "" && gjson.GetBytes(b, "error.param").String() != tc.param) {
			t.Errorf("%s: %d %s; want %d param %q", tc.name, resp.StatusCode, b, tc.status, tc.param)
		}
	}
	// Nothing changed: the key has no policy, one connection, and still routes through it.
	if eff := mustAdmin(t, f.g, 200, "GET", "/admin/v1/keys/"+f.keyID+"/effective", ""); eff.Get("settings.policy.value").String() != "" {
		t.Errorf("effective policy after refusals %s", eff.Raw)
	}
	list := mustAdmin(t, f.g, 200, "GET", "/admin/v1/keys/"+f.keyID+"/connections", "")
	if len(list.Get("data").Array()) != 1 || strings.Contains(list.Raw, ownKey) || list.Get("data.0.deployment").String() != f.connDep {
		t.Errorf("connections %s", list.Raw)
	}
	// A revoked key takes no connection.
	mustAdmin(t, f.g, 204, "DELETE", "/admin/v1/keys/"+f.keyID, "")
	if resp, b := adminDo(t, f.g, "POST", "/admin/v1/keys/"+f.keyID+"/connections",
		`{"provider":"x","dialect":"openai","base_url":"https://x.example/v1","api_key":"k"}`); resp.StatusCode != 404 {
		t.Errorf("connection of a revoked key: %d %s", resp.StatusCode, b)
	}
}

// deployments lists the deployments of a plan's candidates, in order.
func deployments(plan gjson.Result) string { return plan.Get("candidates.#.deployment").Raw }

const planBody = `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"x"}]}`

// R-KEY-5: DELETE /admin/v1/keys/{id}/connections/{conn} stops the connection at once in this
// process: the key's next request goes to the house; a policy whose saved order names it still
// works (the entry matches nothing, the rest of the order applies); under funding byok the
// key is refused naming settings.policy; the connection's idle upstream connections are closed;
// a reload does not bring it back. 404 for a connection revoked already, another key's, or
// unknown ids; another key's connection stays in use.
func TestBYOKRevokeConnection(t *testing.T) {
	t.Parallel()
	f := startBYOK(t, "unmetered")
	pol := f.policy(t, `"order":["`+f.connDep+`","oa-backup"],"funding":"byok_with_house_fallback"`)
	if resp, b := chat(t, f.g, f.secret); resp.StatusCode != 200 || resp.Header.Get("X-Switchyard-Deployment") != f.connDep {
		t.Fatalf("before the revocation: %d %s", resp.StatusCode, b)
	}
	// A second key of the account with its own connection to the same provider.
	k2 := mustAdmin(t, f.g, 201, "POST", "/admin/v1/keys", `{"account_id":"`+f.acct+`","name":"two"}`)
	key2, secret2 := k2.Get("id").String(), k2.Get("secret").String()
	conn2 := mustAdmin(t, f.g, 201, "POST", "/admin/v1/keys/"+key2+"/connections",
		`{"provider":"openai","dialect":"openai","base_url":"`+f.ownURL+`","api_key":"`+ownKey+`"}`).Get("id").String()
	if n := f.ownClosed.Load(); n != 0 {
		t.Fatalf("%d connections to the own provider closed before the revocation", n)
	}

	for _, tc := range []struct{ name, path string }{
		{"another key's connection", "/admin/v1/keys/" + f.keyID + "/connections/" + conn2},
		{"unknown connection", "/admin/v1/keys/" + f.keyID + "/connections/conn_nope"},
		{"unknown key", "/admin/v1/keys/key_nope/connections/" + f.conn},
	} {
		if resp, b := adminDo(t, f.g, "DELETE", tc.path, ""); resp.StatusCode != 404 {
			t.Errorf("%s: %d %s, want 404", tc.name, resp.StatusCode, b)
		}
	}
	mustAdmin(t, f.g, 204, "DELETE", "/admin/v1/keys/"+f.keyID+"/connections/"+f.conn, "")
	if resp, b := adminDo(t, f.g, "DELETE", "/admin/v1/keys/"+f.keyID+"/connections/"+f.conn, ""); resp.StatusCode != 404 {
		t.Errorf("revoking twice: %d %s, want 404", resp.StatusCode, b)
	}

	// The next request: the policy's order still applies without the connection.
	hits := f.own.Hits()
	plan := routeAs(t, f.g, f.secret, planBody)
	if plan.Get("policy").String() != pol || deployments(plan) != `["oa-backup","oa-primary"]` || strings.Contains(plan.Raw, f.connDep) {
		t.Errorf("plan after the revocation %s", plan.Raw)
	}
	if resp, b := chat(t, f.g, f.secret); resp.StatusCode != 200 || resp.Header.Get("X-Switchyard-Deployment") != "oa-backup" || f.own.Hits() != hits {
		t.Errorf("after the revocation: %d %s deployment %s, own hits %d -> %d", resp.StatusCode, b,
			resp.Header.Get("X-Switchyard-Deployment"), hits, f.own.Hits())
	}
	if list := mustAdmin(t, f.g, 200, "GET", "/admin/v1/keys/"+f.keyID+"/connections", ""); list.Get("data").Raw != "[]" {
		t.Errorf("connections after the revocation %s", list.Raw)
	}
	// Its idle upstream connection was closed.
	for deadline := time.Now().Add(10 * time.Second); f.ownClosed.Load() == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the revoked connection's idle upstream connection was not closed")
		}
		time.Sleep(5 * time.Millisecond) // polling for the server's view of the close, with a deadline
	}

	// Under funding byok the key has nothing left: refused naming settings.policy, no house call.
	mustAdmin(t, f.g, 200, "PATCH", "/admin/v1/policies/"+pol, `{"funding":"byok"}`)
	house := f.g.Fakes["oa-primary"].Hits() + f.g.Fakes["oa-backup"].Hits()
	if resp, b := chat(t, f.g, f.secret); resp.StatusCode != 400 || gjson.GetBytes(b, "error.param").String() != "settings.policy" {
		t.Errorf("funding byok without a connection: %d %s", resp.StatusCode, b)
	}
	if n := f.g.Fakes["oa-primary"].Hits() + f.g.Fakes["oa-backup"].Hits(); n != house {
		t.Errorf("house deployments called under funding byok: %d -> %d", house, n)
	}

	// A reload from the store does not bring it back; the other key's connection still serves.
	if err := f.g.Srv.ReloadKeys(context.Background()); err != nil {
		t.Fatal(err)
	}
	if resp, b := chat(t, f.g, f.secret); resp.StatusCode != 400 {
		t.Errorf("after a reload: %d %s", resp.StatusCode, b)
	}
	if resp, b := chat(t, f.g, secret2); resp.StatusCode != 200 || resp.Header.Get("X-Switchyard-Deployment") != "byok:"+conn2 {
		t.Errorf("the other key's connection: %d %s deployment %s", resp.StatusCode, b, resp.Header.Get("X-Switchyard-Deployment"))
	}
}

// Another replica's view: a connection revoked and a policy changed in the store (by another
// process) take effect here at the next reload (ReloadKeys, as Run does every
// store.reload_interval), not before.
func TestBYOKChangesFromAnotherReplica(t *testing.T) {
	t.Parallel()
	f := startBYOK(t, "unmetered")
	pol := f.policy(t, `"order":["oa-backup"],"funding":"byok_with_house_fallback"`)
	ctx := context.Background()
	if plan := routeAs(t, f.g, f.secret, planBody); deployments(plan) != `["`+f.connDep+`","oa-backup","oa-primary"]` {
		t.Fatalf("plan %s", plan.Raw)
	}
	if err := f.g.Store.RevokeConnection(ctx, f.keyID, f.conn, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := f.g.Store.UpdatePolicy(ctx, pol, func(p *accounts.Policy) error {
		p.Order, p.Funding = []string{"oa-primary"}, accounts.FundingHouse
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if plan := routeAs(t, f.g, f.secret, planBody); deployments(plan) != `["`+f.connDep+`","oa-backup","oa-primary"]` {
		t.Errorf("before the reload, this process still plans by what it loaded: %s", plan.Raw)
	}
	if err := f.g.Srv.ReloadKeys(ctx); err != nil {
		t.Fatal(err)
	}
	plan := routeAs(t, f.g, f.secret, planBody)
	if deployments(plan) != `["oa-primary","oa-backup"]` || plan.Get("funding").String() != "house" {
		t.Errorf("after the reload: %s", plan.Raw)
	}
	if resp, b := chat(t, f.g, f.secret); resp.StatusCode != 200 || resp.Header.Get("X-Switchyard-Deployment") != "oa-primary" || f.own.Hits() != 0 {
		t.Errorf("after the reload: %d %s deployment %s, own hits %d", resp.StatusCode, b, resp.Header.Get("X-Switchyard-Deployment"), f.own.Hits())
	}
}

// R-POLICY, R-ORDER-7: PATCH /admin/v1/policies/{id} changes the order, funding, attempt limit
// and name of a policy in use; the plan and the next request follow the new policy; absent
// members are kept; GET /admin/v1/accounts/{id}/policies lists the account's policies oldest
// first.
func TestPatchPolicy(t *testing.T) {
	t.Parallel()
	f := startBYOK(t, "unmetered")
	pol := f.policy(t, `"order":["oa-backup","oa-primary"],"funding":"house"`)
	if plan := routeAs(t, f.g, f.secret, planBody); deployments(plan) != `["oa-backup","oa-primary"]` {
		t.Fatalf("plan %s", plan.Raw)
	}
	if resp, b := chat(t, f.g, f.secret); resp.StatusCode != 200 || resp.Header.Get("X-Switchyard-Deployment") != "oa-backup" {
		t.Fatalf("call %d %s", resp.StatusCode, b)
	}

	for _, step := range []struct {
		name, patch, wantPolicy, wantPlan, wantDep string
		wantLimit                                  int64
	}{
		{"order and funding", `{"order":["oa-primary","` + f.connDep + `"],"funding":"byok_with_house_fallback","attempt_limit":2}`,
			`{"name":"p","order":["oa-primary","` + f.connDep + `"],"funding":"byok_with_house_fallback","attempt_limit":2}`,
			`["` + f.connDep + `","oa-primary","oa-backup"]`, f.connDep, 2},
		{"funding only", `{"funding":"house"}`,
			`{"name":"p","order":["oa-primary","` + f.connDep + `"],"funding":"house","attempt_limit":2}`,
			`["oa-primary","oa-backup"]`, "oa-primary", 2},
		{"order emptied, name, limit", `{"order":[],"name":"renamed","attempt_limit":0}`,
			`{"name":"renamed","order":[],"funding":"house","attempt_limit":0}`,
			`["oa-primary","oa-backup"]`, "oa-primary", 0},
		{"byok only", `{"funding":"byok","order":null}`,
			`{"name":"renamed","order":[],"funding":"byok","attempt_limit":0}`,
			`["` + f.connDep + `"]`, f.connDep, 0},
	} {
		got := mustAdmin(t, f.g, 200, "PATCH", "/admin/v1/policies/"+pol, step.patch)
		members := gjson.Parse(step.wantPolicy)
		members.ForEach(func(k, v gjson.Result) bool {
			if got.Get(k.String()).Raw != v.Raw {
				t.Errorf("%s: answer %s = %s, want %s", step.name, k, got.Get(k.String()).Raw, v.Raw)
			}
			return true
		})
		if got.Get("id").String() != pol || got.Get("account_id").String() != f.acct {
			t.Errorf("%s: answer %s", step.name, got.Raw)
		}
		if stored := mustAdmin(t, f.g, 200, "GET", "/admin/v1/policies/"+pol, ""); stored.Raw != got.Raw {
			t.Errorf("%s: GET %s, PATCH answered %s", step.name, stored.Raw, got.Raw)
		}
		plan := routeAs(t, f.g, f.secret, planBody)
		if deployments(plan) != step.wantPlan || plan.Get("funding").String() != members.Get("funding").String() ||
			plan.Get("attempt_limit").Int() != step.wantLimit {
			t.Errorf("%s: plan %s, want candidates %s", step.name, plan.Raw, step.wantPlan)
		}
		if resp, b := chat(t, f.g, f.secret); resp.StatusCode != 200 || resp.Header.Get("X-Switchyard-Deployment") != step.wantDep {
			t.Errorf("%s: call %d %s deployment %s, want %s", step.name, resp.StatusCode, b, resp.Header.Get("X-Switchyard-Deployment"), step.wantDep)
		}
	}

	second := mustAdmin(t, f.g, 201, "POST", "/admin/v1/policies", `{"account_id":"`+f.acct+`","name":"second"}`).Get("id").String()
	other := mustAdmin(t, f.g, 201, "POST", "/admin/v1/accounts", `{"name":"Other"}`).Get("id").String()
	mustAdmin(t, f.g, 201, "POST", "/admin/v1/policies", `{"account_id":"`+other+`","name":"theirs"}`)
	list := mustAdmin(t, f.g, 200, "GET", "/admin/v1/accounts/"+f.acct+"/policies", "")
	if list.Get("data.#.id").Raw != `["`+pol+`","`+second+`"]` || list.Get("data.0.name").String() != "renamed" {
		t.Errorf("account policies %s", list.Raw)
	}
	if list := mustAdmin(t, f.g, 200, "GET", "/admin/v1/accounts/"+other+"/policies", ""); len(list.Get("data").Array()) != 1 {
		t.Errorf("other account's policies %s", list.Raw)
	}
}

// PATCH /admin/v1/policies/{id} is checked as POST is: 400 naming the field, nothing changed;
// unknown ids are 404. A policy whose order names a connection revoked since can still be
// renamed (a kept order is not checked again), but an order naming it is refused.
func TestPatchPolicyValidation(t *testing.T) {
	t.Parallel()
	f := startBYOK(t, "unmetered")
	pol := f.policy(t, `"order":["`+f.connDep+`","oa-backup"],"funding":"byok_with_house_fallback","attempt_limit":2`)
	other := mustAdmin(t, f.g, 201, "POST", "/admin/v1/accounts", `{"name":"Other"}`).Get("id").String()
	otherKey := mustAdmin(t, f.g, 201, "POST", "/admin/v1/keys", `{"account_id":"`+other+`","name":"k"}`).Get("id").String()
	otherConn := mustAdmin(t, f.g, 201, "POST", "/admin/v1/keys/"+otherKey+"/connections",
		`{"provider":"x","dialect":"openai","base_url":"https://x.example/v1","api_key":"k"}`).Get("deployment").String()
	before := mustAdmin(t, f.g, 200, "GET", "/admin/v1/policies/"+pol, "").Raw
	path := "/admin/v1/policies/" + pol
	for _, tc := range []struct {
		name, path, body string
		status           int
		param            string
	}{
		{"bad funding", path, `{"funding":"free"}`, 400, "funding"},
		{"negative attempt limit", path, `{"attempt_limit":-1}`, 400, "attempt_limit"},
		{"attempt limit of the wrong type", path, `{"attempt_limit":"2"}`, 400, "attempt_limit"},
		{"empty name", path, `{"name":"  "}`, 400, "name"},
		{"unknown deployment", path, `{"order":["oa-primary","nope"]}`, 400, "order[1]"},
		{"repeated entry", path, `{"order":["oa-primary","oa-primary"]}`, 400, "order[1]"},
		{"another account's connection", path, `{"order":["` + otherConn + `"]}`, 400, "order[0]"},
		{"order too long", path, `{"order":[` + strings.Repeat(`"oa-primary",`, 64) + `"oa-backup"]}`, 400, "order"},
		{"account_id cannot change", path, `{"account_id":"` + other + `"}`, 400, "account_id"},
		{"unknown member", path, `{"strategy":"price"}`, 400, "strategy"},
		{"not an object", path, `["funding"]`, 400, ""},
		{"unknown policy", "/admin/v1/policies/pol_nope", `{"name":"x"}`, 404, ""},
		{"unknown account's policies", "/admin/v1/accounts/acct_nope/policies", "", 404, ""},
	} {
		method := "PATCH"
		if tc.body == "" {
			method = "GET"
		}
		resp, b := adminDo(t, f.g, method, tc.path, tc.body)
		if resp.StatusCode != tc.status || (tc.param != "" && gjson.GetBytes(b, "error.param").String() != tc.param) {
			t.Errorf("%s: %d %s; want %d param %q", tc.name, resp.StatusCode, b, tc.status, tc.param)
		}
	}
	if after := mustAdmin(t, f.g, 200, "GET", "/admin/v1/policies/"+pol, "").Raw; after != before {
		t.Errorf("refused patches changed the policy: %s, was %s", after, before)
	}

	mustAdmin(t, f.g, 204, "DELETE", "/admin/v1/keys/"+f.keyID+"/connections/"+f.conn, "")
	if got := mustAdmin(t, f.g, 200, "PATCH", path, `{"name":"kept order"}`); got.Get("order").Raw != `["`+f.connDep+`","oa-backup"]` {
		t.Errorf("rename with a kept order naming a revoked connection: %s", got.Raw)
	}
	if resp, b := adminDo(t, f.g, "PATCH", path, `{"order":["`+f.connDep+`"]}`); resp.StatusCode != 400 ||
		gjson.GetBytes(b, "error.param").String() != "order[0]" {
		t.Errorf("an order naming a revoked connection: %d %s", resp.StatusCode, b)
	}
}

// store.secret_key: a connection's API key is sealed in the store (never the credential
// itself), opened only to call the customer's provider, which receives the exact credential; a
// connection sealed under another secret is not used (the request goes to the house) and its
// failure names no credential.
func TestBYOKCredentialSealedAtRest(t *testing.T) {
	t.Parallel()
	yaml := strings.Replace(policyCatalog, "admin:\n", "store:\n  secret_key: test-operator-secret-0123456789\nadmin:\n", 1)
	f := startBYOKCatalog(t, "unmetered", yaml)
	conns, err := f.g.Store.ActiveConnections(context.Background())
	if err != nil || len(conns) != 1 {
		t.Fatalf("stored connections %+v, %v", conns, err)
	}
	if stored := conns[0].APIKey; !secret.Sealed(stored) || strings.Contains(stored, ownKey) {
		t.Fatalf("stored api_key %q: want it sealed", stored)
	}
	if resp, b := chat(t, f.g, f.secret); resp.StatusCode != 200 || resp.Header.Get("X-Switchyard-Deployment") != f.connDep {
		t.Fatalf("call through the sealed connection: %d %s", resp.StatusCode, b)
	}
	if reqs := f.own.Requests(); len(reqs) != 1 || reqs[0].Authorization != "Bearer "+ownKey {
		t.Fatalf("own provider saw %+v", reqs)
	}

	// Another key of the account with a connection sealed under another secret (as if
	// store.secret_key changed): not used, logged without the credential.
	other, _ := secret.New("a different operator secret 987654")
	k2 := mustAdmin(t, f.g, 201, "POST", "/admin/v1/keys", `{"account_id":"`+f.acct+`","name":"k2"}`)
	bad := &accounts.Connection{ID: "conn_badkey", KeyID: k2.Get("id").String(), Provider: "openai", Dialect: "openai",
		BaseURL: f.ownURL, APIKey: other.Seal("sk-other-credential"), Models: []string{"gpt-4o-mini"}, CreatedAt: time.Now().UTC()}
	if err := f.g.Store.CreateConnection(context.Background(), bad); err != nil {
		t.Fatal(err)
	}
	if err := f.g.Srv.ReloadKeys(context.Background()); err != nil {
		t.Fatal(err)
	}
	resp, b := chat(t, f.g, k2.Get("secret").String())
	if resp.StatusCode != 200 || resp.Header.Get("X-Switchyard-Deployment") != "oa-primary" || resp.Header.Get("X-Switchyard-Attempts") != "1" {
		t.Fatalf("key with an unopenable connection: %d %s %v", resp.StatusCode, b, resp.Header)
	}
	if got := f.g.Logs.String(); !strings.Contains(got, "conn_badkey") || strings.Contains(got, "sk-other-credential") {
		t.Fatalf("log %q: want the connection named, never its credential", got)
	}
	if len(f.own.Requests()) != 1 {
		t.Fatalf("the unopenable connection reached its provider")
	}
	// The admin API says which connection cannot be used.
	for key, want := range map[string]bool{f.keyID: true, k2.Get("id").String(): false} {
		l := mustAdmin(t, f.g, 200, "GET", "/admin/v1/keys/"+key+"/connections", "")
		if u := l.Get("data.0.usable"); u.Type == gjson.Null || u.Bool() != want {
			t.Errorf("connections of %s: %s; want usable %v", key, l.Raw, want)
		}
	}
}

// A prepaid account with no credit whose key has a connection and house fallback
// (byok_with_house_fallback, here by default: no policy) is served by its connection alone
// instead of being refused 402: the house routes, which it cannot pay for, leave the plan.
// When the connection then fails, the answer is the connection's failure, never a house attempt.
// Its own credential rejected reads as its own connection's fault, naming the connection and
// never the credential. Metrics count every connection under one "byok" deployment label.
func TestBYOKAtZeroCredit(t *testing.T) {
	t.Parallel()
	f := startBYOK(t, "prepaid") // balance 0
	resp, b := chat(t, f.g, f.secret)
	if resp.StatusCode != 200 || resp.Header.Get("X-Switchyard-Deployment") != f.connDep {
		t.Fatalf("prepaid at 0 with a connection: %d %s", resp.StatusCode, b)
	}
	rec := f.g.generation(t, resp.Header.Get("X-Request-Id"))
	if len(rec.Attempts) != 1 || rec.Attempts[0].ReservedMaxUSD != 0 {
		t.Fatalf("attempts %+v: want one, reserving nothing", rec.Attempts)
	}

	f.own.Script(fakeprovider.Behavior{Kind: fakeprovider.KindStatus, Status: 401})
	resp, b = chat(t, f.g, f.secret)
	msg := gjson.GetBytes(b, "error.message").String()
	if resp.StatusCode != 502 || resp.Header.Get("X-Switchyard-Attempts") != "1" || !strings.Contains(msg, "your own connection "+f.connDep) ||
		strings.Contains(string(b), ownKey) {
		t.Fatalf("own credential rejected: %d %s", resp.StatusCode, b)
	}
	if n := f.g.Fakes["oa-primary"].Hits() + f.g.Fakes["oa-backup"].Hits(); n != 0 {
		t.Fatalf("house deployments got %d requests from an account without credit", n)
	}
	led := mustAdmin(t, f.g, 200, "GET", "/admin/v1/accounts/"+f.acct+"/ledger", "")
	if led.Get("balance_usd").Raw != "0" {
		t.Fatalf("ledger %s", led.Raw)
	}
	for _, e := range led.Get("entries").Array() { // a reserve of 0 is the dispatch's trace only
		if e.Get("kind").String() == "reserve" && e.Get("cost_micro_usd").Int() != 0 {
			t.Fatalf("a reserve of money for a request funded by its own connection: ledger %s", led.Raw)
		}
	}
	mresp, mb := icGet(t, f.g.URL, "/metrics")
	if mresp.StatusCode != 200 || !strings.Contains(string(mb), `deployment="byok"`) || strings.Contains(string(mb), f.conn) {
		t.Fatalf("metrics: want the connection counted as deployment=\"byok\", never by id")
	}
}

// DELETE /admin/v1/policies/{id}: refused with 409 naming every layer that attaches it (the key,
// the account), 204 once detached; then the policy is gone (GET 404, a second DELETE 404) and
// the key routes without it.
func TestDeletePolicy(t *testing.T) {
	t.Parallel()
	f := startBYOK(t, "unmetered")
	pol := f.policy(t, `"order":["oa-backup"],"funding":"house"`)
	mustAdmin(t, f.g, 200, "PATCH", "/admin/v1/accounts/"+f.acct, `{"settings":{"policy":"`+pol+`"}}`)
	resp, b := adminDo(t, f.g, "DELETE", "/admin/v1/policies/"+pol, "")
	msg := gjson.GetBytes(b, "error.message").String()
	if resp.StatusCode != 409 || !strings.Contains(msg, "key "+f.keyID) || !strings.Contains(msg, "account "+f.acct) {
		t.Fatalf("delete of an attached policy: %d %s", resp.StatusCode, b)
	}
	mustAdmin(t, f.g, 200, "GET", "/admin/v1/policies/"+pol, "")
	mustAdmin(t, f.g, 200, "PATCH", "/admin/v1/keys/"+f.keyID, `{"settings":{"policy":null}}`)
	mustAdmin(t, f.g, 200, "PATCH", "/admin/v1/accounts/"+f.acct, `{"settings":{"policy":null}}`)
	mustAdmin(t, f.g, 204, "DELETE", "/admin/v1/policies/"+pol, "")
	mustAdmin(t, f.g, 404, "GET", "/admin/v1/policies/"+pol, "")
	mustAdmin(t, f.g, 404, "DELETE", "/admin/v1/policies/"+pol, "")
	if l := mustAdmin(t, f.g, 200, "GET", "/admin/v1/accounts/"+f.acct+"/policies", ""); len(l.Get("data").Array()) != 0 {
		t.Fatalf("policies after delete %s", l.Raw)
	}
	plan := routeAs(t, f.g, f.secret, `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"x"}]}`)
	if plan.Get("policy").Exists() || plan.Get("candidates.0.deployment").String() != f.connDep {
		t.Fatalf("plan after delete %s", plan.Raw)
	}
	// Reattaching the deleted policy is refused.
	if resp, b := adminDo(t, f.g, "PATCH", "/admin/v1/keys/"+f.keyID, `{"settings":{"policy":"`+pol+`"}}`); resp.StatusCode != 400 {
		t.Fatalf("attach a deleted policy: %d %s", resp.StatusCode, b)
	}
}
