package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	openaiopt "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/tidwall/gjson"

	fp "github.com/switchyard-gw/switchyard/internal/fakeprovider"
)

// checkMetadata checks the provider_metadata member of a raw non-stream body.
func checkMetadata(t *testing.T, what, raw, provider, actual, deployment string, attempts int64) {
	t.Helper()
	pm := gjson.Get(raw, "provider_metadata")
	if pm.Get("provider").String() != provider || pm.Get("actual_model").String() != actual ||
		pm.Get("deployment").String() != deployment || pm.Get("attempts").Int() != attempts {
		t.Errorf("%s: provider_metadata %s, want provider %s actual_model %s deployment %s attempts %d", what, pm.Raw, provider, actual, deployment, attempts)
	}
}

// TestProviderMetadata: issue 11 item 8, R-AUDIT-1, seed 002 ("provider_metadata.provider and
// actual_model tell you who served the request and their internal id"): every non-stream body
// names the provider, the upstream id, the deployment and the attempts; both official SDKs
// still parse every response (chat, messages, responses, embeddings, count_tokens, and a
// cross-dialect answer after a failover).
func TestProviderMetadata(t *testing.T) {
	t.Parallel()
	g := startTwo(t)
	oc, ac := g.openaiClient(), g.anthropicClient()
	ctx := t.Context()

	g.Fakes["oa-primary"].Script(fp.Behavior{Kind: fp.KindStatus, Status: 503})
	var hr *http.Response
	cc, err := oc.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "mini",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello")}}, openaiopt.WithResponseInto(&hr))
	if err != nil || cc.Model != "mini" || cc.Choices[0].Message.Content != hello("oa-backup") {
		t.Fatalf("chat: %v %+v", err, cc)
	}
	checkMetadata(t, "chat after a failover", cc.RawJSON(), "reseller", "gpt-4o-mini-2024-07-18", "oa-backup", 2)
	if cc.JSON.ExtraFields["provider_metadata"].Raw() == "" {
		t.Errorf("openai-go does not see provider_metadata as an extra field")
	}

	msg, err := ac.Messages.New(ctx, anthropic.MessageNewParams{Model: "claude-haiku-4-5", MaxTokens: 32,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello"))}})
	if err != nil || len(msg.Content) != 1 || msg.Content[0].Text != hello("an-primary") {
		t.Fatalf("messages: %v %+v", err, msg)
	}
	checkMetadata(t, "messages", msg.RawJSON(), "anthropic", "claude-haiku-4-5", "an-primary", 1)

	// Cross-dialect: the OpenAI SDK served by an Anthropic deployment.
	cc, err = oc.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "claude-haiku-4-5",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello")}})
	if err != nil || cc.Choices[0].Message.Content != hello("an-primary") {
		t.Fatalf("cross chat: %v %+v", err, cc)
	}
	checkMetadata(t, "cross-dialect chat", cc.RawJSON(), "anthropic", "claude-haiku-4-5", "an-primary", 1)

	rs, err := oc.Responses.New(ctx, responses.ResponseNewParams{Model: "gpt-4o-mini",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Hello")}})
	if err != nil || rs.OutputText() != hello("oa-primary") {
		t.Fatalf("responses: %v %+v", err, rs)
	}
	checkMetadata(t, "responses", rs.RawJSON(), "openai", "gpt-4o-mini", "oa-primary", 1)

	em, err := oc.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "gpt-4o-mini",
		Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("x")}})
	if err != nil || len(em.Data) != 1 {
		t.Fatalf("embeddings: %v %+v", err, em)
	}
	checkMetadata(t, "embeddings", em.RawJSON(), "openai", "gpt-4o-mini", "oa-primary", 1)

	ct, err := ac.Messages.CountTokens(ctx, anthropic.MessageCountTokensParams{Model: "claude-haiku-4-5",
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello"))}})
	if err != nil || ct.InputTokens == 0 {
		t.Fatalf("count_tokens: %v %+v", err, ct)
	}
	checkMetadata(t, "count_tokens", ct.RawJSON(), "anthropic", "claude-haiku-4-5", "an-primary", 1)

	// Stream frames carry no provider_metadata member (it is a comment, TestStreamProviderMetadata).
	st := ac.Messages.NewStreaming(ctx, anthropic.MessageNewParams{Model: "claude-haiku-4-5", MaxTokens: 32,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello"))}})
	var acc anthropic.Message
	for st.Next() {
		if err := acc.Accumulate(st.Current()); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(st.Current().RawJSON(), "provider_metadata") {
			t.Error("a stream frame carries provider_metadata")
		}
	}
	if st.Err() != nil || acc.Content[0].Text != hello("an-primary") {
		t.Fatalf("stream: %v", st.Err())
	}
}

// TestClosedEndpointNamesGateway: issue 11 item 7, seed 000 ("a closed endpoint names
// RouterPlus as the provider, whichever route served"): a dedicated endpoint without public
// fallback answers with the gateway's own name (server.name) as x-switchyard-provider and
// provider_metadata.provider; an open endpoint and a model request keep the deployment's
// provider.
func TestClosedEndpointNamesGateway(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, yaml, want string }{
		{"default name", endpointCatalog, "switchyard"},
		{"configured name", endpointCatalog + "server: {name: routerplus}\n", "routerplus"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := startGateway(t, tc.yaml, oa("pcheap"), oa("r1"), oa("pdear"), an("r2"), oa("r3"))
			oc := g.openaiClient(openaiopt.WithAPIKey("sk-other"))
			var hr *http.Response
			cc, err := oc.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{Model: "solo/chat",
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello")}}, openaiopt.WithResponseInto(&hr))
			if err != nil || cc.Model != "solo/chat" {
				t.Fatalf("closed endpoint: %v %+v", err, cc)
			}
			if got := hr.Header.Get("X-Switchyard-Provider"); got != tc.want || hr.Header.Get("X-Switchyard-Deployment") != "r3" {
				t.Errorf("closed endpoint: x-switchyard-provider %q (deployment %q), want %q", got, hr.Header.Get("X-Switchyard-Deployment"), tc.want)
			}
			checkMetadata(t, "closed endpoint", cc.RawJSON(), tc.want, "chat", "r3", 1)

			// The open endpoint acme/chat (public fallback) names the deployment's provider.
			oc = g.openaiClient(openaiopt.WithAPIKey("sk-acme"))
			cc, err = oc.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{Model: "acme/chat",
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello")}}, openaiopt.WithResponseInto(&hr))
			if err != nil {
				t.Fatal(err)
			}
			if got := hr.Header.Get("X-Switchyard-Provider"); got != "dedi" {
				t.Errorf("open endpoint: x-switchyard-provider %q, want dedi", got)
			}
			checkMetadata(t, "open endpoint", cc.RawJSON(), "dedi", "chat", "r2", 1)
		})
	}
}
