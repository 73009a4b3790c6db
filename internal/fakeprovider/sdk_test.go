package fakeprovider

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	anthropicoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	openaioption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/switchyard-gw/switchyard/internal/catalog"
)

// These tests drive the provider with the official SDKs: if a frame or body shape drifted from
// the real APIs (wire.md §1.4-1.6, §4.4-4.6) the SDKs would fail to accumulate or classify it.

// serve starts p behind an httptest server closed at the end of the test.
func serve(t *testing.T, p *Provider) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return srv
}

func openAIClient(srv *httptest.Server) openai.Client {
	return openai.NewClient(openaioption.WithBaseURL(srv.URL+"/v1/"), openaioption.WithAPIKey("sk-caller-key-123456"),
		openaioption.WithMaxRetries(0), openaioption.WithHTTPClient(srv.Client()))
}

func anthropicClient(srv *httptest.Server) anthropic.Client {
	return anthropic.NewClient(anthropicoption.WithBaseURL(srv.URL), anthropicoption.WithAPIKey("sk-ant-caller-key-123456"),
		anthropicoption.WithMaxRetries(0), anthropicoption.WithHTTPClient(srv.Client()))
}

func openAIParams(tools bool) openai.ChatCompletionNewParams {
	p := openai.ChatCompletionNewParams{
		Model:         "gpt-x",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Say hello")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
	if tools {
		p.Tools = []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: "get_weather",
			Parameters: openai.FunctionParameters{"type": "object", "properties": map[string]any{
				"city": map[string]any{"type": "string"}, "days": map[string]any{"type": "integer"},
				"unit": map[string]any{"type": "string", "enum": []string{"celsius", "fahrenheit"}}},
				"required": []string{"city"}},
		})}
	}
	return p
}

func anthropicParams(tools bool) anthropic.MessageNewParams {
	p := anthropic.MessageNewParams{
		Model:     "claude-x",
		MaxTokens: 100,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Say hello"))},
	}
	if tools {
		p.Tools = []anthropic.ToolUnionParam{anthropic.ToolUnionParamOfTool(anthropic.ToolInputSchemaParam{
			Properties: map[string]any{"city": map[string]any{"type": "string"}, "days": map[string]any{"type": "integer"}},
			Required:   []string{"city"},
		}, "get_weather")}
	}
	return p
}

func TestOpenAISDKStreamAccumulates(t *testing.T) {
	p := New("alpha", catalog.OpenAI)
	p.Script(Behavior{Text: "Hello from the fake provider.", Deltas: 5, CachedTokens: 2, KeepAlive: true, SplitWrites: true})
	srv := serve(t, p)
	client := openAIClient(srv)
	stream := client.Chat.Completions.NewStreaming(t.Context(), openAIParams(false))
	var acc openai.ChatCompletionAccumulator
	chunks := 0
	for stream.Next() {
		chunks++
		if !acc.AddChunk(stream.Current()) {
			t.Fatalf("accumulator refused chunk %d: %s", chunks, stream.Current().RawJSON())
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	if got := acc.Choices[0].Message.Content; got != "Hello from the fake provider." {
		t.Errorf("content = %q", got)
	}
	if acc.Choices[0].FinishReason != "stop" || acc.Model != "gpt-x" {
		t.Errorf("finish_reason %q model %q", acc.Choices[0].FinishReason, acc.Model)
	}
	// role chunk + 5 deltas + finish chunk + usage chunk
	if chunks != 8 {
		t.Errorf("chunks = %d, want 8", chunks)
	}
	req := p.Requests()[0]
	wantPrompt := int64((len(req.Body) + 3) / 4)
	u := acc.Usage
	if u.PromptTokens != wantPrompt || u.CompletionTokens != 5 || u.TotalTokens != wantPrompt+5 || u.PromptTokensDetails.CachedTokens != 2 {
		t.Errorf("usage = %+v, want prompt %d completion 5 cached 2", u, wantPrompt)
	}
}

func TestOpenAISDKNonStream(t *testing.T) {
	p := New("alpha", catalog.OpenAI)
	srv := serve(t, p)
	client := openAIClient(srv)
	c, err := client.Chat.Completions.New(t.Context(), openAIParams(false))
	if err != nil {
		t.Fatal(err)
	}
	if c.Choices[0].Message.Content != "Hello from alpha." || c.Model != "gpt-x" || c.Usage.CompletionTokens != 3 {
		t.Errorf("completion = %q model %q usage %+v", c.Choices[0].Message.Content, c.Model, c.Usage)
	}
	if got := p.Requests()[0]; got.Stream || got.Model != "gpt-x" || got.Path != "/v1/chat/completions" {
		t.Errorf("recorded %+v", got)
	}
}

func TestOpenAISDKToolCalls(t *testing.T) {
	for _, tc := range []struct {
		name  string
		b     Behavior
		calls int
	}{
		{"one", Behavior{ToolCall: true}, 1},
		{"parallel", Behavior{ParallelToolCalls: 3}, 3},
		{"big", Behavior{BigArgumentBytes: 200 << 10}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := New("alpha", catalog.OpenAI)
			p.Script(tc.b)
			srv := serve(t, p)
			client := openAIClient(srv)
			stream := client.Chat.Completions.NewStreaming(t.Context(), openAIParams(true))
			var acc openai.ChatCompletionAccumulator
			for stream.Next() {
				acc.AddChunk(stream.Current())
			}
			if err := stream.Err(); err != nil {
				t.Fatalf("stream: %v", err)
			}
			calls := acc.Choices[0].Message.ToolCalls
			if len(calls) != tc.calls || acc.Choices[0].FinishReason != "tool_calls" {
				t.Fatalf("%d calls, finish %q", len(calls), acc.Choices[0].FinishReason)
			}
			for _, c := range calls {
				var args map[string]any
				if err := json.Unmarshal([]byte(c.Function.Arguments), &args); err != nil {
					t.Fatalf("arguments are not JSON: %v", err)
				}
				if c.Function.Name != "get_weather" || args["city"] == nil || args["unit"] != "celsius" {
					t.Errorf("call %s %v", c.Function.Name, args)
				}
				if tc.b.BigArgumentBytes > 0 && len(c.Function.Arguments) < tc.b.BigArgumentBytes-16 {
					t.Errorf("big arguments are %d bytes", len(c.Function.Arguments))
				}
			}
		})
	}
}

func TestOpenAISDKErrors(t *testing.T) {
	for _, tc := range []struct {
		b          Behavior
		status     int
		typ, code  string
		retryAfter string
	}{
		{Behavior{Kind: KindStatus, Status: 429, RetryAfter: 7}, 429, "requests", "rate_limit_exceeded", "7"},
		{Behavior{Kind: KindStatus, Status: 429, ErrorCode: "insufficient_quota"}, 429, "insufficient_quota", "insufficient_quota", ""},
		{Behavior{Kind: KindStatus, Status: 500}, 500, "server_error", "", ""},
		{Behavior{Kind: KindStatus}, 500, "server_error", "", ""},
		{Behavior{Kind: KindContextOverflow}, 400, "invalid_request_error", "context_length_exceeded", ""},
		{Behavior{Kind: KindContentPolicy}, 400, "invalid_request_error", "content_policy_violation", ""},
		{Behavior{Kind: KindPreambleError}, 503, "server_error", "", ""},
	} {
		t.Run(string(tc.b.Kind)+"/"+tc.code, func(t *testing.T) {
			p := New("alpha", catalog.OpenAI)
			p.Script(tc.b)
			srv := serve(t, p)
			client := openAIClient(srv)
			_, err := client.Chat.Completions.New(t.Context(), openAIParams(false))
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) {
				t.Fatalf("err = %v, want *openai.Error", err)
			}
			if apiErr.StatusCode != tc.status || apiErr.Type != tc.typ || apiErr.Code != tc.code {
				t.Errorf("got %d %q %q, want %d %q %q", apiErr.StatusCode, apiErr.Type, apiErr.Code, tc.status, tc.typ, tc.code)
			}
			if got := apiErr.Response.Header.Get("Retry-After"); got != tc.retryAfter {
				t.Errorf("Retry-After = %q, want %q", got, tc.retryAfter)
			}
			if apiErr.Response.Header.Get("X-Request-Id") != "req_fake1" {
				t.Errorf("x-request-id = %q", apiErr.Response.Header.Get("X-Request-Id"))
			}
		})
	}
}

func TestOpenAISDKStreamErrors(t *testing.T) {
	for _, tc := range []struct {
		b        Behavior
		wantErr  bool
		wantText string
	}{
		{Behavior{Kind: KindStreamError, After: 2}, true, "Hello from "},
		{Behavior{Kind: KindPreambleError}, true, ""},
		{Behavior{Kind: KindTruncate, After: 1}, false, "Hello"}, // no SDK reports a silent truncation
		{Behavior{Kind: KindCut, After: 1}, true, "Hello"},       // an abrupt drop is an unexpected EOF
	} {
		t.Run(string(tc.b.Kind), func(t *testing.T) {
			p := New("alpha", catalog.OpenAI)
			p.Script(tc.b)
			srv := serve(t, p)
			client := openAIClient(srv)
			stream := client.Chat.Completions.NewStreaming(t.Context(), openAIParams(false))
			var acc openai.ChatCompletionAccumulator
			for stream.Next() {
				acc.AddChunk(stream.Current())
			}
			if err := stream.Err(); (err != nil) != tc.wantErr {
				t.Fatalf("stream err = %v, want error %v", err, tc.wantErr)
			}
			got := ""
			if len(acc.Choices) > 0 {
				got = acc.Choices[0].Message.Content
			}
			if got != tc.wantText {
				t.Errorf("text before the failure = %q, want %q", got, tc.wantText)
			}
		})
	}
}

func TestAnthropicSDKStreamAccumulates(t *testing.T) {
	p := New("beta", catalog.Anthropic)
	p.Script(Behavior{Deltas: 4, CachedTokens: 3, KeepAlive: true, SplitWrites: true})
	srv := serve(t, p)
	client := anthropicClient(srv)
	stream := client.Messages.NewStreaming(t.Context(), anthropicParams(false))
	var msg anthropic.Message
	for stream.Next() {
		if err := msg.Accumulate(stream.Current()); err != nil {
			t.Fatalf("accumulate: %v", err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	if len(msg.Content) != 1 || msg.Content[0].Text != "Hello from beta." {
		t.Fatalf("content = %+v", msg.Content)
	}
	if msg.StopReason != "end_turn" || msg.Model != "claude-x" {
		t.Errorf("stop %q model %q", msg.StopReason, msg.Model)
	}
	wantPrompt := int64((len(p.Requests()[0].Body) + 3) / 4)
	if msg.Usage.OutputTokens != 4 || msg.Usage.InputTokens != wantPrompt-3 || msg.Usage.CacheReadInputTokens != 3 {
		t.Errorf("usage = %+v, want input %d cache_read 3 output 4", msg.Usage, wantPrompt-3)
	}
}

func TestAnthropicSDKToolCalls(t *testing.T) {
	for _, tc := range []struct {
		name  string
		b     Behavior
		calls int
	}{
		{"one", Behavior{ToolCall: true}, 1},
		{"parallel", Behavior{ParallelToolCalls: 2}, 2},
		{"big", Behavior{BigArgumentBytes: 200 << 10}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := New("beta", catalog.Anthropic)
			p.Script(tc.b, tc.b)
			srv := serve(t, p)
			client := anthropicClient(srv)
			stream := client.Messages.NewStreaming(t.Context(), anthropicParams(true))
			var msg anthropic.Message
			for stream.Next() {
				if err := msg.Accumulate(stream.Current()); err != nil {
					t.Fatalf("accumulate: %v", err)
				}
			}
			if err := stream.Err(); err != nil {
				t.Fatalf("stream: %v", err)
			}
			nonStream, err := client.Messages.New(t.Context(), anthropicParams(true))
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range []*anthropic.Message{&msg, nonStream} {
				if len(m.Content) != tc.calls || m.StopReason != "tool_use" {
					t.Fatalf("%d blocks, stop %q", len(m.Content), m.StopReason)
				}
				for _, c := range m.Content {
					var args map[string]any
					if err := json.Unmarshal(c.Input, &args); err != nil {
						t.Fatalf("input is not JSON: %v", err)
					}
					if c.Type != "tool_use" || c.Name != "get_weather" || args["city"] == nil {
						t.Errorf("block %s %s %v", c.Type, c.Name, args)
					}
				}
			}
		})
	}
}

func TestAnthropicSDKErrors(t *testing.T) {
	for _, tc := range []struct {
		b      Behavior
		status int
		typ    string
		msg    string
	}{
		{Behavior{Kind: KindStatus, Status: 429}, 429, "rate_limit_error", ""},
		{Behavior{Kind: KindStatus, Status: 529}, 529, "overloaded_error", "Overloaded"},
		{Behavior{Kind: KindStatus, Status: 500}, 500, "api_error", ""},
		{Behavior{Kind: KindStatus, Status: 401}, 401, "authentication_error", ""},
		{Behavior{Kind: KindStatus, Status: 402}, 402, "billing_error", ""},
		{Behavior{Kind: KindContextOverflow}, 400, "invalid_request_error", "prompt is too long: "},
		{Behavior{Kind: KindContentPolicy}, 400, "invalid_request_error", "Output blocked by content filtering policy"},
		{Behavior{Kind: KindStatus, Status: 400, ErrorType: "invalid_request_error", Message: "custom"}, 400, "invalid_request_error", "custom"},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			p := New("beta", catalog.Anthropic)
			p.Script(tc.b)
			srv := serve(t, p)
			client := anthropicClient(srv)
			_, err := client.Messages.New(t.Context(), anthropicParams(false))
			var apiErr *anthropic.Error
			if !errors.As(err, &apiErr) {
				t.Fatalf("err = %v, want *anthropic.Error", err)
			}
			if apiErr.StatusCode != tc.status || string(apiErr.Type()) != tc.typ || !strings.HasPrefix(apiErr.Message, tc.msg) {
				t.Errorf("got %d %q %q, want %d %q %q…", apiErr.StatusCode, apiErr.Type(), apiErr.Message, tc.status, tc.typ, tc.msg)
			}
			if apiErr.RequestID != "req_fake1" {
				t.Errorf("request id = %q", apiErr.RequestID)
			}
		})
	}
}

func TestAnthropicSDKStreamErrors(t *testing.T) {
	for _, tc := range []struct {
		b        Behavior
		wantType string // "" means no error
		wantText string
	}{
		{Behavior{Kind: KindStreamError, After: 2}, "api_error", "Hello from"},
		{Behavior{Kind: KindPreambleError}, "overloaded_error", ""},
		{Behavior{Kind: KindStreamError, ErrorType: "overloaded_error"}, "overloaded_error", ""},
		{Behavior{Kind: KindTruncate, After: 3}, "", "Hello from beta."},
	} {
		t.Run(string(tc.b.Kind)+tc.b.ErrorType, func(t *testing.T) {
			p := New("beta", catalog.Anthropic)
			p.Script(tc.b)
			srv := serve(t, p)
			client := anthropicClient(srv)
			stream := client.Messages.NewStreaming(t.Context(), anthropicParams(false))
			var msg anthropic.Message
			for stream.Next() {
				if err := msg.Accumulate(stream.Current()); err != nil {
					t.Fatalf("accumulate: %v", err)
				}
			}
			err := stream.Err()
			var apiErr *anthropic.Error
			switch {
			case tc.wantType == "" && err != nil:
				t.Fatalf("stream err = %v", err)
			case tc.wantType != "" && !errors.As(err, &apiErr):
				t.Fatalf("stream err = %v, want *anthropic.Error", err)
			case tc.wantType != "" && (string(apiErr.Type()) != tc.wantType || apiErr.StatusCode != http.StatusOK):
				t.Errorf("error type %q status %d, want %q 200", apiErr.Type(), apiErr.StatusCode, tc.wantType)
			}
			got := ""
			if len(msg.Content) > 0 {
				got = msg.Content[0].Text
			}
			if got != tc.wantText {
				t.Errorf("text = %q, want %q", got, tc.wantText)
			}
		})
	}
}

// TestRequireKey checks the loose auth of both dialects and that Requests records the
// credentials that arrived.
func TestRequireKey(t *testing.T) {
	t.Run("openai", func(t *testing.T) {
		p := New("alpha", catalog.OpenAI)
		p.RequireKey("sk-upstream")
		p.Script(Behavior{Kind: KindStatus, Status: 503})
		srv := serve(t, p)
		caller := openAIClient(srv)
		_, err := caller.Chat.Completions.New(t.Context(), openAIParams(false))
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 401 || apiErr.Code != "invalid_api_key" {
			t.Fatalf("err = %v, want 401 invalid_api_key", err)
		}
		ok := openai.NewClient(openaioption.WithBaseURL(srv.URL+"/v1/"), openaioption.WithAPIKey("sk-upstream"),
			openaioption.WithMaxRetries(0), openaioption.WithHTTPClient(srv.Client()))
		// The 401 consumed no behavior: the scripted 503 applies to the next accepted request.
		if _, err := ok.Chat.Completions.New(t.Context(), openAIParams(false)); !errors.As(err, &apiErr) || apiErr.StatusCode != 503 {
			t.Fatalf("err = %v, want the scripted 503", err)
		}
		reqs := p.Requests()
		if len(reqs) != 2 || reqs[0].Rejected != "unauthorized" || reqs[0].Authorization != "Bearer sk-caller-key-123456" ||
			reqs[1].Rejected != "" || reqs[1].Authorization != "Bearer sk-upstream" || reqs[1].Kind != KindStatus {
			t.Errorf("requests = %+v", reqs)
		}
	})
	t.Run("anthropic", func(t *testing.T) {
		p := New("beta", catalog.Anthropic)
		p.RequireKey("sk-ant-upstream")
		srv := serve(t, p)
		caller := anthropicClient(srv)
		_, err := caller.Messages.New(t.Context(), anthropicParams(false))
		var apiErr *anthropic.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 401 || apiErr.Type() != "authentication_error" {
			t.Fatalf("err = %v, want 401 authentication_error", err)
		}
		for _, h := range []http.Header{{"X-Api-Key": {"sk-ant-upstream"}}, {"Authorization": {"Bearer sk-ant-upstream"}}} {
			resp := post(t, srv, "/v1/messages", `{"model":"m","max_tokens":1,"messages":[]}`, h)
			if resp.StatusCode != 200 {
				t.Errorf("%v: status %d", h, resp.StatusCode)
			}
		}
		if got := p.Requests()[0].Authorization; got != "Bearer sk-ant-caller-key-123456" {
			t.Errorf("recorded Authorization %q", got)
		}
		if got := p.Requests()[1].APIKey; got != "sk-ant-upstream" {
			t.Errorf("recorded x-api-key %q", got)
		}
	})
}
