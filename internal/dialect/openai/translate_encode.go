package openai

import (
	"strconv"
	"strings"

	"github.com/switchyard-gw/switchyard/internal/dialect"
	"github.com/switchyard-gw/switchyard/internal/failure"
)

// maxStop is the most stop sequences an OpenAI upstream accepts.
const maxStop = 4

// AppendRequest encodes r as an OpenAI chat-completions request body with model = upstreamModel,
// appending to dst (wire.md §5.2). It appends to r.Dropped the names of parameters OpenAI cannot
// carry: "top_k", "thinking" (thinking blocks in the history: OpenAI cannot take signatures).
// Streams always ask for usage upstream (stream_options.include_usage: true).
//
// r.MaxTokens becomes max_completion_tokens; OpenAI does not require one, so when it is 0 none is
// sent and maxOutputTokens is unused. The system texts become leading system messages, in order.
// In a user turn, tool results become tool messages placed first (is_error results are prefixed
// "Error: "; their images move to the user message that follows); the other parts form one user
// message after them. tool_choice and parallel_tool_calls are sent only with tools (OpenAI rejects
// them otherwise). A thinking budget without an effort maps to reasoning_effort: < 4096 tokens
// low, < 16384 medium, else high.
//
// Errors (a *failure.Error invalid_request, which never fails over; dst is returned unchanged):
// more than 4 stop sequences, a server tool (Tool.Type set), a document given by URL (an OpenAI file part takes inline data
// only), a tool whose parameters are not a JSON object, a message role other than user/assistant.
func AppendRequest(dst []byte, r *dialect.Request, upstreamModel string, maxOutputTokens int64) ([]byte, error) {
	_ = maxOutputTokens // OpenAI does not require max tokens
	start := len(dst)
	if len(r.Stop) > maxStop {
		return dst, failure.Invalid("stop_sequences", "at most 4 stop sequences can be sent to this model")
	}
	dst = append(dst, `{"model":`...)
	dst = dialect.AppendJSONString(dst, upstreamModel)
	dst = append(dst, `,"messages":[`...)
	n := 0
	for _, s := range r.System {
		dst = msgSep(dst, &n)
		dst = append(dst, `{"role":"system","content":`...)
		dst = dialect.AppendJSONString(dst, s)
		dst = append(dst, '}')
	}
	var err error
	for i := range r.Messages {
		m := &r.Messages[i]
		switch m.Role {
		case dialect.RoleUser:
			dst, err = appendUserTurn(dst, m.Parts, &n, i)
		case dialect.RoleAssistant:
			dst = appendAssistantTurn(dst, m.Parts, &n, r)
		default:
			err = failure.Invalid("messages["+strconv.Itoa(i)+"].role", "unsupported message role")
		}
		if err != nil {
			return dst[:start], err
		}
	}
	dst = append(dst, ']')
	if r.MaxTokens > 0 {
		dst = append(dst, `,"max_completion_tokens":`...)
		dst = strconv.AppendInt(dst, r.MaxTokens, 10)
	}
	if r.Temperature != nil {
		dst = append(dst, `,"temperature":`...)
		dst = strconv.AppendFloat(dst, *r.Temperature, 'g', -1, 64)
	}
	if r.TopP != nil {
		dst = append(dst, `,"top_p":`...)
		dst = strconv.AppendFloat(dst, *r.TopP, 'g', -1, 64)
	}
	if r.TopK != nil {
		r.Drop("top_k")
	}
	if len(r.Stop) > 0 {
		dst = append(dst, `,"stop":[`...)
		for i, s := range r.Stop {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = dialect.AppendJSONString(dst, s)
		}
		dst = append(dst, ']')
	}
	if r.Stream {
		dst = append(dst, `,"stream":true,"stream_options":{"include_usage":true}`...)
	}
	if len(r.Tools) > 0 {
		if dst, err = appendTools(dst, r); err != nil {
			return dst[:start], err
		}
	}
	if rf := r.ResponseFormat; rf != nil {
		name := rf.Name
		if name == "" {
			name = "response"
		}
		if !dialect.Valid(rf.Schema) || !dialect.Get(rf.Schema, "@this").IsObject() {
			return dst[:start], failure.Invalid("output_config.format.schema", "the output schema must be a JSON object")
		}
		dst = append(dst, `,"response_format":{"type":"json_schema","json_schema":{"name":`...)
		dst = dialect.AppendJSONString(dst, name)
		dst = append(dst, `,"schema":`...)
		dst = append(dst, rf.Schema...)
		dst = append(dst, `,"strict":`...)
		dst = strconv.AppendBool(dst, rf.Strict)
		dst = append(dst, `}}`...)
	}
	if effort := reasoningEffort(r); effort != "" {
		dst = append(dst, `,"reasoning_effort":`...)
		dst = dialect.AppendJSONString(dst, effort)
	}
	if r.User != "" {
		dst = append(dst, `,"safety_identifier":`...)
		dst = dialect.AppendJSONString(dst, r.User)
	}
	if r.PromptCacheKey != "" {
		dst = append(dst, `,"prompt_cache_key":`...)
		dst = dialect.AppendJSONString(dst, r.PromptCacheKey)
	}
	return append(dst, '}'), nil
}

func reasoningEffort(r *dialect.Request) string {
	switch {
	case r.ReasoningEffort != "":
		return r.ReasoningEffort
	case r.ThinkingBudget <= 0:
		return ""
	case r.ThinkingBudget < 4096:
		return "low"
	case r.ThinkingBudget < 16384:
		return "medium"
	}
	return "high"
}

func msgSep(dst []byte, n *int) []byte {
	if *n > 0 {
		dst = append(dst, ',')
	}
	*n++
	return dst
}

func appendTools(dst []byte, r *dialect.Request) ([]byte, error) {
	dst = append(dst, `,"tools":[`...)
	for i, t := range r.Tools {
		if t.Type != "" {
			return dst, failure.Invalid("tools["+strconv.Itoa(i)+"].type", "server tools cannot be run by this model")
		}
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"type":"function","function":{"name":`...)
		dst = dialect.AppendJSONString(dst, t.Name)
		if t.Description != "" {
			dst = append(dst, `,"description":`...)
			dst = dialect.AppendJSONString(dst, t.Description)
		}
		dst = append(dst, `,"parameters":`...)
		if len(t.Parameters) == 0 {
			dst = append(dst, `{"type":"object","properties":{}}`...)
		} else {
			if !dialect.Valid(t.Parameters) || !dialect.Get(t.Parameters, "@this").IsObject() {
				return dst, failure.Invalid("tools["+strconv.Itoa(i)+"].input_schema", "a tool schema must be a JSON object")
			}
			dst = append(dst, t.Parameters...)
		}
		if t.Strict != nil {
			dst = append(dst, `,"strict":`...)
			dst = strconv.AppendBool(dst, *t.Strict)
		}
		dst = append(dst, `}}`...)
	}
	dst = append(dst, ']')
	switch tc := r.ToolChoice; tc.Mode {
	case "auto", "none", "required":
		dst = append(dst, `,"tool_choice":"`...)
		dst = append(dst, tc.Mode...)
		dst = append(dst, '"')
	case "tool":
		dst = append(dst, `,"tool_choice":{"type":"function","function":{"name":`...)
		dst = dialect.AppendJSONString(dst, tc.Name)
		dst = append(dst, `}}`...)
	}
	if r.ToolChoice.DisableParallel {
		dst = append(dst, `,"parallel_tool_calls":false`...)
	}
	return dst, nil
}

// appendUserTurn writes one canonical user message: its tool results as tool messages first,
// then the rest (and any images from the tool results) as one user message.
func appendUserTurn(dst []byte, parts []dialect.Part, n *int, mi int) ([]byte, error) {
	var moved []dialect.Part // images from tool results
	rest := 0
	for i := range parts {
		p := &parts[i]
		if p.Type != dialect.PartToolResult {
			if isUserContent(p.Type) {
				rest++
			}
			continue
		}
		dst = msgSep(dst, n)
		dst = append(dst, `{"role":"tool","tool_call_id":`...)
		dst = dialect.AppendJSONString(dst, p.ToolCallID)
		dst = append(dst, `,"content":"`...)
		if p.IsError {
			dst = append(dst, "Error: "...)
		}
		for j := range p.Content {
			c := &p.Content[j]
			switch c.Type {
			case dialect.PartText:
				dst = appendJSONStringBody(dst, c.Text)
			case dialect.PartImage:
				moved = append(moved, *c)
			}
		}
		dst = append(dst, `"}`...)
	}
	if rest+len(moved) == 0 {
		return dst, nil
	}
	dst = msgSep(dst, n)
	dst = append(dst, `{"role":"user","content":`...)
	if len(moved) == 0 && rest == 1 {
		for i := range parts {
			if parts[i].Type == dialect.PartText {
				dst = dialect.AppendJSONString(dst, parts[i].Text)
				return append(dst, '}'), nil
			}
		}
	}
	dst = append(dst, '[')
	k := 0
	var err error
	for _, list := range [2][]dialect.Part{moved, parts} {
		for i := range list {
			p := &list[i]
			if !isUserContent(p.Type) {
				continue
			}
			if k > 0 {
				dst = append(dst, ',')
			}
			k++
			if dst, err = appendUserPart(dst, p, mi); err != nil {
				return dst, err
			}
		}
	}
	return append(dst, `]}`...), nil
}

func isUserContent(t dialect.PartType) bool {
	return t == dialect.PartText || t == dialect.PartImage || t == dialect.PartDocument
}

func appendUserPart(dst []byte, p *dialect.Part, mi int) ([]byte, error) {
	switch p.Type {
	case dialect.PartText:
		dst = append(dst, `{"type":"text","text":`...)
		dst = dialect.AppendJSONString(dst, p.Text)
		return append(dst, '}'), nil
	case dialect.PartImage:
		dst = append(dst, `{"type":"image_url","image_url":{"url":`...)
		dst = appendURL(dst, p)
		return append(dst, `}}`...), nil
	}
	// PartDocument
	if p.Data == "" {
		return dst, failure.Invalid("messages["+strconv.Itoa(mi)+"].content", "a document URL cannot be sent to this model; send the PDF inline")
	}
	dst = append(dst, `{"type":"file","file":{"filename":"document.pdf","file_data":`...)
	dst = appendURL(dst, p)
	return append(dst, `}}`...), nil
}

// appendURL writes the part's http(s) URL, or its inline data as a base64 data: URL.
func appendURL(dst []byte, p *dialect.Part) []byte {
	if p.Data == "" {
		return dialect.AppendJSONString(dst, p.ImageURL)
	}
	dst = append(dst, `"data:`...)
	dst = appendJSONStringBody(dst, p.MediaType)
	dst = append(dst, ";base64,"...)
	dst = appendJSONStringBody(dst, p.Data)
	return append(dst, '"')
}

// appendJSONStringBody appends s escaped as the inside of a JSON string literal.
func appendJSONStringBody(dst []byte, s string) []byte {
	n := len(dst)
	dst = dialect.AppendJSONString(dst, s)
	copy(dst[n:], dst[n+1:len(dst)-1])
	return dst[:len(dst)-2]
}

func appendAssistantTurn(dst []byte, parts []dialect.Part, n *int, r *dialect.Request) []byte {
	var text, refusal strings.Builder
	calls := 0
	for i := range parts {
		switch p := &parts[i]; p.Type {
		case dialect.PartText:
			text.WriteString(p.Text)
		case dialect.PartRefusal:
			refusal.WriteString(p.Text)
		case dialect.PartToolCall:
			calls++
		case dialect.PartThinking, dialect.PartRedactedThinking:
			r.Drop("thinking")
		}
	}
	dst = msgSep(dst, n)
	dst = append(dst, `{"role":"assistant","content":`...)
	if text.Len() == 0 && (calls > 0 || refusal.Len() > 0) {
		dst = append(dst, "null"...)
	} else {
		dst = dialect.AppendJSONString(dst, text.String())
	}
	if refusal.Len() > 0 {
		dst = append(dst, `,"refusal":`...)
		dst = dialect.AppendJSONString(dst, refusal.String())
	}
	if calls > 0 {
		dst = append(dst, `,"tool_calls":[`...)
		k := 0
		for i := range parts {
			p := &parts[i]
			if p.Type != dialect.PartToolCall {
				continue
			}
			if k > 0 {
				dst = append(dst, ',')
			}
			k++
			dst = append(dst, `{"id":`...)
			dst = dialect.AppendJSONString(dst, p.ToolCallID)
			dst = append(dst, `,"type":"function","function":{"name":`...)
			dst = dialect.AppendJSONString(dst, p.ToolName)
			dst = append(dst, `,"arguments":`...)
			args := p.Arguments
			if strings.TrimSpace(args) == "" {
				args = "{}"
			}
			dst = dialect.AppendJSONString(dst, args)
			dst = append(dst, `}}`...)
		}
		dst = append(dst, ']')
	}
	return append(dst, '}')
}
