package server_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/switchyard-gw/switchyard/internal/fakeprovider"
)

// R-DIALECT-2: the OpenAI SDK streams text from a Claude model and the Anthropic SDK from a GPT
// model; usage and the caller's model id come back in the caller's dialect.
func TestCrossDialectText(t *testing.T) {
	g := startTwo(t)
	ctx := context.Background()

	oc := g.openaiClient()
	acc := openai.ChatCompletionAccumulator{}
	st := oc.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
		Model:         "claude-haiku-4-5",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("Be terse."), openai.UserMessage("Hello")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	for st.Next() {
		acc.AddChunk(st.Current())
	}
	if err := st.Err(); err != nil {
		t.Fatalf("openai stream from claude: %v", err)
	}
	if got := acc.Choices[0].Message.Content; got != "Hello from an-primary." || acc.Model != "claude-haiku-4-5" {
		t.Fatalf("content %q model %q", got, acc.Model)
	}
	if acc.Usage.CompletionTokens == 0 || acc.Usage.PromptTokens == 0 {
		t.Fatalf("usage %+v", acc.Usage)
	}
	up := g.Fakes["an-primary"].Requests()
	if len(up) != 1 || up[0].Model != "claude-haiku-4-5" {
		t.Fatalf("anthropic upstream got %+v", up)
	}

	var raw *http.Response
	comp, err := oc.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:    "claude-haiku-4-5",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello")},
	}, option.WithResponseInto(&raw))
	if err != nil || comp.Choices[0].Message.Content != "Hello from an-primary." || comp.Choices[0].FinishReason != "stop" {
		t.Fatalf("openai non-stream from claude: %v %+v", err, comp)
	}

	ac := g.anthropicClient()
	s := ac.Messages.NewStreaming(ctx, anthropic.MessageNewParams{
		Model: "gpt-4o-mini", MaxTokens: 64,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello"))},
	})
	var msg anthropic.Message
	for s.Next() {
		if err := msg.Accumulate(s.Current()); err != nil {
			t.Fatalf("accumulate: %v", err)
		}
	}
	if err := s.Err(); err != nil {
		t.Fatalf("anthropic stream from gpt: %v", err)
	}
	if len(msg.Content) != 1 || msg.Content[0].Text != "Hello from oa-primary." || msg.StopReason != "end_turn" || msg.Usage.OutputTokens == 0 {
		t.Fatalf("message %+v", msg)
	}
}

// R-DIALECT-1..2 with R-FAIL-1: a model served by deployments of both dialects fails over
// between them without the caller noticing.
func TestCrossDialectFailover(t *testing.T) {
	g := startGateway(t, `
auth: {required: false}
models: [{id: m}]
deployments:
  - {name: an, dialect: anthropic, base_url: "{{an}}", api_key: k, routes: [{model: m, price: {input: 1, output: 1}}]}
  - {name: oa, dialect: openai, base_url: "{{oa}}", api_key: k, routes: [{model: m, price: {input: 2, output: 2}}]}
`, an("an"), oa("oa"))
	g.Fakes["an"].Script(fakeprovider.Behavior{Kind: fakeprovider.KindPreambleError})
	oc := g.openaiClient()
	acc := openai.ChatCompletionAccumulator{}
	var raw *http.Response
	st := oc.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello")},
	}, option.WithResponseInto(&raw))
	for st.Next() {
		acc.AddChunk(st.Current())
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	if acc.Choices[0].Message.Content != "Hello from oa." {
		t.Fatalf("content %q", acc.Choices[0].Message.Content)
	}
	rec := g.generation(t, raw.Header.Get("x-request-id"))
	if len(rec.Attempts) != 2 || rec.Attempts[0].Deployment != "an" || rec.Attempts[0].Outcome != "failed" || rec.Attempts[1].Deployment != "oa" {
		t.Fatalf("attempts %+v", rec.Attempts)
	}
}
