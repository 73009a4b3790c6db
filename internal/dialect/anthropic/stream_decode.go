package anthropic

import (
	"strings"

	"github.com/tidwall/gjson"

	"github.com/switchyard-gw/switchyard/internal/dialect"
	"github.com/switchyard-gw/switchyard/internal/sse"
)

// block kinds of the upstream's content blocks, as the decoder tracks them.
const (
	blockOther uint8 = iota // text, thinking, redacted or server-tool blocks: deltas by type
	blockTool               // a client tool_use block: input_json_delta goes to its tool index
)

type upBlock struct {
	kind uint8
	tool int
}

// StreamDecoder turns an Anthropic upstream's messages stream into canonical events
// (R-DIALECT-2, wire.md §5.5). The zero value is ready; it is a value type to embed in the
// per-attempt state, and Reset prepares it for another attempt keeping its buffers. It is not
// safe for concurrent use.
type StreamDecoder struct {
	started bool
	tools   int // tool calls seen so far: the next ToolIndex
	blocks  []upBlock
	usage   dialect.Usage
	scratch []byte
}

// Reset forgets the previous attempt's state and keeps the buffers.
func (d *StreamDecoder) Reset() {
	*d = StreamDecoder{blocks: d.blocks[:0], scratch: d.scratch[:0]}
}

// Decode appends the canonical events of one upstream SSE event to out and returns it. The event
// type is ev.Name, or the data's "type" when the event had no name.
//
//   - message_start: EventStart{ID} once; its input and cache counts are remembered, never
//     emitted on their own (a preamble is not a final usage report, R-FAIL-2).
//   - content_block_start: text or thinking with non-empty initial text gives EventText or
//     EventReasoning; tool_use gives EventToolCall{ToolIndex: the response's n-th tool call,
//     ID, Name} and, when its input is not {}, EventToolArgs with that input; redacted_thinking
//     and server-tool blocks give nothing (no canonical stream form; dropped).
//   - content_block_delta: text_delta EventText, thinking_delta EventReasoning, signature_delta
//     EventSignature, input_json_delta EventToolArgs of the block's tool index (empty fragments
//     skipped); citations_delta nothing.
//   - message_delta: EventFinish{Stop, StopSequence} when it carries a stop_reason, then
//     EventUsage with the cumulative usage (message_start counts overwritten by any the delta
//     carries); one without a stop_reason (usage reported as it goes) gives EventUsage only.
//   - message_stop: EventDone. error, and data nested deeper than dialect.MaxDepth:
//     EventError{Raw: ev.Data}. ping, content_block_stop and unknown events: nothing.
//
// Event.Text and Event.Raw alias ev.Data (valid until the next frame); Text is the raw JSON
// string literal. ID, Name and StopSequence are copies. Nothing is allocated per delta.
func (d *StreamDecoder) Decode(ev sse.Event, out []dialect.Event) []dialect.Event {
	data := ev.Data
	if dialect.TooDeep(data) { // a provider failure: NormalizeStreamError names the limit
		return append(out, dialect.Event{Type: dialect.EventError, Raw: data})
	}
	typ := dialect.View(ev.Name)
	if typ == "" {
		typ = dialect.Get(data, "type").Str
	}
	switch typ {
	case "content_block_delta":
		return d.delta(data, out)
	case "message_start":
		readUsage(dialect.Get(data, "message.usage"), &d.usage, true)
		if !d.started {
			d.started = true
			out = append(out, dialect.Event{Type: dialect.EventStart, ID: strings.Clone(dialect.Get(data, "message.id").Str)})
		}
	case "content_block_start":
		out = d.blockStart(data, out)
	case "message_delta":
		out = d.start(out)
		dl := dialect.Get(data, "delta")
		if sr := dl.Get("stop_reason"); sr.Type == gjson.String && sr.Str != "" {
			out = append(out, dialect.Event{Type: dialect.EventFinish,
				Stop:         stopFromWire(sr.Str),
				StopSequence: strings.Clone(dl.Get("stop_sequence").Str)})
		}
		readUsage(dialect.Get(data, "usage"), &d.usage, false)
		out = append(out, dialect.Event{Type: dialect.EventUsage, Usage: d.usage})
	case "message_stop":
		out = append(out, dialect.Event{Type: dialect.EventDone})
	case "error":
		out = append(out, dialect.Event{Type: dialect.EventError, Raw: data})
	}
	return out
}

// start emits EventStart when no message_start came first.
func (d *StreamDecoder) start(out []dialect.Event) []dialect.Event {
	if !d.started {
		d.started = true
		out = append(out, dialect.Event{Type: dialect.EventStart})
	}
	return out
}

// literal returns the bytes of r's raw JSON in data (r must come from a lookup in data).
func literal(data []byte, r gjson.Result) []byte {
	if r.Index <= 0 || r.Index+len(r.Raw) > len(data) {
		return nil
	}
	return data[r.Index : r.Index+len(r.Raw) : r.Index+len(r.Raw)]
}

func (d *StreamDecoder) blockStart(data []byte, out []dialect.Event) []dialect.Event {
	out = d.start(out)
	idx := int(dialect.Get(data, "index").Int())
	cb := dialect.Get(data, "content_block")
	bl := upBlock{kind: blockOther, tool: -1}
	switch cb.Get("type").Str {
	case "text":
		if t := cb.Get("text"); t.Type == gjson.String && t.Str != "" {
			out = append(out, dialect.Event{Type: dialect.EventText, Text: literal(data, t)})
		}
	case "thinking":
		if t := cb.Get("thinking"); t.Type == gjson.String && t.Str != "" {
			out = append(out, dialect.Event{Type: dialect.EventReasoning, Text: literal(data, t)})
		}
	case "tool_use":
		bl = upBlock{kind: blockTool, tool: d.tools}
		d.tools++
		out = append(out, dialect.Event{Type: dialect.EventToolCall, ToolIndex: bl.tool,
			ID: strings.Clone(cb.Get("id").Str), Name: strings.Clone(cb.Get("name").Str)})
		if in := cb.Get("input"); in.IsObject() && strings.TrimSpace(in.Raw) != "{}" {
			d.scratch = dialect.AppendJSONString(d.scratch[:0], in.Raw)
			out = append(out, dialect.Event{Type: dialect.EventToolArgs, ToolIndex: bl.tool, Text: d.scratch})
		}
	}
	if idx >= 0 && idx < 1<<16 {
		for len(d.blocks) <= idx {
			d.blocks = append(d.blocks, upBlock{tool: -1})
		}
		d.blocks[idx] = bl
	}
	return out
}

func (d *StreamDecoder) delta(data []byte, out []dialect.Event) []dialect.Event {
	dl := literal(data, dialect.Get(data, "delta"))
	var typ dialect.EventType
	var val []byte
	toolIdx := 0
	switch dialect.View(member(dl, "type")) {
	case `"text_delta"`:
		typ, val = dialect.EventText, member(dl, "text")
	case `"thinking_delta"`:
		typ, val = dialect.EventReasoning, member(dl, "thinking")
	case `"signature_delta"`:
		typ, val = dialect.EventSignature, member(dl, "signature")
	case `"input_json_delta"`:
		idx := int(dialect.Get(data, "index").Int())
		if idx < 0 || idx >= len(d.blocks) || d.blocks[idx].kind != blockTool {
			return out // a server tool's input, or a block never started: nothing canonical
		}
		typ, val, toolIdx = dialect.EventToolArgs, member(dl, "partial_json"), d.blocks[idx].tool
	default:
		return out
	}
	if len(val) <= 2 || val[0] != '"' { // absent, not a string, or ""
		return out
	}
	out = d.start(out)
	return append(out, dialect.Event{Type: typ, Text: val, ToolIndex: toolIdx})
}

// member returns the raw value of key in the JSON object obj (nil when absent or malformed),
// without unescaping: gjson would allocate to unescape a string value with escapes, and the
// stream path copies text as the raw literal anyway.
func member(obj []byte, key string) []byte {
	i := skipWS(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return nil
	}
	i++
	for {
		i = skipWS(obj, i)
		if i >= len(obj) || obj[i] != '"' {
			return nil
		}
		ks := i
		if i = skipString(obj, i); i < 0 {
			return nil
		}
		k := obj[ks+1 : i-1]
		if i = skipWS(obj, i); i >= len(obj) || obj[i] != ':' {
			return nil
		}
		vs := skipWS(obj, i+1)
		if i = skipValue(obj, vs); i < 0 {
			return nil
		}
		if string(k) == key {
			return obj[vs:i:i]
		}
		if i = skipWS(obj, i); i >= len(obj) || obj[i] != ',' {
			return nil
		}
		i++
	}
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string starting at b[i] == '"', or -1.
func skipString(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// skipValue returns the index after the JSON value starting at b[i], or -1.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				if j = skipString(b, j); j < 0 {
					return -1
				}
				j--
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\n' && b[j] != '\t' && b[j] != '\r' {
		j++
	}
	return j
}
