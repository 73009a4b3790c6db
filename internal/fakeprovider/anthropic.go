package fakeprovider

import (
	"encoding/json"
)

// Anthropic Messages wire shapes (wire.md §4.4, §4.5). Field order follows the real API.
type (
	anMessage struct {
		ID           string    `json:"id"`
		Type         string    `json:"type"`
		Role         string    `json:"role"`
		Model        string    `json:"model"`
		Content      []anBlock `json:"content"`
		StopReason   *string   `json:"stop_reason"`
		StopSequence *string   `json:"stop_sequence"`
		Usage        anUsage   `json:"usage"`
	}
	anBlock struct {
		Type  string          `json:"type"`
		Text  *string         `json:"text,omitempty"`
		ID    string          `json:"id,omitempty"`
		Name  string          `json:"name,omitempty"`
		Input json.RawMessage `json:"input,omitempty"`
	}
	anUsage struct {
		InputTokens              int              `json:"input_tokens"`
		CacheCreationInputTokens int              `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     int              `json:"cache_read_input_tokens"`
		CacheCreation            *anCacheCreation `json:"cache_creation,omitempty"`
		OutputTokens             int              `json:"output_tokens"`
		ServerToolUse            *anServerToolUse `json:"server_tool_use,omitempty"`
	}
	anServerToolUse struct {
		WebSearchRequests int `json:"web_search_requests"`
	}
	anCacheCreation struct {
		Ephemeral5m int `json:"ephemeral_5m_input_tokens"`
		Ephemeral1h int `json:"ephemeral_1h_input_tokens"`
	}
	anMessageStart struct {
		Type    string    `json:"type"`
		Message anMessage `json:"message"`
	}
	anBlockStart struct {
		Type         string  `json:"type"`
		Index        int     `json:"index"`
		ContentBlock anBlock `json:"content_block"`
	}
	anBlockDelta struct {
		Type  string  `json:"type"`
		Index int     `json:"index"`
		Delta anDelta `json:"delta"`
	}
	anDelta struct {
		Type        string  `json:"type"`
		Text        *string `json:"text,omitempty"`
		PartialJSON *string `json:"partial_json,omitempty"`
	}
	anBlockStop struct {
		Type  string `json:"type"`
		Index int    `json:"index"`
	}
	anMessageDelta struct {
		Type  string        `json:"type"`
		Delta anStopDelta   `json:"delta"`
		Usage anOutputUsage `json:"usage"`
	}
	anStopDelta struct {
		StopReason   string  `json:"stop_reason"`
		StopSequence *string `json:"stop_sequence"`
	}
	anOutputUsage struct {
		OutputTokens  int              `json:"output_tokens"`
		ServerToolUse *anServerToolUse `json:"server_tool_use,omitempty"`
	}
	anType struct {
		Type string `json:"type"`
	}
)

// anUsage is the Anthropic usage of a: input_tokens excludes the cache reads.
func (a *answer) anUsage(output int) anUsage {
	u := anUsage{InputTokens: a.promptTokens - a.cachedTokens - a.cacheWrite, CacheReadInputTokens: a.cachedTokens,
		CacheCreationInputTokens: a.cacheWrite, OutputTokens: output}
	if a.cacheWrite > 0 {
		u.CacheCreation = &anCacheCreation{Ephemeral5m: a.cacheWrite - a.cacheWrite1h, Ephemeral1h: a.cacheWrite1h}
	}
	return u
}

// anServerToolUse is the server_tool_use of a's final usage (the message, the stream's
// message_delta; message_start has none); nil without web searches.
func (a *answer) anServerToolUse() *anServerToolUse {
	if a.webSearches == 0 {
		return nil
	}
	return &anServerToolUse{WebSearchRequests: a.webSearches}
}

// stopReason is the Anthropic stop_reason of a.
func (a *answer) stopReason() string {
	if len(a.calls) > 0 {
		return "tool_use"
	}
	return "end_turn"
}

// emptyInput is the input of a tool_use content_block_start, replaced by the concatenated
// partial_json deltas.
var emptyInput = json.RawMessage("{}")

// anthropicFrames is the whole Anthropic stream of a: message_start (usage.input_tokens and
// output_tokens 1), content_block_start for block 0, ping (the preamble), the deltas of block 0,
// content_block_stop, then for each further tool call its start, deltas and stop (indexes
// contiguous from 0), message_delta (stop_reason and the cumulative output_tokens) and
// message_stop. Every frame has an `event:` line.
func anthropicFrames(a *answer) frames {
	start := anMessage{ID: a.id, Type: "message", Role: "assistant", Model: a.model, Content: []anBlock{}, Usage: a.anUsage(1)}
	fs := frames{preamble: 3}
	add := func(name string, v any, delta bool) {
		fs.list = append(fs.list, frame{data: sseEvent(name, v), delta: delta})
	}
	add("message_start", anMessageStart{Type: "message_start", Message: start}, false)
	if len(a.calls) == 0 {
		empty := ""
		add("content_block_start", anBlockStart{Type: "content_block_start", ContentBlock: anBlock{Type: "text", Text: &empty}}, false)
		add("ping", anType{Type: "ping"}, false)
		for _, p := range a.pieces {
			add("content_block_delta", anBlockDelta{Type: "content_block_delta", Delta: anDelta{Type: "text_delta", Text: &p}}, true)
		}
		add("content_block_stop", anBlockStop{Type: "content_block_stop"}, false)
	}
	for i, c := range a.calls {
		add("content_block_start", anBlockStart{Type: "content_block_start", Index: i,
			ContentBlock: anBlock{Type: "tool_use", ID: c.id, Name: c.name, Input: emptyInput}}, false)
		if i == 0 {
			add("ping", anType{Type: "ping"}, false)
		}
		for _, p := range c.pieces {
			add("content_block_delta", anBlockDelta{Type: "content_block_delta", Index: i,
				Delta: anDelta{Type: "input_json_delta", PartialJSON: &p}}, true)
		}
		add("content_block_stop", anBlockStop{Type: "content_block_stop", Index: i}, false)
	}
	add("message_delta", anMessageDelta{Type: "message_delta", Delta: anStopDelta{StopReason: a.stopReason()},
		Usage: anOutputUsage{OutputTokens: a.outputTokens, ServerToolUse: a.anServerToolUse()}}, false)
	add("message_stop", anType{Type: "message_stop"}, false)
	return fs
}

// anthropicMessage is the non-streaming message body of a.
func anthropicMessage(a *answer) []byte {
	stop := a.stopReason()
	m := anMessage{ID: a.id, Type: "message", Role: "assistant", Model: a.model, StopReason: &stop,
		Usage: a.anUsage(a.outputTokens)}
	m.Usage.ServerToolUse = a.anServerToolUse()
	if len(a.calls) == 0 {
		m.Content = []anBlock{{Type: "text", Text: &a.text}}
	}
	for _, c := range a.calls {
		m.Content = append(m.Content, anBlock{Type: "tool_use", ID: c.id, Name: c.name, Input: json.RawMessage(c.args)})
	}
	out, _ := json.Marshal(m) // the tool arguments are valid JSON by construction
	return out
}

// anthropicStreamError is Anthropic's in-stream error frame (event: error, wire.md §4.5).
func anthropicStreamError(e apiError, requestID string) []byte {
	b := anthropicErrorBody{Type: "error", RequestID: requestID, Error: anthropicErrorObject{Type: e.typ, Message: e.message}}
	if e.code != "" {
		b.Error.Details = &anthropicDetails{ErrorCode: e.code}
	}
	return sseEvent("error", b)
}
