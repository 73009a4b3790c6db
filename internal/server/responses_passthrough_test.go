package server_test

import (
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	openaiopt "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/tidwall/gjson"

	fp "github.com/switchyard-gw/switchyard/internal/fakeprovider"
)

// passThrough serves gpt-4o-mini from two deployments that speak the Responses API
// (responses: true), gpt-chat from a chat-only one (responses: false, the default for a
// base_url that is not OpenAI's) and claude-haiku-4-5 from an Anthropic one.
const passThrough = `
auth: {required: false}
routing:
  timeouts: {headers: 5s, stream_headers: 5s, stream_idle: 5s}
  circuit: {failures: 100}
models:
  - id: gpt-4o-mini
  - id: gpt-chat
  - id: claude-haiku-4-5
deployments:
  - name: rs-primary
    provider: openai
    dialect: openai
    responses: true
    base_url: "{{rs-primary}}"
    api_key: sk-house-primary
    routes: [{model: gpt-4o-mini, price: {input: 0.15, output: 0.6}}]
  - name: rs-backup
    provider: reseller
    dialect: openai
    responses: true
    base_url: "{{rs-backup}}"
    api_key: sk-house-backup
    routes: [{model: gpt-4o-mini, upstream_model: gpt-4o-mini-2024-07-18, price: {input: 0.2, output: 0.8}}]
  - name: oa-chat
    provider: reseller
    dialect: openai
    base_url: "{{oa-chat}}"
    api_key: sk-house-chat
    routes: [{model: gpt-chat, price: {input: 0.2, output: 0.8}}]
  - name: an-only
    provider: anthropic
    dialect: anthropic
    base_url: "{{an-only}}"
    api_key: sk-ant-house
    routes: [{model: claude-haiku-4-5, price: {input: 1, output: 5}}]
`

func startPassThrough(t *testing.T) *gateway {
	return startGateway(t, passThrough, oa("rs-primary"), oa("rs-backup"), oa("oa-chat"), an("an-only"))
}

// rsParams is a Responses request with one function tool and one hosted tool.
func rsParams(model string) responses.ResponseNewParams {
	return responses.ResponseNewParams{
		Model:        model,
		Instructions: openai.String("Be terse."),
		Input:        responses.ResponseNewParamsInputUnion{OfString: openai.String("Hello")},
		Tools: []responses.ToolUnionParam{
			{OfFunction: &responses.FunctionToolParam{Name: "get_weather", Parameters: map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}}},
			{OfWebSearch: &responses.WebSearchToolParam{Type: responses.WebSearchToolTypeWebSearch}},
		},
	}
}

// TestResponsesPassThrough: the official openai-go Responses client, through the gateway, to a
// deployment that serves the Responses API: the body reaches the provider as it came, only the
// model rewritten (the hosted tool included), on /v1/responses; the answer, streamed and not,
// carries the caller's model; usage comes from response.completed and is billed; a provider
// that fails before its first output (a 503, an error event after response.created) fails
// over to the backup.
func TestResponsesPassThrough(t *testing.T) {
	g := startPassThrough(t)
	c := g.openaiClient()
	prim, back := g.Fakes["rs-primary"], g.Fakes["rs-backup"]

	// Non-stream, served by the primary.
	resp, err := c.Responses.New(t.Context(), rsParams("gpt-4o-mini"))
	if err != nil {
		t.Fatalf("non-stream: %v", err)
	}
	if resp.OutputText() != "Hello from rs-primary." || resp.Model != "gpt-4o-mini" || resp.Usage.InputTokens == 0 || resp.Usage.OutputTokens == 0 {
		t.Fatalf("non-stream answer %q model %q usage %+v", resp.OutputText(), resp.Model, resp.Usage)
	}
	up := prim.Requests()
	if len(up) != 1 || up[0].Path != "/v1/responses" {
		t.Fatalf("primary requests %+v", up)
	}
	body := gjson.ParseBytes(up[0].Body)
	if body.Get("tools.1.type").Str != "web_search" || body.Get("instructions").Str != "Be terse." || body.Get("input").Str != "Hello" {
		t.Errorf("the body was not passed through: %s", up[0].Body)
	}

	// Stream: the primary fails before its first output, the backup serves; the model echoed.
	prim.Reset()
	back.Reset()
	prim.Script(fp.Behavior{Kind: fp.KindPreambleError})
	st := c.Responses.NewStreaming(t.Context(), rsParams("gpt-4o-mini"))
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
	if text.String() != "Hello from rs-backup." || completed.Model != "gpt-4o-mini" || completed.Usage.OutputTokens == 0 {
		t.Fatalf("stream text %q model %q usage %+v", text.String(), completed.Model, completed.Usage)
	}
	if prim.Hits() != 1 || back.Hits() != 1 || gjson.GetBytes(back.Requests()[0].Body, "model").Str != "gpt-4o-mini-2024-07-18" {
		t.Fatalf("hits %d %d, backup body %s", prim.Hits(), back.Hits(), back.Requests()[0].Body)
	}
}

// TestResponsesPassThroughAudit: a pass-through is billed and audited as a chat call: usage from
// response.completed (observed), the cost at the route's price, the failover in the attempts;
// a non-stream 503 of the primary fails over too; after the first output a provider error
// becomes one terminal error event and the attempt is truncated.
func TestResponsesPassThroughAudit(t *testing.T) {
	g := startPassThrough(t)
	prim, back := g.Fakes["rs-primary"], g.Fakes["rs-backup"]
	rs := surface{"responses", "/v1/responses", "gpt-4o-mini", "rs-primary", "rs-backup"}
	prim.Script(fp.Behavior{Kind: fp.KindStatus, Status: 503})
	resp, b := rs.post(t, g, `{"model":"gpt-4o-mini","input":"Hello"}`)
	if resp.StatusCode != 200 || gjson.GetBytes(b, "output.0.content.0.text").Str != "Hello from rs-backup." {
		t.Fatalf("failover: %d %s", resp.StatusCode, b)
	}
	rec := g.generation(t, resp.Header.Get("X-Request-Id"))
	if len(rec.Attempts) != 2 || rec.Attempts[0].ErrorCode != "upstream_error" || rec.Attempts[1].Outcome != "completed" ||
		rec.Attempts[1].UsageProvenance != "observed" || rec.Attempts[1].Tokens.Output != 3 || rec.Attempts[1].CostUSD <= 0 {
		t.Fatalf("audit %+v", rec.Attempts)
	}
	// After commit: cut by an error event after one delta: the caller's stream ends with one
	// error event, the attempt is truncated, no failover.
	prim.Reset()
	back.Reset()
	prim.Script(fp.Behavior{Kind: fp.KindStreamError, After: 1})
	resp, b = rs.post(t, g, `{"model":"gpt-4o-mini","input":"Hello","stream":true}`)
	if resp.StatusCode != 200 || back.Hits() != 0 {
		t.Fatalf("after commit: %d, backup hits %d", resp.StatusCode, back.Hits())
	}
	frames := strings.Split(strings.TrimSpace(string(b)), "\n\n")
	last := frames[len(frames)-1]
	if !strings.Contains(string(b), "response.output_text.delta") || !strings.Contains(last, `"upstream_truncated"`) || strings.Contains(string(b), "response.completed") {
		t.Fatalf("stream after commit:\n%s", b)
	}
	rec = g.generation(t, resp.Header.Get("X-Request-Id"))
	if len(rec.Attempts) != 1 || rec.Attempts[0].Outcome != "truncated" {
		t.Fatalf("audit %+v", rec.Attempts)
	}
}

// TestResponsesStillTranslated: the same client's requests to a chat-only deployment
// (responses: false) and to an Anthropic one are translated: they reach /v1/chat/completions
// and /v1/messages, and the answer is a Responses answer all the same.
func TestResponsesStillTranslated(t *testing.T) {
	g := startPassThrough(t)
	c := g.openaiClient()
	for _, tc := range []struct{ model, dep, path string }{
		{"gpt-chat", "oa-chat", "/v1/chat/completions"},
		{"claude-haiku-4-5", "an-only", "/v1/messages"},
	} {
		p := rsParams(tc.model)
		resp, err := c.Responses.New(t.Context(), p, openaiopt.WithMaxRetries(0))
		if err != nil {
			t.Fatalf("%s: %v", tc.model, err)
		}
		if resp.OutputText() != "Hello from "+tc.dep+"." || resp.Model != tc.model {
			t.Errorf("%s: %q %q", tc.model, resp.OutputText(), resp.Model)
		}
		up := g.Fakes[tc.dep].Requests()
		if len(up) != 1 || up[0].Path != tc.path {
			t.Errorf("%s: upstream %+v", tc.model, up)
		}
		st := c.Responses.NewStreaming(t.Context(), p)
		var text strings.Builder
		for st.Next() {
			if ev := st.Current(); ev.Type == "response.output_text.delta" {
				text.WriteString(ev.Delta)
			}
		}
		if err := st.Err(); err != nil || text.String() != "Hello from "+tc.dep+"." {
			t.Errorf("%s stream: %q %v", tc.model, text.String(), err)
		}
	}
}
