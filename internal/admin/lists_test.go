package admin_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-gw/switchyard/internal/accounts"
	"github.com/switchyard-gw/switchyard/internal/audit"
)

// pageIDs pages through GET path (a list) with limit, calling between after each page, and
// returns the ids in order and every raw page body.
func pageIDs(t *testing.T, h http.Handler, path string, limit int, between func()) (ids []string, bodies []string) {
	t.Helper()
	return pageIDsBy(t, h, path, "id", limit, between)
}

// pageIDsBy is pageIDs reading each row's id from member idMember.
func pageIDsBy(t *testing.T, h http.Handler, path, idMember string, limit int, between func()) (ids []string, bodies []string) {
	t.Helper()
	cursor := ""
	for range 1000 {
		u := path + sep(path) + fmt.Sprintf("limit=%d", limit)
		if cursor != "" {
			u += "&cursor=" + url.QueryEscape(cursor)
		}
		code, b := do(t, h, "GET", u, "")
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", u, code, b.Raw)
		}
		bodies = append(bodies, b.Raw)
		data := b.Get("data").Array()
		if len(data) > limit {
			t.Fatalf("GET %s: %d rows, limit %d", u, len(data), limit)
		}
		for _, row := range data {
			ids = append(ids, row.Get(idMember).Str)
		}
		nc := b.Get("next_cursor")
		if !nc.Exists() {
			t.Fatalf("GET %s: no next_cursor member: %s", u, b.Raw)
		}
		if nc.Type == 0 { // null: the last page
			return ids, bodies
		}
		if len(data) != limit {
			t.Fatalf("GET %s: a page of %d rows (limit %d) with a next_cursor", u, len(data), limit)
		}
		cursor = nc.Str
		if between != nil {
			between()
		}
	}
	t.Fatal("paging does not end")
	return nil, nil
}

func sep(path string) string {
	if strings.Contains(path, "?") {
		return "&"
	}
	return "?"
}

func mustDo(t *testing.T, h http.Handler, want int, method, path, body string) string {
	t.Helper()
	code, b := do(t, h, method, path, body)
	if code != want {
		t.Fatalf("%s %s: %d %s; want %d", method, path, code, b.Raw, want)
	}
	return b.Raw
}

// TestListEndpoints (docs/admin-api.md "Lists"), on SQLite and Postgres: every list pages
// newest first through next_cursor with no row lost or repeated while rows are created between
// pages; the filters select; no page ever shows a key's secret or hash or a connection's API
// key; a bad limit, cursor or revoked is a 400 naming it.
func TestListEndpoints(t *testing.T) {
	eachStore(t, func(t *testing.T, h http.Handler, st accounts.Store) {
		var secrets []string
		newKey := func(acct, ws, name string) string {
			body := fmt.Sprintf(`{"account_id":%q,"name":%q}`, acct, name)
			if ws != "" {
				body = fmt.Sprintf(`{"account_id":%q,"workspace_id":%q,"name":%q}`, acct, ws, name)
			}
			_, b := do(t, h, "POST", "/admin/v1/keys", body)
			if b.Get("secret").Str == "" {
				t.Fatalf("POST /admin/v1/keys: %s", b.Raw)
			}
			secrets = append(secrets, b.Get("secret").Str)
			return b.Get("id").Str
		}
		id := func(raw string) string {
			i := strings.Index(raw, `"id":"`)
			return raw[i+6 : i+6+strings.IndexByte(raw[i+6:], '"')]
		}
		var accts []string // oldest first
		for i := range 7 {
			accts = append(accts, id(mustDo(t, h, 201, "POST", "/admin/v1/accounts", fmt.Sprintf(`{"name":"acct %d"}`, i))))
		}
		a1, a2 := accts[0], accts[1]
		ws1 := id(mustDo(t, h, 201, "POST", "/admin/v1/workspaces", `{"account_id":"`+a1+`","name":"w1"}`))
		ws2 := id(mustDo(t, h, 201, "POST", "/admin/v1/workspaces", `{"account_id":"`+a2+`","name":"w2"}`))
		var keys []string // oldest first
		for i := range 5 {
			keys = append(keys, newKey(a1, "", fmt.Sprintf("k%d", i)))
		}
		kws := newKey(a1, ws1, "in w1")
		k2 := newKey(a2, ws2, "of a2")
		mustDo(t, h, 204, "DELETE", "/admin/v1/keys/"+keys[1], "")
		pol := id(mustDo(t, h, 201, "POST", "/admin/v1/policies", `{"account_id":"`+a1+`","name":"p1"}`))
		id(mustDo(t, h, 201, "POST", "/admin/v1/policies", `{"account_id":"`+a2+`","name":"p2"}`))
		const apiKey = "sk-own-provider-credential-7c1f"
		for i, c := range []struct{ id, key string }{{"conn_a", keys[0]}, {"conn_b", keys[0]}, {"conn_c", k2}} {
			conn := &accounts.Connection{ID: c.id, KeyID: c.key, Provider: "openai", Dialect: "openai", BaseURL: "https://x.example/v1",
				APIKey: apiKey, Models: []string{"m"}, CreatedAt: time.Now()}
			if i == 1 {
				conn.RevokedAt = conn.CreatedAt.Add(time.Second)
			}
			if err := st.CreateConnection(context.Background(), conn); err != nil {
				t.Fatal(err)
			}
		}

		reversed := func(s []string) []string { s = slices.Clone(s); slices.Reverse(s); return s }
		// accounts: every page size, and paging while accounts are created
		for _, limit := range []int{1, 2, 3, 7, 8, 500} {
			if got, _ := pageIDs(t, h, "/admin/v1/accounts", limit, nil); !slices.Equal(got, reversed(accts)) {
				t.Fatalf("accounts, limit %d: %v, want %v", limit, got, reversed(accts))
			}
		}
		n := 0
		got, _ := pageIDs(t, h, "/admin/v1/accounts", 2, func() {
			n++
			mustDo(t, h, 201, "POST", "/admin/v1/accounts", fmt.Sprintf(`{"name":"new %d"}`, n))
		})
		if !slices.Equal(got, reversed(accts)) {
			t.Fatalf("accounts while creating: %v, want %v", got, reversed(accts))
		}
		if all, _ := pageIDs(t, h, "/admin/v1/accounts", 500, nil); len(all) != len(accts)+n {
			t.Fatalf("accounts after creating %d: %d rows", n, len(all))
		}
		// keys: paging while keys are created, the revoked one left out by default
		active := reversed(append([]string{keys[0]}, append(keys[2:], kws)...))
		meanwhile := 0
		got, bodies := pageIDs(t, h, "/admin/v1/keys?account_id="+a1, 2, func() { meanwhile++; newKey(a1, "", "meanwhile") })
		if !slices.Equal(got, active) {
			t.Fatalf("keys of a1 while creating: %v, want %v", got, active)
		}
		for _, tc := range []struct {
			q    string
			want []string
		}{
			{"?account_id=" + a1 + "&workspace_id=" + ws1, []string{kws}},
			{"?account_id=" + a2, []string{k2}},
			{"?workspace_id=" + ws2, []string{k2}},
			{"?revoked=only", []string{keys[1]}},
			{"?account_id=" + a2 + "&revoked=only", nil},
			{"?account_id=nope", nil},
		} {
			if got, _ := pageIDs(t, h, "/admin/v1/keys"+tc.q, 50, nil); !slices.Equal(got, tc.want) && !(len(got) == 0 && tc.want == nil) {
				t.Errorf("keys%s: %v, want %v", tc.q, got, tc.want)
			}
		}
		inc, more := pageIDs(t, h, "/admin/v1/keys?revoked=include", 3, nil)
		bodies = append(bodies, more...)
		if !slices.Contains(inc, keys[1]) || len(inc) != len(keys)+2+meanwhile {
			t.Errorf("keys?revoked=include: %v", inc)
		}
		// workspaces, policies, connections and their filters
		for _, tc := range []struct {
			path string
			want []string
		}{
			{"/admin/v1/workspaces", []string{ws2, ws1}},
			{"/admin/v1/workspaces?account_id=" + a1, []string{ws1}},
			{"/admin/v1/policies?account_id=" + a1, []string{pol}},
			{"/admin/v1/connections?key_id=" + keys[0], []string{"conn_a"}},
			{"/admin/v1/connections?key_id=" + keys[0] + "&revoked=include", nil}, // checked below: both, any tie order
			{"/admin/v1/connections?revoked=only", []string{"conn_b"}},
			{"/admin/v1/connections?key_id=" + k2, []string{"conn_c"}},
		} {
			got, more := pageIDs(t, h, tc.path, 1, nil)
			bodies = append(bodies, more...)
			if tc.want == nil {
				slices.Sort(got)
				tc.want = []string{"conn_a", "conn_b"}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("%s: %v, want %v", tc.path, got, tc.want)
			}
		}
		_, more = pageIDs(t, h, "/admin/v1/policies", 1, nil)
		bodies = append(bodies, more...)
		// no secret, hash or API key anywhere
		for _, b := range bodies {
			for _, s := range append(slices.Clone(secrets), apiKey, `"secret"`, `"secret_hash"`, `"api_key"`) {
				if strings.Contains(b, s) {
					t.Fatalf("a list page shows %q: %s", s, b)
				}
			}
		}
		// bad parameters
		for _, tc := range []struct{ q, param string }{
			{"/admin/v1/keys?limit=0", "limit"}, {"/admin/v1/keys?limit=501", "limit"}, {"/admin/v1/accounts?limit=x", "limit"},
			{"/admin/v1/accounts?limit=", "limit"}, {"/admin/v1/accounts?cursor=%21%21", "cursor"},
			{"/admin/v1/accounts?cursor=" + base64.RawURLEncoding.EncodeToString([]byte("12:")), "cursor"},
			{"/admin/v1/workspaces?cursor=" + base64.RawURLEncoding.EncodeToString([]byte("x:acct_1")), "cursor"},
			{"/admin/v1/keys?revoked=yes", "revoked"}, {"/admin/v1/connections?revoked=all", "revoked"},
		} {
			code, b := do(t, h, "GET", tc.q, "")
			if code != http.StatusBadRequest || b.Get("error.param").Str != tc.param || b.Get("error.type").Str != "invalid_request_error" {
				t.Errorf("GET %s: %d %s; want 400 naming %s", tc.q, code, b.Raw, tc.param)
			}
		}
	})
}

// TestListRequests (docs/admin-api.md "The call log"), on SQLite and Postgres: the call log
// pages newest first with no record lost or repeated while records are written between
// pages, each row the whole record (attempts, key id); the filters reach the store; GET
// /admin/v1/requests/{id} answers one record or 404; bad filters are 400 naming them.
func TestListRequests(t *testing.T) {
	eachStore(t, func(t *testing.T, h http.Handler, st accounts.Store) {
		as := st.(audit.Store)
		base := time.Now().UTC().Add(-time.Hour).Truncate(time.Millisecond)
		write := func(i int, key string, status int, class string, deps ...string) string {
			r := &audit.Record{RequestID: fmt.Sprintf("req_%03d", i), Account: "acct_1", KeyID: key, Model: "gpt-4o-mini",
				Surface: "openai.chat", Status: status, ErrorCode: class, CreatedAt: base.Add(time.Duration(i) * time.Second)}
			for j, d := range deps {
				r.Attempts = append(r.Attempts, audit.Attempt{Attempt: j + 1, Deployment: d, Provider: "openai", Model: "gpt-4o-mini",
					UpstreamModel: "gpt-4o-mini", Outcome: audit.OutcomeCompleted, UsageProvenance: audit.ProvenanceObserved,
					BillingSource: "route_price", UpstreamStatus: 200, DroppedParams: []string{}})
			}
			if err := as.WriteRecords(context.Background(), []*audit.Record{r}); err != nil {
				t.Fatal(err)
			}
			return r.RequestID
		}
		var want []string
		for i := range 9 {
			key, status, class := "key_a", 200, ""
			if i%3 == 0 {
				key, status, class = "key_b", 429, "rate_limited"
			}
			want = append([]string{write(i, key, status, class, "oa-primary", "oa-backup")}, want...)
		}
		n := 100
		got, bodies := pageIDsBy(t, h, "/admin/v1/requests", "request_id", 2, func() { n++; write(n, "key_a", 200, "", "oa-primary") })
		if !slices.Equal(got, want) {
			t.Fatalf("requests while writing: %v, want %v", got, want)
		}
		if !strings.Contains(bodies[0], `"key_id":"key_`) || !strings.Contains(bodies[0], `"attempts":[{"attempt":1`) {
			t.Errorf("first page lacks key_id or attempts: %s", bodies[0])
		}
		for q, wantN := range map[string]int{
			"?key_id=key_b": 3,
			"?key_id=key_b&class=rate_limited&status=4xx":                                          3,
			"?class=none&deployment=oa-backup":                                                     6,
			"?status=429&account_id=acct_1":                                                        3,
			"?since=" + base.Add(7*time.Second).Format(time.RFC3339Nano) + "&deployment=oa-backup": 2,
			"?until=" + base.Add(2*time.Second).Format(time.RFC3339Nano):                           2,
			"?account_id=acct_2":                                                                   0,
		} {
			ids, _ := pageIDsBy(t, h, "/admin/v1/requests"+q, "request_id", 500, nil)
			if len(ids) != wantN {
				t.Errorf("GET /admin/v1/requests%s: %v, want %d rows", q, ids, wantN)
			}
		}
		code, b := do(t, h, "GET", "/admin/v1/requests/"+want[0], "")
		if code != 200 || b.Get("request_id").Str != want[0] || len(b.Get("attempts").Array()) != 2 {
			t.Errorf("GET /admin/v1/requests/%s: %d %s", want[0], code, b.Raw)
		}
		if code, _ := do(t, h, "GET", "/admin/v1/requests/req_nope", ""); code != 404 {
			t.Errorf("unknown request: %d, want 404", code)
		}
		for q, param := range map[string]string{"status=99": "status", "status=6xx": "status", "since=2026-12-02": "since",
			"until=now": "until", "limit=501": "limit", "cursor=" + base64.RawURLEncoding.EncodeToString([]byte("-5:req")): "cursor",
			"model=" + strings.Repeat("m", 600): "model"} {
			code, b := do(t, h, "GET", "/admin/v1/requests?"+q, "")
			if code != 400 || b.Get("error.param").Str != param {
				t.Errorf("GET /admin/v1/requests?%.40s: %d %s; want 400 naming %s", q, code, b.Raw, param)
			}
		}
	})
}
