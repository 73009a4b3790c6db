package server_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

// geminiDocExample is the YAML block after the gemini-example marker of docs/platforms.md.
func geminiDocExample(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile("../../docs/platforms.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "<!-- gemini-example")
	if !ok {
		t.Fatal("docs/platforms.md has no gemini-example block")
	}
	_, rest, _ = strings.Cut(rest, "```yaml\n")
	block, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatal("the gemini-example block is not closed")
	}
	return block
}

// TestGeminiDocExample: the Gemini configuration of docs/platforms.md, with only its base URL
// pointed at an emulated OpenAI-compatible provider, serves chat (both surfaces, a stream) and
// embeddings with the Gemini key as a bearer token, and a /v1/responses request is translated
// to chat completions (no Responses API at Gemini).
func TestGeminiDocExample(t *testing.T) {
	yaml := geminiDocExample(t)
	const real = "https://generativelanguage.googleapis.com/v1beta/openai"
	if !strings.Contains(yaml, real) {
		t.Fatalf("the example does not name Gemini's endpoint:\n%s", yaml)
	}
	t.Setenv("GEMINI_API_KEY", "gemini-test-key")
	g := startGateway(t, strings.Replace(yaml, real, "{{gemini}}", 1), oa("gemini"))
	gem := g.Fakes["gemini"]
	gem.RequireKey("gemini-test-key")
	ctx := context.Background()

	oc := g.openaiClient()
	c, err := oc.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gemini-2.5-flash",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
	if err != nil || c.Choices[0].Message.Content != "Hello from gemini." {
		t.Fatalf("chat: %v %+v", err, c)
	}
	ac := g.anthropicClient()
	st := ac.Messages.NewStreaming(ctx, anthropic.MessageNewParams{Model: "gemini-2.5-flash", MaxTokens: 50,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}})
	var m anthropic.Message
	for st.Next() {
		if err := m.Accumulate(st.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Err(); err != nil || m.Content[0].Text != "Hello from gemini." {
		t.Fatalf("anthropic stream: %v %+v", err, m.Content)
	}
	e, err := oc.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "gemini-embedding-001",
		Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("hi")}})
	if err != nil || len(e.Data) != 1 {
		t.Fatalf("embeddings: %v", err)
	}
	r, err := oc.Responses.New(ctx, responses.ResponseNewParams{Model: "gemini-2.5-flash",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}})
	if err != nil || r.OutputText() != "Hello from gemini." {
		t.Fatalf("responses: %v", err)
	}
	for _, req := range gem.Requests() {
		if req.Authorization != "Bearer gemini-test-key" || req.Rejected != "" {
			t.Fatalf("request %s %s: authorization %q rejected %q", req.Method, req.Path, req.Authorization, req.Rejected)
		}
		if strings.Contains(req.Path, "responses") {
			t.Fatalf("a Responses request reached Gemini: %s", req.Path)
		}
	}
	if n := len(gem.Requests()); n != 4 {
		t.Fatalf("gemini got %d requests, want 4", n)
	}
}
