package server_test

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// TestAdminCreditBalanceLimit: a credit that would take an account's balance above 1e12 USD
// is refused in the store's transaction with 409 invalid_request naming amount_usd (not a 503
// store outage, on SQLite and on Postgres alike), and nothing changes: neither the balance nor
// the ledger. The balance may reach the cap exactly.
func TestAdminCreditBalanceLimit(t *testing.T) {
	t.Parallel()
	for _, be := range storeBackends {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			g := startGatewayStore(t, be.open(t), adminCatalog, oa("oa-primary"))
			id := mustAdmin(t, g, 201, "POST", "/admin/v1/accounts", `{"name":"Acme"}`).Get("id").String()
			credits := "/admin/v1/accounts/" + id + "/credits"
			if got := mustAdmin(t, g, 200, "POST", credits, `{"amount_usd":999999999999.999999}`); got.Get("balance_usd").Raw != "999999999999.999999" {
				t.Fatalf("first credit: %s", got.Raw)
			}
			for _, amount := range []string{"999999999999.999999", "0.000002"} {
				resp, b := adminDo(t, g, "POST", credits, `{"amount_usd":`+amount+`}`)
				if resp.StatusCode != 409 || gjson.GetBytes(b, "error.type").String() != "invalid_request_error" ||
					gjson.GetBytes(b, "error.param").String() != "amount_usd" || !strings.Contains(string(b), "limit") {
					t.Errorf("credit of %s above the cap: %d %s; want 409 invalid_request naming amount_usd and the limit", amount, resp.StatusCode, b)
				}
			}
			if got := mustAdmin(t, g, 200, "POST", credits, `{"amount_usd":0.000001}`); got.Get("balance_usd").Raw != "1000000000000" {
				t.Errorf("credit to exactly the cap: %s", got.Raw)
			}
			if resp, b := adminDo(t, g, "POST", credits, `{"amount_usd":0.000001}`); resp.StatusCode != 409 {
				t.Errorf("credit above a balance at the cap: %d %s; want 409", resp.StatusCode, b)
			}
			led := mustAdmin(t, g, 200, "GET", "/admin/v1/accounts/"+id+"/ledger", "")
			if led.Get("balance_usd").Raw != "1000000000000" || led.Get("entries.#").Int() != 2 {
				t.Errorf("after refused credits: %s; want the balance at the cap and the 2 accepted credits", led.Raw)
			}
			if strings.Contains(g.Logs.String(), "admin: store:") {
				t.Errorf("a refused credit was logged as a store error:\n%s", g.Logs)
			}
		})
	}
}

// TestAdminCreditAmounts: amount_usd accepts zeros after the 6th decimal (1.0000000 is $1)
// and refuses a real sub-micro amount or one of 1e12 USD or more, naming amount_usd.
func TestAdminCreditAmounts(t *testing.T) {
	t.Parallel()
	g := startAdmin(t)
	id := mustAdmin(t, g, 201, "POST", "/admin/v1/accounts", `{"name":"Acme"}`).Get("id").String()
	credits := "/admin/v1/accounts/" + id + "/credits"
	if got := mustAdmin(t, g, 200, "POST", credits, `{"amount_usd":1.0000000}`); got.Get("balance_usd").Raw != "1" {
		t.Errorf("1.0000000: %s", got.Raw)
	}
	if got := mustAdmin(t, g, 200, "POST", credits, `{"amount_usd":0.5000000000}`); got.Get("balance_usd").Raw != "1.5" {
		t.Errorf("0.5000000000: %s", got.Raw)
	}
	for _, tc := range []struct{ amount, mention string }{
		{"0.0000001", "6 decimals"},
		{"1.0000001", "6 decimals"},
		{"1000000000000", "below 1e12"},
	} {
		resp, b := adminDo(t, g, "POST", credits, `{"amount_usd":`+tc.amount+`}`)
		if resp.StatusCode != 400 || gjson.GetBytes(b, "error.param").String() != "amount_usd" || !strings.Contains(string(b), tc.mention) {
			t.Errorf("%s: %d %s; want 400 amount_usd mentioning %q", tc.amount, resp.StatusCode, b, tc.mention)
		}
	}
	if got := mustAdmin(t, g, 200, "GET", "/admin/v1/accounts/"+id, ""); got.Get("balance_usd").Raw != "1.5" {
		t.Errorf("balance after refusals %s, want 1.5", got.Get("balance_usd").Raw)
	}
}

// TestAdminNames: the name of an account, workspace, key or policy is at most 256 bytes and
// holds no control characters, on create and on PATCH: 400 naming `name`, nothing saved.
func TestAdminNames(t *testing.T) {
	t.Parallel()
	g := startAdmin(t)
	acct := mustAdmin(t, g, 201, "POST", "/admin/v1/accounts", `{"name":"`+strings.Repeat("a", 256)+`"}`).Get("id").String()
	ws := mustAdmin(t, g, 201, "POST", "/admin/v1/workspaces", `{"account_id":"`+acct+`","name":"w"}`).Get("id").String()
	key := mustAdmin(t, g, 201, "POST", "/admin/v1/keys", `{"account_id":"`+acct+`","name":"k"}`).Get("id").String()
	pol := mustAdmin(t, g, 201, "POST", "/admin/v1/policies", `{"account_id":"`+acct+`","name":"p"}`).Get("id").String()
	long := strings.Repeat("é", 129) // 258 bytes, 129 characters
	for _, bad := range []string{strings.Repeat("a", 257), long, `a\nb`, `nul\u0000`, `c1\u0085`, `del\u007f`} {
		for _, tc := range []struct{ method, path, body string }{
			{"POST", "/admin/v1/accounts", `{"name":"` + bad + `"}`},
			{"PATCH", "/admin/v1/accounts/" + acct, `{"name":"` + bad + `"}`},
			{"POST", "/admin/v1/workspaces", `{"account_id":"` + acct + `","name":"` + bad + `"}`},
			{"PATCH", "/admin/v1/workspaces/" + ws, `{"name":"` + bad + `"}`},
			{"POST", "/admin/v1/keys", `{"account_id":"` + acct + `","name":"` + bad + `"}`},
			{"PATCH", "/admin/v1/keys/" + key, `{"name":"` + bad + `"}`},
			{"POST", "/admin/v1/policies", `{"account_id":"` + acct + `","name":"` + bad + `"}`},
			{"PATCH", "/admin/v1/policies/" + pol, `{"name":"` + bad + `"}`},
		} {
			resp, b := adminDo(t, g, tc.method, tc.path, tc.body)
			if resp.StatusCode != 400 || gjson.GetBytes(b, "error.param").String() != "name" {
				t.Errorf("%s %s with name %.12q...: %d %.300s; want 400 naming name", tc.method, tc.path, bad, resp.StatusCode, b)
			}
		}
	}
	for path, want := range map[string]string{"/admin/v1/accounts/" + acct: strings.Repeat("a", 256),
		"/admin/v1/workspaces/" + ws: "w", "/admin/v1/keys/" + key: "k", "/admin/v1/policies/" + pol: "p"} {
		if got := mustAdmin(t, g, 200, "GET", path, "").Get("name").String(); got != want {
			t.Errorf("%s: name %.20q after refused renames, want %.20q", path, got, want)
		}
	}
}

// TestAdminTypeErrors: a member of the wrong type is a 400 naming it and the JSON types wanted
// and given, never a Go type.
func TestAdminTypeErrors(t *testing.T) {
	t.Parallel()
	g := startAdmin(t)
	acct := mustAdmin(t, g, 201, "POST", "/admin/v1/accounts", `{"name":"a"}`).Get("id").String()
	key := mustAdmin(t, g, 201, "POST", "/admin/v1/keys", `{"account_id":"`+acct+`","name":"k"}`).Get("id").String()
	for _, tc := range []struct{ method, path, body, param, msg string }{
		{"POST", "/admin/v1/accounts", `{"name":1}`, "name", "name has the wrong type: want string, not number"},
		{"PATCH", "/admin/v1/accounts/" + acct, `{"name":["x"]}`, "name", "name has the wrong type: want string, not array"},
		{"POST", "/admin/v1/keys", `{"account_id":true,"name":"k"}`, "account_id", "account_id has the wrong type: want string, not boolean"},
		{"POST", "/admin/v1/policies", `{"account_id":"` + acct + `","name":"p","order":"oa-primary"}`, "order",
			"order has the wrong type: want array of strings, not string"},
		{"POST", "/admin/v1/policies", `{"account_id":"` + acct + `","name":"p","attempt_limit":"3"}`, "attempt_limit",
			"attempt_limit has the wrong type: want integer, not string"},
		{"POST", "/admin/v1/policies", `{"account_id":"` + acct + `","name":"p","attempt_limit":1.5}`, "attempt_limit",
			"attempt_limit has the wrong type: want integer, not number"},
		{"POST", "/admin/v1/keys/" + key + "/connections", `{"provider":"openai","dialect":"openai","base_url":"https://x/v1","api_key":"sk","models":{}}`,
			"models", "models has the wrong type: want array of strings, not object"},
	} {
		resp, b := adminDo(t, g, tc.method, tc.path, tc.body)
		msg := gjson.GetBytes(b, "error.message").String()
		if resp.StatusCode != 400 || gjson.GetBytes(b, "error.param").String() != tc.param || msg != tc.msg {
			t.Errorf("%s %s %s: %d %s; want 400 %s %q", tc.method, tc.path, tc.body, resp.StatusCode, b, tc.param, tc.msg)
		}
		if strings.ContainsAny(msg, "[]*") {
			t.Errorf("message names a Go type: %q", msg)
		}
	}
}

// TestAdminConflictBody: R-KEY-3: a 409 of a create names the workspace or key being created
// as "the new workspace" / "the new key" (never its id, which was never saved), a PATCH's
// names the ids of the existing layers it would empty; both bodies carry, beside the OpenAI
// error and request_id, the structured "conflicts" of docs/layers.md.
func TestAdminConflictBody(t *testing.T) {
	t.Parallel()
	g := startGatewayStore(t, storeBackends[0].open(t), settingsCatalog, oa("oa-primary"), oa("oa-backup"), an("an-primary"))
	acct := mustAdmin(t, g, 201, "POST", "/admin/v1/accounts", `{"name":"a","settings":{"models":["gpt-4o-mini"]}}`).Get("id").String()
	for _, tc := range []struct{ path, body, want, conflicts string }{
		{"/admin/v1/keys", `{"account_id":"` + acct + `","name":"k","settings":{"models":["claude-haiku-4-5"]}}`,
			"conflict: models would leave the new key with no candidate",
			`[{"field":"models","layer":"key","new":true,"fixed_by":["account","key"]}]`},
		{"/admin/v1/workspaces", `{"account_id":"` + acct + `","name":"w","settings":{"models":["claude-haiku-4-5"]}}`,
			"conflict: models would leave the new workspace with no candidate",
			`[{"field":"models","layer":"workspace","new":true,"fixed_by":["account","workspace"]}]`},
	} {
		resp, b := adminDo(t, g, "POST", tc.path, tc.body)
		body := gjson.ParseBytes(b)
		if resp.StatusCode != 409 || body.Get("error.message").String() != tc.want || body.Get("error.param").String() != "settings.models" ||
			body.Get("error.type").String() != "invalid_request_error" || !body.Get("request_id").Exists() ||
			body.Get("conflicts").Raw != tc.conflicts || strings.Contains(string(b), "key_") || strings.Contains(string(b), "ws_") {
			t.Errorf("POST %s: %d %s\nwant 409 %q with conflicts %s", tc.path, resp.StatusCode, b, tc.want, tc.conflicts)
		}
	}
	key := mustAdmin(t, g, 201, "POST", "/admin/v1/keys", `{"account_id":"`+acct+`","name":"k","settings":{"tier_scope":"value"}}`).Get("id").String()
	resp, b := adminDo(t, g, "PATCH", "/admin/v1/accounts/"+acct, `{"settings":{"tier_scope":"official"}}`)
	body := gjson.ParseBytes(b)
	want := `[{"field":"tier_scope","layer":"key","id":"` + key + `","fixed_by":["account","key"]}]`
	if resp.StatusCode != 409 || body.Get("error.message").String() != `conflict: tier_scope would leave key "`+key+`" with no candidate` ||
		body.Get("conflicts").Raw != want {
		t.Errorf("narrowing PATCH: %d %s\nwant conflicts %s", resp.StatusCode, b, want)
	}
	// Any other error has no conflicts member.
	if _, b := adminDo(t, g, "PATCH", "/admin/v1/accounts/"+acct, `{"settings":{"tier_scope":"nope"}}`); gjson.GetBytes(b, "conflicts").Exists() {
		t.Errorf("a 400 carries conflicts: %s", b)
	}
}

// TestAdminEffectiveDefaultStrategy: GET .../effective reports the gateway's routing.strategy
// (price when unset) as the default layer's strategy when no layer sets one.
func TestAdminEffectiveDefaultStrategy(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ yaml, want string }{
		{adminCatalog, "price"},
		{strings.Replace(adminCatalog, "routing:\n", "routing:\n  strategy: latency\n", 1), "latency"},
	} {
		g := startGateway(t, tc.yaml, oa("oa-primary"))
		acct := mustAdmin(t, g, 201, "POST", "/admin/v1/accounts", `{"name":"a"}`).Get("id").String()
		key := mustAdmin(t, g, 201, "POST", "/admin/v1/keys", `{"account_id":"`+acct+`","name":"k"}`).Get("id").String()
		got := mustAdmin(t, g, 200, "GET", "/admin/v1/keys/"+key+"/effective", "")
		if s := got.Get("settings.strategy"); s.Get("value").String() != tc.want || s.Get("fixed_by").String() != "default" {
			t.Errorf("strategy %s; want %q fixed by default", s.Raw, tc.want)
		}
		mustAdmin(t, g, 200, "PATCH", "/admin/v1/keys/"+key, `{"settings":{"strategy":"throughput"}}`)
		got = mustAdmin(t, g, 200, "GET", "/admin/v1/keys/"+key+"/effective", "")
		if s := got.Get("settings.strategy"); s.Get("value").String() != "throughput" || s.Get("fixed_by").String() != "key" {
			t.Errorf("strategy set by the key: %s", s.Raw)
		}
	}
}

// TestAdminOffIsLogged: with a store of accounts but no admin.token, the admin API is off
// (404) and the server says so once at construction; with a token nothing is logged.
func TestAdminOffIsLogged(t *testing.T) {
	t.Parallel()
	const line = "admin API off: admin.token is empty; /admin/v1/ answers 404"
	off := startGateway(t, strings.Replace(adminCatalog, "admin:\n  token: adm-secret-token\n", "", 1), oa("oa-primary"))
	if n := strings.Count(off.Logs.String(), line); n != 1 {
		t.Errorf("without admin.token the log has %d lines %q:\n%s", n, line, off.Logs)
	}
	if resp, b := adminDo(t, off, "POST", "/admin/v1/accounts", `{"name":"a"}`); resp.StatusCode != 404 {
		t.Errorf("admin API without a token: %d %s; want 404", resp.StatusCode, b)
	}
	on := startAdmin(t)
	if strings.Contains(on.Logs.String(), "admin API off") {
		t.Errorf("with admin.token the log says it is off:\n%s", on.Logs)
	}
}
