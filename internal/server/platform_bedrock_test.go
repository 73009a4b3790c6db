package server_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	anthropicopt "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	openaiopt "github.com/openai/openai-go/v3/option"
	"github.com/tidwall/gjson"

	"github.com/switchyard-gw/switchyard/internal/audit"
	"github.com/switchyard-gw/switchyard/internal/catalog"
	fp "github.com/switchyard-gw/switchyard/internal/fakeprovider"
)

// Claude on Amazon Bedrock through the real server (issue 21, contract.md round 3): the
// official SDKs on both surfaces reach a Bedrock deployment signed with SigV4 or a Bedrock API
// key, against the Bedrock emulator, which verifies the signature and speaks Bedrock's wire
// (event-stream frames, x-amzn-ErrorType errors). The failure rules hold for it as for any
// deployment: an exception frame after the first output ends the caller's stream, a credential
// or clock failure and a throttle fail over.

const (
	brAKID    = "AKIDGATEWAYTEST00001"
	brSecret  = "gateway-test-secret-000000000000000001"
	brModel   = "us.anthropic.claude-haiku-4-5-20251001-v1:0"
	brAPIKey  = "bedrock-api-key-gateway-1"
	brSigV4   = "aws: {region: us-east-1, access_key_id: " + brAKID + ", secret_access_key: " + brSecret + "}"
	brWithKey = "aws: {region: us-east-1}\n    api_key: " + brAPIKey
)

// bedrockYAML serves claude-haiku-4-5 from the Bedrock deployment bedrock-east (cheaper, tried
// first) with the credential lines auth, and from the Anthropic fake an-backup when backup.
func bedrockYAML(bedrockURL, auth string, backup bool) string {
	y := `
auth: {required: false}
routing:
  timeouts: {headers: 5s, stream_headers: 5s, stream_idle: 5s}
models:
  - id: claude-haiku-4-5
deployments:
  - name: bedrock-east
    provider: bedrock
    dialect: anthropic
    platform: bedrock
    base_url: "` + bedrockURL + `"
    ` + auth + `
    routes: [{model: claude-haiku-4-5, upstream_model: "` + brModel + `", price: {input: 1, output: 5}}]
`
	if backup {
		y += `  - name: an-backup
    provider: anthropic
    dialect: anthropic
    base_url: "{{an-backup}}"
    api_key: sk-ant-house-backup
    routes: [{model: claude-haiku-4-5, price: {input: 1.1, output: 5.5}}]
`
	}
	return y
}

// startBedrock starts the Bedrock emulator with cfg (the test credential unless it names
// another) and a gateway in front of it, with the Anthropic backup when backup.
func startBedrock(t *testing.T, cfg fp.BedrockConfig, auth string, backup bool) (*gateway, *fp.Bedrock) {
	t.Helper()
	if cfg.AccessKeyID == "" {
		cfg.AccessKeyID, cfg.SecretAccessKey = brAKID, brSecret
	}
	b := fp.NewBedrock(fp.New("bedrock", catalog.Anthropic), cfg)
	ts := httptest.NewServer(b)
	t.Cleanup(ts.Close)
	var fakes []fakeSpec
	if backup {
		fakes = append(fakes, an("an-backup"))
	}
	return startGateway(t, bedrockYAML(ts.URL, auth, backup), fakes...), b
}

func haikuParams() anthropic.MessageNewParams {
	return anthropic.MessageNewParams{Model: "claude-haiku-4-5", MaxTokens: 200,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("What is the weather in Paris?"))}}
}

func haikuChat() openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{Model: "claude-haiku-4-5",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("What is the weather in Paris?")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}}
}

// checkBedrockAttempt asserts that request rid was served by bedrock-east in one attempt with
// usage from the Anthropic events.
func checkBedrockAttempt(t *testing.T, g *gateway, rid string) {
	t.Helper()
	rec := g.generation(t, rid)
	if len(rec.Attempts) != 1 || rec.Attempts[0].Deployment != "bedrock-east" || rec.Attempts[0].Outcome != audit.OutcomeCompleted ||
		rec.Attempts[0].UpstreamModel != brModel || rec.Attempts[0].Tokens.Input == 0 || rec.Attempts[0].Tokens.Output == 0 || rec.Attempts[0].CostUSD <= 0 {
		t.Fatalf("attempts %+v", rec.Attempts)
	}
}

func TestBedrockThroughBothSDKs(t *testing.T) {
	for _, tc := range []struct{ name, auth, kind string }{{"sigv4", brSigV4, "sigv4"}, {"api key", brWithKey, "bearer"}} {
		t.Run(tc.name, func(t *testing.T) {
			g, b := startBedrock(t, fp.BedrockConfig{APIKey: brAPIKey}, tc.auth, false)
			p := b.Provider()
			ac := g.anthropicClient()
			oc := g.openaiClient()

			// Anthropic surface, non-stream, a tool call.
			p.Script(fp.Behavior{ToolCall: true})
			params := haikuParams()
			params.Tools = anTools()
			var hr *http.Response
			msg, err := ac.Messages.New(t.Context(), params, anthropicopt.WithResponseInto(&hr), anthropicopt.WithHeader("anthropic-beta", "fine-grained-tool-streaming-2025-05-14"))
			if err != nil {
				t.Fatal(err)
			}
			if len(msg.Content) != 1 || msg.Content[0].Type != "tool_use" || msg.Content[0].Name != "get_weather" || msg.StopReason != "tool_use" {
				t.Fatalf("message %+v", msg)
			}
			checkBedrockAttempt(t, g, hr.Header.Get("x-request-id"))
			r := b.Requests()[0]
			if r.Auth != tc.kind || r.ModelID != brModel || r.Operation != "invoke" || gjson.GetBytes(r.Body, "model").Exists() ||
				gjson.GetBytes(r.Body, "anthropic_version").Str != "bedrock-2023-05-31" ||
				gjson.GetBytes(r.Body, "anthropic_beta").Raw != `["fine-grained-tool-streaming-2025-05-14"]` {
				t.Fatalf("bedrock request %+v %s", r, r.Body)
			}

			// Anthropic surface, stream.
			p.Script(fp.Behavior{Text: "Sunny in Paris today.", Deltas: 4})
			stream := ac.Messages.NewStreaming(t.Context(), haikuParams(), anthropicopt.WithResponseInto(&hr))
			var acc anthropic.Message
			for stream.Next() {
				if err := acc.Accumulate(stream.Current()); err != nil {
					t.Fatal(err)
				}
			}
			if err := stream.Err(); err != nil || acc.Content[0].Text != "Sunny in Paris today." || acc.Usage.OutputTokens == 0 {
				t.Fatalf("stream: %v %+v", err, acc)
			}
			checkBedrockAttempt(t, g, hr.Header.Get("x-request-id"))

			// OpenAI surface, non-stream, a tool call.
			p.Script(fp.Behavior{ToolCall: true})
			chat := haikuChat()
			chat.Tools = oaTools()
			comp, err := oc.Chat.Completions.New(t.Context(), chat, openaiopt.WithResponseInto(&hr))
			if err != nil {
				t.Fatal(err)
			}
			if len(comp.Choices) != 1 || len(comp.Choices[0].Message.ToolCalls) != 1 || comp.Choices[0].Message.ToolCalls[0].Function.Name != "get_weather" ||
				!gjson.Valid(comp.Choices[0].Message.ToolCalls[0].Function.Arguments) || comp.Choices[0].FinishReason != "tool_calls" {
				t.Fatalf("completion %+v", comp)
			}
			checkBedrockAttempt(t, g, hr.Header.Get("x-request-id"))

			// OpenAI surface, stream.
			p.Script(fp.Behavior{Text: "Rain in Paris later.", Deltas: 3})
			ostream := oc.Chat.Completions.NewStreaming(t.Context(), haikuChat(), openaiopt.WithResponseInto(&hr))
			var oacc openai.ChatCompletionAccumulator
			for ostream.Next() {
				oacc.AddChunk(ostream.Current())
			}
			if err := ostream.Err(); err != nil || oacc.Choices[0].Message.Content != "Rain in Paris later." || oacc.Usage.CompletionTokens == 0 {
				t.Fatalf("openai stream: %v %+v", err, oacc.ChatCompletion)
			}
			checkBedrockAttempt(t, g, hr.Header.Get("x-request-id"))

			if n := len(b.Requests()); n != 4 {
				t.Fatalf("%d requests reached Bedrock, want 4", n)
			}
			for _, r := range b.Requests() {
				if r.Auth != tc.kind || r.Rejected != "" {
					t.Fatalf("request %+v", r)
				}
			}
		})
	}
}

// An exception frame after the first text delta is a failure after commit (R-FAIL-4): the
// caller's stream ends with a terminal error, and no other deployment is tried.
func TestBedrockExceptionAfterCommit(t *testing.T) {
	for _, exc := range []string{"throttlingException", "modelStreamErrorException"} {
		t.Run(exc, func(t *testing.T) {
			g, b := startBedrock(t, fp.BedrockConfig{}, brSigV4, true)
			b.Provider().Script(fp.Behavior{Kind: fp.KindStreamError, After: 1, ErrorType: exc})
			var hr *http.Response
			ac := g.anthropicClient()
			stream := ac.Messages.NewStreaming(t.Context(), haikuParams(), anthropicopt.WithResponseInto(&hr))
			deltas := 0
			for stream.Next() {
				if stream.Current().Type == "content_block_delta" {
					deltas++
				}
			}
			var apiErr *anthropic.Error
			if err := stream.Err(); deltas != 1 || !errors.As(err, &apiErr) {
				t.Fatalf("%d deltas, err %v", deltas, err)
			}
			if hits := g.Fakes["an-backup"].Hits(); hits != 0 {
				t.Fatalf("the backup was tried after the commit (%d hits)", hits)
			}
			rec := g.generation(t, hr.Header.Get("x-request-id"))
			if len(rec.Attempts) != 1 || rec.Attempts[0].Deployment != "bedrock-east" || rec.Attempts[0].Outcome == audit.OutcomeCompleted {
				t.Fatalf("attempts %+v", rec.Attempts)
			}

			// The same on the OpenAI surface: the stream ends with an error after the text. (A
			// fresh gateway: a throttle after the commit paused Bedrock in this one.)
			g, b = startBedrock(t, fp.BedrockConfig{}, brSigV4, true)
			b.Provider().Script(fp.Behavior{Kind: fp.KindStreamError, After: 1, ErrorType: exc})
			oc := g.openaiClient()
			os := oc.Chat.Completions.NewStreaming(t.Context(), haikuChat())
			text := ""
			for os.Next() {
				if c := os.Current(); len(c.Choices) > 0 {
					text += c.Choices[0].Delta.Content
				}
			}
			if os.Err() == nil || text == "" || g.Fakes["an-backup"].Hits() != 0 {
				t.Fatalf("openai surface: text %q, err %v, backup hits %d", text, os.Err(), g.Fakes["an-backup"].Hits())
			}
		})
	}
}

// Before the commit, Bedrock's failures fail over like the HTTP errors of their class: a wrong
// secret and a clock more than 5 minutes off are upstream_auth (logged with the AWS error type
// that says why), a throttle is upstream_rate_limited (in the audit), an exception frame
// before the first output is the class of its exception.
func TestBedrockFailsOverBeforeCommit(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cfg    fp.BedrockConfig
		b      fp.Behavior
		stream bool
		class  string
		logged string
	}{
		{"wrong secret", fp.BedrockConfig{AccessKeyID: brAKID, SecretAccessKey: "the-real-secret-is-another-one"}, fp.Behavior{}, false,
			"upstream_auth", "error_code=InvalidSignatureException"},
		{"clock skew", fp.BedrockConfig{Now: func() time.Time { return time.Now().Add(-6 * time.Minute) }}, fp.Behavior{}, true,
			"upstream_auth", "error_code=InvalidSignatureException:clock_skew"},
		{"throttled", fp.BedrockConfig{}, fp.Behavior{Kind: fp.KindStatus, Status: 429}, false,
			"upstream_rate_limited", "error_code=ThrottlingException"},
		{"throttled stream", fp.BedrockConfig{}, fp.Behavior{Kind: fp.KindStatus, Status: 429}, true,
			"upstream_rate_limited", "error_code=ThrottlingException"},
		{"exception before output", fp.BedrockConfig{}, fp.Behavior{Kind: fp.KindPreambleError}, true,
			"upstream_error", "error_code=serviceUnavailableException"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, b := startBedrock(t, tc.cfg, brSigV4, true)
			b.Provider().Script(tc.b)
			g.Fakes["an-backup"].Script(fp.Behavior{Text: "From the backup."})
			var hr *http.Response
			ac := g.anthropicClient()
			text := ""
			if tc.stream {
				stream := ac.Messages.NewStreaming(t.Context(), haikuParams(), anthropicopt.WithResponseInto(&hr))
				var acc anthropic.Message
				for stream.Next() {
					_ = acc.Accumulate(stream.Current())
				}
				if err := stream.Err(); err != nil {
					t.Fatal(err)
				}
				text = acc.Content[0].Text
			} else {
				msg, err := ac.Messages.New(t.Context(), haikuParams(), anthropicopt.WithResponseInto(&hr))
				if err != nil {
					t.Fatal(err)
				}
				text = msg.Content[0].Text
			}
			if text != "From the backup." {
				t.Fatalf("answer %q", text)
			}
			rec := g.generation(t, hr.Header.Get("x-request-id"))
			if len(rec.Attempts) != 2 || rec.Attempts[0].Deployment != "bedrock-east" || rec.Attempts[0].ErrorCode != tc.class ||
				rec.Attempts[0].Outcome != audit.OutcomeFailed || rec.Attempts[1].Deployment != "an-backup" || rec.Attempts[1].Outcome != audit.OutcomeCompleted {
				t.Fatalf("attempts %+v", rec.Attempts)
			}
			logs := g.Logs.String()
			if !strings.Contains(logs, "deployment bedrock-east failed: "+tc.class) || !strings.Contains(logs, tc.logged) {
				t.Fatalf("no log line says why bedrock-east failed (%s); logs:\n%s", tc.logged, logs)
			}
			if strings.Contains(logs, brSecret) || strings.Contains(logs, "signature we calculated") || strings.Contains(logs, "Too many requests") {
				t.Fatalf("a credential or provider text reached the log:\n%s", logs)
			}
		})
	}
}

// TestBedrockAuditUpstreamStatus: R-AUDIT-2's upstream_status is the status Bedrock itself
// answered, not the Anthropic status the adapter translates it to for classification: a 503
// ServiceUnavailableException (classified as Anthropic's 529 overloaded) is recorded 503, a 403
// InvalidSignatureException (Anthropic's 401) 403; the classes stay the translated ones.
func TestBedrockAuditUpstreamStatus(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cfg    fp.BedrockConfig
		b      fp.Behavior
		status int
		class  string
	}{
		{"503", fp.BedrockConfig{}, fp.Behavior{Kind: fp.KindStatus, Status: 503}, 503, "upstream_error"},
		{"403", fp.BedrockConfig{AccessKeyID: brAKID, SecretAccessKey: "the-real-secret-is-another-one"}, fp.Behavior{}, 403, "upstream_auth"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, b := startBedrock(t, tc.cfg, brSigV4, true)
			b.Provider().Script(tc.b)
			var hr *http.Response
			ac := g.anthropicClient()
			if _, err := ac.Messages.New(t.Context(), haikuParams(), anthropicopt.WithResponseInto(&hr)); err != nil {
				t.Fatal(err)
			}
			rec := g.generation(t, hr.Header.Get("x-request-id"))
			if len(rec.Attempts) != 2 || rec.Attempts[0].Deployment != "bedrock-east" || rec.Attempts[0].UpstreamStatus != tc.status ||
				rec.Attempts[0].ErrorCode != tc.class || rec.Attempts[1].UpstreamStatus != 200 {
				t.Fatalf("attempts %+v", rec.Attempts)
			}
		})
	}
}

// TestBedrockUnavailableIsTheCallers503: docs/errors.md "Upstream 529 and 503": when a
// provider's 503 is the last failure the caller gets 503 upstream_error. Bedrock's 503
// ServiceUnavailableException was translated to Anthropic's 529 for classification, and the
// caller got 502; on both surfaces it is now a 503, still upstream_error.
func TestBedrockUnavailableIsTheCallers503(t *testing.T) {
	g, b := startBedrock(t, fp.BedrockConfig{}, brSigV4, false)
	for range 8 {
		b.Provider().Script(fp.Behavior{Kind: fp.KindStatus, Status: 503})
	}
	ac := g.anthropicClient(anthropicopt.WithMaxRetries(0))
	_, err := ac.Messages.New(t.Context(), haikuParams())
	var aerr *anthropic.Error
	if !errors.As(err, &aerr) || aerr.StatusCode != 503 {
		t.Fatalf("anthropic surface: %v, want a 503", err)
	}
	if code := aerr.Response.Header.Get("x-switchyard-error-code"); code != "upstream_error" {
		t.Errorf("anthropic surface: error code %q, want upstream_error", code)
	}
	oc := g.openaiClient(openaiopt.WithMaxRetries(0))
	_, err = oc.Chat.Completions.New(t.Context(), haikuChat())
	var oerr *openai.Error
	if !errors.As(err, &oerr) || oerr.StatusCode != 503 {
		t.Fatalf("openai surface: %v, want a 503", err)
	}
}
