package server_test

import (
	"context"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	anthropicopt "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/tidwall/gjson"

	"github.com/switchyard-gw/switchyard/internal/audit"
	"github.com/switchyard-gw/switchyard/internal/fakeprovider"
)

// cachePriced: Claude Sonnet 4.5 at issue 28's price with cache prices, gpt-4o-mini at OpenAI's
// list price with its cache-read price; authentication and the admin API on.
const cachePriced = `
auth: {required: true}
routing:
  timeouts: {headers: 5s, stream_headers: 5s, stream_idle: 5s}
models:
  - id: claude-sonnet-4-5
    max_output_tokens: 1000
  - id: gpt-4o-mini
    max_output_tokens: 1000
deployments:
  - name: an
    provider: anthropic
    dialect: anthropic
    base_url: "{{an}}"
    routes: [{model: claude-sonnet-4-5, price: {input: 3, output: 15, cache_read: 0.3, cache_write: 3.75}}]
  - name: oa
    provider: openai
    dialect: openai
    base_url: "{{oa}}"
    routes: [{model: gpt-4o-mini, price: {input: 0.15, output: 0.6, cache_read: 0.075}}]
admin:
  token: adm-secret-token
`

// TestCachePricesSettle is issue 28's "Done when": a Claude request with 1,000 uncached, 9,000
// cache-read, 2,000 cache-write and 100 output tokens at {input 3, output 15, cache_read 0.3,
// cache_write 3.75} settles at exactly 0.0147 USD, in the ledger (the settle entry and the
// prepaid balance) and in the audit (cost_usd and its cost lines), streamed and not, through
// both surfaces with the official SDKs (the OpenAI surface translated, the Anthropic one passed
// through). OpenAI-wire cached tokens settle at their cache_read price the same way: 1,000
// uncached + 9,000 cached + 100 output at {0.15, 0.6, cache_read 0.075} is 885 micro-USD.
func TestCachePricesSettle(t *testing.T) {
	t.Parallel()
	g := startGateway(t, cachePriced, an("an"), oa("oa"))
	g.Fakes["an"].SetDefault(fakeprovider.Behavior{Usage: &fakeprovider.ScriptedUsage{Input: 1000, CacheRead: 9000, CacheWrite: 2000, Output: 100}})
	g.Fakes["oa"].SetDefault(fakeprovider.Behavior{Usage: &fakeprovider.ScriptedUsage{Input: 1000, CacheRead: 9000, Output: 100}})
	acct := mustAdmin(t, g, 201, "POST", "/admin/v1/accounts", `{"name":"c","settings":{"billing":"prepaid"}}`).Get("id").String()
	secret := mustAdmin(t, g, 201, "POST", "/admin/v1/keys", `{"account_id":"`+acct+`","name":"k","settings":{}}`).Get("secret").String()
	const credit = 10_000_000 // 10 USD
	mustAdmin(t, g, 200, "POST", "/admin/v1/accounts/"+acct+"/credits", `{"amount_usd":10}`)

	oc := openai.NewClient(option.WithBaseURL(g.URL+"/v1/"), option.WithAPIKey(secret), option.WithMaxRetries(0))
	ac := anthropic.NewClient(anthropicopt.WithBaseURL(g.URL), anthropicopt.WithAPIKey(secret), anthropicopt.WithMaxRetries(0))
	ctx := context.Background()
	viaOpenAI := func(model string, stream bool) (string, error) {
		var raw *http.Response
		p := openai.ChatCompletionNewParams{Model: model, MaxTokens: openai.Int(200),
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hi")}}
		if !stream {
			_, err := oc.Chat.Completions.New(ctx, p, option.WithResponseInto(&raw))
			return raw.Header.Get("X-Request-Id"), err
		}
		s := oc.Chat.Completions.NewStreaming(ctx, p, option.WithResponseInto(&raw))
		for s.Next() {
		}
		return raw.Header.Get("X-Request-Id"), s.Err()
	}
	viaAnthropic := func(model string, stream bool) (string, error) {
		var raw *http.Response
		p := anthropic.MessageNewParams{Model: anthropic.Model(model), MaxTokens: 200,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hi"))}}
		if !stream {
			_, err := ac.Messages.New(ctx, p, anthropicopt.WithResponseInto(&raw))
			return raw.Header.Get("X-Request-Id"), err
		}
		s := ac.Messages.NewStreaming(ctx, p, anthropicopt.WithResponseInto(&raw))
		for s.Next() {
		}
		return raw.Header.Get("X-Request-Id"), s.Err()
	}
	var settledTotal int64
	for _, tc := range []struct {
		name  string
		send  func(string, bool) (string, error)
		model string
		micro int64
		lines []audit.CostLine
	}{
		{"claude via the OpenAI SDK", viaOpenAI, "claude-sonnet-4-5", 14_700, claudeLines},
		{"claude via the Anthropic SDK", viaAnthropic, "claude-sonnet-4-5", 14_700, claudeLines},
		{"gpt-4o-mini via the OpenAI SDK", viaOpenAI, "gpt-4o-mini", 885, miniLines},
		{"gpt-4o-mini via the Anthropic SDK", viaAnthropic, "gpt-4o-mini", 885, miniLines},
	} {
		for _, stream := range []bool{false, true} {
			rid, err := tc.send(tc.model, stream)
			if err != nil || rid == "" {
				t.Fatalf("%s stream=%v: %v (request id %q)", tc.name, stream, err, rid)
			}
			rec := g.generation(t, rid)
			a := rec.Attempts[len(rec.Attempts)-1]
			if a.CostUSD != float64(tc.micro)/1e6 {
				t.Errorf("%s stream=%v: audit cost_usd %v, want %v", tc.name, stream, a.CostUSD, float64(tc.micro)/1e6)
			}
			js, err := rec.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			var got []audit.CostLine
			for _, l := range gjson.GetBytes(js, "attempts.@reverse.0.price.lines").Array() {
				got = append(got, audit.CostLine{Kind: l.Get("kind").String(), Count: l.Get("count").Int(),
					PerMTokUSD: l.Get("usd_per_mtok").Float(), USD: math.Round(l.Get("usd").Float()*1e6) / 1e6})
			}
			if !slices.Equal(got, tc.lines) || gjson.GetBytes(js, "attempts.@reverse.0.price.source").String() != "config" {
				t.Errorf("%s stream=%v: audit price %s; want lines %+v, source config", tc.name, stream,
					gjson.GetBytes(js, "attempts.@reverse.0.price").Raw, tc.lines)
			}
			settle := waitSettle(t, g, acct, rid)
			if amount := settle.Get("cost_micro_usd").Int(); amount != tc.micro {
				t.Errorf("%s stream=%v: ledger settle %d micro-USD, want %d (%s)", tc.name, stream, amount, tc.micro, settle.Raw)
			}
			settledTotal += tc.micro
		}
	}
	ledger := mustAdmin(t, g, 200, "GET", "/admin/v1/accounts/"+acct+"/ledger", "")
	if bal := microOf(t, ledger.Get("balance_usd").Raw); bal != credit-settledTotal {
		t.Errorf("balance %d micro-USD, want %d - %d", bal, credit, settledTotal)
	}
}

var (
	claudeLines = []audit.CostLine{line("input", 1000, 3, 0.003), line("cache_read", 9000, 0.3, 0.0027),
		line("cache_write", 2000, 3.75, 0.0075), line("output", 100, 15, 0.0015)}
	miniLines = []audit.CostLine{line("input", 1000, 0.15, 0.00015), line("cache_read", 9000, 0.075, 0.000675), line("output", 100, 0.6, 0.00006)}
)

func line(kind string, n int64, price, usd float64) audit.CostLine {
	return audit.CostLine{Kind: kind, Count: n, PerMTokUSD: price, USD: usd}
}

// waitSettle polls an account's ledger until the settle entry of request rid is there.
func waitSettle(t *testing.T, g *gateway, acct, rid string) gjson.Result {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		for _, e := range mustAdmin(t, g, 200, "GET", "/admin/v1/accounts/"+acct+"/ledger", "").Get("entries").Array() {
			if e.Get("request_id").String() == rid && e.Get("kind").String() == "settle" {
				return e
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no settle entry for %s", rid)
		}
		time.Sleep(5 * time.Millisecond) // polling the store with a deadline, not synchronising
	}
}

// reservePriced: three models of the same id length, one request each with the same body: at
// plain input and output prices; with cache prices (one-hour writes at 6, the highest); with a
// long-context tier whose threshold any request passes.
const reservePriced = `
auth: {required: true}
routing:
  timeouts: {headers: 5s, stream_headers: 5s, stream_idle: 5s}
models:
  - {id: m-plain, max_output_tokens: 100}
  - {id: m-cache, max_output_tokens: 100}
  - {id: m-tierx, max_output_tokens: 100}
deployments:
  - name: an
    provider: anthropic
    dialect: anthropic
    base_url: "{{an}}"
    routes:
      - {model: m-plain, price: {input: 3, output: 15}}
      - {model: m-cache, price: {input: 3, output: 15, cache_read: 0.3, cache_write: 3.75, cache_write_1h: 6}}
      - {model: m-tierx, price: {input: 3, output: 15, cache_read: 0.3, cache_write: 3.75, tiers: [{above_input_tokens: 1, input: 30, output: 150}]}}
admin:
  token: adm-secret-token
`

// TestReserveNeverUndershootsForCache: the reserve charges every estimated input token at the
// highest input-side price of the tier the estimate reaches (docs/pricing.md): with cache
// prices, at the one-hour write price (6, twice the plain reserve's input part at 3); above a
// tier's threshold, at the tier's input and output prices (30 and 150). The settle charges the
// real split (TestCachePricesSettle).
func TestReserveNeverUndershootsForCache(t *testing.T) {
	t.Parallel()
	g := startGateway(t, reservePriced, an("an"))
	acct := mustAdmin(t, g, 201, "POST", "/admin/v1/accounts", `{"name":"r","settings":{"billing":"prepaid"}}`).Get("id").String()
	secret := mustAdmin(t, g, 201, "POST", "/admin/v1/keys", `{"account_id":"`+acct+`","name":"k","settings":{}}`).Get("secret").String()
	mustAdmin(t, g, 200, "POST", "/admin/v1/accounts/"+acct+"/credits", `{"amount_usd":10}`)
	ac := anthropic.NewClient(anthropicopt.WithBaseURL(g.URL), anthropicopt.WithAPIKey(secret), anthropicopt.WithMaxRetries(0))
	reserved := map[string]int64{}
	for _, model := range []string{"m-plain", "m-cache", "m-tierx"} {
		var raw *http.Response
		_, err := ac.Messages.New(context.Background(), anthropic.MessageNewParams{Model: anthropic.Model(model), MaxTokens: 100,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("How much is this reserved at?"))}},
			anthropicopt.WithResponseInto(&raw))
		if err != nil {
			t.Fatalf("%s: %v", model, err)
		}
		rec := g.generation(t, raw.Header.Get("X-Request-Id"))
		reserved[model] = int64(math.Round(rec.Attempts[0].ReservedMaxUSD * 1e6))
	}
	in3 := reserved["m-plain"] - 100*15 // input estimate x 3
	if in3 <= 0 || in3%3 != 0 {
		t.Fatalf("plain reserve %d micro-USD: not input x 3 + 100 x 15", reserved["m-plain"])
	}
	if got, want := reserved["m-cache"], 2*in3+100*15; got != want {
		t.Errorf("cache-priced reserve %d micro-USD, want %d (input at the one-hour write price 6)", got, want)
	}
	if got, want := reserved["m-tierx"], 10*in3+100*150; got != want {
		t.Errorf("tiered reserve %d micro-USD, want %d (the tier's 30 and 150)", got, want)
	}
}

// TestTierSettle: an attempt whose total input is above a tier's threshold is billed at the
// tier's prices for every token (its cache_read left out keeps the base 0.3), one at the
// threshold at the base prices; the audit names the tier applied.
func TestTierSettle(t *testing.T) {
	t.Parallel()
	g := startGateway(t, strings.Replace(reservePriced, "above_input_tokens: 1,", "above_input_tokens: 10000,", 1), an("an"))
	acct := mustAdmin(t, g, 201, "POST", "/admin/v1/accounts", `{"name":"r","settings":{"billing":"prepaid"}}`).Get("id").String()
	secret := mustAdmin(t, g, 201, "POST", "/admin/v1/keys", `{"account_id":"`+acct+`","name":"k","settings":{}}`).Get("secret").String()
	mustAdmin(t, g, 200, "POST", "/admin/v1/accounts/"+acct+"/credits", `{"amount_usd":10}`)
	ac := anthropic.NewClient(anthropicopt.WithBaseURL(g.URL), anthropicopt.WithAPIKey(secret), anthropicopt.WithMaxRetries(0))
	for _, tc := range []struct {
		uncached    int
		micro, tier int64
	}{
		{5000, 5000*3 + 5000*0.3 + 100*15, 0},        // 10,000 input tokens: not above
		{5001, 5001*30 + 5000*0.3 + 100*150, 10_000}, // 10,001: every token at the tier
	} {
		g.Fakes["an"].Script(fakeprovider.Behavior{Usage: &fakeprovider.ScriptedUsage{Input: tc.uncached, CacheRead: 5000, Output: 100}})
		var raw *http.Response
		_, err := ac.Messages.New(context.Background(), anthropic.MessageNewParams{Model: "m-tierx", MaxTokens: 100,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hi"))}}, anthropicopt.WithResponseInto(&raw))
		if err != nil {
			t.Fatal(err)
		}
		rid := raw.Header.Get("X-Request-Id")
		a := g.generation(t, rid).Attempts[0]
		if int64(math.Round(a.CostUSD*1e6)) != tc.micro || a.Price == nil || a.Price.TierAboveInputTokens != tc.tier {
			t.Errorf("%d uncached: cost %v USD, price %+v; want %d micro-USD at tier %d", tc.uncached, a.CostUSD, a.Price, tc.micro, tc.tier)
		}
		if s := waitSettle(t, g, acct, rid); s.Get("cost_micro_usd").Int() != tc.micro {
			t.Errorf("%d uncached: settle %s, want %d micro-USD", tc.uncached, s.Raw, tc.micro)
		}
	}
}

// catalogPriced: no price and no context window anywhere; the routes take the built-in
// catalog's (gpt-4o-mini on OpenAI through a dated upstream id).
const catalogPriced = `
auth: {required: false}
models:
  - {id: claude-sonnet-4-5}
  - {id: gpt-4o-mini}
deployments:
  - name: an
    provider: anthropic
    dialect: anthropic
    base_url: "{{an}}"
    routes: [{model: claude-sonnet-4-5}]
  - name: oa
    provider: openai
    dialect: openai
    base_url: "{{oa}}"
    routes: [{model: gpt-4o-mini, upstream_model: gpt-4o-mini-2024-07-18}]
`

// TestModelsListPricing: GET /v1/models entries carry pricing (USD per million tokens: input,
// output, cache_read, cache_write; web_search USD per search) and context_length, in both SDK shapes, here from the
// built-in price catalog; GET /v1/models/{id} shows each endpoint's price and its source. With
// pricing.catalog false they are absent (unpriced), and a request costs nothing.
func TestModelsListPricing(t *testing.T) {
	t.Parallel()
	g := startGateway(t, catalogPriced, an("an"), oa("oa"))
	get := func(g *gateway, path string, anthropicShape bool) gjson.Result {
		req, _ := http.NewRequest(http.MethodGet, g.URL+path, nil)
		if anthropicShape {
			req.Header.Set("anthropic-version", "2023-06-01")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return gjson.ParseBytes(b)
	}
	for _, shape := range []bool{false, true} {
		l := get(g, "/v1/models", shape)
		sonnet := l.Get(`data.#(id=="claude-sonnet-4-5")`)
		if sonnet.Get("pricing").Raw != `{"input":3,"output":15,"cache_read":0.3,"cache_write":3.75,"web_search":0.01,"source":"catalog"}` || sonnet.Get("context_length").Int() != 200000 {
			t.Errorf("anthropic shape %v: sonnet %s", shape, sonnet.Raw)
		}
		mini := l.Get(`data.#(id=="gpt-4o-mini")`)
		if mini.Get("pricing").Raw != `{"input":0.15,"output":0.6,"cache_read":0.075,"cache_write":0.15,"web_search":0.01,"source":"catalog"}` || mini.Get("context_length").Int() != 128000 {
			t.Errorf("anthropic shape %v: gpt-4o-mini %s", shape, mini.Raw)
		}
	}
	ep := get(g, "/v1/models/gpt-4o-mini", false).Get("endpoints.0")
	if ep.Get("price_source").String() != "catalog" || ep.Get("pricing.input").Float() != 0.15 || ep.Get("context_length").Int() != 128000 {
		t.Errorf("endpoint %s", ep.Raw)
	}

	// POST /v1/route shows each candidate's price, context window and their sources.
	_, b := icPost(t, g.URL, "/v1/route", `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"Hi"}]}`)
	c := gjson.GetBytes(b, "candidates.0")
	if c.Get("price_source").String() != "catalog" || c.Get("pricing.cache_read").Float() != 0.3 ||
		c.Get("context_window").Int() != 200000 || c.Get("context_window_source").String() != "catalog" {
		t.Errorf("route candidate %s", c.Raw)
	}

	// A request bills at the catalog's prices, cache reads and writes included.
	usage := fakeprovider.Behavior{Usage: &fakeprovider.ScriptedUsage{Input: 1000, CacheRead: 9000, CacheWrite: 2000, Output: 100}}
	costOf := func(g *gateway) (float64, string) {
		g.Fakes["an"].Script(usage)
		var raw *http.Response
		ac := anthropic.NewClient(anthropicopt.WithBaseURL(g.URL), anthropicopt.WithAPIKey("x"), anthropicopt.WithMaxRetries(0))
		if _, err := ac.Messages.New(context.Background(), anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 100,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hi"))}}, anthropicopt.WithResponseInto(&raw)); err != nil {
			t.Fatal(err)
		}
		a := g.generation(t, raw.Header.Get("X-Request-Id")).Attempts[0]
		src := ""
		if a.Price != nil {
			src = a.Price.Source
		}
		return a.CostUSD, src
	}
	if c, src := costOf(g); c != 0.0147 || src != "catalog" {
		t.Errorf("catalog-priced request cost %v USD from %q, want 0.0147 from catalog", c, src)
	}

	off := startGateway(t, catalogPriced+"pricing: {catalog: false}\n", an("an"), oa("oa"))
	if c, src := costOf(off); c != 0 || src != "" {
		t.Errorf("catalog off: cost %v USD from %q, want unpriced", c, src)
	}
	if l := get(off, "/v1/models", false); l.Get("data.0.pricing").Exists() || l.Get("data.0.context_length").Exists() {
		t.Errorf("catalog off: %s", l.Raw)
	}
	if ep := get(off, "/v1/models/gpt-4o-mini", false).Get("endpoints.0"); ep.Get("price_source").String() != "none" || ep.Get("pricing").Raw != "null" {
		t.Errorf("catalog off endpoint %s", ep.Raw)
	}
}
