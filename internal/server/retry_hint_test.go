package server_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	anthropicopt "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	openaiopt "github.com/openai/openai-go/v3/option"

	fp "github.com/switchyard-gw/switchyard/internal/fakeprovider"
)

// oneEach is a catalog with one deployment per dialect and circuits that never open here, so
// that every SDK retry reaches the provider again and the provider's hits count the retries.
const oneEach = `
auth: {required: false}
routing:
  timeouts: {headers: 5s, stream_headers: 5s, stream_idle: 5s}
  circuit: {failures: 1000}
models:
  - id: gpt-4o-mini
  - id: claude-haiku-4-5
deployments:
  - name: oa-only
    provider: openai
    dialect: openai
    base_url: "{{oa-only}}"
    api_key: sk-house
    routes: [{model: gpt-4o-mini, price: {input: 0.15, output: 0.6}}]
  - name: an-only
    provider: anthropic
    dialect: anthropic
    base_url: "{{an-only}}"
    api_key: sk-ant-house
    routes: [{model: claude-haiku-4-5, price: {input: 1, output: 5}}]
`

// sdkRetryCall makes one non-streaming call through the surface's official SDK with its
// default retry policy (2 retries) and returns the HTTP status of the error (0 on success) and
// the headers of the last response.
func sdkRetryCall(ctx context.Context, g *gateway, anthropicSurface bool) (status int, h http.Header, err error) {
	var hr *http.Response
	if anthropicSurface {
		c := g.anthropicClient(anthropicopt.WithMaxRetries(2), anthropicopt.WithResponseInto(&hr))
		_, err = c.Messages.New(ctx, anthropic.MessageNewParams{Model: "claude-haiku-4-5", MaxTokens: 64,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello"))}})
		var ae *anthropic.Error
		if errors.As(err, &ae) {
			status, hr = ae.StatusCode, ae.Response
		}
	} else {
		c := g.openaiClient(openaiopt.WithMaxRetries(2), openaiopt.WithResponseInto(&hr))
		_, err = c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt-4o-mini",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello")}})
		var oe *openai.Error
		if errors.As(err, &oe) {
			status, hr = oe.StatusCode, oe.Response
		}
	}
	if hr != nil {
		h = hr.Header
	}
	return status, h, err
}

// TestRetryHintsSDK: every error answer carries x-should-retry (contract.md round 3), and the
// official SDKs, with their default two retries, follow it: a content-policy 400 and an
// upstream_auth 502 (a status the SDKs retry on their own) reach the provider once; a provider's
// 503 is answered 503 with its retry-after and x-should-retry true, and the SDK's retry succeeds.
func TestRetryHintsSDK(t *testing.T) {
	g := startGateway(t, oneEach, oa("oa-only"), an("an-only"))
	for _, anth := range []bool{false, true} {
		dep := "oa-only"
		if anth {
			dep = "an-only"
		}
		f := g.Fakes[dep]
		t.Run(dep, func(t *testing.T) {
			cases := []struct {
				name       string
				script     []fp.Behavior
				wantStatus int
				wantRetry  string
				wantHits   int
				wantAfter  string
			}{
				{"content_policy", []fp.Behavior{{Kind: fp.KindContentPolicy}}, 400, "false", 1, ""},
				{"upstream_auth", []fp.Behavior{{Kind: fp.KindStatus, Status: 401}}, 502, "false", 1, ""},
				{"context_overflow", []fp.Behavior{{Kind: fp.KindContextOverflow}}, 400, "false", 1, ""},
				// Three 503s: the first call and both retries; the SDK gives up on the third.
				{"provider_503", []fp.Behavior{
					{Kind: fp.KindStatus, Status: 503, RetryAfter: 1},
					{Kind: fp.KindStatus, Status: 503, RetryAfter: 1},
					{Kind: fp.KindStatus, Status: 503, RetryAfter: 1}}, 503, "true", 3, "1"},
				// A 503 then an answer: the SDK's retry succeeds.
				{"provider_503_then_ok", []fp.Behavior{{Kind: fp.KindStatus, Status: 503, RetryAfter: 1}, {}}, 0, "", 2, ""},
			}
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					f.Reset()
					f.Script(tc.script...)
					status, h, err := sdkRetryCall(t.Context(), g, anth)
					if tc.wantStatus == 0 {
						if err != nil {
							t.Fatalf("call: %v, want success after the retry", err)
						}
					} else {
						if status != tc.wantStatus {
							t.Fatalf("status %d (%v), want %d", status, err, tc.wantStatus)
						}
						if got := h.Get("X-Should-Retry"); got != tc.wantRetry {
							t.Errorf("x-should-retry %q, want %q", got, tc.wantRetry)
						}
						if got := h.Get("Retry-After"); got != tc.wantAfter {
							t.Errorf("retry-after %q, want %q", got, tc.wantAfter)
						}
					}
					if got := f.Hits(); got != tc.wantHits {
						t.Errorf("the provider was called %d times, want %d", got, tc.wantHits)
					}
				})
			}
		})
	}
}

// TestRetryHintsRaw: the gateway's own refusals carry x-should-retry too: a malformed request
// and an unknown model false; every route cooling down true with retry-after.
func TestRetryHintsRaw(t *testing.T) {
	g := startGateway(t, oneEach, oa("oa-only"), an("an-only"))
	for _, s := range []surface{
		{"openai", "/v1/chat/completions", "gpt-4o-mini", "oa-only", ""},
		{"anthropic", "/v1/messages", "claude-haiku-4-5", "an-only", ""},
	} {
		t.Run(s.name, func(t *testing.T) {
			for _, tc := range []struct{ name, body, want string }{
				{"malformed", `{"model":`, "false"},
				{"unknown_model", `{"model":"nope","max_tokens":5,"messages":[{"role":"user","content":"x"}]}`, "false"},
			} {
				resp, b := s.post(t, g, tc.body)
				if resp.StatusCode < 400 {
					t.Fatalf("%s: status %d", tc.name, resp.StatusCode)
				}
				if got := resp.Header.Get("X-Should-Retry"); got != tc.want {
					t.Errorf("%s: x-should-retry %q, want %q (%s)", tc.name, got, tc.want, b)
				}
			}
		})
	}
	// The gateway's 503: an operator-free way to cool every route is a circuit opened by
	// failures; a separate gateway with circuit failures 1.
	g2 := startGateway(t, `
auth: {required: false}
routing:
  circuit: {failures: 1, cooldown: 60s}
models: [{id: gpt-4o-mini}]
deployments:
  - {name: d, provider: openai, dialect: openai, base_url: "{{d}}", api_key: k, routes: [{model: gpt-4o-mini}]}
`, oa("d"))
	g2.Fakes["d"].SetDefault(fp.Behavior{Kind: fp.KindStatus, Status: 500})
	s := surface{"openai", "/v1/chat/completions", "gpt-4o-mini", "d", ""}
	resp, _ := s.post(t, g2, s.body(false))
	if resp.StatusCode != 502 || resp.Header.Get("X-Should-Retry") != "true" {
		t.Fatalf("provider 500: status %d x-should-retry %q, want 502 true", resp.StatusCode, resp.Header.Get("X-Should-Retry"))
	}
	if resp.Header.Get("Retry-After") != "" {
		t.Errorf("provider 500 without retry-after answered with retry-after %q", resp.Header.Get("Retry-After"))
	}
	resp, _ = s.post(t, g2, s.body(false))
	if resp.StatusCode != 503 || resp.Header.Get("X-Switchyard-Error-Code") != "gateway_error" ||
		resp.Header.Get("X-Should-Retry") != "true" || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("all cooling: status %d class %q x-should-retry %q retry-after %q, want 503 gateway_error true with retry-after",
			resp.StatusCode, resp.Header.Get("X-Switchyard-Error-Code"), resp.Header.Get("X-Should-Retry"), resp.Header.Get("Retry-After"))
	}
}
