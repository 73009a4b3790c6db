package openai

import (
	"math/bits"
	"strconv"
	"time"

	"github.com/switchyard-gw/switchyard/internal/dialect"
)

// StreamEncoder turns canonical events into OpenAI chat-completion chunks for the caller (wire.md
// §1.5, §5.5). Every chunk carries one constant id ("chatcmpl-" + requestID, which openai-go's
// accumulator requires), one constant created timestamp and model = requestedModel, and, when
// the caller asked for usage, "usage":null (as OpenAI sends it). It is a value type: Reset
// prepares it for an attempt, keeping its buffers. It is not safe for concurrent use.
type StreamEncoder struct {
	head         []byte // `{"id":...,"object":"chat.completion.chunk","created":N,"model":M,"choices":`
	includeUsage bool
	started      bool
	usage        dialect.Usage
	// calls and argued are bit sets of tool-call indexes (< 64) that were opened and that got
	// argument bytes: a call that ends with none gets "{}", so that every accumulated
	// arguments string is valid JSON (Anthropic streams an input-less tool_use as "").
	calls, argued uint64
	finished      bool
}

// Reset prepares e for an attempt: requestedModel is echoed in every chunk, the chunk id is
// "chatcmpl-" + requestID, and includeUsage says whether the caller asked for the usage chunk
// (stream_options.include_usage).
func (e *StreamEncoder) Reset(requestedModel, requestID string, includeUsage bool) {
	h := append(e.head[:0], `{"id":"chatcmpl-`...)
	h = appendJSONStringBody(h, requestID)
	h = append(h, `","object":"chat.completion.chunk","created":`...)
	h = strconv.AppendInt(h, time.Now().Unix(), 10)
	h = append(h, `,"model":`...)
	h = dialect.AppendJSONString(h, requestedModel)
	h = append(h, `,"choices":`...)
	*e = StreamEncoder{head: h, includeUsage: includeUsage}
}

// Append appends the frames for ev (possibly none) to dst and returns it:
//
//   - EventStart: the role-priming chunk, delta {"role":"assistant","content":""}. A semantic
//     event that arrives before any EventStart is preceded by it too, so the role chunk is always
//     first and sent once.
//   - EventText, EventRefusal: delta.content, delta.refusal.
//   - EventReasoning: delta.reasoning_content (non-standard; the de-facto field of
//     DeepSeek-style servers, ignored by clients that do not know it).
//   - EventToolCall: delta.tool_calls [{index, id, type:"function", function{name, arguments:""}}].
//   - EventToolArgs: delta.tool_calls [{index, function{arguments}}]; empty fragments are skipped.
//   - EventFinish: delta {} with the mapped finish_reason (wire.md §5.3).
//   - EventUsage: nothing; the usage is remembered for EventDone.
//   - EventDone: the usage chunk (choices [] and the §5.4 usage, zeros if none was reported) when
//     the caller asked for usage, then `data: [DONE]`.
//   - EventSignature, EventError: nothing (the relay writes its own error frame).
//
// Text fields are copied as the raw JSON string literals they are. Once dst has capacity,
// Append allocates nothing.
func (e *StreamEncoder) Append(dst []byte, ev dialect.Event) []byte {
	switch ev.Type {
	case dialect.EventStart:
		return e.appendStart(dst)
	case dialect.EventText:
		return e.appendTextDelta(dst, `{"content":`, ev.Text)
	case dialect.EventReasoning:
		return e.appendTextDelta(dst, `{"reasoning_content":`, ev.Text)
	case dialect.EventRefusal:
		return e.appendTextDelta(dst, `{"refusal":`, ev.Text)
	case dialect.EventToolCall:
		if ev.ToolIndex >= 0 && ev.ToolIndex < 64 {
			e.calls |= 1 << uint(ev.ToolIndex)
		}
		dst = e.appendStart(dst)
		dst = e.open(dst)
		dst = append(dst, `{"tool_calls":[{"index":`...)
		dst = strconv.AppendInt(dst, int64(ev.ToolIndex), 10)
		dst = append(dst, `,"id":`...)
		dst = dialect.AppendJSONString(dst, ev.ID)
		dst = append(dst, `,"type":"function","function":{"name":`...)
		dst = dialect.AppendJSONString(dst, ev.Name)
		dst = append(dst, `,"arguments":""}}]}`...)
		return e.close(dst, "")
	case dialect.EventToolArgs:
		if !nonEmptyLiteral(ev.Text) {
			return dst
		}
		if ev.ToolIndex >= 0 && ev.ToolIndex < 64 {
			e.argued |= 1 << uint(ev.ToolIndex)
		}
		dst = e.appendStart(dst)
		dst = e.open(dst)
		dst = append(dst, `{"tool_calls":[{"index":`...)
		dst = strconv.AppendInt(dst, int64(ev.ToolIndex), 10)
		dst = append(dst, `,"function":{"arguments":`...)
		dst = append(dst, ev.Text...)
		dst = append(dst, `}}]}`...)
		return e.close(dst, "")
	case dialect.EventFinish:
		dst = e.appendStart(dst)
		dst = e.appendEmptyArguments(dst)
		e.finished = true
		dst = e.open(dst)
		dst = append(dst, `{}`...)
		return e.close(dst, finishFromStop(ev.Stop))
	case dialect.EventUsage:
		e.usage = ev.Usage
	case dialect.EventDone:
		dst = e.appendStart(dst)
		if !e.finished {
			dst = e.appendEmptyArguments(dst)
		}
		if e.includeUsage {
			dst = append(dst, "data: "...)
			dst = append(dst, e.head...)
			dst = append(dst, `[],"usage":`...)
			dst = appendUsage(dst, &e.usage)
			dst = append(dst, "}\n\n"...)
		}
		dst = append(dst, "data: [DONE]\n\n"...)
	}
	return dst
}

// nonEmptyLiteral reports whether lit is a JSON string literal with content (not `""`).
func nonEmptyLiteral(lit []byte) bool { return len(lit) > 2 }

func (e *StreamEncoder) appendStart(dst []byte) []byte {
	if e.started {
		return dst
	}
	e.started = true
	dst = e.open(dst)
	dst = append(dst, `{"role":"assistant","content":""}`...)
	return e.close(dst, "")
}

func (e *StreamEncoder) appendTextDelta(dst []byte, key string, lit []byte) []byte {
	if !nonEmptyLiteral(lit) {
		return dst
	}
	dst = e.appendStart(dst)
	dst = e.open(dst)
	dst = append(dst, key...)
	dst = append(dst, lit...)
	dst = append(dst, '}')
	return e.close(dst, "")
}

// open starts a chunk frame up to the delta value.
func (e *StreamEncoder) open(dst []byte) []byte {
	dst = append(dst, "data: "...)
	dst = append(dst, e.head...)
	return append(dst, `[{"index":0,"delta":`...)
}

// close ends a chunk frame after the delta: finish is the finish_reason, "" for null.
func (e *StreamEncoder) close(dst []byte, finish string) []byte {
	dst = append(dst, `,"logprobs":null,"finish_reason":`...)
	if finish == "" {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '"')
		dst = append(dst, finish...)
		dst = append(dst, '"')
	}
	dst = append(dst, "}]"...)
	if e.includeUsage {
		dst = append(dst, `,"usage":null`...)
	}
	return append(dst, "}\n\n"...)
}

// appendEmptyArguments gives every tool call that got no argument bytes the arguments "{}".
func (e *StreamEncoder) appendEmptyArguments(dst []byte) []byte {
	for missing := e.calls &^ e.argued; missing != 0; missing &= missing - 1 {
		i := bits.TrailingZeros64(missing)
		dst = e.open(dst)
		dst = append(dst, `{"tool_calls":[{"index":`...)
		dst = strconv.AppendInt(dst, int64(i), 10)
		dst = append(dst, `,"function":{"arguments":"{}"}}]}`...)
		dst = e.close(dst, "")
	}
	e.argued |= e.calls
	return dst
}
