package server_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	anthropicopt "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	openaiopt "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// deepArguments is a tool call's arguments string holding a JSON object nested 200 levels deep:
// the request body itself stays shallow (the arguments are a JSON string in it).
var deepArguments = strings.Repeat(`{"a":`, 200) + "1" + strings.Repeat("}", 200)

// TestSDKDeepToolArgumentsCrossDialect: an OpenAI-dialect caller (chat completions and
// responses) whose history holds a tool call with arguments nested deeper than 128 levels, to a
// Claude model, gets 400 invalid_request in the OpenAI shape naming the depth limit and the
// caller's own path of the arguments (not the Anthropic translation's path); nothing is sent
// upstream.
func TestSDKDeepToolArgumentsCrossDialect(t *testing.T) {
	g := startTwo(t)
	oc := g.openaiClient()
	call := openai.ChatCompletionMessageParamUnion{OfAssistant: &openai.ChatCompletionAssistantMessageParam{
		ToolCalls: []openai.ChatCompletionMessageToolCallUnionParam{{OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
			ID: "call_1", Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: "get_weather", Arguments: deepArguments}}}}}}
	_, chatErr := oc.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "claude-haiku-4-5", Tools: oaTools(),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("Be brief."), openai.UserMessage("Weather in Paris?"), call,
			openai.ToolMessage("sunny", "call_1")}})
	_, respErr := oc.Responses.New(context.Background(), responses.ResponseNewParams{Model: "claude-haiku-4-5",
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
			responses.ResponseInputItemParamOfMessage("Weather in Paris?", responses.EasyInputMessageRoleUser),
			responses.ResponseInputItemParamOfFunctionCall(deepArguments, "call_1", "get_weather"),
			{OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{CallID: openai.String("call_1"),
				Output: responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfString: openai.String("sunny")}}},
		}}})
	for _, tc := range []struct {
		surface string
		err     error
		param   string
	}{
		{"chat", chatErr, "messages[2].tool_calls[0].function.arguments"},
		{"responses", respErr, "input[1].arguments"},
	} {
		var oe *openai.Error
		if !errors.As(tc.err, &oe) || oe.StatusCode != http.StatusBadRequest || oe.Type != "invalid_request_error" {
			t.Fatalf("%s: %v, want 400 invalid_request_error", tc.surface, tc.err)
		}
		if !strings.Contains(oe.Message, "nested deeper than 128 levels") || !strings.Contains(oe.Message, tc.param) {
			t.Errorf("%s: message %q does not name the depth limit and %s", tc.surface, oe.Message, tc.param)
		}
		if oe.Param != tc.param {
			t.Errorf("%s: param %q, want %q", tc.surface, oe.Param, tc.param)
		}
	}
	if h := g.Fakes["an-primary"].Hits() + g.Fakes["an-backup"].Hits(); h != 0 {
		t.Fatalf("%d upstream hits for refused arguments", h)
	}
}

// gzipBody compresses a request's body and marks it Content-Encoding: gzip, as a compressing
// proxy or client would.
func gzipBody(t *testing.T, r *http.Request) {
	t.Helper()
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write(raw)
	_ = zw.Close()
	r.Body = io.NopCloser(bytes.NewReader(buf.Bytes()))
	r.ContentLength = int64(buf.Len())
	r.GetBody = nil
	r.Header.Set("Content-Encoding", "gzip")
}

// TestSDKCompressedBodyRefused: a request body with a Content-Encoding (gzip here) is refused
// with 415 in the caller's dialect naming Content-Encoding (not "not valid UTF-8"), with
// Accept-Encoding: identity, and nothing is sent upstream; the same call uncompressed is served.
func TestSDKCompressedBodyRefused(t *testing.T) {
	g := startTwo(t)
	var oaResp, anResp *http.Response
	oc := g.openaiClient(openaiopt.WithMiddleware(func(r *http.Request, next openaiopt.MiddlewareNext) (*http.Response, error) {
		gzipBody(t, r)
		resp, err := next(r)
		oaResp = resp
		return resp, err
	}))
	_, err := oc.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "gpt-4o-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello")}})
	var oe *openai.Error
	if !errors.As(err, &oe) || oe.StatusCode != http.StatusUnsupportedMediaType || oe.Type != "invalid_request_error" ||
		!strings.Contains(oe.Message, "Content-Encoding") || oe.Param != "Content-Encoding" {
		t.Fatalf("openai SDK: %v, want 415 invalid_request_error naming Content-Encoding", err)
	}
	if got := oaResp.Header.Get("Accept-Encoding"); got != "identity" {
		t.Errorf("openai SDK: Accept-Encoding %q, want identity", got)
	}
	ac := g.anthropicClient(anthropicopt.WithMiddleware(func(r *http.Request, next anthropicopt.MiddlewareNext) (*http.Response, error) {
		gzipBody(t, r)
		resp, err := next(r)
		anResp = resp
		return resp, err
	}))
	_, err = ac.Messages.New(context.Background(), anthropic.MessageNewParams{Model: "claude-haiku-4-5", MaxTokens: 5,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello"))}})
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != http.StatusUnsupportedMediaType {
		t.Fatalf("anthropic SDK: %v, want 415", err)
	}
	raw := ae.RawJSON()
	if !strings.Contains(raw, `"type":"error"`) || !strings.Contains(raw, `"invalid_request_error"`) || !strings.Contains(raw, "Content-Encoding") {
		t.Errorf("anthropic SDK: body %s, want an Anthropic invalid_request_error naming Content-Encoding", raw)
	}
	if got := anResp.Header.Get("Accept-Encoding"); got != "identity" {
		t.Errorf("anthropic SDK: Accept-Encoding %q, want identity", got)
	}
	for name, f := range g.Fakes {
		if h := f.Hits(); h != 0 {
			t.Errorf("%s was called %d times for compressed bodies", name, h)
		}
	}
	for _, s := range surfaces {
		if r := s.call(t.Context(), g, false); r.Err != nil || r.Text != hello(s.primary) {
			t.Fatalf("%s uncompressed: %q %v", s.name, r.Text, r.Err)
		}
	}
}

// TestSDKEmptyMessagesRefused: `messages: []` is refused 400 invalid_request in the caller's
// dialect naming `messages`, in the words of the API the caller speaks (OpenAI "[] is too short -
// 'messages'", Anthropic "messages: at least one message is required"), on chat completions,
// messages and count_tokens, whichever dialect serves the model; nothing is sent upstream.
func TestSDKEmptyMessagesRefused(t *testing.T) {
	g := startTwo(t)
	oc, ac := g.openaiClient(), g.anthropicClient()
	for _, model := range []string{"gpt-4o-mini", "claude-haiku-4-5"} {
		_, err := oc.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: model,
			Messages: []openai.ChatCompletionMessageParamUnion{}})
		var oe *openai.Error
		if !errors.As(err, &oe) || oe.StatusCode != http.StatusBadRequest || oe.Type != "invalid_request_error" ||
			oe.Param != "messages" || oe.Message != "[] is too short - 'messages'" {
			t.Errorf("openai SDK, %s: %v (param %q), want 400 invalid_request_error param messages", model, err, oe.Param)
		}
		for _, count := range []bool{false, true} {
			if count {
				_, err = ac.Messages.CountTokens(context.Background(), anthropic.MessageCountTokensParams{Model: anthropic.Model(model),
					Messages: []anthropic.MessageParam{}})
			} else {
				_, err = ac.Messages.New(context.Background(), anthropic.MessageNewParams{Model: anthropic.Model(model), MaxTokens: 5,
					Messages: []anthropic.MessageParam{}})
			}
			var ae *anthropic.Error
			if !errors.As(err, &ae) || ae.StatusCode != http.StatusBadRequest ||
				!strings.Contains(ae.RawJSON(), `"type":"invalid_request_error"`) ||
				!strings.Contains(ae.RawJSON(), `"message":"messages: at least one message is required"`) {
				t.Errorf("anthropic SDK, %s (count_tokens %v): %v, want 400 invalid_request_error on messages", model, count, err)
			}
		}
	}
	for name, f := range g.Fakes {
		if h := f.Hits(); h != 0 {
			t.Errorf("%s was called %d times for empty messages", name, h)
		}
	}
}

// TestSDKWrongMethod405: another method on a path the gateway serves is 405 with Allow, an
// invalid_request error body in the path's dialect (OpenAI on /v1/chat/completions, Anthropic on
// /v1/messages), not 404; an unknown path stays 404.
func TestSDKWrongMethod405(t *testing.T) {
	g := startTwo(t)
	ctx := context.Background()
	oc, ac := g.openaiClient(), g.anthropicClient()
	for _, path := range []string{"chat/completions", "embeddings", "responses", "route", "images/generations", "images/edits"} {
		var out map[string]any
		err := oc.Get(ctx, path, nil, &out)
		var oe *openai.Error
		if !errors.As(err, &oe) || oe.StatusCode != http.StatusMethodNotAllowed || oe.Type != "invalid_request_error" ||
			!strings.Contains(oe.Message, "GET") || !strings.Contains(oe.Message, "POST") {
			t.Fatalf("openai SDK GET %s: %v, want 405 invalid_request_error", path, err)
		}
		if a := oe.Response.Header.Get("Allow"); a != "POST" {
			t.Errorf("GET %s: Allow %q, want POST", path, a)
		}
	}
	err := oc.Delete(ctx, "models", nil, nil)
	var oe *openai.Error
	if !errors.As(err, &oe) || oe.StatusCode != http.StatusMethodNotAllowed || oe.Response.Header.Get("Allow") != "GET, HEAD" {
		t.Fatalf("DELETE /v1/models: %v, want 405 Allow: GET, HEAD", err)
	}
	for _, path := range []string{"v1/messages", "v1/messages/count_tokens"} {
		var out map[string]any
		err := ac.Get(ctx, path, nil, &out)
		var ae *anthropic.Error
		if !errors.As(err, &ae) || ae.StatusCode != http.StatusMethodNotAllowed ||
			!strings.Contains(ae.RawJSON(), `"type":"error"`) || !strings.Contains(ae.RawJSON(), `"invalid_request_error"`) {
			t.Fatalf("anthropic SDK GET %s: %v, want 405 in the Anthropic shape", path, err)
		}
		if a := ae.Response.Header.Get("Allow"); a != "POST" {
			t.Errorf("GET %s: Allow %q, want POST", path, a)
		}
	}
	err = oc.Get(ctx, "no-such-thing", nil, nil)
	if !errors.As(err, &oe) || oe.StatusCode != http.StatusNotFound {
		t.Fatalf("GET /v1/no-such-thing: %v, want 404", err)
	}
	for name, f := range g.Fakes {
		if h := f.Hits(); h != 0 {
			t.Errorf("%s was called %d times", name, h)
		}
	}
}

// TestSDKGenerationErrorHeaders: GET /v1/generation's errors (no id, an unknown id) and the
// unknown endpoint's 404 carry the headers of every error, x-switchyard-attempts 0 (a read calls
// no provider) and x-switchyard-error-code, in the caller's dialect; the 200 read does not claim
// attempts of its own in a header (they are in the body).
func TestSDKGenerationErrorHeaders(t *testing.T) {
	g := startTwo(t)
	ctx := context.Background()
	oc, ac := g.openaiClient(), g.anthropicClient()
	for _, tc := range []struct {
		path   string
		status int
	}{{"generation?id=req_000000000000000000000000", http.StatusNotFound}, {"generation", http.StatusBadRequest}, {"nothing-here", http.StatusNotFound}} {
		err := oc.Get(ctx, tc.path, nil, nil)
		var oe *openai.Error
		if !errors.As(err, &oe) || oe.StatusCode != tc.status || oe.Type != "invalid_request_error" {
			t.Fatalf("openai SDK GET %s: %v, want %d invalid_request_error", tc.path, err, tc.status)
		}
		if h := oe.Response.Header; h.Get("X-Switchyard-Attempts") != "0" || h.Get("X-Switchyard-Error-Code") != "invalid_request" {
			t.Errorf("GET %s: x-switchyard-attempts %q, x-switchyard-error-code %q, want 0 and invalid_request", tc.path,
				h.Get("X-Switchyard-Attempts"), h.Get("X-Switchyard-Error-Code"))
		}
	}
	err := ac.Get(ctx, "v1/generation?id=req_000000000000000000000000", nil, nil)
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != http.StatusNotFound || !strings.Contains(ae.RawJSON(), `"type":"error"`) ||
		ae.Response.Header.Get("X-Switchyard-Attempts") != "0" {
		t.Fatalf("anthropic SDK GET /v1/generation: %v, want 404 in the Anthropic shape with x-switchyard-attempts 0", err)
	}
	var raw *http.Response
	c, err := oc.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt-4o-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello")}}, openaiopt.WithResponseInto(&raw))
	if err != nil || c.Choices[0].Message.Content == "" {
		t.Fatalf("chat: %v", err)
	}
	g.generation(t, raw.Header.Get("X-Request-Id"))
	var rec map[string]any
	var gen *http.Response
	if err := oc.Get(ctx, "generation?id="+raw.Header.Get("X-Request-Id"), nil, &rec, openaiopt.WithResponseInto(&gen)); err != nil {
		t.Fatalf("GET /v1/generation: %v", err)
	}
	if a := gen.Header.Get("X-Switchyard-Attempts"); a != "" {
		t.Errorf("the 200 generation read says x-switchyard-attempts %q", a)
	}
}
