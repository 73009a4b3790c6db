package server_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/tidwall/gjson"

	"github.com/switchyard-gw/switchyard/internal/audit"
	fp "github.com/switchyard-gw/switchyard/internal/fakeprovider"
)

// gpt-5 on two Azure OpenAI resources that serve the Responses API (responses left to its
// default): azure-east on Azure's v1 API, azure-west on a preview api_version; gpt-4o on a GA
// api_version (2024-10-21), which has no Responses route, so its default is false.
const azureResponses = `
auth: {required: false}
routing:
  timeouts: {headers: 5s, stream_headers: 5s, stream_idle: 5s}
  circuit: {failures: 100}
models:
  - id: gpt-5
  - id: gpt-4o
deployments:
  - name: azure-east
    provider: azure
    dialect: openai
    platform: azure
    base_url: "{{azure-east}}"
    api_key: east-key
    routes: [{model: gpt-5, upstream_model: gpt-5-east, price: {input: 1.25, output: 10}}]
  - name: azure-west
    provider: azure-west
    dialect: openai
    platform: azure
    base_url: "{{azure-west}}"
    api_key: west-key
    azure: {api_version: "2025-04-01-preview"}
    routes: [{model: gpt-5, upstream_model: gpt-5-west, price: {input: 1.5, output: 12}}]
  - name: azure-ga
    provider: azure-ga
    dialect: openai
    platform: azure
    base_url: "{{azure-ga}}"
    api_key: ga-key
    azure: {api_version: "2024-10-21"}
    routes: [{model: gpt-4o, upstream_model: gpt-4o-prod, price: {input: 2.5, output: 10}}]
`

// startAzureResponses starts three Azure emulators (each requiring its key and knowing only its
// deployment) and a gateway on azureResponses.
func startAzureResponses(t *testing.T) (*gateway, map[string]*fp.Azure) {
	t.Helper()
	yaml := azureResponses
	azs := map[string]*fp.Azure{}
	for name, dep := range map[string][2]string{"azure-east": {"east-key", "gpt-5-east"}, "azure-west": {"west-key", "gpt-5-west"},
		"azure-ga": {"ga-key", "gpt-4o-prod"}} {
		az := fp.NewAzure(name)
		az.RequireKey(dep[0])
		az.SetDeployments(dep[1])
		srv := httptest.NewServer(az)
		t.Cleanup(srv.Close)
		yaml = strings.ReplaceAll(yaml, "{{"+name+"}}", srv.URL)
		azs[name] = az
	}
	return startGateway(t, yaml), azs
}

// TestAzureResponsesPassThrough: the official openai-go Responses client through the gateway to
// Azure (issue 22, contract.md round 3): on the v1 API the request goes to
// /openai/v1/responses, on a preview api_version to /openai/responses?api-version=V, as it came
// (the hosted tool included) with only the model rewritten to the Azure deployment name, with
// Azure's api-key; the answer, streamed and not, carries the caller's model and is billed from
// response.completed; a failure before the first output (an in-stream error after
// response.created, a 503) fails over to the other resource. A GA api_version translates.
func TestAzureResponsesPassThrough(t *testing.T) {
	g, azs := startAzureResponses(t)
	east, west, ga := azs["azure-east"], azs["azure-west"], azs["azure-ga"]
	c := g.openaiClient()

	// Non-stream, served by azure-east's v1 API.
	var raw *http.Response
	resp, err := c.Responses.New(t.Context(), rsParams("gpt-5"), option.WithResponseInto(&raw))
	if err != nil {
		t.Fatalf("non-stream: %v", err)
	}
	if resp.OutputText() != "Hello from azure-east." || resp.Model != "gpt-5" || resp.Usage.OutputTokens == 0 {
		t.Fatalf("non-stream %q model %q usage %+v", resp.OutputText(), resp.Model, resp.Usage)
	}
	calls := east.Calls()
	if len(calls) != 1 || calls[0].Path != "/openai/v1/responses" || calls[0].Deployment != "gpt-5-east" ||
		calls[0].APIKey != "east-key" || calls[0].Authorization != "" {
		t.Fatalf("azure-east calls %+v", calls)
	}
	up := east.Requests()
	if body := gjson.ParseBytes(up[0].Body); body.Get("tools.1.type").Str != "web_search" || body.Get("instructions").Str != "Be terse." ||
		body.Get("model").Str != "gpt-5-east" {
		t.Fatalf("the body was not passed through: %s", up[0].Body)
	}
	rec := g.generation(t, raw.Header.Get("X-Request-Id"))
	if len(rec.Attempts) != 1 || rec.Attempts[0].Deployment != "azure-east" || rec.Attempts[0].UsageProvenance != "observed" ||
		rec.Attempts[0].CostUSD <= 0 {
		t.Fatalf("audit %+v", rec.Attempts)
	}

	// Stream: azure-east fails after response.created, before any output; azure-west serves on
	// its preview api_version.
	east.Script(fp.Behavior{Kind: fp.KindPreambleError})
	st := c.Responses.NewStreaming(t.Context(), rsParams("gpt-5"), option.WithResponseInto(&raw))
	var text strings.Builder
	var completed responses.Response
	for st.Next() {
		switch ev := st.Current(); ev.Type {
		case "response.output_text.delta":
			text.WriteString(ev.Delta)
		case "response.completed":
			completed = ev.Response
		}
	}
	if err := st.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	if text.String() != "Hello from azure-west." || completed.Model != "gpt-5" || completed.Usage.OutputTokens == 0 {
		t.Fatalf("stream %q model %q usage %+v", text.String(), completed.Model, completed.Usage)
	}
	wc := west.Calls()
	if len(wc) != 1 || wc[0].Path != "/openai/responses" || wc[0].APIVersion != "2025-04-01-preview" || wc[0].Deployment != "gpt-5-west" ||
		wc[0].APIKey != "west-key" {
		t.Fatalf("azure-west calls %+v", wc)
	}
	rec = g.generation(t, raw.Header.Get("X-Request-Id"))
	if len(rec.Attempts) != 2 || rec.Attempts[0].Deployment != "azure-east" || rec.Attempts[0].Outcome == audit.OutcomeCompleted ||
		rec.Attempts[1].Deployment != "azure-west" || rec.Attempts[1].Outcome != audit.OutcomeCompleted || rec.Attempts[1].Tokens.Output == 0 {
		t.Fatalf("stream audit %+v", rec.Attempts)
	}

	// Non-stream: Azure's 503 ServiceUnavailable fails over too.
	east.Script(fp.Behavior{Kind: fp.KindStatus, Status: 503})
	resp, err = c.Responses.New(t.Context(), rsParams("gpt-5"), option.WithResponseInto(&raw))
	if err != nil || resp.OutputText() != "Hello from azure-west." {
		t.Fatalf("503 failover: %v", err)
	}
	rec = g.generation(t, raw.Header.Get("X-Request-Id"))
	if len(rec.Attempts) != 2 || rec.Attempts[0].ErrorCode != "upstream_error" || rec.Attempts[0].UpstreamStatus != 503 {
		t.Fatalf("503 audit %+v", rec.Attempts)
	}

	// A GA api_version has no Responses route: translated to its chat completions.
	resp, err = c.Responses.New(t.Context(), rsParams("gpt-4o"))
	if err != nil || resp.OutputText() != "Hello from azure-ga." || resp.Model != "gpt-4o" {
		t.Fatalf("GA api_version: %v", err)
	}
	if gc := ga.Calls(); len(gc) != 1 || gc[0].Path != "/openai/deployments/gpt-4o-prod/chat/completions" {
		t.Fatalf("azure-ga calls %+v", gc)
	}
}
