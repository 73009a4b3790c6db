package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	anthropicopt "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/fakeprovider"
)

// Cross-dialect integration tests with the official SDKs (R-DIALECT-2): each SDK calls a model
// served only by deployments of the other dialect through the real server, and what the SDK
// assembles is compared with what the emulated provider sent.

var weatherSchema = map[string]any{"city": map[string]any{"type": "string"}, "days": map[string]any{"type": "integer"}}

func oaTools() []openai.ChatCompletionToolUnionParam {
	return []openai.ChatCompletionToolUnionParam{
		openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "get_weather",
			Parameters: shared.FunctionParameters{"type": "object", "properties": weatherSchema}}),
		openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "get_time",
			Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{"tz": map[string]any{"type": "string"}}}}),
	}
}

func anTools() []anthropic.ToolUnionParam {
	return []anthropic.ToolUnionParam{
		anthropic.ToolUnionParamOfTool(anthropic.ToolInputSchemaParam{Properties: weatherSchema}, "get_weather"),
		anthropic.ToolUnionParamOfTool(anthropic.ToolInputSchemaParam{Properties: map[string]any{"tz": map[string]any{"type": "string"}}}, "get_time"),
	}
}

// sentArgs replays the body the provider received (as a non-stream request, with the same
// behavior b) against the same emulated provider and returns the tool-call ids' order and arguments it answers with: the
// arguments depend only on the request's tools, so these are what it sent through the gateway.
func sentArgs(t *testing.T, p *fakeprovider.Provider, b fakeprovider.Behavior, body []byte) []string {
	t.Helper()
	p.Script(b)
	body, _ = sjson.SetBytes(body, "stream", false)
	path, calls, args := "/v1/chat/completions", "choices.0.message.tool_calls", "function.arguments"
	if p.Dialect() == catalog.Anthropic {
		path, calls, args = "/v1/messages", "content", "input"
	}
	rec := httptest.NewRecorder()
	p.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body)))
	if rec.Code != http.StatusOK {
		t.Fatalf("replay: %d %s", rec.Code, rec.Body)
	}
	var out []string
	gjson.GetBytes(rec.Body.Bytes(), calls).ForEach(func(_, c gjson.Result) bool {
		if a := c.Get(args); a.Exists() {
			if a.Type == gjson.String {
				out = append(out, a.Str)
			} else {
				out = append(out, a.Raw)
			}
		}
		return true
	})
	return out
}

// sameJSON fails unless got is valid JSON equal in value to want.
func sameJSON(t *testing.T, what, got, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("%s: arguments %q are not valid JSON: %v", what, got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: provider arguments %q: %v", what, want, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("%s: arguments %s, provider sent %s", what, got, want)
	}
}

// TestSDKToolCallCrossDialect: R-DIALECT-2. A tool call, streamed and not, reaches each SDK from
// a model of the other dialect; the SDK's own accumulator yields valid JSON arguments equal to
// what the emulated provider sent, under the provider's call id.
func TestSDKToolCallCrossDialect(t *testing.T) {
	for _, stream := range []bool{false, true} {
		name := map[bool]string{false: "non-stream", true: "stream"}[stream]
		t.Run("openai-sdk-claude-"+name, func(t *testing.T) {
			g := startTwo(t)
			g.Fakes["an-primary"].Script(fakeprovider.Behavior{ToolCall: true, Deltas: 4})
			oc := g.openaiClient()
			p := openai.ChatCompletionNewParams{Model: "claude-haiku-4-5", Tools: oaTools(),
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Paris?")}}
			var msg openai.ChatCompletionMessage
			var finish string
			if stream {
				acc := openai.ChatCompletionAccumulator{}
				st := oc.Chat.Completions.NewStreaming(context.Background(), p)
				for st.Next() {
					acc.AddChunk(st.Current())
				}
				if err := st.Err(); err != nil {
					t.Fatal(err)
				}
				msg, finish = acc.Choices[0].Message, acc.Choices[0].FinishReason
			} else {
				c, err := oc.Chat.Completions.New(context.Background(), p)
				if err != nil {
					t.Fatal(err)
				}
				msg, finish = c.Choices[0].Message, c.Choices[0].FinishReason
			}
			up := g.Fakes["an-primary"].Requests()
			if len(up) != 1 {
				t.Fatalf("provider hits %d", len(up))
			}
			want := sentArgs(t, g.Fakes["an-primary"], fakeprovider.Behavior{ToolCall: true}, up[0].Body)
			if len(msg.ToolCalls) != 1 || len(want) != 1 || finish != "tool_calls" {
				t.Fatalf("tool calls %+v (provider %v), finish %q", msg.ToolCalls, want, finish)
			}
			tc := msg.ToolCalls[0]
			if tc.ID != "toolu_fake1_0" || tc.Function.Name != "get_weather" {
				t.Fatalf("call id %q name %q", tc.ID, tc.Function.Name)
			}
			sameJSON(t, "openai SDK", tc.Function.Arguments, want[0])
		})
		t.Run("anthropic-sdk-gpt-"+name, func(t *testing.T) {
			g := startTwo(t)
			g.Fakes["oa-primary"].Script(fakeprovider.Behavior{ToolCall: true, Deltas: 4})
			ac := g.anthropicClient()
			p := anthropic.MessageNewParams{Model: "gpt-4o-mini", MaxTokens: 256, Tools: anTools(),
				Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Weather in Paris?"))}}
			var msg anthropic.Message
			if stream {
				s := ac.Messages.NewStreaming(context.Background(), p)
				for s.Next() {
					if err := msg.Accumulate(s.Current()); err != nil {
						t.Fatalf("accumulate: %v", err)
					}
				}
				if err := s.Err(); err != nil {
					t.Fatal(err)
				}
			} else {
				m, err := ac.Messages.New(context.Background(), p)
				if err != nil {
					t.Fatal(err)
				}
				msg = *m
			}
			up := g.Fakes["oa-primary"].Requests()
			if len(up) != 1 {
				t.Fatalf("provider hits %d", len(up))
			}
			want := sentArgs(t, g.Fakes["oa-primary"], fakeprovider.Behavior{ToolCall: true}, up[0].Body)
			if len(msg.Content) != 1 || len(want) != 1 || msg.StopReason != "tool_use" {
				t.Fatalf("content %+v (provider %v), stop %q", msg.Content, want, msg.StopReason)
			}
			b := msg.Content[0]
			if b.Type != "tool_use" || b.ID != "call_fake1_0" || b.Name != "get_weather" {
				t.Fatalf("block %+v", b)
			}
			sameJSON(t, "anthropic SDK", string(b.Input), want[0])
		})
	}
}

// TestSDKParallelToolCallsCrossDialect: R-DIALECT-2 (issue 3 failure kind: fragments lost or
// reassembled under the wrong id). Three parallel calls stream to each SDK from the other
// dialect: ids are the provider's and stable, OpenAI indexes are contiguous from 0 and each id is
// announced once, Anthropic blocks are contiguous (the accumulator enforces it), and every call's
// arguments equal what the provider sent for it.
func TestSDKParallelToolCallsCrossDialect(t *testing.T) {
	t.Run("openai-sdk-claude", func(t *testing.T) {
		g := startTwo(t)
		g.Fakes["an-primary"].Script(fakeprovider.Behavior{ParallelToolCalls: 3, Deltas: 3})
		acc := openai.ChatCompletionAccumulator{}
		oc := g.openaiClient()
		st := oc.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
			Model: "claude-haiku-4-5", Tools: oaTools(),
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather and time?")}})
		var indexes []int64
		ids := map[int64]string{}
		for st.Next() {
			c := st.Current()
			acc.AddChunk(c)
			for _, ch := range c.Choices {
				for _, tc := range ch.Delta.ToolCalls {
					if tc.ID != "" {
						if old, dup := ids[tc.Index]; dup {
							t.Fatalf("index %d announced twice (%s, %s)", tc.Index, old, tc.ID)
						}
						ids[tc.Index] = tc.ID
						indexes = append(indexes, tc.Index)
					} else if _, ok := ids[tc.Index]; !ok {
						t.Fatalf("fragment for index %d before its announcement", tc.Index)
					}
				}
			}
		}
		if err := st.Err(); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(indexes, []int64{0, 1, 2}) {
			t.Fatalf("indexes announced %v, want 0,1,2", indexes)
		}
		want := sentArgs(t, g.Fakes["an-primary"], fakeprovider.Behavior{ParallelToolCalls: 3}, g.Fakes["an-primary"].Requests()[0].Body)
		calls := acc.Choices[0].Message.ToolCalls
		if len(calls) != 3 || len(want) != 3 {
			t.Fatalf("calls %+v, provider %v", calls, want)
		}
		for i, c := range calls {
			if wantID := "toolu_fake1_" + string(rune('0'+i)); c.ID != wantID || ids[int64(i)] != wantID {
				t.Fatalf("call %d id %q, want %q", i, c.ID, wantID)
			}
			sameJSON(t, c.ID, c.Function.Arguments, want[i])
		}
	})
	t.Run("anthropic-sdk-gpt", func(t *testing.T) {
		g := startTwo(t)
		g.Fakes["oa-primary"].Script(fakeprovider.Behavior{ParallelToolCalls: 3, Deltas: 3})
		ac := g.anthropicClient()
		s := ac.Messages.NewStreaming(context.Background(), anthropic.MessageNewParams{
			Model: "gpt-4o-mini", MaxTokens: 256, Tools: anTools(),
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Weather and time?"))}})
		var msg anthropic.Message
		for s.Next() {
			if err := msg.Accumulate(s.Current()); err != nil {
				t.Fatalf("accumulate (block indexes must be contiguous): %v", err)
			}
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		want := sentArgs(t, g.Fakes["oa-primary"], fakeprovider.Behavior{ParallelToolCalls: 3}, g.Fakes["oa-primary"].Requests()[0].Body)
		if len(msg.Content) != 3 || len(want) != 3 || msg.StopReason != "tool_use" {
			t.Fatalf("content %+v, provider %v, stop %q", msg.Content, want, msg.StopReason)
		}
		for i, b := range msg.Content {
			if wantID := "call_fake1_" + string(rune('0'+i)); b.Type != "tool_use" || b.ID != wantID {
				t.Fatalf("block %d: %s %q, want tool_use %q", i, b.Type, b.ID, wantID)
			}
			sameJSON(t, b.ID, string(b.Input), want[i])
		}
	})
}

// TestSDKImageCrossDialect: R-DIALECT-2. An image sent by each SDK reaches the provider of the
// other dialect in that dialect's shape (OpenAI data: URL <-> Anthropic base64 source; URL kept).
func TestSDKImageCrossDialect(t *testing.T) {
	const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
	const url = "https://example.com/ant.jpg"
	g := startTwo(t)
	oc := g.openaiClient()
	_, err := oc.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "claude-haiku-4-5",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
			openai.TextContentPart("Compare."),
			openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: "data:image/png;base64," + png}),
			openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: url}),
		})}})
	if err != nil {
		t.Fatal(err)
	}
	body := g.Fakes["an-primary"].Requests()[0].Body
	content := gjson.GetBytes(body, "messages.0.content")
	if content.Get("1.type").Str != "image" || content.Get("1.source.type").Str != "base64" ||
		content.Get("1.source.media_type").Str != "image/png" || content.Get("1.source.data").Str != png ||
		content.Get("2.source.type").Str != "url" || content.Get("2.source.url").Str != url {
		t.Fatalf("anthropic provider got content %s", content.Raw)
	}

	ac := g.anthropicClient()
	_, err = ac.Messages.New(context.Background(), anthropic.MessageNewParams{
		Model: "gpt-4o-mini", MaxTokens: 64,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(
			anthropic.NewTextBlock("Describe."), anthropic.NewImageBlockBase64("image/png", png))}})
	if err != nil {
		t.Fatal(err)
	}
	body = g.Fakes["oa-primary"].Requests()[0].Body
	part := gjson.GetBytes(body, "messages.0.content.1")
	if part.Get("type").Str != "image_url" || part.Get("image_url.url").Str != "data:image/png;base64,"+png {
		t.Fatalf("openai provider got %s", gjson.GetBytes(body, "messages").Raw)
	}
}

// TestSDKUsageCachedCrossDialect: R-DIALECT-2, wire.md §5.4. With cache reads reported, the
// OpenAI SDK calling a Claude model sees prompt_tokens = input + cached (+ cache writes) and
// cached_tokens; the Anthropic SDK calling a GPT model sees input_tokens excluding the cache
// reads and cache_read_input_tokens. Stream and non-stream agree.
func TestSDKUsageCachedCrossDialect(t *testing.T) {
	const cached = 5
	g := startTwo(t)
	oc := g.openaiClient()
	params := openai.ChatCompletionNewParams{Model: "claude-haiku-4-5",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello there, how are you?")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}}
	g.Fakes["an-primary"].Script(fakeprovider.Behavior{CachedTokens: cached}, fakeprovider.Behavior{CachedTokens: cached})
	comp, err := oc.Chat.Completions.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	acc := openai.ChatCompletionAccumulator{}
	st := oc.Chat.Completions.NewStreaming(context.Background(), params)
	for st.Next() {
		acc.AddChunk(st.Current())
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	for i, r := range g.Fakes["an-primary"].Requests() {
		prompt := int64((len(r.Body) + 3) / 4) // the fake's prompt size: input + cache reads
		u := comp.Usage
		if i == 1 {
			u = acc.Usage
		}
		if u.PromptTokens != prompt || u.PromptTokensDetails.CachedTokens != cached || u.TotalTokens != u.PromptTokens+u.CompletionTokens || u.CompletionTokens == 0 {
			t.Fatalf("request %d: usage %+v, want prompt_tokens %d with cached %d", i, u, prompt, cached)
		}
	}

	g.Fakes["oa-primary"].Script(fakeprovider.Behavior{CachedTokens: cached})
	ac := g.anthropicClient()
	m, err := ac.Messages.New(context.Background(), anthropic.MessageNewParams{
		Model: "gpt-4o-mini", MaxTokens: 64,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello there, how are you?"))}})
	if err != nil {
		t.Fatal(err)
	}
	prompt := int64((len(g.Fakes["oa-primary"].Requests()[0].Body) + 3) / 4)
	if m.Usage.InputTokens != prompt-cached || m.Usage.CacheReadInputTokens != cached || m.Usage.OutputTokens == 0 {
		t.Fatalf("anthropic usage %+v, want input %d cache_read %d", m.Usage, prompt-cached, cached)
	}
}

// TestSDKIncludeUsageExactCrossDialect: R-DIALECT-2 (issue 3 failure kind: a usage chunk missing
// when asked, or sent when not). An OpenAI caller of a Claude model gets exactly one usage chunk
// (choices empty) when it sets include_usage, and none when it does not or sets it false.
func TestSDKIncludeUsageExactCrossDialect(t *testing.T) {
	cases := []struct {
		name string
		opt  openai.ChatCompletionStreamOptionsParam
		want int
	}{
		{"asked", openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}, 1},
		{"false", openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(false)}, 0},
		{"absent", openai.ChatCompletionStreamOptionsParam{}, 0},
	}
	g := startTwo(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			oc := g.openaiClient()
			st := oc.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
				Model: "claude-haiku-4-5", StreamOptions: c.opt,
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello")}})
			usageChunks, last := 0, -1
			n := 0
			for st.Next() {
				raw := st.Current().RawJSON()
				if gjson.Get(raw, "usage").IsObject() {
					usageChunks++
					last = n
					if len(st.Current().Choices) != 0 || st.Current().Usage.CompletionTokens == 0 {
						t.Fatalf("usage chunk %s", raw)
					}
				}
				n++
			}
			if err := st.Err(); err != nil {
				t.Fatal(err)
			}
			if usageChunks != c.want || (c.want == 1 && last != n-1) {
				t.Fatalf("%d usage chunks (last at %d of %d), want %d as the final chunk", usageChunks, last, n, c.want)
			}
		})
	}
}

// TestSDKErrorCrossDialect: R-DIALECT-2, R-ERR, R-FAIL-6. An upstream error of the other dialect
// reaches each SDK as that SDK's native error: Anthropic 529 on every Claude deployment -> the
// OpenAI SDK sees 502 api_error (error_type upstream_error) after failover is exhausted; OpenAI
// 400 context_length_exceeded -> the Anthropic SDK sees 400 invalid_request_error with
// error_type context_overflow, and the backup is never tried.
func TestSDKErrorCrossDialect(t *testing.T) {
	g := startTwo(t)
	g.Fakes["an-primary"].Script(fakeprovider.Behavior{Kind: fakeprovider.KindStatus, Status: 529})
	g.Fakes["an-backup"].Script(fakeprovider.Behavior{Kind: fakeprovider.KindStatus, Status: 529})
	oc := g.openaiClient()
	_, err := oc.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "claude-haiku-4-5", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hi")}})
	var oe *openai.Error
	if !errors.As(err, &oe) || oe.StatusCode != http.StatusBadGateway || oe.Type != "api_error" ||
		gjson.Get(oe.RawJSON(), "metadata.error_type").Str != "upstream_error" {
		t.Fatalf("openai SDK error %v (%+v)", err, oe)
	}
	if g.Fakes["an-primary"].Hits() != 1 || g.Fakes["an-backup"].Hits() != 1 {
		t.Fatalf("hits %d/%d, want 1/1", g.Fakes["an-primary"].Hits(), g.Fakes["an-backup"].Hits())
	}

	g.Fakes["oa-primary"].Script(fakeprovider.Behavior{Kind: fakeprovider.KindContextOverflow})
	ac := g.anthropicClient()
	_, err = ac.Messages.New(context.Background(), anthropic.MessageNewParams{
		Model: "gpt-4o-mini", MaxTokens: 64,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hi"))}})
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != http.StatusBadRequest || ae.Type() != "invalid_request_error" ||
		gjson.Get(ae.RawJSON(), "error.error_type").Str != "context_overflow" {
		t.Fatalf("anthropic SDK error %v (%+v)", err, ae)
	}
	if g.Fakes["oa-backup"].Hits() != 0 {
		t.Fatalf("context overflow failed over to the backup (R-FAIL-6)")
	}
}

// TestSDKCutAfterCommitCrossDialect: R-FAIL-4 with R-DIALECT-2. A provider of the other dialect
// that drops the connection after output started ends the caller's stream with exactly one
// terminal error in the caller's dialect, which each SDK surfaces as an error; the text already
// sent is kept and the backup is never tried (the request never switches after commit).
func TestSDKCutAfterCommitCrossDialect(t *testing.T) {
	g := startTwo(t)
	g.Fakes["an-primary"].Script(fakeprovider.Behavior{Kind: fakeprovider.KindCut, After: 2, Text: "abcdef", Deltas: 3})
	acc := openai.ChatCompletionAccumulator{}
	oc := g.openaiClient()
	st := oc.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model: "claude-haiku-4-5", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hi")}})
	for st.Next() {
		acc.AddChunk(st.Current())
	}
	if err := st.Err(); err == nil || !strings.Contains(err.Error(), "upstream_truncated") {
		t.Fatalf("openai SDK stream error = %v, want the terminal upstream_truncated error", err)
	}
	if got := acc.Choices[0].Message.Content; got != "abcd" {
		t.Fatalf("content before the cut %q", got)
	}

	g.Fakes["oa-primary"].Script(fakeprovider.Behavior{Kind: fakeprovider.KindCut, After: 2, Text: "abcdef", Deltas: 3})
	ac := g.anthropicClient()
	s := ac.Messages.NewStreaming(context.Background(), anthropic.MessageNewParams{
		Model: "gpt-4o-mini", MaxTokens: 64,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hi"))}})
	var msg anthropic.Message
	for s.Next() {
		if err := msg.Accumulate(s.Current()); err != nil {
			t.Fatal(err)
		}
	}
	var ae *anthropic.Error
	if err := s.Err(); !errors.As(err, &ae) || gjson.Get(ae.RawJSON(), "error.error_type").Str != "upstream_truncated" {
		t.Fatalf("anthropic SDK stream error = %v, want *anthropic.Error upstream_truncated", err)
	}
	if len(msg.Content) != 1 || msg.Content[0].Text != "abcd" {
		t.Fatalf("content before the cut %+v", msg.Content)
	}

	// The raw stream: one error frame, last, and no normal end.
	g.Fakes["an-primary"].Script(fakeprovider.Behavior{Kind: fakeprovider.KindCut, After: 1})
	resp, err := http.Post(g.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"claude-haiku-4-5","stream":true,"messages":[{"role":"user","content":"Hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var datas []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			datas = append(datas, d)
		}
	}
	errs := 0
	for _, d := range datas {
		if gjson.Get(d, "error").Exists() {
			errs++
		}
	}
	if errs != 1 || !gjson.Get(datas[len(datas)-1], "error").Exists() || slices.Contains(datas, "[DONE]") {
		t.Fatalf("raw stream %q: want exactly one error frame, last, and no [DONE]", datas)
	}
	if g.Fakes["an-backup"].Hits() != 0 || g.Fakes["oa-backup"].Hits() != 0 {
		t.Fatalf("a backup was tried after commit")
	}
}

// TestSDKDroppedParamsCrossDialect: R-DIALECT-2, R-AUDIT. Parameters with no equivalent in the
// deployment's dialect are dropped from the upstream body and listed in the attempt's
// dropped_params.
func TestSDKDroppedParamsCrossDialect(t *testing.T) {
	g := startTwo(t)
	var raw *http.Response
	oc := g.openaiClient()
	_, err := oc.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "claude-haiku-4-5", Seed: openai.Int(7), PresencePenalty: openai.Float(0.5),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hi")}}, option.WithResponseInto(&raw))
	if err != nil {
		t.Fatal(err)
	}
	rec := g.generation(t, raw.Header.Get("x-request-id"))
	if len(rec.Attempts) != 1 || !slices.Equal(rec.Attempts[0].DroppedParams, []string{"presence_penalty", "seed"}) {
		t.Fatalf("attempts %+v", rec.Attempts)
	}
	body := g.Fakes["an-primary"].Requests()[0].Body
	if gjson.GetBytes(body, "seed").Exists() || gjson.GetBytes(body, "presence_penalty").Exists() {
		t.Fatalf("dropped params reached the provider: %s", body)
	}

	var araw *http.Response
	ac := g.anthropicClient()
	_, err = ac.Messages.New(context.Background(), anthropic.MessageNewParams{
		Model: "gpt-4o-mini", MaxTokens: 64,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hi"))}},
		anthropicopt.WithJSONSet("top_k", 5), anthropicopt.WithResponseInto(&araw))
	if err != nil {
		t.Fatal(err)
	}
	rec = g.generation(t, araw.Header.Get("x-request-id"))
	if len(rec.Attempts) != 1 || !slices.Equal(rec.Attempts[0].DroppedParams, []string{"top_k"}) {
		t.Fatalf("attempts %+v", rec.Attempts)
	}
}

// TestSDKTranslationRefusal: R-DIALECT-2, wire.md §5.7. An OpenAI request whose meaning cannot
// be carried to Anthropic (input_audio) is refused with a typed 400 invalid_request and never
// reaches a Claude-only model's providers; when the model also has an OpenAI-dialect route, the
// refusal only skips the Anthropic candidate and the request is served there.
func TestSDKTranslationRefusal(t *testing.T) {
	audio := openai.ChatCompletionNewParams{Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(
		[]openai.ChatCompletionContentPartUnionParam{openai.TextContentPart("Transcribe"),
			openai.InputAudioContentPart(openai.ChatCompletionContentPartInputAudioInputAudioParam{Data: "UklGRiQAAABXQVZF", Format: "wav"})})}}

	g := startTwo(t)
	p := audio
	p.Model = "claude-haiku-4-5"
	oc := g.openaiClient()
	_, err := oc.Chat.Completions.New(context.Background(), p)
	var oe *openai.Error
	if !errors.As(err, &oe) || oe.StatusCode != http.StatusBadRequest || oe.Type != "invalid_request_error" ||
		gjson.Get(oe.RawJSON(), "metadata.error_type").Str != "invalid_request" {
		t.Fatalf("error %v", err)
	}
	if h := g.Fakes["an-primary"].Hits() + g.Fakes["an-backup"].Hits(); h != 0 {
		t.Fatalf("%d upstream hits for a refused translation", h)
	}

	g2 := startGateway(t, `
auth: {required: false}
models: [{id: m}]
deployments:
  - {name: an, dialect: anthropic, base_url: "{{an}}", api_key: k, routes: [{model: m, price: {input: 1, output: 1}}]}
  - {name: oa, dialect: openai, base_url: "{{oa}}", api_key: k, routes: [{model: m, price: {input: 2, output: 2}}]}
`, an("an"), oa("oa"))
	p.Model = "m"
	var raw *http.Response
	oc2 := g2.openaiClient()
	comp, err := oc2.Chat.Completions.New(context.Background(), p, option.WithResponseInto(&raw))
	if err != nil || comp.Choices[0].Message.Content != "Hello from oa." {
		t.Fatalf("mixed-dialect model: %v %+v", err, comp)
	}
	if g2.Fakes["an"].Hits() != 0 {
		t.Fatalf("the Anthropic deployment was called")
	}
	if rec := g2.generation(t, raw.Header.Get("x-request-id")); len(rec.Attempts) != 1 || rec.Attempts[0].Deployment != "oa" {
		t.Fatalf("attempts %+v (a refusal to translate is not an attempt)", rec.Attempts)
	}
}

// TestSDKReasoningOnlyToReasoningModels: R-DIALECT-2 with catalog models[].reasoning. An
// Anthropic SDK request with a thinking budget reaches a non-reasoning OpenAI model (gpt-4o-mini,
// reasoning unset) without reasoning_effort, listed as dropped `thinking`, and is served; the
// same request to a model marked reasoning: true carries reasoning_effort. The other direction:
// an OpenAI reasoning_effort reaches a non-reasoning Claude model without thinking or effort.
func TestSDKReasoningOnlyToReasoningModels(t *testing.T) {
	t.Parallel()
	yaml := strings.Replace(twoDeployments, "  - id: claude-haiku-4-5\n", "  - id: o4-mini\n    reasoning: true\n  - id: claude-haiku-4-5\n", 1)
	yaml = strings.Replace(yaml, "routes: [{model: gpt-4o-mini, price: {input: 0.15, output: 0.6}}]",
		"routes: [{model: gpt-4o-mini, price: {input: 0.15, output: 0.6}}, {model: o4-mini, price: {input: 1.1, output: 4.4}}]", 1)
	g := startGateway(t, yaml, oa("oa-primary"), oa("oa-backup"), an("an-primary"), an("an-backup"))
	ac := g.anthropicClient()
	for _, tc := range []struct {
		model   string
		effort  string // reasoning_effort expected upstream; "" none
		dropped []string
	}{
		{"gpt-4o-mini", "", []string{"thinking"}},
		{"o4-mini", "medium", nil},
	} {
		var raw *http.Response
		msg, err := ac.Messages.New(context.Background(), anthropic.MessageNewParams{Model: anthropic.Model(tc.model), MaxTokens: 9000,
			Thinking: anthropic.ThinkingConfigParamOfEnabled(8000),
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hi"))}}, anthropicopt.WithResponseInto(&raw))
		if err != nil || len(msg.Content) == 0 {
			t.Fatalf("%s: %v %+v", tc.model, err, msg)
		}
		reqs := g.Fakes["oa-primary"].Requests()
		body := reqs[len(reqs)-1].Body
		if got := gjson.GetBytes(body, "reasoning_effort").Str; got != tc.effort {
			t.Errorf("%s: upstream reasoning_effort %q, want %q: %s", tc.model, got, tc.effort, body)
		}
		rec := g.generation(t, raw.Header.Get("x-request-id"))
		if len(rec.Attempts) != 1 || !slices.Equal(rec.Attempts[0].DroppedParams, tc.dropped) {
			t.Errorf("%s: attempts %+v, want dropped %v", tc.model, rec.Attempts, tc.dropped)
		}
	}

	var raw *http.Response
	oc := g.openaiClient()
	_, err := oc.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "claude-haiku-4-5", ReasoningEffort: shared.ReasoningEffortHigh,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hi")}}, option.WithResponseInto(&raw))
	if err != nil {
		t.Fatal(err)
	}
	body := g.Fakes["an-primary"].Requests()[0].Body
	if gjson.GetBytes(body, "thinking").Exists() || gjson.GetBytes(body, "output_config").Exists() {
		t.Fatalf("reasoning reached a non-reasoning Claude model: %s", body)
	}
	if rec := g.generation(t, raw.Header.Get("x-request-id")); !slices.Equal(rec.Attempts[0].DroppedParams, []string{"reasoning_effort"}) {
		t.Fatalf("attempts %+v", rec.Attempts)
	}
}
