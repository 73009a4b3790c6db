package server_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/switchyard-gw/switchyard/internal/accounts"
	"github.com/switchyard-gw/switchyard/internal/admission"
)

// adminCatalog: gpt-4o-mini billed at its catalog price (1 and 100 micro-USD a token in and
// out), a static key of account "static-acct", and the admin API on.
const adminCatalog = `
routing:
  timeouts: {headers: 5s, stream_headers: 5s, stream_idle: 5s}
models:
  - id: gpt-4o-mini
    price: {input: 1, output: 100}
deployments:
  - name: oa-primary
    provider: openai
    dialect: openai
    base_url: "{{oa-primary}}"
    routes: [{model: gpt-4o-mini, price: {input: 0.15, output: 0.6}}]
keys:
  - {name: static, secret: sk-static, account: static-acct}
admin:
  token: adm-secret-token
`

const adminToken = "adm-secret-token"

func startAdmin(t *testing.T) *gateway {
	return startGateway(t, adminCatalog, oa("oa-primary"))
}

// adminDo sends an admin request with the admin token and returns the answer and its body.
func adminDo(t *testing.T, g *gateway, method, path, body string) (*http.Response, []byte) {
	t.Helper()
	return adminDoAs(t, g, adminToken, method, path, body)
}

func adminDoAs(t *testing.T, g *gateway, token, method, path, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, g.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	return icDo(t, req)
}

// mustAdmin is adminDo that fails t unless the status is want.
func mustAdmin(t *testing.T, g *gateway, want int, method, path, body string) gjson.Result {
	t.Helper()
	resp, b := adminDo(t, g, method, path, body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %d %s; want %d", method, path, resp.StatusCode, b, want)
	}
	return gjson.ParseBytes(b)
}

func chat(t *testing.T, g *gateway, key string) (*http.Response, []byte) {
	t.Helper()
	return icPost(t, g.URL, "/v1/chat/completions",
		`{"model":"gpt-4o-mini","max_tokens":5,"messages":[{"role":"user","content":"Hello"}]}`, "Authorization", "Bearer "+key)
}

// TestAdminFlow is the curl flow of docs/admin-api.md (contract.md "Admin API", R-KEY-1,
// R-BILL-1, R-AUDIT-2 access): create an account and a key (the secret shown once, never again,
// stored hashed); call a model with it; read its generation (and not another account's);
// credit the account; the ledger shows the settle with exactly the audit's tokens and cost and
// the credit, and the balance is credits minus cost; revoke the key: the next call is 401.
func TestAdminFlow(t *testing.T) {
	t.Parallel()
	g := startAdmin(t)
	acct := mustAdmin(t, g, 201, "POST", "/admin/v1/accounts", `{"name":"Acme","settings":{"strategy":"price"}}`)
	acctID := acct.Get("id").String()
	if !strings.HasPrefix(acctID, "acct_") || acct.Get("balance_usd").Raw != "0" || acct.Get("billing").String() != "unmetered" {
		t.Fatalf("account %s", acct.Raw)
	}
	ws := mustAdmin(t, g, 201, "POST", "/admin/v1/workspaces", `{"account_id":"`+acctID+`","name":"research"}`)
	key := mustAdmin(t, g, 201, "POST", "/admin/v1/keys",
		`{"account_id":"`+acctID+`","workspace_id":"`+ws.Get("id").String()+`","name":"ci"}`)
	secret, keyID := key.Get("secret").String(), key.Get("id").String()
	if len(secret) != len("sk-sy-")+32 || !strings.HasPrefix(secret, "sk-sy-") || key.Get("prefix").String() != secret[6:14] {
		t.Fatalf("key %s", key.Raw)
	}
	got := mustAdmin(t, g, 200, "GET", "/admin/v1/keys/"+keyID, "")
	if got.Get("secret").Exists() || strings.Contains(got.Raw, secret) || got.Get("prefix").String() != secret[6:14] {
		t.Errorf("GET key shows %s", got.Raw)
	}
	stored, err := g.Store.Key(context.Background(), keyID)
	if err != nil || stored.SecretHash != accounts.HashSecret(secret) {
		t.Errorf("stored key %+v, %v: want the secret's SHA-256", stored, err)
	}

	resp, b := chat(t, g, secret)
	if resp.StatusCode != 200 {
		t.Fatalf("call with the new key: %d %s", resp.StatusCode, b)
	}
	rid := resp.Header.Get("X-Request-Id")
	rec := g.generation(t, rid)
	if rec.Account != acctID || len(rec.Attempts) != 1 {
		t.Fatalf("audit %+v", rec)
	}
	// R-AUDIT-2 access: the key reads its account's generation; another account's key gets 404.
	if resp, b := icGet(t, g.URL, "/v1/generation?id="+rid, "Authorization", "Bearer "+secret); resp.StatusCode != 200 {
		t.Errorf("own generation: %d %s", resp.StatusCode, b)
	}
	if resp, _ := icGet(t, g.URL, "/v1/generation?id="+rid, "Authorization", "Bearer sk-static"); resp.StatusCode != 404 {
		t.Errorf("another account's generation: %d, want 404", resp.StatusCode)
	}

	if bal := mustAdmin(t, g, 200, "POST", "/admin/v1/accounts/"+acctID+"/credits", `{"amount_usd":10.5}`); bal.Get("balance_usd").Raw == "" {
		t.Fatalf("credit answer %s", bal.Raw)
	}
	a := &rec.Attempts[0]
	cost := admission.MicroUSD(a.CostUSD)
	if cost <= 0 || a.Tokens.Input == 0 || a.Tokens.Output == 0 {
		t.Fatalf("attempt %+v: want a priced call with usage", a)
	}
	ledger := mustAdmin(t, g, 200, "GET", "/admin/v1/accounts/"+acctID+"/ledger", "")
	es := ledger.Get("entries").Array()
	// credit, settle, then the request's reserve of 0 (it holds no money: the trace of its
	// dispatch, written before it), newest first.
	if len(es) != 3 || es[0].Get("kind").String() != "credit" || es[1].Get("kind").String() != "settle" ||
		es[2].Get("kind").String() != "reserve" || es[2].Get("cost_micro_usd").Int() != 0 || es[2].Get("request_id").String() != rid {
		t.Fatalf("ledger %s", ledger.Raw)
	}
	e := es[1]
	if e.Get("request_id").String() != rid || e.Get("key_id").String() != keyID || e.Get("model").String() != "gpt-4o-mini" ||
		e.Get("deployment").String() != "oa-primary" || e.Get("cost_micro_usd").Int() != cost ||
		e.Get("tokens.input").Int() != a.Tokens.Input || e.Get("tokens.output").Int() != a.Tokens.Output ||
		e.Get("tokens.cached").Int() != a.Tokens.Cached || e.Get("tokens.reasoning").Int() != a.Tokens.Reasoning {
		t.Errorf("settle entry %s; audit attempt %+v (cost %d micro-USD)", e.Raw, a, cost)
	}
	if es[0].Get("cost_usd").Raw != "10.5" {
		t.Errorf("credit entry %s", es[0].Raw)
	}
	wantBalance := 10_500_000 - cost
	for _, bal := range []gjson.Result{ledger.Get("balance_usd"), mustAdmin(t, g, 200, "GET", "/admin/v1/accounts/"+acctID, "").Get("balance_usd")} {
		if got := microOf(t, bal.Raw); got != wantBalance {
			t.Errorf("balance %s, want %d micro-USD", bal.Raw, wantBalance)
		}
	}

	mustAdmin(t, g, 204, "DELETE", "/admin/v1/keys/"+keyID, "")
	if resp, b := chat(t, g, secret); resp.StatusCode != 401 || errorType(b) != "authentication" {
		t.Errorf("call with a revoked key: %d %s, want 401", resp.StatusCode, b)
	}
	if got := mustAdmin(t, g, 200, "GET", "/admin/v1/keys/"+keyID, ""); got.Get("revoked_at").Type == gjson.Null {
		t.Errorf("revoked key %s", got.Raw)
	}
	// A reload from the store does not bring the key back; the static key still works.
	if err := g.Srv.ReloadKeys(context.Background()); err != nil {
		t.Fatal(err)
	}
	if resp, _ := chat(t, g, secret); resp.StatusCode != 401 {
		t.Errorf("revoked key after a reload: %d", resp.StatusCode)
	}
	if resp, b := chat(t, g, "sk-static"); resp.StatusCode != 200 {
		t.Errorf("static key: %d %s", resp.StatusCode, b)
	}
}

// microOf reads a JSON number of USD as exact micro-USD.
func microOf(t *testing.T, raw string) int64 {
	t.Helper()
	neg := strings.HasPrefix(raw, "-")
	whole, frac, _ := strings.Cut(strings.TrimPrefix(raw, "-"), ".")
	w, err1 := strconv.ParseInt(whole, 10, 64)
	f, err2 := strconv.ParseInt((frac + "000000")[:6], 10, 64)
	if err1 != nil || err2 != nil || len(frac) > 6 {
		t.Fatalf("%q is not a USD amount with at most 6 decimals", raw)
	}
	if neg {
		return -(w*1_000_000 + f)
	}
	return w*1_000_000 + f
}

// TestAdminAuth: contract.md "Admin API": without admin.token every /admin path is 404; with
// it, no token, a wrong token and an API key are 401 authentication in the OpenAI error shape;
// the admin token is not an API key.
func TestAdminAuth(t *testing.T) {
	t.Parallel()
	off := startGateway(t, strings.Replace(adminCatalog, "admin:\n  token: adm-secret-token\n", "", 1), oa("oa-primary"))
	if resp, b := adminDoAs(t, off, adminToken, "POST", "/admin/v1/accounts", `{"name":"x"}`); resp.StatusCode != 404 {
		t.Errorf("admin API off: %d %s, want 404", resp.StatusCode, b)
	}
	g := startAdmin(t)
	for _, tc := range []struct{ name, token string }{
		{"no token", ""}, {"wrong token", "adm-secret-tokeN"}, {"API key", "sk-static"}, {"prefix of the token", "adm-secret"},
	} {
		resp, b := adminDoAs(t, g, tc.token, "POST", "/admin/v1/accounts", `{"name":"x"}`)
		if resp.StatusCode != 401 || errorType(b) != "authentication" || resp.Header.Get("X-Switchyard-Error-Code") != "authentication" ||
			gjson.GetBytes(b, "error.message").String() == "" {
			t.Errorf("%s: %d %s", tc.name, resp.StatusCode, b)
		}
	}
	if resp, _ := chat(t, g, adminToken); resp.StatusCode != 401 {
		t.Errorf("admin token as an API key: %d, want 401", resp.StatusCode)
	}
	accts, err := g.Store.Accounts(context.Background())
	if err != nil || len(accts) != 0 {
		t.Errorf("refused requests stored %d accounts, %v", len(accts), err)
	}
}

// TestAdminBadRequests: unknown fields are 400 naming every one; bad settings, amounts and
// missing fields are 400; unknown ids are 404.
func TestAdminBadRequests(t *testing.T) {
	t.Parallel()
	g := startAdmin(t)
	id := mustAdmin(t, g, 201, "POST", "/admin/v1/accounts", `{"name":"Acme"}`).Get("id").String()
	for _, tc := range []struct {
		method, path, body string
		status             int
		mention            string
	}{
		{"POST", "/admin/v1/accounts", `{"name":"x","zeta":1,"alpha":2}`, 400, "alpha, zeta"},
		{"PATCH", "/admin/v1/accounts/" + id, `{"settings":{},"secret":"x"}`, 400, "secret"},
		{"POST", "/admin/v1/keys", `{"account_id":"` + id + `","name":"k","secret":"sk-mine"}`, 400, "secret"},
		{"POST", "/admin/v1/accounts", `{"settings":{}}`, 400, "name is required"},
		{"POST", "/admin/v1/accounts", `{"name":"x","settings":[1]}`, 400, "JSON object"},
		{"POST", "/admin/v1/accounts", `{"name":"x","settings":{"billing":"postpaid"}}`, 400, "billing"},
		{"POST", "/admin/v1/accounts", `{"name":"x"} {}`, 400, "one JSON object"},
		{"POST", "/admin/v1/accounts/" + id + "/credits", `{"amount_usd":0.0000001}`, 400, "6 decimals"},
		{"POST", "/admin/v1/accounts/" + id + "/credits", `{"amount_usd":-1}`, 400, "positive"},
		{"POST", "/admin/v1/accounts/" + id + "/credits", `{"amount_usd":"1"}`, 400, "amount_usd"},
		{"POST", "/admin/v1/accounts/acct_nope/credits", `{"amount_usd":1}`, 404, "no account"},
		{"POST", "/admin/v1/keys", `{"account_id":"acct_nope","name":"k"}`, 404, "no account"},
		{"POST", "/admin/v1/keys", `{"account_id":"` + id + `","workspace_id":"ws_nope","name":"k"}`, 404, "workspace"},
		{"GET", "/admin/v1/accounts/acct_nope", "", 404, "no account"},
		{"DELETE", "/admin/v1/keys/key_nope", "", 404, "no key"},
		{"GET", "/admin/v1/keys/key_nope/effective", "", 404, "no key"},
		{"GET", "/admin/v1/nothing", "", 404, "no such endpoint"},
	} {
		resp, b := adminDo(t, g, tc.method, tc.path, tc.body)
		if resp.StatusCode != tc.status || !strings.Contains(string(b), tc.mention) || gjson.GetBytes(b, "error.type").String() == "" {
			t.Errorf("%s %s %s: %d %s; want %d mentioning %q", tc.method, tc.path, tc.body, resp.StatusCode, b, tc.status, tc.mention)
		}
	}
}

// TestAdminPatchMerge: contract.md: PATCH merges by field: present replaces, absent is
// unchanged, null clears. settings.billing switches the account to prepaid at once.
func TestAdminPatchMerge(t *testing.T) {
	t.Parallel()
	g := startAdmin(t)
	id := mustAdmin(t, g, 201, "POST", "/admin/v1/accounts",
		`{"name":"Acme","settings":{"strategy":"latency","models":["gpt-4o-mini"],"limits":{"rpm":100}}}`).Get("id").String()
	got := mustAdmin(t, g, 200, "PATCH", "/admin/v1/accounts/"+id, `{"settings":{"models":null,"limits":{"tpm":1000},"tier_scope":"all"}}`)
	if s := got.Get("settings"); s.Get("strategy").String() != "latency" || s.Get("models").Exists() ||
		s.Get("limits.rpm").Int() != 100 || s.Get("limits.tpm").Int() != 1000 || s.Get("tier_scope").String() != "all" {
		t.Errorf("merged settings %s", s.Raw)
	}
	if got := mustAdmin(t, g, 200, "PATCH", "/admin/v1/accounts/"+id, `{"name":"Acme 2"}`); got.Get("settings.strategy").String() != "latency" || got.Get("name").String() != "Acme 2" {
		t.Errorf("PATCH without settings: %s", got.Raw)
	}
	key := mustAdmin(t, g, 201, "POST", "/admin/v1/keys", `{"account_id":"`+id+`","name":"k"}`).Get("secret").String()
	if resp, _ := chat(t, g, key); resp.StatusCode != 200 {
		t.Fatalf("unmetered call: %d", resp.StatusCode)
	}
	mustAdmin(t, g, 200, "PATCH", "/admin/v1/accounts/"+id, `{"settings":{"billing":"prepaid"}}`)
	if resp, b := chat(t, g, key); resp.StatusCode != 402 || resp.Header.Get("X-Switchyard-Limit-Kind") != "credit" {
		t.Errorf("after switching to prepaid with a negative balance: %d %s, want 402", resp.StatusCode, b)
	}
}

// TestPrepaidRefusal: contract.md "Billing", R-BILL-1: a prepaid account's request whose
// reserve exceeds the balance is 402 insufficient_credit with limit kind credit and reaches no
// provider; after a credit it is served, and the settle takes exactly the audit's cost from
// the balance, in the store and for the next refusal.
func TestPrepaidRefusal(t *testing.T) {
	t.Parallel()
	g := startAdmin(t)
	id := mustAdmin(t, g, 201, "POST", "/admin/v1/accounts", `{"name":"Acme","settings":{"billing":"prepaid"}}`).Get("id").String()
	key := mustAdmin(t, g, 201, "POST", "/admin/v1/keys", `{"account_id":"`+id+`","name":"k"}`).Get("secret").String()
	resp, b := chat(t, g, key)
	requireRefusal(t, g, resp, b, 402, "insufficient_credit", "credit", "")
	if fakeHits(g) != 0 {
		t.Fatalf("a refused request reached a provider")
	}
	// The reserve of the call: input estimate + 5 output tokens at 100 micro-USD.
	mustAdmin(t, g, 200, "POST", "/admin/v1/accounts/"+id+"/credits", `{"amount_usd":0.0006}`)
	resp, b = chat(t, g, key)
	if resp.StatusCode != 200 {
		t.Fatalf("after a credit: %d %s", resp.StatusCode, b)
	}
	rec := g.generation(t, resp.Header.Get("X-Request-Id"))
	cost := admission.MicroUSD(rec.Attempts[0].CostUSD)
	if rec.Attempts[0].ReservedMaxUSD == 0 {
		t.Errorf("reserve not recorded: %+v", rec.Attempts[0])
	}
	got := mustAdmin(t, g, 200, "GET", "/admin/v1/accounts/"+id, "")
	if microOf(t, got.Get("balance_usd").Raw) != 600-cost {
		t.Errorf("balance %s, want %d micro-USD (cost %d)", got.Get("balance_usd").Raw, 600-cost, cost)
	}
	// What is left does not cover another reserve.
	resp, b = chat(t, g, key)
	requireRefusal(t, g, resp, b, 402, "insufficient_credit", "credit", "")
}

// TestAdminEffective: R-KEY-2, R-KEY-4: GET .../effective merges the account's, workspace's
// and key's settings (layers.Effective) and says which layer fixed each field.
func TestAdminEffective(t *testing.T) {
	t.Parallel()
	g := startAdmin(t)
	id := mustAdmin(t, g, 201, "POST", "/admin/v1/accounts", `{"name":"Acme","settings":{"strategy":"latency","models":["gpt-4o-mini","o3"]}}`).Get("id").String()
	ws := mustAdmin(t, g, 201, "POST", "/admin/v1/workspaces", `{"account_id":"`+id+`","name":"w","settings":{"models":["gpt-4o-mini"]}}`).Get("id").String()
	key := mustAdmin(t, g, 201, "POST", "/admin/v1/keys", `{"account_id":"`+id+`","workspace_id":"`+ws+`","name":"k","settings":{"strategy":"price"}}`).Get("id").String()
	got := mustAdmin(t, g, 200, "GET", "/admin/v1/keys/"+key+"/effective", "")
	if got.Get("settings.strategy.value").String() != "price" || got.Get("settings.strategy.fixed_by").String() != "key" ||
		got.Get("settings.models.value").Raw != `["gpt-4o-mini"]` {
		t.Errorf("effective %s", got.Raw)
	}
	// Settings stored before they were validated (written to the store directly here).
	bad := mustAdmin(t, g, 201, "POST", "/admin/v1/keys", `{"account_id":"`+id+`","name":"k2"}`).Get("id").String()
	if _, err := g.Store.UpdateKey(context.Background(), bad, func(k *accounts.Key) error {
		k.Settings = []byte(`{"team":"x"}`)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if resp, b := adminDo(t, g, "GET", "/admin/v1/keys/"+bad+"/effective", ""); resp.StatusCode != 409 {
		t.Errorf("effective of unknown stored settings: %d %s, want 409", resp.StatusCode, b)
	}
}
