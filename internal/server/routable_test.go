package server_test

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	anthropicopt "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	openaiopt "github.com/openai/openai-go/v3/option"
	"github.com/tidwall/gjson"

	"github.com/switchyard-gw/switchyard/internal/store"
	"github.com/switchyard-gw/switchyard/internal/store/postgres"
	"github.com/switchyard-gw/switchyard/internal/store/sqlite"
	"github.com/switchyard-gw/switchyard/internal/store/storetest"
)

// routableYAML: three deployments of model m, cheapest first; a is disabled in the
// configuration. RELOAD is the store's reload interval.
const routableYAML = `
auth: {required: false}
admin: {token: adm-secret-token}
store: {reload_interval: RELOAD}
models: [{id: m}]
deployments:
  - {name: a, provider: pa, dialect: openai, base_url: "{{a}}", disabled: true, routes: [{model: m, price: {input: 1, output: 1}}]}
  - {name: b, provider: pb, dialect: openai, base_url: "{{b}}", routes: [{model: m, price: {input: 2, output: 2}}]}
  - {name: c, provider: pc, dialect: anthropic, base_url: "{{c}}", routes: [{model: m, price: {input: 3, output: 3}}]}
`

// planOf is POST /v1/route for model m on g: the candidates' deployments in order and each
// dropped deployment's reason.
func planOf(t *testing.T, g *gateway) (cands []string, dropped map[string]string) {
	t.Helper()
	cands, dropped, ok := tryPlan(t, g)
	if !ok {
		t.Fatal("POST /v1/route did not answer 200")
	}
	return cands, dropped
}

// tryPlan is planOf that reports a non-200 answer (a replica that has not caught up yet may see
// every route disabled) instead of failing.
func tryPlan(t *testing.T, g *gateway) (cands []string, dropped map[string]string, ok bool) {
	t.Helper()
	resp, b := icPost(t, g.URL, "/v1/route", `{"model":"m","messages":[{"role":"user","content":"Hi"}]}`)
	if resp.StatusCode != http.StatusOK {
		t.Logf("POST /v1/route: %d %s", resp.StatusCode, b)
		return nil, nil, false
	}
	for _, c := range gjson.GetBytes(b, "candidates.#.deployment").Array() {
		cands = append(cands, c.String())
	}
	dropped = map[string]string{}
	for _, d := range gjson.GetBytes(b, "dropped").Array() {
		dropped[d.Get("deployment").String()] = d.Get("reason").String()
	}
	return cands, dropped, true
}

// eventually polls cond (every 20 ms, for at most 10 s) until it holds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRoutableState: issue 11 item 3, seed 001 ("the provider and that price are in a routable
// state"): config disabled: true keeps a deployment out of every plan (dropped "disabled",
// never an attempt); PATCH /admin/v1/deployments/{name}[/routes/{model}] changes it live, on
// the replica that took it at once and on another replica sharing the store through the
// reload poll (SQLite file; reload_interval 100ms) or the change feed (Postgres; the poll set
// to an hour, so only the feed can carry it); null returns to the configuration; a pool
// emptied by it is a 503 with no upstream call. Calls go through both official SDKs.
func TestRoutableState(t *testing.T) {
	t.Parallel()
	backends := []struct {
		name   string
		reload string
		open   func(t *testing.T) func() store.Store
	}{
		{"sqlite", "100ms", func(t *testing.T) func() store.Store {
			url := "sqlite://" + filepath.Join(t.TempDir(), "sy.db")
			return func() store.Store {
				st, err := sqlite.Open(context.Background(), url)
				if err != nil {
					t.Fatal(err)
				}
				return st
			}
		}},
		{"postgres", "1h", func(t *testing.T) func() store.Store {
			url := storetest.PostgresURL(t)
			return func() store.Store {
				st, err := postgres.Open(context.Background(), url)
				if err != nil {
					t.Fatal(err)
				}
				return st
			}
		}},
	}
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			open := be.open(t)
			yaml := strings.Replace(routableYAML, "RELOAD", be.reload, 1)
			g1 := startGatewayStore(t, open(), yaml, oa("a"), oa("b"), an("c"))
			g2 := startGatewayStore(t, open(), yaml, oa("a"), oa("b"), an("c"))

			oaCall := func(g *gateway) (string, error) {
				var hr *http.Response
				oc := g.openaiClient()
				_, err := oc.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{Model: "m",
					Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello")}}, openaiopt.WithResponseInto(&hr))
				if hr == nil {
					return "", err
				}
				return hr.Header.Get("X-Switchyard-Deployment"), err
			}
			anCall := func(g *gateway) (string, error) {
				var hr *http.Response
				ac := g.anthropicClient()
				_, err := ac.Messages.New(t.Context(), anthropic.MessageNewParams{Model: "m", MaxTokens: 32,
					Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello"))}}, anthropicopt.WithResponseInto(&hr))
				if hr == nil {
					return "", err
				}
				return hr.Header.Get("X-Switchyard-Deployment"), err
			}

			// Config disabled: a is dropped, never called.
			for _, g := range []*gateway{g1, g2} {
				if dep, err := oaCall(g); err != nil || dep != "b" {
					t.Fatalf("served by %q (%v), want b while a is disabled", dep, err)
				}
				if cands, dropped := planOf(t, g); strings.Join(cands, ",") != "b,c" || dropped["a"] != "disabled" {
					t.Fatalf("plan %v dropped %v, want b,c and a disabled", cands, dropped)
				}
			}
			if g1.Fakes["a"].Hits()+g2.Fakes["a"].Hits() != 0 {
				t.Fatal("a disabled deployment was called")
			}
			got := mustAdmin(t, g1, 200, "GET", "/admin/v1/deployments/a", "")
			if got.Get("disabled").Bool() != true || got.Get("config_disabled").Bool() != true || got.Get("override").Type != gjson.Null {
				t.Fatalf("GET a: %s", got.Raw)
			}

			// Enabled live on g1: at once there, soon on g2.
			got = mustAdmin(t, g1, 200, "PATCH", "/admin/v1/deployments/a", `{"disabled": false}`)
			if got.Get("disabled").Bool() || !got.Get("override").Exists() || got.Get("override").Bool() {
				t.Fatalf("PATCH a: %s", got.Raw)
			}
			if dep, err := anCall(g1); err != nil || dep != "a" {
				t.Fatalf("g1 served by %q (%v) after enabling a, want a", dep, err)
			}
			eventually(t, "g2 sees a enabled", func() bool { c, _, _ := tryPlan(t, g2); return len(c) == 3 && c[0] == "a" })

			// Disable the route (b, m) on g2 and the deployment a again: only c is left, on both.
			mustAdmin(t, g2, 200, "PATCH", "/admin/v1/deployments/b/routes/m", `{"disabled": true}`)
			got = mustAdmin(t, g2, 200, "PATCH", "/admin/v1/deployments/a", `{"disabled": true}`)
			if !got.Get("disabled").Bool() || !got.Get("routes.0.disabled").Bool() {
				t.Fatalf("PATCH a: %s", got.Raw)
			}
			eventually(t, "g1 sees a and (b, m) disabled", func() bool {
				c, d, _ := tryPlan(t, g1)
				return strings.Join(c, ",") == "c" && d["a"] == "disabled" && d["b"] == "disabled"
			})
			hitsA, hitsB := g1.Fakes["a"].Hits(), g1.Fakes["b"].Hits()
			if dep, err := oaCall(g1); err != nil || dep != "c" {
				t.Fatalf("served by %q (%v), want c", dep, err)
			}
			if g1.Fakes["a"].Hits() != hitsA || g1.Fakes["b"].Hits() != hitsB {
				t.Fatal("a disabled route was attempted")
			}

			// Every route out of routing: 503, no attempt, on both SDKs.
			mustAdmin(t, g1, 200, "PATCH", "/admin/v1/deployments/c", `{"disabled": true}`)
			resp, b := icPost(t, g1.URL, "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"Hi"}]}`)
			if resp.StatusCode != 503 || resp.Header.Get("X-Switchyard-Attempts") != "0" || !strings.Contains(string(b), "disabled") || resp.Header.Get("Retry-After") != "" {
				t.Fatalf("all disabled: %d %v %s", resp.StatusCode, resp.Header, b)
			}
			var ae *anthropic.Error
			if _, err := anCall(g1); !errors.As(err, &ae) || ae.StatusCode != 503 {
				t.Fatalf("anthropic SDK with every route disabled: %v, want a 503", err)
			}

			// null: back to the configuration (a disabled, c enabled); the route override stays.
			mustAdmin(t, g1, 200, "PATCH", "/admin/v1/deployments/a", `{"disabled": null}`)
			got = mustAdmin(t, g1, 200, "PATCH", "/admin/v1/deployments/c", `{"disabled": null}`)
			if got.Get("disabled").Bool() || got.Get("override").Type != gjson.Null {
				t.Fatalf("PATCH c null: %s", got.Raw)
			}
			eventually(t, "g2 sees the configuration again", func() bool {
				c, d, _ := tryPlan(t, g2)
				return strings.Join(c, ",") == "c" && d["a"] == "disabled" && d["b"] == "disabled"
			})

			// Bad requests change nothing.
			for _, tc := range []struct {
				path, body string
				status     int
			}{
				{"/admin/v1/deployments/nope", `{"disabled": true}`, 404},
				{"/admin/v1/deployments/a/routes/other", `{"disabled": true}`, 404},
				{"/admin/v1/deployments/a", `{"disabled": "yes"}`, 400},
				{"/admin/v1/deployments/a", `{}`, 400},
				{"/admin/v1/deployments/a", `{"disabled": true, "x": 1}`, 400},
			} {
				if resp, b := adminDo(t, g1, "PATCH", tc.path, tc.body); resp.StatusCode != tc.status {
					t.Errorf("PATCH %s %s: %d %s, want %d", tc.path, tc.body, resp.StatusCode, b, tc.status)
				}
			}
			if list := mustAdmin(t, g1, 200, "GET", "/admin/v1/deployments", ""); list.Get("data.#").Int() != 3 ||
				!list.Get("data.0.disabled").Bool() || list.Get("data.2.disabled").Bool() {
				t.Errorf("GET /admin/v1/deployments: %s", list.Raw)
			}
		})
	}
}
