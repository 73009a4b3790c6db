package openai

import (
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/switchyard-gw/switchyard/internal/dialect"
	"github.com/switchyard-gw/switchyard/internal/failure"
)

// DecodeResponse decodes an upstream non-stream chat.completion body into canonical form. The
// parts are, in order: reasoning (reasoning_content or reasoning, as a thinking part without a
// signature), text, refusal, then the tool calls. Only choices[0] is read (the gateway never asks
// for n > 1). The returned Response owns its strings.
//
// Errors: a *failure.Error upstream_error (which fails over before commit) when body is not a
// JSON object with a choices array whose first element has a message object.
func DecodeResponse(body []byte) (*dialect.Response, error) {
	bad := &failure.Error{Class: failure.UpstreamError, Msg: "the provider sent an unreadable response"}
	if dialect.TooDeep(body) {
		return nil, dialect.ResponseTooDeep()
	}
	if !gjson.ValidBytes(body) {
		return nil, bad
	}
	root := gjson.Parse(string(body))
	msg := root.Get("choices.0.message")
	if !root.IsObject() || !msg.IsObject() {
		return nil, bad
	}
	r := &dialect.Response{ID: root.Get("id").Str}
	for _, k := range [...]string{"reasoning_content", "reasoning"} {
		if s := msg.Get(k); s.Type == gjson.String && s.Str != "" {
			r.Parts = append(r.Parts, dialect.Part{Type: dialect.PartThinking, Text: s.Str})
			break
		}
	}
	switch c := msg.Get("content"); {
	case c.Type == gjson.String && c.Str != "":
		r.Parts = append(r.Parts, dialect.Part{Type: dialect.PartText, Text: c.Str})
	case c.IsArray(): // some compatible servers answer with parts
		c.ForEach(func(_, p gjson.Result) bool {
			if s := p.Get("text"); p.Get("type").Str == "text" && s.Str != "" {
				r.Parts = append(r.Parts, dialect.Part{Type: dialect.PartText, Text: s.Str})
			}
			return true
		})
	}
	if s := msg.Get("refusal"); s.Type == gjson.String && s.Str != "" {
		r.Parts = append(r.Parts, dialect.Part{Type: dialect.PartRefusal, Text: s.Str})
	}
	msg.Get("tool_calls").ForEach(func(_, tc gjson.Result) bool {
		r.Parts = append(r.Parts, dialect.Part{Type: dialect.PartToolCall, ToolCallID: tc.Get("id").Str,
			ToolName: tc.Get("function.name").Str, Arguments: tc.Get("function.arguments").Str})
		return true
	})
	if fc := msg.Get("function_call"); fc.IsObject() { // legacy functions
		r.Parts = append(r.Parts, dialect.Part{Type: dialect.PartToolCall, ToolCallID: "call_legacy_0",
			ToolName: fc.Get("name").Str, Arguments: fc.Get("arguments").Str})
	}
	r.Stop = stopFromFinish(root.Get("choices.0.finish_reason").Str)
	if r.Stop == dialect.StopEndTurn {
		for _, p := range r.Parts {
			if p.Type == dialect.PartToolCall { // a forced function call ends with "stop"
				r.Stop = dialect.StopToolUse
				break
			}
		}
	}
	if u := root.Get("usage"); u.IsObject() {
		readUsage(u, &r.Usage)
		r.UsageSeen = true
	}
	return r, nil
}

// stopFromFinish maps an OpenAI finish_reason to the canonical stop reason (wire.md §5.3).
// Unknown values map to end_turn.
func stopFromFinish(f string) dialect.StopReason {
	switch f {
	case "length":
		return dialect.StopMaxTokens
	case "tool_calls", "function_call":
		return dialect.StopToolUse
	case "content_filter":
		return dialect.StopRefusal
	}
	return dialect.StopEndTurn
}

// finishFromStop maps a canonical stop reason to an OpenAI finish_reason (wire.md §5.3):
// max_tokens and model_context_window_exceeded are "length", tool_use "tool_calls", refusal
// "content_filter", everything else (end_turn, stop_sequence, pause_turn, "") "stop".
func finishFromStop(s dialect.StopReason) string {
	switch s {
	case dialect.StopMaxTokens, dialect.StopContextWindow:
		return "length"
	case dialect.StopToolUse:
		return "tool_calls"
	case dialect.StopRefusal:
		return "content_filter"
	}
	return "stop"
}

// chunkID is the constant chat-completion id the gateway gives a translated answer.
func appendChunkID(dst []byte, id, requestID string) []byte {
	if strings.HasPrefix(id, "chatcmpl-") {
		return dialect.AppendJSONString(dst, id)
	}
	dst = append(dst, `"chatcmpl-`...)
	dst = appendJSONStringBody(dst, requestID)
	return append(dst, '"')
}

// AppendResponse appends r as an OpenAI chat.completion body for the caller: model =
// requestedModel; id = r.ID when it starts with "chatcmpl-", else "chatcmpl-" + requestID;
// created = now (Unix seconds). The message has role "assistant", content = the text parts joined
// (null when there are none), refusal = the refusal parts joined (or null), tool_calls when there
// are calls, and the non-standard but de-facto reasoning_content = the thinking parts joined
// (omitted when there are none; signatures and redacted thinking are not carried). finish_reason
// follows wire.md §5.3 and usage §5.4: prompt_tokens = Input + Cached + CacheWrite, with
// cached_tokens and cache_write_tokens details; usage is all zeros when none was reported.
func AppendResponse(dst []byte, r *dialect.Response, requestedModel, requestID string) []byte {
	dst = append(dst, `{"id":`...)
	dst = appendChunkID(dst, r.ID, requestID)
	dst = append(dst, `,"object":"chat.completion","created":`...)
	dst = strconv.AppendInt(dst, time.Now().Unix(), 10)
	dst = append(dst, `,"model":`...)
	dst = dialect.AppendJSONString(dst, requestedModel)
	dst = append(dst, `,"choices":[{"index":0,"message":{"role":"assistant","content":`...)
	dst = appendJoined(dst, r.Parts, dialect.PartText)
	dst = append(dst, `,"refusal":`...)
	dst = appendJoined(dst, r.Parts, dialect.PartRefusal)
	if hasPart(r.Parts, dialect.PartThinking) {
		dst = append(dst, `,"reasoning_content":`...)
		dst = appendJoined(dst, r.Parts, dialect.PartThinking)
	}
	if hasPart(r.Parts, dialect.PartToolCall) {
		dst = append(dst, `,"tool_calls":[`...)
		k := 0
		for i := range r.Parts {
			p := &r.Parts[i]
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
			if args == "" {
				args = "{}"
			}
			dst = dialect.AppendJSONString(dst, args)
			dst = append(dst, `}}`...)
		}
		dst = append(dst, ']')
	}
	dst = append(dst, `},"logprobs":null,"finish_reason":"`...)
	dst = append(dst, finishFromStop(r.Stop)...)
	dst = append(dst, `"}],"usage":`...)
	dst = appendUsage(dst, &r.Usage)
	return append(dst, '}')
}

func hasPart(parts []dialect.Part, t dialect.PartType) bool {
	for i := range parts {
		if parts[i].Type == t {
			return true
		}
	}
	return false
}

// appendJoined writes the texts of the parts of type t as one JSON string, or null when none.
func appendJoined(dst []byte, parts []dialect.Part, t dialect.PartType) []byte {
	if !hasPart(parts, t) {
		return append(dst, "null"...)
	}
	dst = append(dst, '"')
	for i := range parts {
		if parts[i].Type == t {
			dst = appendJSONStringBody(dst, parts[i].Text)
		}
	}
	return append(dst, '"')
}

// appendUsage writes the OpenAI usage object of canonical usage u (wire.md §5.4).
func appendUsage(dst []byte, u *dialect.Usage) []byte {
	prompt := u.Input + u.Cached + u.CacheWrite
	dst = append(dst, `{"prompt_tokens":`...)
	dst = strconv.AppendInt(dst, prompt, 10)
	dst = append(dst, `,"completion_tokens":`...)
	dst = strconv.AppendInt(dst, u.Output, 10)
	dst = append(dst, `,"total_tokens":`...)
	dst = strconv.AppendInt(dst, prompt+u.Output, 10)
	dst = append(dst, `,"prompt_tokens_details":{"cached_tokens":`...)
	dst = strconv.AppendInt(dst, u.Cached, 10)
	dst = append(dst, `,"cache_write_tokens":`...)
	dst = strconv.AppendInt(dst, u.CacheWrite, 10)
	dst = append(dst, `},"completion_tokens_details":{"reasoning_tokens":`...)
	dst = strconv.AppendInt(dst, u.Reasoning, 10)
	return append(dst, `}}`...)
}
