package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// settingsCatalog: gpt-4o-mini from an official deployment (provider openai) and a value-tier
// one (provider reseller), claude-haiku-4-5 from an official Anthropic deployment; admin on.
const settingsCatalog = `
routing:
  timeouts: {headers: 5s, stream_headers: 5s, stream_idle: 5s}
models:
  - id: gpt-4o-mini
  - id: claude-haiku-4-5
deployments:
  - name: oa-primary
    provider: openai
    tier: official
    dialect: openai
    base_url: "{{oa-primary}}"
    routes: [{model: gpt-4o-mini, price: {input: 0.15, output: 0.6}}]
  - name: oa-backup
    provider: reseller
    tier: value
    dialect: openai
    base_url: "{{oa-backup}}"
    routes: [{model: gpt-4o-mini, price: {input: 0.2, output: 0.8}}]
  - name: an-primary
    provider: anthropic
    tier: official
    dialect: anthropic
    base_url: "{{an-primary}}"
    routes: [{model: claude-haiku-4-5, price: {input: 1, output: 5}}]
keys:
  - {name: static, secret: sk-static, account: static-acct}
admin:
  token: adm-secret-token
`

func startSettings(t *testing.T) *gateway {
	return startGateway(t, settingsCatalog, oa("oa-primary"), oa("oa-backup"), an("an-primary"))
}

// storedKey creates an account, optionally a workspace, and a key with the given settings
// objects ("" for none) and returns the key's secret and id.
func storedKey(t *testing.T, g *gateway, acct, ws, key string) (secret, id string) {
	t.Helper()
	body := func(s string) string {
		if s == "" {
			return ""
		}
		return `,"settings":` + s
	}
	acctID := mustAdmin(t, g, 201, "POST", "/admin/v1/accounts", `{"name":"a"`+body(acct)+`}`).Get("id").String()
	wsField := ""
	if ws != "" {
		wsID := mustAdmin(t, g, 201, "POST", "/admin/v1/workspaces", `{"account_id":"`+acctID+`","name":"w"`+body(ws)+`}`).Get("id").String()
		wsField = `,"workspace_id":"` + wsID + `"`
	}
	k := mustAdmin(t, g, 201, "POST", "/admin/v1/keys", `{"account_id":"`+acctID+`"`+wsField+`,"name":"k"`+body(key)+`}`)
	return k.Get("secret").String(), k.Get("id").String()
}

func callModel(t *testing.T, g *gateway, secret, surface, model string) (*http.Response, []byte) {
	t.Helper()
	if surface == "messages" {
		return icPost(t, g.URL, "/v1/messages", `{"model":"`+model+`","max_tokens":5,"messages":[{"role":"user","content":"Hi"}]}`,
			"x-api-key", secret, "anthropic-version", "2023-06-01")
	}
	return icPost(t, g.URL, "/v1/chat/completions", `{"model":"`+model+`","max_tokens":5,"messages":[{"role":"user","content":"Hi"}]}`,
		"Authorization", "Bearer "+secret)
}

// TestSettingsModelsAllowlist: R-ADMIT-1, contract.md "Refusals before routing": a model
// outside the effective allowlist (account ∩ key) is 403 permission on both surfaces, in the
// surface's native error type, and reaches no provider; an allowed model is served.
func TestSettingsModelsAllowlist(t *testing.T) {
	t.Parallel()
	g := startSettings(t)
	secret, _ := storedKey(t, g, `{"models":["gpt-4o-mini","claude-haiku-4-5"]}`, "", `{"models":["claude-haiku-4-5"]}`)
	for _, tc := range []struct{ surface, native string }{{"chat", "permission_error"}, {"messages", "permission_error"}} {
		resp, b := callModel(t, g, secret, tc.surface, "gpt-4o-mini")
		if resp.StatusCode != 403 || errorType(b) != "permission" {
			t.Errorf("%s: %d %s; want 403 permission", tc.surface, resp.StatusCode, b)
		}
		if got := gjson.GetBytes(b, "error.type").String(); got != tc.native {
			t.Errorf("%s: native type %q, want %q (%s)", tc.surface, got, tc.native, b)
		}
	}
	if fakeHits(g) != 0 {
		t.Fatalf("a refused request reached a provider")
	}
	if resp, b := callModel(t, g, secret, "messages", "claude-haiku-4-5"); resp.StatusCode != 200 {
		t.Fatalf("allowed model: %d %s", resp.StatusCode, b)
	}
}

// TestSettingsProviders: R-ADMIT-2, R-SUFFIX-3: a workspace's providers narrow the pool (the
// cheaper openai deployment gets no hit), and a pin to a provider outside them is 400.
func TestSettingsProviders(t *testing.T) {
	t.Parallel()
	g := startSettings(t)
	secret, _ := storedKey(t, g, "", `{"providers":["reseller"]}`, "")
	for range 3 {
		if resp, b := callModel(t, g, secret, "chat", "gpt-4o-mini"); resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
	}
	if g.Fakes["oa-primary"].Hits() != 0 || g.Fakes["oa-backup"].Hits() != 3 {
		t.Errorf("hits primary %d backup %d; want 0 and 3", g.Fakes["oa-primary"].Hits(), g.Fakes["oa-backup"].Hits())
	}
	if resp, b := callModel(t, g, secret, "chat", "gpt-4o-mini:openai"); resp.StatusCode != 400 || errorType(b) != "invalid_request" {
		t.Errorf("pin outside providers: %d %s; want 400 invalid_request", resp.StatusCode, b)
	}
}

// TestSettingsTierScopeAndStrategy: R-ADMIT-3, R-KEY-2: tier_scope official drops the value-tier
// deployment with its reason in the plan; the workspace's strategy orders the pool.
func TestSettingsTierScopeAndStrategy(t *testing.T) {
	t.Parallel()
	g := startSettings(t)
	secret, _ := storedKey(t, g, `{"tier_scope":"official"}`, `{"strategy":"latency"}`, "")
	resp, b := icPost(t, g.URL, "/v1/route", `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hi"}]}`,
		"Authorization", "Bearer "+secret)
	if resp.StatusCode != 200 {
		t.Fatalf("route: %d %s", resp.StatusCode, b)
	}
	p := gjson.ParseBytes(b)
	if d := p.Get(`dropped.#(deployment=="oa-backup").reason`).String(); d != "outside the tier scope" {
		t.Errorf("oa-backup dropped for %q; plan %s", d, b)
	}
	if p.Get("candidates.#").Int() != 1 || p.Get("candidates.0.deployment").String() != "oa-primary" {
		t.Errorf("candidates: %s", p.Get("candidates").Raw)
	}
	// latency without measurements degrades to balanced, naming the workspace's strategy.
	if s := p.Get("strategy").String() + "/" + p.Get("degraded_from").String(); s != "balanced/latency" {
		t.Errorf("strategy %s; want balanced/latency (the workspace's)", s)
	}
}

// TestSettingsKeyLimit: R-BILL-1: a key-layer rpm set through the admin API applies.
func TestSettingsKeyLimit(t *testing.T) {
	t.Parallel()
	g := startSettings(t)
	secret, _ := storedKey(t, g, "", "", `{"limits":{"rpm":1}}`)
	if resp, b := callModel(t, g, secret, "chat", "gpt-4o-mini"); resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	resp, b := callModel(t, g, secret, "chat", "gpt-4o-mini")
	if resp.StatusCode != 429 || errorType(b) != "rate_limited" || resp.Header.Get("X-Switchyard-Limit-Kind") != "rpm" {
		t.Errorf("second request: %d %s; want 429 rate_limited rpm", resp.StatusCode, b)
	}
}

// TestSettingsConflicts: R-KEY-3, contract.md PATCH row: a change that would leave a key with no
// candidate is 409 naming the field and the key, and nothing is saved; official∩value is 409;
// unknown settings fields are 400 naming them all.
func TestSettingsConflicts(t *testing.T) {
	t.Parallel()
	g := startSettings(t)
	acct := mustAdmin(t, g, 201, "POST", "/admin/v1/accounts", `{"name":"a","settings":{"models":["gpt-4o-mini","claude-haiku-4-5"],"tier_scope":"official"}}`).Get("id").String()
	ws := mustAdmin(t, g, 201, "POST", "/admin/v1/workspaces", `{"account_id":"`+acct+`","name":"w"}`).Get("id").String()
	key := mustAdmin(t, g, 201, "POST", "/admin/v1/keys", `{"account_id":"`+acct+`","workspace_id":"`+ws+`","name":"k","settings":{"models":["claude-haiku-4-5"]}}`)
	keyID := key.Get("id").String()

	resp, b := adminDo(t, g, "PATCH", "/admin/v1/accounts/"+acct, `{"settings":{"models":["gpt-4o-mini"]}}`)
	if resp.StatusCode != 409 || !strings.Contains(string(b), keyID) || gjson.GetBytes(b, "error.param").String() != "settings.models" {
		t.Errorf("narrowing PATCH: %d %s; want 409 naming %s and settings.models", resp.StatusCode, b, keyID)
	}
	if got := mustAdmin(t, g, 200, "GET", "/admin/v1/accounts/"+acct, ""); got.Get("settings.models.#").Int() != 2 {
		t.Errorf("a refused PATCH was saved: %s", got.Raw)
	}
	for _, tc := range []struct{ method, path, body string }{
		{"POST", "/admin/v1/keys", `{"account_id":"` + acct + `","name":"v","settings":{"tier_scope":"value"}}`},
		{"PATCH", "/admin/v1/keys/" + keyID, `{"settings":{"tier_scope":"value"}}`},
		{"PATCH", "/admin/v1/workspaces/" + ws, `{"settings":{"tier_scope":"value"}}`},
	} {
		resp, b := adminDo(t, g, tc.method, tc.path, tc.body)
		if resp.StatusCode != 409 || !strings.Contains(string(b), "tier_scope") {
			t.Errorf("%s %s official∩value: %d %s; want 409 naming tier_scope", tc.method, tc.path, resp.StatusCode, b)
		}
	}
	resp, b = adminDo(t, g, "PATCH", "/admin/v1/keys/"+keyID, `{"settings":{"zeta":1,"alpha":2,"strategy":"price"}}`)
	if resp.StatusCode != 400 || !strings.Contains(string(b), "alpha, zeta") {
		t.Errorf("unknown fields: %d %s; want 400 naming alpha, zeta", resp.StatusCode, b)
	}
	// The key still works with its saved settings, and a saved PATCH applies at once.
	secret := key.Get("secret").String()
	if resp, b := callModel(t, g, secret, "messages", "claude-haiku-4-5"); resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	mustAdmin(t, g, 200, "PATCH", "/admin/v1/workspaces/"+ws, `{"settings":{"models":["gpt-4o-mini","claude-haiku-4-5"]}}`)
	mustAdmin(t, g, 200, "PATCH", "/admin/v1/keys/"+keyID, `{"settings":{"models":["gpt-4o-mini"]}}`)
	if resp, b := callModel(t, g, secret, "messages", "claude-haiku-4-5"); resp.StatusCode != 403 {
		t.Errorf("after the key's PATCH: %d %s; want 403", resp.StatusCode, b)
	}
}
