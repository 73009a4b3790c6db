package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/switchyard-gw/switchyard/internal/accounts"
	"github.com/switchyard-gw/switchyard/internal/admission"
)

// TestConflictCheckSeesEveryWorkspace: R-KEY-3: narrowing an account is checked against every
// workspace of the account, including one without keys that this process never created nor
// read (written to the store by another replica): the 409 names it and nothing is saved.
func TestConflictCheckSeesEveryWorkspace(t *testing.T) {
	t.Parallel()
	for _, be := range storeBackends {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			st := be.open(t)
			g := startGatewayStore(t, st, settingsCatalog, oa("oa-primary"), oa("oa-backup"), an("an-primary"))
			acct := mustAdmin(t, g, 201, "POST", "/admin/v1/accounts", `{"name":"a"}`).Get("id").String()
			const wsID = "ws_elsewhere"
			if err := st.CreateWorkspace(t.Context(), &accounts.Workspace{ID: wsID, AccountID: acct, Name: "keyless",
				Settings: json.RawMessage(`{"tier_scope":"value"}`)}); err != nil {
				t.Fatal(err)
			}
			resp, b := adminDo(t, g, "PATCH", "/admin/v1/accounts/"+acct, `{"settings":{"tier_scope":"official"}}`)
			if resp.StatusCode != 409 || !strings.Contains(string(b), wsID) || gjson.GetBytes(b, "error.param").String() != "settings.tier_scope" {
				t.Errorf("narrowing PATCH: %d %s; want 409 naming %s and settings.tier_scope", resp.StatusCode, b, wsID)
			}
			if got := mustAdmin(t, g, 200, "GET", "/admin/v1/accounts/"+acct, ""); got.Get("settings.tier_scope").Exists() {
				t.Errorf("a refused PATCH was saved: %s", got.Raw)
			}
		})
	}
}

// adminResult is the status of one admin request sent from a goroutine (0: it failed to send).
type adminResult struct {
	status int
	err    error
}

// adminSend is adminDo for goroutines: it reports instead of failing the test.
func adminSend(g *gateway, method, path, body string) adminResult {
	req, err := http.NewRequest(method, g.URL+path, strings.NewReader(body))
	if err != nil {
		return adminResult{err: err}
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return adminResult{err: err}
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return adminResult{status: resp.StatusCode, err: err}
}

// TestConcurrentConflictingWrites: R-KEY-3 under concurrency: two writes to one account that are
// each acceptable alone but conflict together (official ∩ value is empty), sent at the same
// instant, never both succeed: the settings writes of an account are serialised from the check
// to the save, so exactly one is saved (200 or 201) and the other is 409, every round.
func TestConcurrentConflictingWrites(t *testing.T) {
	t.Parallel()
	const rounds = 30
	type ids struct{ acct, ws, key string }
	type write struct{ method, path, body string }
	for _, be := range storeBackends {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			g := startGatewayStore(t, be.open(t), settingsCatalog, oa("oa-primary"), oa("oa-backup"), an("an-primary"))
			for _, tc := range []struct {
				name string
				a, b func(ids) write
			}{
				{"account official, key value",
					func(x ids) write {
						return write{"PATCH", "/admin/v1/accounts/" + x.acct, `{"settings":{"tier_scope":"official"}}`}
					},
					func(x ids) write {
						return write{"PATCH", "/admin/v1/keys/" + x.key, `{"settings":{"tier_scope":"value"}}`}
					}},
				{"account official, workspace value",
					func(x ids) write {
						return write{"PATCH", "/admin/v1/accounts/" + x.acct, `{"settings":{"tier_scope":"official"}}`}
					},
					func(x ids) write {
						return write{"PATCH", "/admin/v1/workspaces/" + x.ws, `{"settings":{"tier_scope":"value"}}`}
					}},
				{"workspace official, new key value",
					func(x ids) write {
						return write{"PATCH", "/admin/v1/workspaces/" + x.ws, `{"settings":{"tier_scope":"official"}}`}
					},
					func(x ids) write {
						return write{"POST", "/admin/v1/keys", `{"account_id":"` + x.acct + `","workspace_id":"` + x.ws +
							`","name":"late","settings":{"tier_scope":"value"}}`}
					}},
			} {
				t.Run(tc.name, func(t *testing.T) {
					for round := range rounds {
						var x ids
						x.acct = mustAdmin(t, g, 201, "POST", "/admin/v1/accounts", `{"name":"a"}`).Get("id").String()
						x.ws = mustAdmin(t, g, 201, "POST", "/admin/v1/workspaces", `{"account_id":"`+x.acct+`","name":"w"}`).Get("id").String()
						x.key = mustAdmin(t, g, 201, "POST", "/admin/v1/keys", `{"account_id":"`+x.acct+`","workspace_id":"`+x.ws+`","name":"k"}`).Get("id").String()
						start := make(chan struct{})
						results := make(chan adminResult, 2)
						for _, w := range []write{tc.a(x), tc.b(x)} {
							go func() {
								<-start
								results <- adminSend(g, w.method, w.path, w.body)
							}()
						}
						close(start)
						saved, refused := 0, 0
						for range 2 {
							r := <-results
							switch {
							case r.err != nil:
								t.Fatalf("round %d: %v", round, r.err)
							case r.status == 200 || r.status == 201:
								saved++
							case r.status == 409:
								refused++
							default:
								t.Fatalf("round %d: status %d", round, r.status)
							}
						}
						if saved != 1 || refused != 1 {
							t.Fatalf("round %d: %d saved, %d refused; want exactly one of each (both saved leaves a layer with no candidate)",
								round, saved, refused)
						}
					}
				})
			}
		})
	}
}

// TestWorkspaceLimitNamesWorkspace: R-BILL-1: a workspace's limit is counted under the
// workspace's own admission scope, and its refusal says it is the workspace's, not the account's.
func TestWorkspaceLimitNamesWorkspace(t *testing.T) {
	t.Parallel()
	g := startSettings(t)
	acct := mustAdmin(t, g, 201, "POST", "/admin/v1/accounts", `{"name":"a"}`).Get("id").String()
	ws := mustAdmin(t, g, 201, "POST", "/admin/v1/workspaces", `{"account_id":"`+acct+`","name":"w","settings":{"limits":{"rpm":1}}}`).Get("id").String()
	secret := mustAdmin(t, g, 201, "POST", "/admin/v1/keys", `{"account_id":"`+acct+`","workspace_id":"`+ws+`","name":"k"}`).Get("secret").String()
	if resp, b := callModel(t, g, secret, "chat", "gpt-4o-mini"); resp.StatusCode != 200 {
		t.Fatalf("first request: %d %s", resp.StatusCode, b)
	}
	resp, b := callModel(t, g, secret, "chat", "gpt-4o-mini")
	const want = "rate limit reached: this workspace allows 1 requests per minute"
	if resp.StatusCode != 429 || resp.Header.Get("X-Switchyard-Limit-Kind") != "rpm" || gjson.GetBytes(b, "error.message").String() != want {
		t.Errorf("second request: %d %s; want 429 rpm %q", resp.StatusCode, b, want)
	}
	if u, _ := g.Admission.Usage(t.Context(), admission.Layer{Scope: admission.ScopeWorkspace, ID: ws}); u.Requests != 1 {
		t.Errorf("workspace %s counted %d requests, want 1", ws, u.Requests)
	}
	if u, _ := g.Admission.Usage(t.Context(), admission.Layer{Scope: admission.ScopeAccount, ID: ws}); u != (admission.Usage{}) {
		t.Errorf("workspace counted under the account scope: %+v", u)
	}
}
