package server_test

import (
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	openaiopt "github.com/openai/openai-go/v3/option"
	"github.com/tidwall/gjson"
)

// requestsCatalog is twoDeployments with authentication on, a static key and the admin API.
var requestsCatalog = strings.Replace(twoDeployments, "auth: {required: false}", `auth: {required: true}
keys:
  - {name: static, secret: sk-static, account: static-acct}
admin:
  token: adm-secret-token`, 1)

// TestAdminStats (issue 14 item 1, docs/admin-api.md "Route statistics"): GET
// /admin/v1/stats/models and /stats/deployments show each route's counted requests, its
// uptime only from 100 counted requests and then the figure GET /v1/models/{id} shows
// (R-CIRCUIT-8, the same internal/stats window), latency quantiles, circuits, pause, price and
// the routable state an operator's PATCH changes.
func TestAdminStats(t *testing.T) {
	t.Parallel()
	g := startGateway(t, requestsCatalog, oa("oa-primary"), oa("oa-backup"), an("an-primary"), an("an-backup"))
	c := g.openaiClient(openaiopt.WithAPIKey("sk-static"))
	send := func(n int) {
		for range n {
			if _, err := c.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{Model: "gpt-4o-mini",
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello")}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// route waits until the stats of oa-primary's gpt-4o-mini route count want requests (the
	// collector applies observations off the request path) and returns it.
	route := func(want int64) gjson.Result {
		t.Helper()
		for i := 0; ; i++ {
			b := mustAdmin(t, g, 200, "GET", "/admin/v1/stats/models", "")
			if b.Get("next_cursor").Type != 0 || b.Get("data.#").Int() != 2 || b.Get("data.0.model").Str != "gpt-4o-mini" {
				t.Fatalf("stats/models: %s", b.Raw)
			}
			r := b.Get(`data.0.deployments.#(deployment=="oa-primary")`)
			if r.Get("requests").Int() == want {
				return r
			}
			if i > 500 {
				t.Fatalf("the route never counted %d requests: %s", want, r.Raw)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	send(99)
	r := route(99)
	if r.Get("uptime").Type != 0 || r.Get("success_ratio").Float() != 1 {
		t.Errorf("at 99 requests: uptime %s (want null), success_ratio %s", r.Get("uptime").Raw, r.Get("success_ratio").Raw)
	}
	lat := r.Get("latency_ms")
	if !lat.IsObject() || lat.Get("p50").Float() <= 0 || lat.Get("p50").Float() > lat.Get("p99").Float() || lat.Get("mean").Float() <= 0 {
		t.Errorf("latency_ms: %s", lat.Raw)
	}
	if ttft := r.Get("ttft_ms"); ttft.Type != 0 && ttft.Get("p50").Float() > ttft.Get("p99").Float() {
		t.Errorf("ttft_ms: %s", ttft.Raw)
	}
	if r.Get("circuit").Str != "closed" || r.Get("deployment_circuit").Str != "closed" || r.Get("model_circuit").Str != "closed" ||
		r.Get("circuit_open_until").Type != 0 || r.Get("paused_until").Type != 0 || r.Get("disabled").Bool() ||
		r.Get("price.input").Float() != 0.15 || r.Get("price.output").Float() != 0.6 || r.Get("route_price.input").Float() != 0.15 ||
		r.Get("provider").Str != "openai" || r.Get("upstream_model").Str != "gpt-4o-mini" || r.Get("override").Type != 0 {
		t.Errorf("route: %s", r.Raw)
	}
	backup := mustAdmin(t, g, 200, "GET", "/admin/v1/stats/models", "").Get(`data.0.deployments.#(deployment=="oa-backup")`)
	if backup.Get("requests").Int() != 0 || backup.Get("latency_ms").Type != 0 || backup.Get("uptime").Type != 0 ||
		backup.Get("upstream_model").Str != "gpt-4o-mini-2024-07-18" {
		t.Errorf("an unused route: %s", backup.Raw)
	}
	send(1)
	r = route(100)
	resp, b := icGet(t, g.URL, "/v1/models/gpt-4o-mini", "Authorization", "Bearer sk-static")
	if resp.StatusCode != 200 {
		t.Fatalf("GET /v1/models/gpt-4o-mini: %d %s", resp.StatusCode, b)
	}
	public := gjson.GetBytes(b, `endpoints.#(deployment=="oa-primary").uptime`)
	if r.Get("uptime").Float() != 1 || public.Raw != r.Get("uptime").Raw {
		t.Errorf("at 100 requests: uptime %s, GET /v1/models/{id} %s; want 1 from both", r.Get("uptime").Raw, public.Raw)
	}

	mustAdmin(t, g, 200, "PATCH", "/admin/v1/deployments/oa-primary", `{"disabled":true}`)
	ds := mustAdmin(t, g, 200, "GET", "/admin/v1/stats/deployments", "")
	d := ds.Get(`data.#(deployment=="oa-primary")`)
	if ds.Get("data.#").Int() != 4 || ds.Get("next_cursor").Type != 0 || d.Get("requests").Int() != 100 || d.Get("uptime").Float() != 1 ||
		!d.Get("disabled").Bool() || !d.Get("override").Bool() || d.Get("config_disabled").Bool() || d.Get("deployment_circuit").Str != "closed" ||
		d.Get("models.#").Int() != 1 || d.Get("models.0.model").Str != "gpt-4o-mini" || !d.Get("models.0.disabled").Bool() {
		t.Errorf("stats/deployments after disabling oa-primary: %s", d.Raw)
	}
}
