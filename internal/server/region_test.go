package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	anthropicopt "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	openaiopt "github.com/openai/openai-go/v3/option"
	"github.com/tidwall/gjson"

	fp "github.com/switchyard-gw/switchyard/internal/fakeprovider"
)

// regionYAML: model m1 is served by a (us, cheapest), b (eu) and c (us, dearest); m2 by the
// same deployments with c cheaper than b. c's region comes from its route, the others' from
// the deployment.
const regionYAML = `
auth: {required: false}
models: [{id: m1}, {id: m2}]
deployments:
  - name: a
    provider: pa
    dialect: openai
    region: us
    base_url: "{{a}}"
    routes: [{model: m1, price: {input: 1, output: 1}}, {model: m2, price: {input: 1, output: 1}}]
  - name: b
    provider: pb
    dialect: openai
    region: eu
    base_url: "{{b}}"
    routes: [{model: m1, price: {input: 2, output: 2}}, {model: m2, price: {input: 3, output: 3}}]
  - name: c
    provider: pc
    dialect: anthropic
    base_url: "{{c}}"
    routes: [{model: m1, region: us, price: {input: 3, output: 3}}, {model: m2, region: us, price: {input: 2, output: 2}}]
`

// TestRegionFailover: issue 11 item 6, seed 003: a rate limit or an authentication failure at a
// moves to another target in the same region first (c, though b is cheaper); an unavailable or
// timeout failure moves to another region first (b, though c is cheaper); without a target of
// the wanted kind the plan order goes on. POST /v1/route shows each candidate's region and the
// rule. Calls go through both official SDKs; attempts in the audit show the order.
func TestRegionFailover(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, model string
		fail        fp.Behavior
		stream      bool
		want        string // deployments attempted, in order
	}{
		{"429 stays in us", "m1", fp.Behavior{Kind: fp.KindStatus, Status: 429}, false, "a,c"},
		{"401 stays in us", "m1", fp.Behavior{Kind: fp.KindStatus, Status: 401}, true, "a,c"},
		{"503 leaves us", "m2", fp.Behavior{Kind: fp.KindStatus, Status: 503}, false, "a,b"},
		{"reset leaves us", "m2", fp.Behavior{Kind: fp.KindReset}, true, "a,b"},
		{"503 in plan order when it is already another region", "m1", fp.Behavior{Kind: fp.KindStatus, Status: 503}, false, "a,b"},
		{"429 in plan order when it is already the same region", "m2", fp.Behavior{Kind: fp.KindStatus, Status: 429}, true, "a,c"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := startGateway(t, regionYAML, oa("a"), oa("b"), an("c"))
			g.Fakes["a"].Script(tc.fail)
			var hr *http.Response
			if tc.stream {
				ac := g.anthropicClient()
				st := ac.Messages.NewStreaming(t.Context(), anthropic.MessageNewParams{Model: anthropic.Model(tc.model), MaxTokens: 32,
					Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello"))}}, anthropicopt.WithResponseInto(&hr))
				var msg anthropic.Message
				for st.Next() {
					if err := msg.Accumulate(st.Current()); err != nil {
						t.Fatal(err)
					}
				}
				if err := st.Err(); err != nil {
					t.Fatal(err)
				}
			} else {
				oc := g.openaiClient()
				if _, err := oc.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{Model: tc.model,
					Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello")}}, openaiopt.WithResponseInto(&hr)); err != nil {
					t.Fatal(err)
				}
			}
			rec := g.generation(t, hr.Header.Get("X-Request-Id"))
			var got []string
			for _, a := range rec.Attempts {
				got = append(got, a.Deployment)
			}
			if strings.Join(got, ",") != tc.want {
				t.Errorf("attempts %v, want %s", got, tc.want)
			}
		})
	}

	t.Run("plan", func(t *testing.T) {
		t.Parallel()
		g := startGateway(t, regionYAML, oa("a"), oa("b"), an("c"))
		resp, b := icPost(t, g.URL, "/v1/route", `{"model":"m1","messages":[{"role":"user","content":"Hi"}]}`)
		if resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
		if got := gjson.GetBytes(b, "candidates.#.region").String(); got != `["us","eu","us"]` {
			t.Errorf("regions %s", got)
		}
		if got := gjson.GetBytes(b, "failover").Raw; got != `{"same_region_first":["upstream_rate_limited","upstream_auth"],"other_region_first":["upstream_error","upstream_timeout"]}` {
			t.Errorf("failover %s", got)
		}
	})
}
