package anthropic

import (
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/switchyard-gw/switchyard/internal/dialect"
	"github.com/switchyard-gw/switchyard/internal/failure"
)

// DecodeResponse decodes an Anthropic non-stream message body into canonical form: text,
// thinking (with its signature), redacted_thinking and tool_use blocks become parts in order
// (tool_use input becomes Arguments text); stop_reason and stop_sequence become Stop and
// StopSequence; usage becomes the canonical Usage (input_tokens already excludes cache reads and
// writes). Server-tool and citation blocks have no canonical form and are skipped. A body that
// is not a JSON object with a content array is a *failure.Error upstream_error (it fails over:
// nothing reached the caller yet).
func DecodeResponse(body []byte) (*dialect.Response, error) {
	if dialect.TooDeep(body) {
		return nil, dialect.ResponseTooDeep()
	}
	if !gjson.ValidBytes(body) {
		return nil, &failure.Error{Class: failure.UpstreamError, Msg: "the provider sent an unreadable response"}
	}
	root := gjson.ParseBytes(body)
	content := root.Get("content")
	if !root.IsObject() || !content.IsArray() {
		return nil, &failure.Error{Class: failure.UpstreamError, Msg: "the provider sent an unreadable response"}
	}
	r := &dialect.Response{ID: root.Get("id").Str}
	content.ForEach(func(_, b gjson.Result) bool {
		switch b.Get("type").Str {
		case "text":
			r.Parts = append(r.Parts, dialect.Part{Type: dialect.PartText, Text: b.Get("text").Str})
		case "thinking":
			r.Parts = append(r.Parts, dialect.Part{Type: dialect.PartThinking, Text: b.Get("thinking").Str, Signature: b.Get("signature").Str})
		case "redacted_thinking":
			r.Parts = append(r.Parts, dialect.Part{Type: dialect.PartRedactedThinking, Data: b.Get("data").Str})
		case "tool_use":
			args := "{}"
			if in := b.Get("input"); in.IsObject() {
				args = in.Raw
			}
			r.Parts = append(r.Parts, dialect.Part{Type: dialect.PartToolCall, ToolCallID: b.Get("id").Str, ToolName: b.Get("name").Str, Arguments: args})
		}
		return true
	})
	r.Stop = stopFromWire(root.Get("stop_reason").Str)
	r.StopSequence = root.Get("stop_sequence").Str
	if u := root.Get("usage"); u.IsObject() {
		readUsage(u, &r.Usage, false)
		r.UsageSeen = true
	}
	return r, nil
}

// stopFromWire maps an Anthropic stop_reason to the canonical one (the same vocabulary,
// wire.md §5.3). An absent or unknown reason is end_turn.
func stopFromWire(s string) dialect.StopReason {
	switch r := dialect.StopReason(s); r {
	case dialect.StopEndTurn, dialect.StopMaxTokens, dialect.StopSequence, dialect.StopToolUse,
		dialect.StopRefusal, dialect.StopPauseTurn, dialect.StopContextWindow:
		return r
	}
	return dialect.StopEndTurn
}

// stopToWire returns the Anthropic stop_reason of a canonical one; "" becomes end_turn, or
// tool_use when the answer called tools.
func stopToWire(s dialect.StopReason, calledTools bool) string {
	if s == "" {
		if calledTools {
			return string(dialect.StopToolUse)
		}
		return string(dialect.StopEndTurn)
	}
	return string(stopFromWire(string(s)))
}

// AppendResponse appends r encoded as an Anthropic non-stream message for the caller: model is
// requestedModel; id is r.ID when it already has the msg_ shape, else "msg_" + requestID
// (non-identifier bytes as '_'); content blocks text (empty ones skipped), thinking with its
// signature, redacted_thinking, refusal (as text; stop_reason refusal) and tool_use with the
// Arguments text as its input object (arguments that are not a JSON object become {}; tool ids
// rewritten as in AppendRequest); usage per wire.md §5.4 with cache reads and writes in their
// own fields and output_tokens_details.thinking_tokens when reasoning was reported.
func AppendResponse(dst []byte, r *dialect.Response, requestedModel, requestID string) []byte {
	dst = append(dst, `{"id":`...)
	if strings.HasPrefix(r.ID, "msg_") && isToolID(r.ID) {
		dst = dialect.AppendJSONString(dst, r.ID)
	} else {
		dst = appendMsgID(dst, requestID)
	}
	dst = append(dst, `,"type":"message","role":"assistant","model":`...)
	dst = dialect.AppendJSONString(dst, requestedModel)
	dst = append(dst, `,"content":[`...)
	n := 0
	calledTools, refused := false, false
	for i := range r.Parts {
		p := &r.Parts[i]
		switch p.Type {
		case dialect.PartText, dialect.PartRefusal:
			if p.Text == "" {
				continue
			}
		case dialect.PartThinking, dialect.PartRedactedThinking, dialect.PartToolCall:
		default:
			continue
		}
		if n > 0 {
			dst = append(dst, ',')
		}
		n++
		switch p.Type {
		case dialect.PartText, dialect.PartRefusal:
			refused = refused || p.Type == dialect.PartRefusal
			dst = append(dst, `{"type":"text","text":`...)
			dst = dialect.AppendJSONString(dst, p.Text)
		case dialect.PartThinking:
			dst = append(dst, `{"type":"thinking","thinking":`...)
			dst = dialect.AppendJSONString(dst, p.Text)
			dst = append(dst, `,"signature":`...)
			dst = dialect.AppendJSONString(dst, p.Signature)
		case dialect.PartRedactedThinking:
			dst = append(dst, `{"type":"redacted_thinking","data":`...)
			dst = dialect.AppendJSONString(dst, p.Data)
		case dialect.PartToolCall:
			calledTools = true
			dst = append(dst, `{"type":"tool_use","id":`...)
			dst = appendToolID(dst, p.ToolCallID)
			dst = append(dst, `,"name":`...)
			dst = dialect.AppendJSONString(dst, p.ToolName)
			dst = append(dst, `,"input":`...)
			if a := strings.TrimSpace(p.Arguments); a != "" && a[0] == '{' && dialect.ValidString(a) {
				dst = append(dst, a...)
			} else {
				dst = append(dst, "{}"...)
			}
		}
		dst = append(dst, '}')
	}
	stop := r.Stop
	if refused && (stop == "" || stop == dialect.StopEndTurn) {
		stop = dialect.StopRefusal
	}
	dst = append(dst, `],"stop_reason":"`...)
	dst = append(dst, stopToWire(stop, calledTools)...)
	dst = append(dst, `","stop_sequence":`...)
	dst = appendNullableString(dst, r.StopSequence)
	dst = append(dst, `,"usage":`...)
	dst = appendUsage(dst, &r.Usage)
	return append(dst, '}')
}

// appendMsgID appends "msg_" + requestID as a JSON string, every byte outside [A-Za-z0-9_-]
// replaced by '_' (a deterministic id of Anthropic's shape).
func appendMsgID(dst []byte, requestID string) []byte {
	dst = append(dst, `"msg_`...)
	for i := 0; i < len(requestID); i++ {
		c := requestID[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			c = '_'
		}
		dst = append(dst, c)
	}
	return append(dst, '"')
}

func appendNullableString(dst []byte, s string) []byte {
	if s == "" {
		return append(dst, "null"...)
	}
	return dialect.AppendJSONString(dst, s)
}

// appendUsage appends an Anthropic usage object for u (wire.md §5.4).
func appendUsage(dst []byte, u *dialect.Usage) []byte {
	dst = append(dst, `{"input_tokens":`...)
	dst = strconv.AppendInt(dst, u.Input, 10)
	dst = append(dst, `,"output_tokens":`...)
	dst = strconv.AppendInt(dst, u.Output, 10)
	dst = append(dst, `,"cache_read_input_tokens":`...)
	dst = strconv.AppendInt(dst, u.Cached, 10)
	dst = append(dst, `,"cache_creation_input_tokens":`...)
	dst = strconv.AppendInt(dst, u.CacheWrite, 10)
	if u.Reasoning > 0 {
		dst = append(dst, `,"output_tokens_details":{"thinking_tokens":`...)
		dst = strconv.AppendInt(dst, u.Reasoning, 10)
		dst = append(dst, '}')
	}
	return append(dst, '}')
}
