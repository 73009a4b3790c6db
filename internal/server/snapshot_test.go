package server_test

import (
	"net/http"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	anthropicopt "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	openaiopt "github.com/openai/openai-go/v3/option"
)

// snapshotYAML: one model, each deployment renaming it upstream (upstream_model); only
// "mapped" says how a dated snapshot maps onto its upstream id.
const snapshotYAML = `
auth: {required: false}
models: [{id: claude-sonnet-4-5}]
deployments:
  - name: plain
    provider: bedrock
    dialect: anthropic
    base_url: "{{plain}}"
    routes: [{model: claude-sonnet-4-5, upstream_model: "anthropic.claude-sonnet-4-5-v1:0", price: {input: 1, output: 1}}]
  - name: mapped
    provider: bedrock-eu
    dialect: anthropic
    base_url: "{{mapped}}"
    routes:
      - model: claude-sonnet-4-5
        upstream_model: "anthropic.claude-sonnet-4-5-v1:0"
        upstream_snapshots: {"2025-09-29": "anthropic.claude-sonnet-4-5-20250929-v1:0"}
        upstream_snapshot_pattern: "eu.anthropic.claude-sonnet-4-5-{date}-v1:0"
        price: {input: 2, output: 2}
`

// TestDatedSnapshotUpstreamID: issue 11 item 2, R-MODEL-3, R-MODEL-6: a dated snapshot on a
// route with upstream_model and no mapping sends the caller's dated id (never
// "<upstream_model>-<date>"); a route with upstream_snapshots sends the mapped id for that
// date and the pattern for other dates; an undated request still sends upstream_model; every
// answer echoes the caller's string, over both official SDKs.
func TestDatedSnapshotUpstreamID(t *testing.T) {
	t.Parallel()
	g := startGateway(t, snapshotYAML, an("plain"), an("mapped"))
	ac, oc := g.anthropicClient(), g.openaiClient()
	call := func(model string) string {
		t.Helper()
		var hr *http.Response
		msg, err := ac.Messages.New(t.Context(), anthropic.MessageNewParams{Model: anthropic.Model(model), MaxTokens: 64,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello"))}}, anthropicopt.WithResponseInto(&hr))
		if err != nil {
			t.Fatalf("%s: %v", model, err)
		}
		if msg.Model != anthropic.Model(model) {
			t.Errorf("echoed %q, want the caller's %q", msg.Model, model)
		}
		return hr.Header.Get("X-Switchyard-Deployment")
	}
	last := func(dep string) string {
		t.Helper()
		rs := g.Fakes[dep].Requests()
		if len(rs) == 0 {
			t.Fatalf("%s was not called", dep)
		}
		return rs[len(rs)-1].Model
	}

	if dep := call("claude-sonnet-4-5-20250929"); dep != "plain" {
		t.Fatalf("served by %s, want plain (cheaper)", dep)
	}
	if got := last("plain"); got != "claude-sonnet-4-5-20250929" {
		t.Errorf("plain received %q, want the caller's dated id", got)
	}
	if dep := call("claude-sonnet-4-5"); dep != "plain" {
		t.Fatalf("served by %s", dep)
	}
	if got := last("plain"); got != "anthropic.claude-sonnet-4-5-v1:0" {
		t.Errorf("plain received %q for the undated id, want its upstream_model", got)
	}

	// Pin the mapped route (model:provider suffix, R-SUFFIX): the map for its date, the pattern
	// for another, over the OpenAI SDK (translated to the Anthropic dialect).
	for _, tc := range []struct{ model, want string }{
		{"claude-sonnet-4-5-2025-09-29:mapped", "anthropic.claude-sonnet-4-5-20250929-v1:0"},
		{"claude-sonnet-4-5-20250929:mapped", "anthropic.claude-sonnet-4-5-20250929-v1:0"},
		{"claude-sonnet-4-5-20260115:mapped", "eu.anthropic.claude-sonnet-4-5-20260115-v1:0"},
	} {
		var hr *http.Response
		cc, err := oc.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{Model: tc.model,
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello")}}, openaiopt.WithResponseInto(&hr))
		if err != nil {
			t.Fatalf("%s: %v", tc.model, err)
		}
		if cc.Model != tc.model || hr.Header.Get("X-Switchyard-Deployment") != "mapped" {
			t.Errorf("%s: echoed %q, served by %q", tc.model, cc.Model, hr.Header.Get("X-Switchyard-Deployment"))
		}
		if got := last("mapped"); got != tc.want {
			t.Errorf("%s: mapped received %q, want %q", tc.model, got, tc.want)
		}
		rec := g.generation(t, hr.Header.Get("X-Request-Id"))
		if len(rec.Attempts) != 1 || rec.Attempts[0].UpstreamModel != tc.want {
			t.Errorf("%s: audit attempts %+v, want upstream_model %q", tc.model, rec.Attempts, tc.want)
		}
	}
}
