package responses

import (
	"strconv"
	"time"

	"github.com/switchyard-gw/switchyard/internal/dialect"
	"github.com/switchyard-gw/switchyard/internal/dialect/openai"
	"github.com/switchyard-gw/switchyard/internal/failure"
)

// AppendErrorBody appends the OpenAI-surface error body for fe; the Responses API shares it
// with chat completions (see openai.AppendErrorBody), with param named as the Responses
// request names it (messages is input, max_tokens is max_output_tokens).
func AppendErrorBody(dst []byte, fe *failure.Error, requestID string) []byte {
	if p := surfaceParam(fe.Param); p != fe.Param {
		cp := *fe
		cp.Param = p
		fe = &cp
	}
	return openai.AppendErrorBody(dst, fe, requestID)
}

// surfaceParam renames a chat-completions parameter that routing or a provider named (the
// context-fit refusal names "messages") to the Responses request's own: input, instructions,
// max_output_tokens.
func surfaceParam(p string) string {
	switch p {
	case "messages":
		return "input"
	case "system":
		return "instructions"
	case "max_tokens", "max_completion_tokens":
		return "max_output_tokens"
	}
	return p
}

// Response status and incomplete_details.reason strings (wire.md §2.3).
const (
	statusCompleted  = "completed"
	statusIncomplete = "incomplete"
	statusFailed     = "failed"
	statusInProgress = "in_progress"
)

// statusOf maps a canonical stop reason to the Response status and incomplete_details.reason:
// max_tokens and model_context_window_exceeded are incomplete with max_output_tokens, refusal
// (OpenAI content_filter) incomplete with content_filter, everything else completed.
func statusOf(s dialect.StopReason) (status, reason string) {
	switch s {
	case dialect.StopMaxTokens, dialect.StopContextWindow:
		return statusIncomplete, "max_output_tokens"
	case dialect.StopRefusal:
		return statusIncomplete, "content_filter"
	}
	return statusCompleted, ""
}

// AppendResponse appends r as a Responses-API Response object (object "response") for the
// caller: id "resp_" + requestID; created_at now (Unix seconds); model = requestedModel; status
// "completed", or "incomplete" with incomplete_details.reason "max_output_tokens" (max_tokens,
// context window) or "content_filter" (refusal). The output items follow r.Parts in order:
// consecutive text and refusal parts form one assistant message item (output_text and refusal
// content), each thinking part a reasoning item (reasoning_text content; the signature as
// encrypted_content), each tool call a function_call item {call_id, name, arguments}; redacted
// thinking is not carried. Item ids are "msg_", "rs_" or "fc_" + requestID + "_" + the output
// index. The last item's status is "incomplete" when the response is. usage follows wire.md
// §2.3: input_tokens = Input + Cached + CacheWrite, with cached_tokens and cache_write_tokens
// details; all zeros when none was reported. Request parameters are not echoed: instructions,
// temperature and top_p are null, tools [] and tool_choice "auto".
func AppendResponse(dst []byte, r *dialect.Response, requestedModel, requestID string) []byte {
	status, reason := statusOf(r.Stop)
	var rid []byte
	rid = appendStringBody(rid, requestID)
	dst = appendResponseOpen(dst, rid, time.Now().Unix(), status, reason, requestedModel, nil)
	n := 0 // output index
	for i := 0; i < len(r.Parts); i++ {
		p := &r.Parts[i]
		switch p.Type {
		case dialect.PartText, dialect.PartRefusal, dialect.PartThinking, dialect.PartToolCall:
		default: // redacted thinking is not carried; other parts are not assistant output
			continue
		}
		if n > 0 {
			dst = append(dst, ',')
		}
		last := isLastItem(r.Parts, i)
		itemStatus := statusCompleted
		if last && status == statusIncomplete {
			itemStatus = statusIncomplete
		}
		switch p.Type {
		case dialect.PartText, dialect.PartRefusal:
			dst = appendItemHead(dst, "msg_", rid, n, "message", itemStatus)
			dst = append(dst, `,"role":"assistant","content":[`...)
			for k := i; ; k++ {
				if k > i {
					dst = append(dst, ',')
				}
				dst = appendPartOpen(dst, r.Parts[k].Type)
				dst = dialect.AppendJSONString(dst, r.Parts[k].Text)
				dst = appendPartClose(dst, r.Parts[k].Type)
				if k+1 >= len(r.Parts) || (r.Parts[k+1].Type != dialect.PartText && r.Parts[k+1].Type != dialect.PartRefusal) {
					i = k
					break
				}
			}
			dst = append(dst, "]}"...)
		case dialect.PartThinking:
			dst = appendItemHead(dst, "rs_", rid, n, "reasoning", itemStatus)
			dst = append(dst, `,"summary":[],"content":[{"type":"reasoning_text","text":`...)
			dst = dialect.AppendJSONString(dst, p.Text)
			dst = append(dst, `}],"encrypted_content":`...)
			dst = appendStringOrNull(dst, p.Signature)
			dst = append(dst, '}')
		case dialect.PartToolCall:
			dst = appendItemHead(dst, "fc_", rid, n, "function_call", itemStatus)
			dst = append(dst, `,"call_id":`...)
			dst = dialect.AppendJSONString(dst, p.ToolCallID)
			dst = append(dst, `,"name":`...)
			dst = dialect.AppendJSONString(dst, p.ToolName)
			if p.Namespace != "" {
				dst = append(dst, `,"namespace":`...)
				dst = dialect.AppendJSONString(dst, p.Namespace)
			}
			dst = append(dst, `,"arguments":`...)
			dst = dialect.AppendJSONString(dst, argsOrEmpty(p.Arguments))
			dst = append(dst, '}')
		}
		n++
	}
	return appendResponseClose(dst, &r.Usage)
}

// isLastItem reports whether no part after i starts another output item.
func isLastItem(parts []dialect.Part, i int) bool {
	inMessage := parts[i].Type == dialect.PartText || parts[i].Type == dialect.PartRefusal
	for k := i + 1; k < len(parts); k++ {
		switch parts[k].Type {
		case dialect.PartText, dialect.PartRefusal:
			if !inMessage {
				return false
			}
		case dialect.PartThinking, dialect.PartToolCall:
			return false
		default:
			inMessage = false
		}
	}
	return true
}

// appendResponseOpen writes a Response object up to and including `"output":[`. rid is the
// escaped request id; reason is the incomplete_details reason ("" for null); errObj is the error
// object (nil for null).
func appendResponseOpen(dst, rid []byte, created int64, status, reason, model string, errObj []byte) []byte {
	dst = append(dst, `{"id":"resp_`...)
	dst = append(dst, rid...)
	dst = append(dst, `","object":"response","created_at":`...)
	dst = strconv.AppendInt(dst, created, 10)
	dst = append(dst, `,"status":"`...)
	dst = append(dst, status...)
	dst = append(dst, `","background":false,"error":`...)
	if errObj == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, errObj...)
	}
	dst = append(dst, `,"incomplete_details":`...)
	if reason == "" {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, `{"reason":"`...)
		dst = append(dst, reason...)
		dst = append(dst, `"}`...)
	}
	dst = append(dst, `,"instructions":null,"metadata":{},"model":`...)
	dst = dialect.AppendJSONString(dst, model)
	return append(dst, `,"output":[`...)
}

// appendResponseClose closes the output array and writes the rest of the Response object; u nil
// writes "usage":null (the in-progress snapshots).
func appendResponseClose(dst []byte, u *dialect.Usage) []byte {
	dst = append(dst, `],"parallel_tool_calls":true,"store":false,"temperature":null,"tool_choice":"auto","tools":[],"top_p":null,"truncation":"disabled","usage":`...)
	if u == nil {
		dst = append(dst, "null"...)
	} else {
		dst = appendUsage(dst, u)
	}
	return append(dst, '}')
}

// appendUsage writes the Responses usage object of canonical usage u (wire.md §2.3):
// input_tokens includes cached and cache-write tokens, output_tokens includes reasoning tokens.
func appendUsage(dst []byte, u *dialect.Usage) []byte {
	in := u.Input + u.Cached + u.CacheWrite
	dst = append(dst, `{"input_tokens":`...)
	dst = strconv.AppendInt(dst, in, 10)
	dst = append(dst, `,"input_tokens_details":{"cached_tokens":`...)
	dst = strconv.AppendInt(dst, u.Cached, 10)
	dst = append(dst, `,"cache_write_tokens":`...)
	dst = strconv.AppendInt(dst, u.CacheWrite, 10)
	dst = append(dst, `},"output_tokens":`...)
	dst = strconv.AppendInt(dst, u.Output, 10)
	dst = append(dst, `,"output_tokens_details":{"reasoning_tokens":`...)
	dst = strconv.AppendInt(dst, u.Reasoning, 10)
	dst = append(dst, `},"total_tokens":`...)
	dst = strconv.AppendInt(dst, in+u.Output, 10)
	return append(dst, '}')
}

// appendItemHead writes `{"id":"<prefix><rid>_<n>","type":"<typ>","status":"<status>"`.
func appendItemHead(dst []byte, prefix string, rid []byte, n int, typ, status string) []byte {
	dst = append(dst, `{"id":`...)
	dst = appendItemID(dst, prefix, rid, n)
	dst = append(dst, `,"type":"`...)
	dst = append(dst, typ...)
	dst = append(dst, `","status":"`...)
	dst = append(dst, status...)
	return append(dst, '"')
}

// appendItemID writes the item id literal "<prefix><rid>_<n>".
func appendItemID(dst []byte, prefix string, rid []byte, n int) []byte {
	dst = append(dst, '"')
	dst = append(dst, prefix...)
	dst = append(dst, rid...)
	dst = append(dst, '_')
	dst = strconv.AppendInt(dst, int64(n), 10)
	return append(dst, '"')
}

// appendPartOpen and appendPartClose write a content part around its text literal: output_text
// (with empty annotations and logprobs), refusal, or (PartThinking) reasoning_text.
func appendPartOpen(dst []byte, t dialect.PartType) []byte {
	switch t {
	case dialect.PartRefusal:
		return append(dst, `{"type":"refusal","refusal":`...)
	case dialect.PartThinking:
		return append(dst, `{"type":"reasoning_text","text":`...)
	}
	return append(dst, `{"type":"output_text","text":`...)
}

func appendPartClose(dst []byte, t dialect.PartType) []byte {
	if t == dialect.PartText {
		return append(dst, `,"annotations":[],"logprobs":[]}`...)
	}
	return append(dst, '}')
}

func appendStringOrNull(dst []byte, s string) []byte {
	if s == "" {
		return append(dst, "null"...)
	}
	return dialect.AppendJSONString(dst, s)
}

// appendStringBody appends s JSON-escaped, without the quotes.
func appendStringBody(dst []byte, s string) []byte {
	n := len(dst)
	dst = dialect.AppendJSONString(dst, s)
	copy(dst[n:], dst[n+1:len(dst)-1])
	return dst[:len(dst)-2]
}
