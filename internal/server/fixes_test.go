package server_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
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
