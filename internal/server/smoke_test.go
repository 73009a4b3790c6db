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

// TestSmokeFailoverBothSDKs: the first deployment fails with a 5xx, the second serves, and the
// audit shows both attempts (R-FAIL-1, R-FAIL-5, R-AUDIT-1..2).
func TestSmokeFailoverBothSDKs(t *testing.T) {
	g := startTwo(t)
	g.Fakes["oa-primary"].Script(fakeprovider.Behavior{Kind: fakeprovider.KindStatus, Status: 503})
	g.Fakes["an-primary"].Script(fakeprovider.Behavior{Kind: fakeprovider.KindStatus, Status: 529})
	ctx := context.Background()

	var hdr *http.Response
	oc := g.openaiClient()
	acc := openai.ChatCompletionAccumulator{}
	st := oc.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
		Model:    "gpt-4o-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello")},
	}, option.WithResponseInto(&hdr))
	for st.Next() {
		acc.AddChunk(st.Current())
	}
	if err := st.Err(); err != nil {
		t.Fatalf("openai stream: %v", err)
	}
	if got := acc.Choices[0].Message.Content; got != "Hello from oa-backup." {
		t.Fatalf("content %q", got)
	}
	if acc.Model != "gpt-4o-mini" {
		t.Fatalf("model echoed %q, want the caller's id", acc.Model)
	}
	rec := g.generation(t, hdr.Header.Get("x-request-id"))
	if len(rec.Attempts) != 2 || rec.Attempts[0].Outcome != "failed" || rec.Attempts[0].ErrorCode != "upstream_error" ||
		rec.Attempts[1].Deployment != "oa-backup" || rec.Attempts[1].Outcome != "completed" {
		t.Fatalf("attempts: %+v", rec.Attempts)
	}

	ac := g.anthropicClient()
	msg, err := ac.Messages.New(ctx, anthropic.MessageNewParams{
		Model: "claude-haiku-4-5", MaxTokens: 64,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello"))},
	})
	if err != nil {
		t.Fatalf("anthropic: %v", err)
	}
	if msg.Content[0].Text != "Hello from an-backup." {
		t.Fatalf("content %q", msg.Content[0].Text)
	}
}
