package server_test

import (
	"math"
	"net/http"
	"testing"

	"github.com/openai/openai-go/v3"
	openaiopt "github.com/openai/openai-go/v3/option"

	fp "github.com/switchyard-gw/switchyard/internal/fakeprovider"
)

// TestAdminOverview (issue 23, docs/admin-api.md "Overview"): after traffic through the OpenAI
// SDK with a stored key and a static key (a failover, a success, a request refused by both
// deployments), GET /admin/v1/overview's totals equal what the call log adds up to (requests,
// failures, cost, tokens), its failures are by class, its top keys carry the stored key's name,
// and a bad window is a 400.
func TestAdminOverview(t *testing.T) {
	t.Parallel()
	g := startGateway(t, requestsCatalog, oa("oa-primary"), oa("oa-backup"), an("an-primary"), an("an-backup"))
	acct := mustAdmin(t, g, 201, "POST", "/admin/v1/accounts", `{"name":"Acme"}`).Get("id").Str
	key := mustAdmin(t, g, 201, "POST", "/admin/v1/keys", `{"account_id":"`+acct+`","name":"ci-key"}`)
	keyID, secret := key.Get("id").Str, key.Get("secret").Str
	params := openai.ChatCompletionNewParams{Model: "gpt-4o-mini", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello")}}
	var ids []string
	call := func(c openai.Client, wantErr bool) {
		t.Helper()
		var hr *http.Response
		_, err := c.Chat.Completions.New(t.Context(), params, openaiopt.WithResponseInto(&hr))
		if (err != nil) != wantErr {
			t.Fatalf("call: %v", err)
		}
		ids = append(ids, hr.Header.Get("X-Request-Id"))
	}
	keyClient, staticClient := g.openaiClient(openaiopt.WithAPIKey(secret)), g.openaiClient(openaiopt.WithAPIKey("sk-static"))
	g.Fakes["oa-primary"].Script(fp.Behavior{Kind: fp.KindStatus, Status: 503})
	call(keyClient, false)
	call(keyClient, false)
	call(staticClient, false)
	g.Fakes["oa-primary"].Script(fp.Behavior{Kind: fp.KindStatus, Status: 400})
	call(staticClient, true)
	for _, id := range ids {
		g.generation(t, id)
	}

	log := mustAdmin(t, g, 200, "GET", "/admin/v1/requests?limit=100", "").Get("data").Array()
	var cost float64
	var in, out, failed int64
	for _, row := range log {
		if row.Get("error_code").Str != "" {
			failed++
		}
		for _, a := range row.Get("attempts").Array() {
			cost += a.Get("cost_usd").Float()
			in += a.Get("tokens.input").Int() + a.Get("tokens.cached").Int() + a.Get("tokens.cache_write").Int()
			out += a.Get("tokens.output").Int()
		}
	}
	if len(log) != 4 || failed != 1 || cost == 0 || in == 0 || out == 0 {
		t.Fatalf("call log: %d rows, %d failed, cost %v, tokens %d/%d", len(log), failed, cost, in, out)
	}
	for _, w := range []string{"1h", "24h", "7d", ""} {
		o := mustAdmin(t, g, 200, "GET", "/admin/v1/overview?window="+w, "")
		tot := o.Get("totals")
		if tot.Get("requests").Int() != 4 || tot.Get("errors").Int() != failed || math.Abs(tot.Get("cost_usd").Float()-cost) > 1e-9 ||
			tot.Get("input_tokens").Int() != in || tot.Get("output_tokens").Int() != out {
			t.Errorf("window %q totals %s; the call log: 4 requests, %d failed, cost %v, tokens %d/%d", w, tot.Raw, failed, cost, in, out)
		}
		var sum int64
		for _, p := range o.Get("series").Array() {
			sum += p.Get("requests").Int()
		}
		if sum != 4 {
			t.Errorf("window %q: the series add up to %d requests", w, sum)
		}
		if c := o.Get("classes").Array(); len(c) != 1 || c[0].Get("requests").Int() != 1 || c[0].Get("class").Str == "" {
			t.Errorf("window %q classes %s", w, o.Get("classes").Raw)
		}
		if k := o.Get("top_keys").Array(); len(k) != 2 || k[0].Get("name").Str != keyID || k[0].Get("requests").Int() != 2 {
			t.Errorf("window %q top keys %s", w, o.Get("top_keys").Raw)
		}
		if o.Get("key_names."+keyID).Str != "ci-key" || o.Get("key_names.static").Str != "static" {
			t.Errorf("window %q key names %s", w, o.Get("key_names").Raw)
		}
		if m := o.Get("top_models").Array(); len(m) != 1 || m[0].Get("name").Str != "gpt-4o-mini" {
			t.Errorf("window %q top models %s", w, o.Get("top_models").Raw)
		}
		if d := o.Get("top_deployments.0"); d.Get("name").Str != "oa-primary" || d.Get("requests").Int() != 3 || d.Get("errors").Int() != 1 {
			t.Errorf("window %q top deployments %s", w, o.Get("top_deployments").Raw)
		}
	}
	mustAdmin(t, g, 400, "GET", "/admin/v1/overview?window=2h", "")
}
