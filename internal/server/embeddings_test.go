package server_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/tidwall/gjson"

	"github.com/switchyard-gw/switchyard/internal/fakeprovider"
)

const embeddingsCatalog = `
auth: {required: false}
models: [{id: text-embedding-3-small}, {id: claude-haiku-4-5}]
deployments:
  - {name: e1, dialect: openai, base_url: "{{e1}}", api_key: k, routes: [{model: text-embedding-3-small, price: {input: 0.02, output: 0}}]}
  - {name: e2, dialect: openai, base_url: "{{e2}}", api_key: k, routes: [{model: text-embedding-3-small, price: {input: 0.03, output: 0}}]}
  - {name: an, dialect: anthropic, base_url: "{{an}}", api_key: k, routes: [{model: text-embedding-3-small}, {model: claude-haiku-4-5}]}
`

// R-DIALECT-1 (embeddings): POST /v1/embeddings is served by OpenAI-dialect deployments with the
// same attempt loop, failover and audit; an Anthropic deployment of the model is dropped (it has
// no embeddings endpoint, R-ADMIT-5) and never called.
func TestEmbeddings(t *testing.T) {
	g := startGateway(t, embeddingsCatalog, oa("e1"), oa("e2"), an("an"))
	g.Fakes["e1"].Script(fakeprovider.Behavior{Kind: fakeprovider.KindStatus, Status: 503})
	oc := g.openaiClient()
	var raw *http.Response
	res, err := oc.Embeddings.New(context.Background(), openai.EmbeddingNewParams{
		Model: "text-embedding-3-small",
		Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"a", "b"}},
	}, option.WithResponseInto(&raw))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Data) != 2 || len(res.Data[1].Embedding) != 3 || res.Model != "text-embedding-3-small" || res.Usage.PromptTokens == 0 {
		t.Fatalf("embeddings %+v", res)
	}
	if raw.Header.Get("x-switchyard-deployment") != "e2" || raw.Header.Get("x-switchyard-attempts") != "2" {
		t.Fatalf("headers %v", raw.Header)
	}
	rec := g.generation(t, raw.Header.Get("x-request-id"))
	if rec.Surface != "openai.embeddings" || len(rec.Attempts) != 2 || rec.Attempts[1].Tokens.Input != res.Usage.PromptTokens {
		t.Fatalf("audit %+v", rec)
	}
	if g.Fakes["an"].Hits() != 0 {
		t.Fatal("an Anthropic deployment was called for embeddings")
	}
	// A model with no OpenAI-dialect route: a 400 naming the model, nothing called.
	resp, b := icPost(t, g.URL, "/v1/embeddings", `{"model":"claude-haiku-4-5","input":"x"}`)
	if resp.StatusCode != 400 || gjson.GetBytes(b, "error.metadata.error_type").String() != "invalid_request" {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	if resp, b := icPost(t, g.URL, "/v1/embeddings", `{"model":"text-embedding-3-small"}`); resp.StatusCode != 400 || gjson.GetBytes(b, "error.param").String() != "input" {
		t.Fatalf("missing input: %d %s", resp.StatusCode, b)
	}
}

// R-DIALECT-1 (count_tokens): POST /v1/messages/count_tokens is answered by an
// Anthropic-dialect deployment of the model.
func TestCountTokens(t *testing.T) {
	g := startGateway(t, embeddingsCatalog, oa("e1"), oa("e2"), an("an"))
	ac := g.anthropicClient()
	res, err := ac.Messages.CountTokens(context.Background(), anthropic.MessageCountTokensParams{
		Model:    "claude-haiku-4-5",
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello"))},
	})
	if err != nil || res.InputTokens == 0 {
		t.Fatalf("%v %+v", err, res)
	}
	if n := g.Fakes["an"].Hits(); n != 1 {
		t.Fatalf("anthropic hits %d", n)
	}
}
