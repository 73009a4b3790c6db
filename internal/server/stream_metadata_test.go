package server_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	anthropicopt "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	openaiopt "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	fp "github.com/switchyard-gw/switchyard/internal/fakeprovider"
)

// rawTap keeps a copy of every response body an SDK reads, for checking the bytes it was given.
type rawTap struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (tp *rawTap) middleware(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	resp, err := next(req)
	if err == nil {
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.TeeReader(resp.Body, tapWriter{tp}), resp.Body}
	}
	return resp, err
}

type tapWriter struct{ tp *rawTap }

func (w tapWriter) Write(p []byte) (int, error) {
	w.tp.mu.Lock()
	defer w.tp.mu.Unlock()
	return w.tp.buf.Write(p)
}

// take returns what was read since the last take.
func (tp *rawTap) take() string {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	s := tp.buf.String()
	tp.buf.Reset()
	return s
}

// streamMetadata returns the JSON of the stream's `: provider_metadata` comment, checking it is
// the first line of the body and appears once.
func streamMetadata(t *testing.T, what, raw string) string {
	t.Helper()
	const prefix = ": provider_metadata "
	if !strings.HasPrefix(raw, prefix) || strings.Count(raw, prefix) != 1 {
		t.Fatalf("%s: the stream does not open with one %q comment:\n%s", what, prefix, raw)
	}
	line, rest, _ := strings.Cut(raw[len(prefix):], "\n")
	if !strings.HasPrefix(rest, "\n") {
		t.Fatalf("%s: the comment is not followed by a blank line:\n%s", what, raw)
	}
	return `{"provider_metadata":` + line + `}`
}

// TestStreamProviderMetadata: issue 25 item 3, R-AUDIT-1, seed 002 ("provider_metadata.provider
// and actual_model tell you who served the request"): every stream surface (OpenAI chat
// completions, Anthropic messages, Responses; same-dialect, cross-dialect and after a
// failover) opens with one SSE comment `: provider_metadata {...}` naming the provider, the
// upstream id, the deployment and the attempts, and both official SDKs read the streams whole
// as before (the comment is not an event to them).
func TestStreamProviderMetadata(t *testing.T) {
	t.Parallel()
	g := startTwo(t)
	var tap rawTap
	oc := g.openaiClient(openaiopt.WithMiddleware(tap.middleware))
	ac := g.anthropicClient(anthropicopt.WithMiddleware(tap.middleware))
	ctx := t.Context()

	chat := func(what, model, want, provider, actual, dep string, attempts int64) {
		t.Helper()
		st := oc.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: model,
			Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello")},
			StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}})
		acc := openai.ChatCompletionAccumulator{}
		for st.Next() {
			if !acc.AddChunk(st.Current()) {
				t.Fatalf("%s: the accumulator refused a chunk", what)
			}
		}
		if err := st.Err(); err != nil || len(acc.Choices) == 0 || acc.Choices[0].Message.Content != want || acc.Usage.CompletionTokens == 0 {
			t.Fatalf("%s: %v %+v", what, err, acc.ChatCompletion)
		}
		checkMetadata(t, what, streamMetadata(t, what, tap.take()), provider, actual, dep, attempts)
	}
	chat("openai chat", "gpt-4o-mini", hello("oa-primary"), "openai", "gpt-4o-mini", "oa-primary", 1)
	chat("openai chat served by anthropic", "claude-haiku-4-5", hello("an-primary"), "anthropic", "claude-haiku-4-5", "an-primary", 1)
	g.Fakes["oa-primary"].Script(fp.Behavior{Kind: fp.KindStatus, Status: 503})
	chat("openai chat after a failover", "mini", hello("oa-backup"), "reseller", "gpt-4o-mini-2024-07-18", "oa-backup", 2)

	messages := func(what, model, want, provider, actual, dep string) {
		t.Helper()
		st := ac.Messages.NewStreaming(ctx, anthropic.MessageNewParams{Model: anthropic.Model(model), MaxTokens: 32,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello"))}})
		var msg anthropic.Message
		for st.Next() {
			if err := msg.Accumulate(st.Current()); err != nil {
				t.Fatalf("%s: accumulate: %v", what, err)
			}
		}
		if err := st.Err(); err != nil || len(msg.Content) == 0 || msg.Content[0].Text != want || msg.StopReason == "" {
			t.Fatalf("%s: %v %+v", what, err, msg)
		}
		checkMetadata(t, what, streamMetadata(t, what, tap.take()), provider, actual, dep, 1)
	}
	messages("anthropic messages", "claude-haiku-4-5", hello("an-primary"), "anthropic", "claude-haiku-4-5", "an-primary")
	messages("anthropic messages served by openai", "gpt-4o-mini", hello("oa-primary"), "openai", "gpt-4o-mini", "oa-primary")

	for _, tc := range []struct{ model, dep, provider string }{{"gpt-4o-mini", "oa-primary", "openai"}, {"claude-haiku-4-5", "an-primary", "anthropic"}} {
		st := oc.Responses.NewStreaming(ctx, responses.ResponseNewParams{Model: tc.model,
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Hello")}})
		var text strings.Builder
		completed := false
		for st.Next() {
			switch ev := st.Current(); ev.Type {
			case "response.output_text.delta":
				text.WriteString(ev.Delta)
			case "response.completed":
				completed = ev.Response.Usage.OutputTokens > 0
			}
		}
		what := "responses " + tc.model
		if err := st.Err(); err != nil || text.String() != hello(tc.dep) || !completed {
			t.Fatalf("%s: %v %q completed=%v", what, err, text.String(), completed)
		}
		checkMetadata(t, what, streamMetadata(t, what, tap.take()), tc.provider, tc.model, tc.dep, 1)
	}
}
