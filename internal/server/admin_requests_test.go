package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	openaiopt "github.com/openai/openai-go/v3/option"

	fp "github.com/switchyard-gw/switchyard/internal/fakeprovider"
)

// TestAdminRequestsLog (issue 14 item 1, docs/admin-api.md "The call log"): a request that
// failed over, sent with a stored key through the OpenAI SDK, is in GET /admin/v1/requests
// under its key and account with both attempts (the failed primary with its upstream status
// and origin, the backup that served), and GET /admin/v1/requests/{id} is the same record; the
// filters select it or not; a static key's request carries the key's name; no row shows a
// secret.
func TestAdminRequestsLog(t *testing.T) {
	t.Parallel()
	g := startGateway(t, requestsCatalog, oa("oa-primary"), oa("oa-backup"), an("an-primary"), an("an-backup"))
	acct := mustAdmin(t, g, 201, "POST", "/admin/v1/accounts", `{"name":"Acme"}`).Get("id").Str
	key := mustAdmin(t, g, 201, "POST", "/admin/v1/keys", `{"account_id":"`+acct+`","name":"ci"}`)
	keyID, secret := key.Get("id").Str, key.Get("secret").Str

	g.Fakes["oa-primary"].Script(fp.Behavior{Kind: fp.KindStatus, Status: 503})
	var hr *http.Response
	keyClient, staticClient := g.openaiClient(openaiopt.WithAPIKey(secret)), g.openaiClient(openaiopt.WithAPIKey("sk-static"))
	if _, err := keyClient.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{
		Model: "gpt-4o-mini", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello")}},
		openaiopt.WithResponseInto(&hr)); err != nil {
		t.Fatal(err)
	}
	rid := hr.Header.Get("X-Request-Id")
	if _, err := staticClient.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{
		Model: "gpt-4o-mini", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello")}},
		openaiopt.WithResponseInto(&hr)); err != nil {
		t.Fatal(err)
	}
	staticID := hr.Header.Get("X-Request-Id")
	g.generation(t, rid)
	g.generation(t, staticID)

	page := mustAdmin(t, g, 200, "GET", "/admin/v1/requests?key_id="+keyID, "")
	rows := page.Get("data").Array()
	if len(rows) != 1 || page.Get("next_cursor").Type != 0 {
		t.Fatalf("requests of the key: %s", page.Raw)
	}
	row := rows[0]
	if row.Get("request_id").Str != rid || row.Get("key_id").Str != keyID || row.Get("account").Str != acct ||
		row.Get("model").Str != "gpt-4o-mini" || row.Get("status").Int() != 200 || row.Get("created_at").Str == "" {
		t.Fatalf("row: %s", row.Raw)
	}
	at := row.Get("attempts").Array()
	if len(at) != 2 {
		t.Fatalf("attempts: %s", row.Get("attempts").Raw)
	}
	if at[0].Get("deployment").Str != "oa-primary" || at[0].Get("outcome").Str != "failed" ||
		at[0].Get("upstream_status").Int() != 503 || at[0].Get("error_origin").Str != "upstream" || at[0].Get("error_code").Str == "" {
		t.Errorf("attempt 1: %s", at[0].Raw)
	}
	if at[1].Get("deployment").Str != "oa-backup" || at[1].Get("outcome").Str != "completed" ||
		at[1].Get("upstream_status").Int() != 200 || at[1].Get("tokens.output").Int() == 0 || !at[1].Get("first_token_ms").Exists() {
		t.Errorf("attempt 2: %s", at[1].Raw)
	}
	one := mustAdmin(t, g, 200, "GET", "/admin/v1/requests/"+rid, "")
	if one.Raw != row.Raw {
		t.Errorf("GET /admin/v1/requests/{id} = %s, want the row %s", one.Raw, row.Raw)
	}
	mustAdmin(t, g, 404, "GET", "/admin/v1/requests/req_none", "")

	count := func(q string) int {
		t.Helper()
		return len(mustAdmin(t, g, 200, "GET", "/admin/v1/requests"+q, "").Get("data").Array())
	}
	for q, want := range map[string]int{
		"":                                 2,
		"?account_id=" + acct:              1,
		"?key_id=static":                   1,
		"?account_id=static-acct":          1,
		"?deployment=oa-primary":           2,
		"?deployment=oa-backup":            1,
		"?deployment=an-primary":           0,
		"?model=gpt-4o-mini&class=none":    2,
		"?class=upstream_error":            0,
		"?status=2xx":                      2,
		"?status=5xx":                      0,
		"?since=2000-01-01T00:00:00Z":      2,
		"?until=2000-01-01T00:00:00Z":      0,
		"?limit=1&key_id=" + keyID:         1,
		"?key_id=" + keyID + "&status=200": 1,
	} {
		if got := count(q); got != want {
			t.Errorf("GET /admin/v1/requests%s: %d rows, want %d", q, got, want)
		}
	}
	first := mustAdmin(t, g, 200, "GET", "/admin/v1/requests?limit=1", "")
	if first.Get("data.0.request_id").Str != staticID || first.Get("next_cursor").Str == "" {
		t.Fatalf("first page: %s", first.Raw)
	}
	second := mustAdmin(t, g, 200, "GET", "/admin/v1/requests?limit=1&cursor="+first.Get("next_cursor").Str, "")
	if second.Get("data.0.request_id").Str != rid || second.Get("next_cursor").Type != 0 {
		t.Fatalf("second page: %s", second.Raw)
	}
	for _, q := range []string{"status=600", "status=abc", "since=yesterday", "until=2026-13-01", "limit=0", "cursor=zz"} {
		resp, b := adminDo(t, g, "GET", "/admin/v1/requests?"+q, "")
		if resp.StatusCode != 400 {
			t.Errorf("GET /admin/v1/requests?%s: %d %s; want 400", q, resp.StatusCode, b)
		}
	}
	for _, raw := range []string{page.Raw, first.Raw, second.Raw} {
		for _, s := range []string{secret, "sk-static", "sk-house-primary", "sk-house-backup"} {
			if strings.Contains(raw, s) {
				t.Fatalf("the call log shows %q: %s", s, raw)
			}
		}
	}
}
