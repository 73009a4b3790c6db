package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	anthropicopt "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/tidwall/gjson"

	"github.com/switchyard-gw/switchyard/internal/audit"
	fp "github.com/switchyard-gw/switchyard/internal/fakeprovider"
)

// Claude on Google Vertex AI (contract.md round 3, platform vertex) behind the real server,
// authenticated with a service account whose tokens the Vertex emulator issues; Anthropic's own
// API is the backup. No cloud credentials and no network: the service-account file names the
// emulator's token endpoint.
const vertexChain = `
auth: {required: false}
routing:
  timeouts: {headers: 5s, stream_headers: 5s, stream_idle: 5s}
models:
  - id: claude-sonnet-4-5
deployments:
  - name: vertex-east
    provider: vertex
    dialect: anthropic
    platform: vertex
    base_url: "{{vertex}}"
    vertex: {project: my-project, location: us-east5, credentials_file: "{{vertex-sa}}"}
    routes: [{model: claude-sonnet-4-5, upstream_model: "claude-sonnet-4-5@20250929", price: {input: 3, output: 15}}]
  - name: an-backup
    provider: anthropic
    dialect: anthropic
    base_url: "{{an-backup}}"
    api_key: sk-ant-house-backup
    routes: [{model: claude-sonnet-4-5, price: {input: 3.3, output: 16.5}}]
`

// startVertex starts the Vertex emulator, writes the service-account file of sa (the emulator
// itself when nil: another emulator's key makes a wrong credential) and starts a gateway on
// vertexChain.
func startVertex(t *testing.T, sa *fp.Vertex) (*gateway, *fp.Vertex) {
	t.Helper()
	vx := fp.NewVertex("vertex")
	srv := httptest.NewServer(vx)
	t.Cleanup(srv.Close)
	if sa == nil {
		sa = vx
	}
	file := filepath.Join(t.TempDir(), "sa.json")
	if err := sa.WriteServiceAccount(file, srv.URL); err != nil {
		t.Fatal(err)
	}
	yaml := strings.NewReplacer("{{vertex}}", srv.URL, "{{vertex-sa}}", file).Replace(vertexChain)
	return startGateway(t, yaml, an("an-backup")), vx
}

// TestVertexThroughBothSDKs: the "done when" for Vertex: through both official SDKs
// (the Anthropic surface passes through, the OpenAI surface is translated), stream and not,
// text and a tool call, Claude is answered by Vertex: :rawPredict or :streamRawPredict of the
// route's upstream model, a body without model and with anthropic_version vertex-2023-10-16, the
// caller's anthropic-beta forwarded, and ONE access token, fetched once from the service
// account's token endpoint, reused across every request (count_tokens included).
func TestVertexThroughBothSDKs(t *testing.T) {
	g, vx := startVertex(t, nil)
	ctx := context.Background()
	requests := 0
	for _, tool := range []bool{false, true} {
		for _, stream := range []bool{false, true} {
			// The Anthropic surface.
			vx.Script(fp.Behavior{ToolCall: tool, Deltas: 3})
			requests++
			ac := g.anthropicClient(anthropicopt.WithHeader("anthropic-beta", "fine-grained-tool-streaming-2025-05-14"))
			ap := anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 200,
				Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Weather in Paris?"))}}
			if tool {
				ap.Tools = anTools()
			}
			var m anthropic.Message
			var resp *http.Response
			if stream {
				st := ac.Messages.NewStreaming(ctx, ap, anthropicopt.WithResponseInto(&resp))
				for st.Next() {
					if err := m.Accumulate(st.Current()); err != nil {
						t.Fatal(err)
					}
				}
				if err := st.Err(); err != nil {
					t.Fatalf("anthropic stream tool=%v: %v", tool, err)
				}
			} else {
				mm, err := ac.Messages.New(ctx, ap, anthropicopt.WithResponseInto(&resp))
				if err != nil {
					t.Fatalf("anthropic tool=%v: %v", tool, err)
				}
				m = *mm
			}
			if got := resp.Header.Get("X-Switchyard-Deployment"); got != "vertex-east" {
				t.Fatalf("anthropic stream=%v tool=%v answered by %q", stream, tool, got)
			}
			if tool {
				if len(m.Content) != 1 || m.Content[0].Type != "tool_use" || m.Content[0].Name != "get_weather" || m.StopReason != "tool_use" ||
					!strings.Contains(string(m.Content[0].Input), "city") {
					t.Fatalf("anthropic stream=%v tool call %+v %s", stream, m.Content, m.StopReason)
				}
			} else if len(m.Content) != 1 || m.Content[0].Text != "Hello from vertex." || m.StopReason != "end_turn" {
				t.Fatalf("anthropic stream=%v: %+v %s", stream, m.Content, m.StopReason)
			}
			rec := g.generation(t, resp.Header.Get("X-Request-Id"))
			if len(rec.Attempts) != 1 || rec.Attempts[0].Deployment != "vertex-east" || rec.Attempts[0].UpstreamModel != "claude-sonnet-4-5@20250929" ||
				rec.Attempts[0].Outcome != audit.OutcomeCompleted || rec.Attempts[0].Tokens.Input == 0 || rec.Attempts[0].Tokens.Output == 0 {
				t.Fatalf("anthropic stream=%v tool=%v audit %+v", stream, tool, rec.Attempts)
			}

			// The OpenAI surface, translated to Messages for Vertex.
			vx.Script(fp.Behavior{ToolCall: tool, Deltas: 3})
			requests++
			oc := g.openaiClient()
			p := openai.ChatCompletionNewParams{Model: "claude-sonnet-4-5",
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Paris?")}}
			if tool {
				p.Tools = oaTools()
			}
			var msg openai.ChatCompletionMessage
			var finish string
			if stream {
				st := oc.Chat.Completions.NewStreaming(ctx, p, option.WithResponseInto(&resp))
				acc := openai.ChatCompletionAccumulator{}
				for st.Next() {
					acc.AddChunk(st.Current())
				}
				if err := st.Err(); err != nil {
					t.Fatalf("openai stream tool=%v: %v", tool, err)
				}
				msg, finish = acc.Choices[0].Message, string(acc.Choices[0].FinishReason)
			} else {
				c, err := oc.Chat.Completions.New(ctx, p, option.WithResponseInto(&resp))
				if err != nil {
					t.Fatalf("openai tool=%v: %v", tool, err)
				}
				msg, finish = c.Choices[0].Message, c.Choices[0].FinishReason
			}
			if got := resp.Header.Get("X-Switchyard-Deployment"); got != "vertex-east" {
				t.Fatalf("openai stream=%v tool=%v answered by %q", stream, tool, got)
			}
			if tool {
				if len(msg.ToolCalls) != 1 || msg.ToolCalls[0].Function.Name != "get_weather" || finish != "tool_calls" {
					t.Fatalf("openai stream=%v tool call %+v %s", stream, msg.ToolCalls, finish)
				}
			} else if msg.Content != "Hello from vertex." || finish != "stop" {
				t.Fatalf("openai stream=%v: %q %s", stream, msg.Content, finish)
			}
		}
	}
	ac := g.anthropicClient()
	n, err := ac.Messages.CountTokens(ctx, anthropic.MessageCountTokensParams{Model: "claude-sonnet-4-5",
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}})
	if err != nil || n.InputTokens <= 0 {
		t.Fatalf("count_tokens: %v %+v", err, n)
	}

	calls := vx.Calls()
	if len(calls) != requests+1 {
		t.Fatalf("vertex calls %d, want %d", len(calls), requests+1)
	}
	auth := calls[0].Authorization
	for i, c := range calls {
		wantModel, wantMethod := "claude-sonnet-4-5@20250929", "rawPredict"
		if gjson.GetBytes(c.Body, "stream").Bool() {
			wantMethod = "streamRawPredict"
		}
		if i == len(calls)-1 {
			wantModel = "count-tokens"
		}
		if c.Project != "my-project" || c.Location != "us-east5" || c.Model != wantModel || c.Method != wantMethod ||
			c.AnthropicVersion != "vertex-2023-10-16" || c.Authorization != auth {
			t.Fatalf("call %d: %+v", i, c)
		}
		if wantModel != "count-tokens" && gjson.GetBytes(c.Body, "model").Exists() {
			t.Fatalf("call %d carries model: %s", i, c.Body)
		}
		if i%2 == 0 && i < requests && c.AnthropicBeta != "fine-grained-tool-streaming-2025-05-14" {
			t.Fatalf("call %d anthropic-beta %q", i, c.AnthropicBeta)
		}
	}
	if !strings.HasPrefix(auth, "Bearer ya29.fake-") {
		t.Fatalf("authorization %q", auth)
	}
	if hits := vx.TokenHits(); hits != 1 {
		t.Fatalf("the token endpoint was hit %d times for %d requests, want once", hits, len(calls))
	}
	if h := g.Fakes["an-backup"].Hits(); h != 0 {
		t.Fatalf("the backup was called %d times", h)
	}
}

// TestVertexFailsOver: before the first output, Vertex's RESOURCE_EXHAUSTED is
// upstream_rate_limited and UNAVAILABLE upstream_error (Google's shapes, the stream's as an
// array); a wrong credential (a service account the token endpoint does not know) and a clock
// skewed by more than 5 minutes are upstream_auth, with a log line that says why. Each fails
// over to the backup, stream and not.
func TestVertexFailsOver(t *testing.T) {
	for _, tc := range []struct {
		name, class, log string
		setup            func(vx *fp.Vertex)
		wrongKey         bool
	}{
		{name: "resource exhausted", class: "upstream_rate_limited", setup: func(vx *fp.Vertex) {
			vx.SetDefault(fp.Behavior{Kind: fp.KindStatus, Status: 429})
		}},
		{name: "unavailable", class: "upstream_error", setup: func(vx *fp.Vertex) {
			vx.SetDefault(fp.Behavior{Kind: fp.KindStatus, Status: 503})
		}},
		{name: "wrong credential", class: "upstream_auth", log: "invalid_grant (Invalid JWT Signature.)", wrongKey: true},
		{name: "skewed clock", class: "upstream_auth", log: "Check your iat and exp values", setup: func(vx *fp.Vertex) {
			vx.SetClockOffset(6 * time.Minute)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sa *fp.Vertex
			if tc.wrongKey {
				sa = fp.NewVertex("stranger")
			}
			g, vx := startVertex(t, sa)
			if tc.setup != nil {
				tc.setup(vx)
			}
			ac := g.anthropicClient()
			for _, stream := range []bool{false, true} {
				p := anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 50,
					Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}}
				var resp *http.Response
				var text string
				if stream {
					st := ac.Messages.NewStreaming(context.Background(), p, anthropicopt.WithResponseInto(&resp))
					var m anthropic.Message
					for st.Next() {
						if err := m.Accumulate(st.Current()); err != nil {
							t.Fatal(err)
						}
					}
					if err := st.Err(); err != nil {
						t.Fatal(err)
					}
					text = m.Content[0].Text
				} else {
					m, err := ac.Messages.New(context.Background(), p, anthropicopt.WithResponseInto(&resp))
					if err != nil {
						t.Fatal(err)
					}
					text = m.Content[0].Text
				}
				if text != "Hello from an-backup." {
					t.Fatalf("stream=%v: %q", stream, text)
				}
				rec := g.generation(t, resp.Header.Get("X-Request-Id"))
				if len(rec.Attempts) != 2 || rec.Attempts[0].Deployment != "vertex-east" || rec.Attempts[0].ErrorCode != tc.class ||
					rec.Attempts[1].Deployment != "an-backup" || rec.Attempts[1].Outcome != audit.OutcomeCompleted {
					t.Fatalf("stream=%v audit %+v", stream, rec.Attempts)
				}
				g.Clock.Advance(10 * time.Minute) // past any pause or cooldown the failure set
			}
			if tc.log != "" {
				logs := g.Logs.String()
				if !strings.Contains(logs, "deployment vertex-east failed: upstream_auth") || !strings.Contains(logs, tc.log) {
					t.Fatalf("no log line says why:\n%s", logs)
				}
				if strings.Contains(logs, "PRIVATE KEY") || strings.Contains(logs, "ya29.") {
					t.Fatalf("a credential reached the logs:\n%s", logs)
				}
			}
		})
	}
}
