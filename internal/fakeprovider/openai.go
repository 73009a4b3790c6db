package fakeprovider

import (
	"encoding/json"
)

// OpenAI Chat Completions wire shapes (wire.md §1.4, §1.5). Field order follows the real API.
type (
	oaChunk struct {
		ID                string          `json:"id"`
		Object            string          `json:"object"`
		Created           int64           `json:"created"`
		Model             string          `json:"model"`
		SystemFingerprint string          `json:"system_fingerprint"`
		Choices           []oaChunkChoice `json:"choices"`
		// Usage is null on every chunk but the usage chunk when include_usage is set, and absent
		// otherwise.
		Usage json.RawMessage `json:"usage,omitempty"`
	}
	oaChunkChoice struct {
		Index        int     `json:"index"`
		Delta        oaDelta `json:"delta"`
		Logprobs     *string `json:"logprobs"`
		FinishReason *string `json:"finish_reason"`
	}
	oaDelta struct {
		Role      string            `json:"role,omitempty"`
		Content   *string           `json:"content,omitempty"`
		Refusal   json.RawMessage   `json:"refusal,omitempty"`
		ToolCalls []oaToolCallDelta `json:"tool_calls,omitempty"`
	}
	oaToolCallDelta struct {
		Index    int         `json:"index"`
		ID       string      `json:"id,omitempty"`
		Type     string      `json:"type,omitempty"`
		Function oaFuncDelta `json:"function"`
	}
	oaFuncDelta struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	}
	oaUsage struct {
		PromptTokens            int                `json:"prompt_tokens"`
		CompletionTokens        int                `json:"completion_tokens"`
		TotalTokens             int                `json:"total_tokens"`
		PromptTokensDetails     oaPromptDetails    `json:"prompt_tokens_details"`
		CompletionTokensDetails oaCompletionDetail `json:"completion_tokens_details"`
	}
	oaPromptDetails struct {
		CachedTokens int `json:"cached_tokens"`
		AudioTokens  int `json:"audio_tokens"`
	}
	oaCompletionDetail struct {
		ReasoningTokens          int `json:"reasoning_tokens"`
		AudioTokens              int `json:"audio_tokens"`
		AcceptedPredictionTokens int `json:"accepted_prediction_tokens"`
		RejectedPredictionTokens int `json:"rejected_prediction_tokens"`
	}
	oaCompletion struct {
		ID                string     `json:"id"`
		Object            string     `json:"object"`
		Created           int64      `json:"created"`
		Model             string     `json:"model"`
		Choices           []oaChoice `json:"choices"`
		Usage             oaUsage    `json:"usage"`
		ServiceTier       string     `json:"service_tier"`
		SystemFingerprint string     `json:"system_fingerprint"`
	}
	oaChoice struct {
		Index        int       `json:"index"`
		Message      oaMessage `json:"message"`
		Logprobs     *string   `json:"logprobs"`
		FinishReason string    `json:"finish_reason"`
	}
	oaMessage struct {
		Role        string       `json:"role"`
		Content     *string      `json:"content"`
		Refusal     *string      `json:"refusal"`
		Annotations []struct{}   `json:"annotations"`
		ToolCalls   []oaToolCall `json:"tool_calls,omitempty"`
	}
	oaToolCall struct {
		ID       string      `json:"id"`
		Type     string      `json:"type"`
		Function oaFuncDelta `json:"function"`
	}
)

// systemFingerprint is the constant system_fingerprint of every answer.
const systemFingerprint = "fp_fake"

// usage is the OpenAI usage object of a: prompt_tokens includes the cached tokens.
func (a *answer) oaUsage() oaUsage {
	return oaUsage{
		PromptTokens:        a.promptTokens,
		CompletionTokens:    a.outputTokens,
		TotalTokens:         a.promptTokens + a.outputTokens,
		PromptTokensDetails: oaPromptDetails{CachedTokens: a.cachedTokens},
	}
}

// finishReason is the OpenAI finish_reason of a.
func (a *answer) finishReason() string {
	if len(a.calls) > 0 {
		return "tool_calls"
	}
	return "stop"
}

// openAIFrames is the whole OpenAI stream of a: the role-only chunk (preamble), one chunk per
// text piece, or per tool call a header chunk then one chunk per argument fragment, the
// finish_reason chunk, the usage chunk (choices: []) only when include_usage is set, and [DONE].
// Every chunk carries the same id.
func openAIFrames(a *answer) frames {
	var usage json.RawMessage
	if a.includeUsage {
		usage = json.RawMessage("null")
	}
	chunk := func(d oaDelta, finish *string) []byte {
		return sseData(oaChunk{ID: a.id, Object: "chat.completion.chunk", Created: a.created, Model: a.model,
			SystemFingerprint: systemFingerprint, Usage: usage,
			Choices: []oaChunkChoice{{Delta: d, FinishReason: finish}}})
	}
	empty := ""
	fs := frames{preamble: 1}
	fs.list = append(fs.list, frame{data: chunk(oaDelta{Role: "assistant", Content: &empty, Refusal: json.RawMessage("null")}, nil)})
	for _, p := range a.pieces {
		fs.list = append(fs.list, frame{data: chunk(oaDelta{Content: &p}, nil), delta: true})
	}
	for i, c := range a.calls {
		fs.list = append(fs.list, frame{data: chunk(oaDelta{ToolCalls: []oaToolCallDelta{{
			Index: i, ID: c.id, Type: "function", Function: oaFuncDelta{Name: c.name}}}}, nil)})
		for _, p := range c.pieces {
			fs.list = append(fs.list, frame{data: chunk(oaDelta{ToolCalls: []oaToolCallDelta{{
				Index: i, Function: oaFuncDelta{Arguments: p}}}}, nil), delta: true})
		}
	}
	finish := a.finishReason()
	fs.list = append(fs.list, frame{data: chunk(oaDelta{}, &finish)})
	if a.includeUsage {
		u, _ := json.Marshal(a.oaUsage()) // plain ints always marshal
		fs.list = append(fs.list, frame{data: sseData(oaChunk{ID: a.id, Object: "chat.completion.chunk",
			Created: a.created, Model: a.model, SystemFingerprint: systemFingerprint,
			Choices: []oaChunkChoice{}, Usage: u})})
	}
	fs.list = append(fs.list, frame{data: []byte("data: [DONE]\n\n")})
	return fs
}

// openAICompletion is the non-streaming chat.completion body of a.
func openAICompletion(a *answer) []byte {
	msg := oaMessage{Role: "assistant", Annotations: []struct{}{}}
	if len(a.calls) == 0 {
		msg.Content = &a.text
	}
	for _, c := range a.calls {
		msg.ToolCalls = append(msg.ToolCalls, oaToolCall{ID: c.id, Type: "function",
			Function: oaFuncDelta{Name: c.name, Arguments: c.args}})
	}
	out, _ := json.Marshal(oaCompletion{ID: a.id, Object: "chat.completion", Created: a.created,
		Model: a.model, Usage: a.oaUsage(), ServiceTier: "default", SystemFingerprint: systemFingerprint,
		Choices: []oaChoice{{Message: msg, FinishReason: a.finishReason()}}})
	return out
}

// openAIStreamError is OpenAI's in-stream error frame: a data line whose object has a top-level
// "error" key (the only form openai-go reports, wire.md §1.5).
func openAIStreamError(e apiError) []byte {
	return sseData(openAIErrorBody{Error: openAIErrorObject{Message: e.message, Type: e.typ,
		Param: nullable(e.param), Code: nullable(e.code)}})
}

// sseData encodes v as one `data:` frame.
func sseData(v any) []byte {
	b, _ := json.Marshal(v) // callers pass plain structs that always marshal
	out := make([]byte, 0, len(b)+8)
	out = append(out, "data: "...)
	out = append(out, b...)
	return append(out, "\n\n"...)
}

// sseEvent encodes v as one `event:` + `data:` frame.
func sseEvent(name string, v any) []byte {
	b, _ := json.Marshal(v) // callers pass plain structs that always marshal
	out := make([]byte, 0, len(b)+len(name)+17)
	out = append(out, "event: "...)
	out = append(out, name...)
	out = append(out, "\ndata: "...)
	out = append(out, b...)
	return append(out, "\n\n"...)
}
