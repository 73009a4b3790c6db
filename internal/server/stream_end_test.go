package server_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"

	fp "github.com/switchyard-gw/switchyard/internal/fakeprovider"
)

// twoDeploymentsFirstOutput is twoDeployments with a short configured first-output deadline
// (routing.timeouts.first_output, 30 s by default).
var twoDeploymentsFirstOutput = strings.Replace(twoDeployments,
	"timeouts: {headers: 5s, stream_headers: 5s, stream_idle: 5s}",
	"timeouts: {headers: 5s, stream_headers: 5s, stream_idle: 5s, first_output: 1s}", 1)

// R-CIRCUIT-5, issue 9: a provider that answers 200 and then sends only keep-alives (Anthropic
// ping events, OpenAI comments) never produces output; the first-output deadline fails it over
// before commit, and the official SDKs get the backup's whole answer.
func TestPingOnlyProviderFailsOver(t *testing.T) {
	t.Parallel()
	g := startTwoYAML(t, twoDeploymentsFirstOutput)
	ping := fp.Behavior{Kind: fp.KindPingOnly, Delay: 100 * time.Millisecond}
	g.Fakes["oa-primary"].SetDefault(ping)
	g.Fakes["an-primary"].SetDefault(ping)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	oc := g.openaiClient()
	st := oc.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
		Model: "gpt-4o-mini", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello")}})
	acc := openai.ChatCompletionAccumulator{}
	for st.Next() {
		acc.AddChunk(st.Current())
	}
	if err := st.Err(); err != nil || len(acc.Choices) == 0 || !strings.Contains(acc.Choices[0].Message.Content, "oa-backup") {
		t.Fatalf("openai SDK: %v %+v", err, acc.Choices)
	}

	ac := g.anthropicClient()
	as := ac.Messages.NewStreaming(ctx, anthropic.MessageNewParams{Model: "claude-haiku-4-5", MaxTokens: 64,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello"))}})
	var msg anthropic.Message
	for as.Next() {
		if err := msg.Accumulate(as.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := as.Err(); err != nil || len(msg.Content) == 0 || !strings.Contains(msg.Content[0].Text, "an-backup") {
		t.Fatalf("anthropic SDK: %v %+v", err, msg.Content)
	}

	resp, body := icPost(t, g.URL, "/v1/chat/completions", icChatBody("gpt-4o-mini", true))
	rec := g.generation(t, resp.Header.Get("x-request-id"))
	if len(rec.Attempts) != 2 || rec.Attempts[0].ErrorCode != "upstream_timeout" || rec.Attempts[1].Outcome != "completed" ||
		strings.Count(string(body), `"role":"assistant"`) != 1 {
		t.Fatalf("attempts %+v body %s", rec.Attempts, body)
	}
}

// Issue 9: a provider that sends its finish and usage and then ends cleanly without [DONE] /
// message_stop gave a complete answer: the caller's stream ends with its dialect's terminal
// frame (translated too), the SDKs accumulate it without error, and the attempt is completed
// and billed from the observed usage, not marked truncated.
func TestFinishedStreamWithoutTerminalFrameCompletes(t *testing.T) {
	t.Parallel()
	g := startTwo(t)
	g.Fakes["oa-primary"].SetDefault(fp.Behavior{Kind: fp.KindNoDone})
	g.Fakes["an-primary"].SetDefault(fp.Behavior{Kind: fp.KindNoDone})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	oc := g.openaiClient()
	st := oc.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
		Model: "gpt-4o-mini", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}})
	acc := openai.ChatCompletionAccumulator{}
	for st.Next() {
		acc.AddChunk(st.Current())
	}
	if err := st.Err(); err != nil || len(acc.Choices) == 0 || acc.Choices[0].FinishReason != "stop" || acc.Usage.CompletionTokens == 0 {
		t.Fatalf("openai SDK: %v %+v", err, acc.ChatCompletion)
	}
	ac := g.anthropicClient()
	as := ac.Messages.NewStreaming(ctx, anthropic.MessageNewParams{Model: "claude-haiku-4-5", MaxTokens: 64,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello"))}})
	var msg anthropic.Message
	for as.Next() {
		if err := msg.Accumulate(as.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := as.Err(); err != nil || msg.StopReason != "end_turn" || msg.Usage.OutputTokens == 0 {
		t.Fatalf("anthropic SDK: %v %+v", err, msg)
	}

	for _, tc := range []struct {
		name, path, body, terminal string
	}{
		{"openai", "/v1/chat/completions", icChatBody("gpt-4o-mini", true), "data: [DONE]\n\n"},
		{"anthropic", "/v1/messages", icMsgBody("claude-haiku-4-5", true), "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"},
		{"openai caller, anthropic provider", "/v1/chat/completions", icChatBody("claude-haiku-4-5", true), "data: [DONE]\n\n"},
		{"anthropic caller, openai provider", "/v1/messages", icMsgBody("gpt-4o-mini", true), "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := icPost(t, g.URL, tc.path, tc.body)
			if resp.StatusCode != 200 || !strings.HasSuffix(string(body), tc.terminal) || strings.Contains(string(body), "upstream_truncated") {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			rec := g.generation(t, resp.Header.Get("x-request-id"))
			a := rec.Attempts[len(rec.Attempts)-1]
			if len(rec.Attempts) != 1 || a.Outcome != "completed" || a.UsageProvenance != "observed" || a.Tokens.Output == 0 || a.CostUSD <= 0 {
				t.Fatalf("attempts %+v", rec.Attempts)
			}
		})
	}
}
