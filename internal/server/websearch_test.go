package server_test

import (
	"context"
	"math"
	"net/http"
	"slices"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	anthropicopt "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/tidwall/gjson"

	"github.com/switchyard-gw/switchyard/internal/audit"
	"github.com/switchyard-gw/switchyard/internal/fakeprovider"
)

// webSearchPriced: Claude Sonnet 4.5 with a configured web_search price (Anthropic's 10 USD per
// 1,000 searches), the same model as claude-cat priced by the built-in catalog alone, and
// gpt-4o-mini on a deployment that serves the Responses API (pass-through), with web_search.
const webSearchPriced = `
auth: {required: true}
routing:
  timeouts: {headers: 5s, stream_headers: 5s, stream_idle: 5s}
models:
  - {id: claude-sonnet-4-5, max_output_tokens: 1000}
  - {id: claude-cat, max_output_tokens: 1000}
  - {id: gpt-4o-mini, max_output_tokens: 1000}
deployments:
  - name: an
    provider: anthropic
    dialect: anthropic
    base_url: "{{an}}"
    routes:
      - {model: claude-sonnet-4-5, price: {input: 3, output: 15, web_search: 0.01}}
      - {model: claude-cat, upstream_model: claude-sonnet-4-5-20250929}
  - name: rs
    provider: openai
    dialect: openai
    responses: true
    base_url: "{{rs}}"
    routes: [{model: gpt-4o-mini, price: {input: 0.15, output: 0.6, web_search: 0.01}}]
admin:
  token: adm-secret-token
`

// TestWebSearchSettle: server-side web searches the provider reports are billed per call at the
// price's web_search (docs/pricing.md "Server-tool calls"), in integer micro-USD, in the ledger
// (the settle entry and the prepaid balance) and in the audit (cost_usd, the web_search cost
// line, tokens.web_search_requests), streamed and not:
//   - Anthropic's usage.server_tool_use.web_search_requests (3 searches, 1,000 input and 100
//     output tokens at {3, 15, web_search 0.01}: 3,000 + 1,500 + 30,000 = 34,500 micro-USD),
//     through the Anthropic SDK (passed through), the OpenAI SDK's chat completions and
//     Responses (translated); at a configured price and at the built-in catalog's;
//   - the Responses API's web_search_call output items, passed through (1 search, 1,000 input
//     and 100 output tokens at {0.15, 0.6, web_search 0.01}: 150 + 60 + 10,000 = 10,210).
func TestWebSearchSettle(t *testing.T) {
	t.Parallel()
	g := startGateway(t, webSearchPriced, an("an"), oa("rs"))
	g.Fakes["an"].SetDefault(fakeprovider.Behavior{Usage: &fakeprovider.ScriptedUsage{Input: 1000, Output: 100, WebSearchRequests: 3}})
	g.Fakes["rs"].SetDefault(fakeprovider.Behavior{HostedToolCall: true, Usage: &fakeprovider.ScriptedUsage{Input: 1000, Output: 100}})
	acct := mustAdmin(t, g, 201, "POST", "/admin/v1/accounts", `{"name":"w","settings":{"billing":"prepaid"}}`).Get("id").String()
	secret := mustAdmin(t, g, 201, "POST", "/admin/v1/keys", `{"account_id":"`+acct+`","name":"k","settings":{}}`).Get("secret").String()
	const credit = 10_000_000 // 10 USD
	mustAdmin(t, g, 200, "POST", "/admin/v1/accounts/"+acct+"/credits", `{"amount_usd":10}`)

	oc := openai.NewClient(option.WithBaseURL(g.URL+"/v1/"), option.WithAPIKey(secret), option.WithMaxRetries(0))
	ac := anthropic.NewClient(anthropicopt.WithBaseURL(g.URL), anthropicopt.WithAPIKey(secret), anthropicopt.WithMaxRetries(0))
	ctx := context.Background()
	viaChat := func(model string, stream bool) (string, error) {
		var raw *http.Response
		p := openai.ChatCompletionNewParams{Model: model, MaxTokens: openai.Int(200),
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Search the web")}}
		if !stream {
			_, err := oc.Chat.Completions.New(ctx, p, option.WithResponseInto(&raw))
			return raw.Header.Get("X-Request-Id"), err
		}
		s := oc.Chat.Completions.NewStreaming(ctx, p, option.WithResponseInto(&raw))
		for s.Next() {
		}
		return raw.Header.Get("X-Request-Id"), s.Err()
	}
	viaResponses := func(model string, stream bool) (string, error) {
		var raw *http.Response
		p := responses.ResponseNewParams{Model: model, MaxOutputTokens: openai.Int(200),
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Search the web")}}
		if !stream {
			_, err := oc.Responses.New(ctx, p, option.WithResponseInto(&raw))
			return raw.Header.Get("X-Request-Id"), err
		}
		s := oc.Responses.NewStreaming(ctx, p, option.WithResponseInto(&raw))
		for s.Next() {
		}
		return raw.Header.Get("X-Request-Id"), s.Err()
	}
	viaAnthropic := func(model string, stream bool) (string, error) {
		var raw *http.Response
		p := anthropic.MessageNewParams{Model: anthropic.Model(model), MaxTokens: 200,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Search the web"))}}
		if !stream {
			_, err := ac.Messages.New(ctx, p, anthropicopt.WithResponseInto(&raw))
			return raw.Header.Get("X-Request-Id"), err
		}
		s := ac.Messages.NewStreaming(ctx, p, anthropicopt.WithResponseInto(&raw))
		for s.Next() {
		}
		return raw.Header.Get("X-Request-Id"), s.Err()
	}
	claude := []audit.CostLine{line("input", 1000, 3, 0.003), line("output", 100, 15, 0.0015), callLine(3, 0.01, 0.03)}
	mini := []audit.CostLine{line("input", 1000, 0.15, 0.00015), line("output", 100, 0.6, 0.00006), callLine(1, 0.01, 0.01)}
	var settledTotal int64
	for _, tc := range []struct {
		name     string
		send     func(string, bool) (string, error)
		model    string
		micro    int64
		searches int64
		source   string
		lines    []audit.CostLine
	}{
		{"claude via the Anthropic SDK", viaAnthropic, "claude-sonnet-4-5", 34_500, 3, "config", claude},
		{"claude via OpenAI chat", viaChat, "claude-sonnet-4-5", 34_500, 3, "config", claude},
		{"claude via OpenAI Responses", viaResponses, "claude-sonnet-4-5", 34_500, 3, "config", claude},
		{"claude at the catalog's price", viaAnthropic, "claude-cat", 34_500, 3, "catalog", claude},
		{"gpt-4o-mini via Responses, passed through", viaResponses, "gpt-4o-mini", 10_210, 1, "config", mini},
	} {
		for _, stream := range []bool{false, true} {
			rid, err := tc.send(tc.model, stream)
			if err != nil || rid == "" {
				t.Fatalf("%s stream=%v: %v (request id %q)", tc.name, stream, err, rid)
			}
			rec := g.generation(t, rid)
			a := rec.Attempts[len(rec.Attempts)-1]
			if a.CostUSD != float64(tc.micro)/1e6 || a.Tokens.WebSearchRequests != tc.searches {
				t.Errorf("%s stream=%v: audit cost_usd %v with %d web searches, want %v with %d", tc.name, stream,
					a.CostUSD, a.Tokens.WebSearchRequests, float64(tc.micro)/1e6, tc.searches)
			}
			js, err := rec.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			last := gjson.GetBytes(js, "attempts.@reverse.0")
			var got []audit.CostLine
			for _, l := range last.Get("price.lines").Array() {
				got = append(got, audit.CostLine{Kind: l.Get("kind").String(), Count: l.Get("count").Int(), PerMTokUSD: l.Get("usd_per_mtok").Float(),
					PerCallUSD: l.Get("usd_per_call").Float(), USD: math.Round(l.Get("usd").Float()*1e6) / 1e6})
			}
			if !slices.Equal(got, tc.lines) || last.Get("price.source").String() != tc.source || last.Get("price.web_search").Float() != 0.01 ||
				last.Get("tokens.web_search_requests").Int() != tc.searches {
				t.Errorf("%s stream=%v: audit attempt %s; want lines %+v, source %s, web_search 0.01", tc.name, stream, last.Raw, tc.lines, tc.source)
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

func callLine(n int64, perCall, usd float64) audit.CostLine {
	return audit.CostLine{Kind: "web_search", Count: n, PerCallUSD: perCall, USD: usd}
}
