package openai

import (
	"bytes"
	"strconv"
	"unsafe"

	"github.com/switchyard-gw/switchyard/internal/dialect"
	"github.com/switchyard-gw/switchyard/internal/sse"
)

// StreamDecoder turns an OpenAI upstream's chat-completion chunks into canonical events (wire.md
// §1.5, §5.5). It is a value type: the zero value is ready, and Reset prepares it for a new
// attempt, keeping its buffers. It is not safe for concurrent use.
type StreamDecoder struct {
	started bool
	// calls[i] is set once tool call i has been announced with EventToolCall; compatible
	// servers that repeat the id on every fragment yield one EventToolCall per call.
	calls []bool
}

// Reset prepares d for a new attempt.
func (d *StreamDecoder) Reset() {
	d.started = false
	d.calls = d.calls[:0]
}

// Decode appends the canonical events of one upstream SSE event to out and returns it. Text,
// reasoning, refusal and argument fragments are passed as their raw JSON string literals (Event.Text
// aliases ev.Data); EventStart.ID and EventToolCall.ID/Name are copies.
//
//   - data nested deeper than dialect.MaxDepth is one EventError with Raw = the data.
//   - `[DONE]` is EventDone; a data object with a top-level "error" is one EventError with Raw =
//     the data; an event with no data or with data that is not a JSON object (a keep-alive) yields
//     nothing.
//   - The first chunk yields EventStart{ID: chunk id}. Then, from choices[0].delta, in this order:
//     reasoning_content or reasoning (EventReasoning), content (EventText), refusal
//     (EventRefusal), each when non-empty; each tool_calls item with a new index yields
//     EventToolCall{ToolIndex: its index, ID, Name}, and its non-empty arguments EventToolArgs.
//   - finish_reason yields EventFinish (stop -> end_turn, length -> max_tokens, tool_calls and
//     function_call -> tool_use, content_filter -> refusal).
//   - A usage object yields EventUsage with the canonical additive usage (Input = prompt_tokens -
//     cached_tokens - cache_write_tokens).
//
// Steady-state text, reasoning and argument chunks allocate nothing.
func (d *StreamDecoder) Decode(ev sse.Event, out []dialect.Event) []dialect.Event {
	data := bytes.TrimSpace(ev.Data)
	if len(data) == 0 {
		return out
	}
	if dialect.TooDeep(data) { // a provider failure: NormalizeStreamError names the limit
		return append(out, dialect.Event{Type: dialect.EventError, Raw: data})
	}
	if data[0] != '{' {
		if string(data) == "[DONE]" {
			out = append(out, dialect.Event{Type: dialect.EventDone})
		}
		return out
	}
	var id, choices, usage, errv string
	rawObject(dialect.View(data), func(k, v string) bool {
		switch k {
		case "id":
			id = v
		case "choices":
			choices = v
		case "usage":
			usage = v
		case "error":
			errv = v
		}
		return true
	})
	if errv != "" && errv != "null" {
		return append(out, dialect.Event{Type: dialect.EventError, Raw: data})
	}
	if !d.started {
		d.started = true
		out = append(out, dialect.Event{Type: dialect.EventStart, ID: unquote(id)})
	}
	if choices != "" {
		rawArray(choices, func(c string) bool { out = d.decodeChoice(c, out); return false })
	}
	if len(usage) > 0 && usage[0] == '{' {
		out = append(out, dialect.Event{Type: dialect.EventUsage, Usage: rawUsage(usage)})
	}
	return out
}

func (d *StreamDecoder) decodeChoice(c string, out []dialect.Event) []dialect.Event {
	var delta, finish string
	rawObject(c, func(k, v string) bool {
		switch k {
		case "delta":
			delta = v
		case "finish_reason":
			finish = v
		}
		return true
	})
	if delta != "" {
		var content, reasoning, refusal, calls string
		rawObject(delta, func(k, v string) bool {
			switch k {
			case "content":
				content = v
			case "reasoning_content":
				reasoning = v
			case "reasoning":
				if !isNonEmptyString(reasoning) {
					reasoning = v
				}
			case "refusal":
				refusal = v
			case "tool_calls":
				calls = v
			}
			return true
		})
		out = appendTextEvent(out, dialect.EventReasoning, reasoning)
		out = appendTextEvent(out, dialect.EventText, content)
		out = appendTextEvent(out, dialect.EventRefusal, refusal)
		if calls != "" {
			pos := 0
			rawArray(calls, func(tc string) bool {
				out = d.decodeToolCall(tc, pos, out)
				pos++
				return true
			})
		}
	}
	if isNonEmptyString(finish) {
		stop := stopFromFinish(finish[1 : len(finish)-1])
		if stop == dialect.StopEndTurn && len(d.calls) > 0 {
			// A forced function call ends with "stop" but called tools: callers of the
			// other dialect loop on stop_reason "tool_use".
			stop = dialect.StopToolUse
		}
		out = append(out, dialect.Event{Type: dialect.EventFinish, Stop: stop})
	}
	return out
}

// appendTextEvent appends an event of type t carrying the raw literal v, when v is a non-empty
// string literal.
func appendTextEvent(out []dialect.Event, t dialect.EventType, v string) []dialect.Event {
	if !isNonEmptyString(v) {
		return out
	}
	return append(out, dialect.Event{Type: t, Text: rawBytes(v)})
}

// rawBytes returns a view (into data passed through dialect.View) as bytes, without copying.
// The bytes must not be written to.
func rawBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

func (d *StreamDecoder) decodeToolCall(tc string, pos int, out []dialect.Event) []dialect.Event {
	var idx, id, fn string
	rawObject(tc, func(k, v string) bool {
		switch k {
		case "index":
			idx = v
		case "id":
			id = v
		case "function":
			fn = v
		}
		return true
	})
	i := pos
	if n, err := strconv.Atoi(idx); err == nil && n >= 0 && n < 1<<16 {
		i = n
	}
	var name, args string
	rawObject(fn, func(k, v string) bool {
		switch k {
		case "name":
			name = v
		case "arguments":
			args = v
		}
		return true
	})
	if (isNonEmptyString(id) || isNonEmptyString(name)) && !d.announced(i) {
		out = append(out, dialect.Event{Type: dialect.EventToolCall, ToolIndex: i, ID: unquote(id), Name: unquote(name)})
	}
	if isNonEmptyString(args) {
		out = append(out, dialect.Event{Type: dialect.EventToolArgs, ToolIndex: i, Text: rawBytes(args)})
	}
	return out
}

// announced reports whether tool call i was already announced, and marks it announced.
func (d *StreamDecoder) announced(i int) bool {
	for len(d.calls) <= i {
		d.calls = append(d.calls, false)
	}
	was := d.calls[i]
	d.calls[i] = true
	return was
}

// rawUsage converts an OpenAI usage object into the canonical additive form (wire.md §5.4):
// Input = prompt_tokens - cached_tokens - cache_write_tokens, never below 0.
func rawUsage(obj string) dialect.Usage {
	var u dialect.Usage
	var prompt int64
	num := func(v string) int64 { n, _ := strconv.ParseInt(v, 10, 64); return n }
	rawObject(obj, func(k, v string) bool {
		switch k {
		case "prompt_tokens":
			prompt = num(v)
		case "completion_tokens":
			u.Output = num(v)
		case "prompt_tokens_details":
			rawObject(v, func(k, v string) bool {
				switch k {
				case "cached_tokens":
					u.Cached = num(v)
				case "cache_write_tokens":
					u.CacheWrite = num(v)
				}
				return true
			})
		case "completion_tokens_details":
			rawObject(v, func(k, v string) bool {
				if k == "reasoning_tokens" {
					u.Reasoning = num(v)
				}
				return true
			})
		}
		return true
	})
	u.Input = max(prompt-u.Cached-u.CacheWrite, 0)
	return u
}
