package server_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/switchyard-gw/switchyard/internal/audit"
	fp "github.com/switchyard-gw/switchyard/internal/fakeprovider"
)

// GPT on Azure OpenAI's deployments API (contract.md round 3, platform azure), behind the real
// server, called through both official SDKs: Azure first (cheaper), OpenAI's own API as the
// backup.
const azureChain = `
auth: {required: false}
routing:
  timeouts: {headers: 5s, stream_headers: 5s, stream_idle: 5s}
models:
  - id: gpt-4o
deployments:
  - name: azure-east
    provider: azure
    dialect: openai
    platform: azure
    base_url: "{{azure}}"
    api_key: azure-house-key
    azure: {api_version: "2024-10-21"}
    routes: [{model: gpt-4o, upstream_model: gpt-4o-prod, price: {input: 2.5, output: 10}}]
  - name: oa-backup
    provider: openai
    dialect: openai
    base_url: "{{oa-backup}}"
    api_key: sk-house-backup
    routes: [{model: gpt-4o, price: {input: 3, output: 12}}]
`

// startAzure starts the Azure emulator (requiring the house key and knowing only the
// gpt-4o-prod deployment) and a gateway on yaml, where {{azure}} is the emulator's endpoint.
func startAzure(t *testing.T, yaml string) (*gateway, *fp.Azure) {
	t.Helper()
	az := fp.NewAzure("azure")
	az.RequireKey("azure-house-key")
	az.SetDeployments("gpt-4o-prod")
	srv := httptest.NewServer(az)
	t.Cleanup(srv.Close)
	return startGateway(t, strings.ReplaceAll(yaml, "{{azure}}", srv.URL), oa("oa-backup")), az
}

// checkAzureCalls fails unless every call reached the deployments API of gpt-4o-prod with the
// house key in api-key.
func checkAzureCalls(t *testing.T, az *fp.Azure, n int) {
	t.Helper()
	calls := az.Calls()
	if len(calls) != n {
		t.Fatalf("azure calls %d, want %d: %+v", len(calls), n, calls)
	}
	for _, c := range calls {
		if c.Path != "/openai/deployments/gpt-4o-prod/chat/completions" || c.APIVersion != "2024-10-21" ||
			c.APIKey != "azure-house-key" || c.Authorization != "" {
			t.Fatalf("azure call %+v", c)
		}
	}
}

// TestAzureThroughBothSDKs: the "done when" for Azure: through both official SDKs
// (the OpenAI surface passes through, the Anthropic surface is translated), stream and not,
// text and a tool call, GPT is answered by Azure's deployments API; the audit names the
// deployment and reads usage from Azure's answer.
func TestAzureThroughBothSDKs(t *testing.T) {
	g, az := startAzure(t, azureChain)
	ctx := context.Background()
	n := 0
	for _, tool := range []bool{false, true} {
		for _, stream := range []bool{false, true} {
			az.Script(fp.Behavior{ToolCall: tool, Deltas: 3})
			n++
			// The OpenAI surface.
			p := openai.ChatCompletionNewParams{Model: "gpt-4o",
				Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Paris?")},
				StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}}
			if tool {
				p.Tools = oaTools()
			}
			var hdr http.Response
			oc := g.openaiClient()
			var msg openai.ChatCompletionMessage
			var finish, rid string
			if stream {
				var resp *http.Response
				st := oc.Chat.Completions.NewStreaming(ctx, p, option.WithResponseInto(&resp))
				acc := openai.ChatCompletionAccumulator{}
				for st.Next() {
					acc.AddChunk(st.Current())
				}
				if err := st.Err(); err != nil {
					t.Fatalf("openai stream tool=%v: %v", tool, err)
				}
				msg, finish, rid = acc.Choices[0].Message, string(acc.Choices[0].FinishReason), resp.Header.Get("X-Request-Id")
				hdr = *resp
			} else {
				var resp *http.Response
				c, err := oc.Chat.Completions.New(ctx, p, option.WithResponseInto(&resp))
				if err != nil {
					t.Fatalf("openai tool=%v: %v", tool, err)
				}
				msg, finish, rid = c.Choices[0].Message, c.Choices[0].FinishReason, resp.Header.Get("X-Request-Id")
				hdr = *resp
			}
			if got := hdr.Header.Get("X-Switchyard-Deployment"); got != "azure-east" {
				t.Fatalf("openai stream=%v tool=%v: answered by %q", stream, tool, got)
			}
			if tool {
				if len(msg.ToolCalls) != 1 || msg.ToolCalls[0].Function.Name != "get_weather" || finish != "tool_calls" ||
					!strings.Contains(msg.ToolCalls[0].Function.Arguments, "city") {
					t.Fatalf("openai stream=%v tool call %+v finish %s", stream, msg.ToolCalls, finish)
				}
			} else if msg.Content != "Hello from azure." || finish != "stop" {
				t.Fatalf("openai stream=%v: %q %s", stream, msg.Content, finish)
			}
			rec := g.generation(t, rid)
			if len(rec.Attempts) != 1 || rec.Attempts[0].Deployment != "azure-east" || rec.Attempts[0].UpstreamModel != "gpt-4o-prod" ||
				rec.Attempts[0].Outcome != audit.OutcomeCompleted || rec.Attempts[0].Tokens.Input == 0 || rec.Attempts[0].Tokens.Output == 0 {
				t.Fatalf("openai stream=%v tool=%v audit %+v", stream, tool, rec.Attempts)
			}

			// The Anthropic surface, translated to chat completions for Azure.
			az.Script(fp.Behavior{ToolCall: tool, Deltas: 3})
			n++
			ac := g.anthropicClient()
			ap := anthropic.MessageNewParams{Model: "gpt-4o", MaxTokens: 200,
				Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Weather in Paris?"))}}
			if tool {
				ap.Tools = anTools()
			}
			var m anthropic.Message
			if stream {
				st := ac.Messages.NewStreaming(ctx, ap)
				for st.Next() {
					if err := m.Accumulate(st.Current()); err != nil {
						t.Fatal(err)
					}
				}
				if err := st.Err(); err != nil {
					t.Fatalf("anthropic stream tool=%v: %v", tool, err)
				}
			} else {
				mm, err := ac.Messages.New(ctx, ap)
				if err != nil {
					t.Fatalf("anthropic tool=%v: %v", tool, err)
				}
				m = *mm
			}
			if tool {
				if len(m.Content) != 1 || m.Content[0].Type != "tool_use" || m.Content[0].Name != "get_weather" || m.StopReason != "tool_use" ||
					!strings.Contains(string(m.Content[0].Input), "city") {
					t.Fatalf("anthropic stream=%v tool call %+v %s", stream, m.Content, m.StopReason)
				}
			} else if len(m.Content) != 1 || m.Content[0].Text != "Hello from azure." || m.StopReason != "end_turn" {
				t.Fatalf("anthropic stream=%v: %+v %s", stream, m.Content, m.StopReason)
			}
		}
	}
	checkAzureCalls(t, az, n)
	if h := g.Fakes["oa-backup"].Hits(); h != 0 {
		t.Fatalf("the backup was called %d times", h)
	}
}

// TestAzureContentFilterNotRerouted: R-FAIL-6 on Azure. The prompt filter (400 content_filter,
// innererror ResponsibleAIPolicyViolation) is content_policy for the caller, with one attempt
// and no call to the backup; the output filter on a stream (finish_reason content_filter) is
// the answer itself: the caller gets its text and the finish reason (refusal on the Anthropic
// surface), and the backup is never called either.
func TestAzureContentFilterNotRerouted(t *testing.T) {
	g, az := startAzure(t, azureChain)
	ctx := context.Background()
	p := openai.ChatCompletionNewParams{Model: "gpt-4o", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}

	az.Script(fp.Behavior{Kind: fp.KindContentPolicy})
	var resp *http.Response
	oc := g.openaiClient()
	_, err := oc.Chat.Completions.New(ctx, p, option.WithResponseInto(&resp))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || !strings.Contains(apiErr.RawJSON(), `"error_type":"content_policy"`) {
		t.Fatalf("prompt filter: %v", err)
	}
	if strings.Contains(apiErr.RawJSON(), "Azure") || strings.Contains(apiErr.RawJSON(), "ResponsibleAI") {
		t.Fatalf("the provider's error text reached the caller: %s", apiErr.RawJSON())
	}
	rec := g.generation(t, apiErr.Response.Header.Get("X-Request-Id"))
	if len(rec.Attempts) != 1 || rec.Attempts[0].Deployment != "azure-east" || rec.Attempts[0].ErrorCode != "content_policy" {
		t.Fatalf("audit %+v", rec.Attempts)
	}

	az.Script(fp.Behavior{Kind: fp.KindContentPolicy, After: 2, Deltas: 2})
	st := oc.Chat.Completions.NewStreaming(ctx, p)
	acc := openai.ChatCompletionAccumulator{}
	for st.Next() {
		acc.AddChunk(st.Current())
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	if acc.Choices[0].FinishReason != "content_filter" || acc.Choices[0].Message.Content == "" {
		t.Fatalf("output filter: %+v", acc.Choices)
	}

	az.Script(fp.Behavior{Kind: fp.KindContentPolicy, After: 2, Deltas: 2})
	ac := g.anthropicClient()
	ast := ac.Messages.NewStreaming(ctx, anthropic.MessageNewParams{Model: "gpt-4o", MaxTokens: 50,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}})
	var m anthropic.Message
	for ast.Next() {
		if err := m.Accumulate(ast.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := ast.Err(); err != nil {
		t.Fatal(err)
	}
	if m.StopReason != "refusal" {
		t.Fatalf("anthropic surface stop_reason %q, want refusal", m.StopReason)
	}
	if h := g.Fakes["oa-backup"].Hits(); h != 0 {
		t.Fatalf("a content-filter answer was rerouted: the backup was called %d times", h)
	}
}

// TestAzureFailsOver: Azure's 429 (code "429", retry-after) is upstream_rate_limited and a wrong
// key (Azure's 401) upstream_auth; both fail over to the backup before the first output.
func TestAzureFailsOver(t *testing.T) {
	for _, tc := range []struct {
		name, class string
		yaml        string
		b           fp.Behavior
	}{
		{"429", "upstream_rate_limited", azureChain, fp.Behavior{Kind: fp.KindStatus, Status: 429, RetryAfter: 3}},
		{"503", "upstream_error", azureChain, fp.Behavior{Kind: fp.KindStatus, Status: 503}},
		{"wrong key", "upstream_auth", strings.Replace(azureChain, "api_key: azure-house-key", "api_key: azure-old-key", 1), fp.Behavior{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, az := startAzure(t, tc.yaml)
			az.Script(tc.b)
			oc := g.openaiClient()
			for _, stream := range []bool{false, true} {
				p := openai.ChatCompletionNewParams{Model: "gpt-4o", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}
				var rid, text string
				if stream {
					var resp *http.Response
					st := oc.Chat.Completions.NewStreaming(context.Background(), p, option.WithResponseInto(&resp))
					acc := openai.ChatCompletionAccumulator{}
					for st.Next() {
						acc.AddChunk(st.Current())
					}
					if err := st.Err(); err != nil {
						t.Fatal(err)
					}
					rid, text = resp.Header.Get("X-Request-Id"), acc.Choices[0].Message.Content
				} else {
					var resp *http.Response
					c, err := oc.Chat.Completions.New(context.Background(), p, option.WithResponseInto(&resp))
					if err != nil {
						t.Fatal(err)
					}
					rid, text = resp.Header.Get("X-Request-Id"), c.Choices[0].Message.Content
				}
				if text != "Hello from oa-backup." {
					t.Fatalf("stream=%v: %q", stream, text)
				}
				rec := g.generation(t, rid)
				if len(rec.Attempts) != 2 || rec.Attempts[0].Deployment != "azure-east" || rec.Attempts[0].ErrorCode != tc.class ||
					rec.Attempts[1].Deployment != "oa-backup" {
					t.Fatalf("stream=%v audit %+v", stream, rec.Attempts)
				}
				az.Script(tc.b)
				g.Clock.Advance(10 * 60e9) // past any pause or cooldown the failure set
			}
		})
	}
}
