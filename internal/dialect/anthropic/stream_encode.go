package anthropic

import (
	"strconv"

	"github.com/switchyard-gw/switchyard/internal/dialect"
)

// Kinds of the caller-side content block that is open.
const (
	openNone uint8 = iota
	openText
	openThinking
	openTool
)

// States of a tool call in the caller's stream.
const (
	toolUnseen  uint8 = iota // no event yet
	toolPending              // known, its block not opened yet: fragments are buffered
	toolOpen                 // its tool_use block is the open one: fragments stream through
	toolClosed               // its block was stopped
)

// encTool is one tool call of the response as the encoder tracks it. The buffers are kept
// across Reset.
type encTool struct {
	id, name []byte
	args     []byte // buffered argument text (JSON-string-escaped, without quotes)
	state    uint8
	block    int
	scan     argScan
}

// argScan follows the brace depth of a tool call's arguments as they stream, to know when the
// JSON object is complete (so that the next call's block may open without losing fragments).
type argScan struct {
	depth          int32
	inStr, esc     bool
	began, decided bool
}

// feed scans inner, the body of a JSON string literal whose value is a fragment of JSON text.
func (s *argScan) feed(inner []byte) {
	for i := 0; i < len(inner); i++ {
		ch := inner[i]
		if ch == '\\' && i+1 < len(inner) {
			i++
			switch inner[i] {
			case '"', '\\', '/':
				ch = inner[i]
			case 'u':
				ch = 'x'
				if i+4 < len(inner) {
					if v, ok := hex4(inner[i+1 : i+5]); ok && v < 0x80 {
						ch = byte(v)
					}
					i += 4
				}
			default:
				ch = ' ' // \n \t \r \b \f: whitespace, or inside a string
			}
		}
		switch {
		case s.inStr:
			if s.esc {
				s.esc = false
			} else if ch == '\\' {
				s.esc = true
			} else if ch == '"' {
				s.inStr = false
			}
		case ch == '"':
			s.inStr = true
		case ch == '{' || ch == '[':
			s.depth++
			s.began = true
		case ch == '}' || ch == ']':
			s.depth--
			if s.began && s.depth <= 0 {
				s.decided = true
			}
		}
	}
}

func hex4(h []byte) (uint32, bool) {
	var v uint32
	for _, c := range h {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		v = v<<4 | uint32(c)
	}
	return v, true
}

// StreamEncoder turns canonical events into the Anthropic messages stream for the caller
// (R-DIALECT-2, wire.md §4.5 and §5.5). Every frame has an `event:` and a `data:` line; block
// indexes are contiguous from 0 and exactly one block is open at a time, as the API itself
// streams.
//
// Parallel tool calls: the first call's tool_use block streams its argument fragments live. A
// call that starts while another call's block is open and its arguments are not yet a complete
// JSON object is pending: its fragments are buffered (per call index, so they can never land
// under another call's id) and flushed, in one input_json_delta, when its block opens — as soon
// as the open call's arguments are complete, or at the finish. Text, refusal or reasoning that
// arrives while a call is incomplete or pending is deferred likewise and sent as its own block
// after the tool calls. A signature arriving when no thinking block is open is dropped.
//
// The zero value needs Reset. It is not safe for concurrent use; the buffers are kept across
// Reset, so steady-state Append allocates nothing.
type StreamEncoder struct {
	model, msgID []byte
	started      bool
	finished     bool // the open blocks were closed (EventFinish or EventDone)
	done         bool
	open         uint8
	openTool     int
	next         int // the next block index
	tools        []encTool
	lateText     []byte
	lateThink    []byte
	stop         dialect.StopReason
	stopSeq      []byte
	refused      bool
	anyTool      bool
	usage        dialect.Usage
}

// Reset prepares e for an attempt: requestedModel is echoed in message_start, the message id is
// "msg_" + requestID (bytes outside [A-Za-z0-9_-] as '_'). includeUsage is ignored: the
// Anthropic stream always reports usage, in the final message_delta.
func (e *StreamEncoder) Reset(requestedModel, requestID string, includeUsage bool) {
	_ = includeUsage
	tools := e.tools[:0]
	*e = StreamEncoder{
		model:     dialect.AppendJSONString(e.model[:0], requestedModel),
		msgID:     appendMsgID(e.msgID[:0], requestID),
		tools:     tools,
		lateText:  e.lateText[:0],
		lateThink: e.lateThink[:0],
		stopSeq:   e.stopSeq[:0],
		openTool:  -1,
	}
}

// Append appends the frames for ev to dst (possibly none) and returns it. EventStart writes
// message_start (also written before any other first frame); EventFinish remembers the stop
// reason and closes every block; EventUsage is remembered; EventDone closes what is open and
// writes message_delta (stop_reason, stop_sequence, usage with input, output, cache read and
// cache write tokens) and message_stop. EventError and events after EventDone write nothing.
func (e *StreamEncoder) Append(dst []byte, ev dialect.Event) []byte {
	if e.done {
		return dst
	}
	switch ev.Type {
	case dialect.EventStart:
		return e.ensureStart(dst)
	case dialect.EventText, dialect.EventRefusal:
		dst = e.ensureStart(dst)
		if ev.Type == dialect.EventRefusal {
			e.refused = true
		}
		if e.toolsBusy() || e.finished {
			e.lateText = append(e.lateText, inner(ev.Text)...)
			return dst
		}
		if e.open != openText {
			dst = e.closeOpen(dst)
			dst = e.openBlock(dst, openText, -1)
		}
		return e.appendDelta(dst, "text_delta", "text", ev.Text)
	case dialect.EventReasoning:
		dst = e.ensureStart(dst)
		if e.toolsBusy() || e.finished {
			e.lateThink = append(e.lateThink, inner(ev.Text)...)
			return dst
		}
		if e.open != openThinking {
			dst = e.closeOpen(dst)
			dst = e.openBlock(dst, openThinking, -1)
		}
		return e.appendDelta(dst, "thinking_delta", "thinking", ev.Text)
	case dialect.EventSignature:
		if e.open == openThinking {
			return e.appendDelta(dst, "signature_delta", "signature", ev.Text)
		}
	case dialect.EventToolCall:
		dst = e.ensureStart(dst)
		return e.toolCall(dst, ev)
	case dialect.EventToolArgs:
		return e.toolArgs(dst, ev)
	case dialect.EventFinish:
		e.stop = ev.Stop
		e.stopSeq = append(e.stopSeq[:0], ev.StopSequence...)
		dst = e.ensureStart(dst)
		return e.closeAll(dst)
	case dialect.EventUsage:
		e.usage = ev.Usage
	case dialect.EventDone:
		dst = e.ensureStart(dst)
		dst = e.closeAll(dst)
		e.done = true
		dst = append(dst, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\""...)
		dst = append(dst, e.stopReason()...)
		dst = append(dst, `","stop_sequence":`...)
		dst = appendNullableString(dst, dialect.View(e.stopSeq))
		dst = append(dst, `},"usage":`...)
		dst = appendUsage(dst, &e.usage)
		return append(dst, "}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"...)
	}
	return dst
}

func (e *StreamEncoder) stopReason() string {
	stop := e.stop
	if e.refused && (stop == "" || stop == dialect.StopEndTurn) {
		stop = dialect.StopRefusal
	}
	return stopToWire(stop, e.anyTool)
}

// inner strips the quotes of a JSON string literal.
func inner(lit []byte) []byte {
	if len(lit) >= 2 && lit[0] == '"' && lit[len(lit)-1] == '"' {
		return lit[1 : len(lit)-1]
	}
	return nil
}

func (e *StreamEncoder) ensureStart(dst []byte) []byte {
	if e.started {
		return dst
	}
	e.started = true
	dst = append(dst, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":"...)
	dst = append(dst, e.msgID...)
	dst = append(dst, `,"type":"message","role":"assistant","model":`...)
	dst = append(dst, e.model...)
	return append(dst, `,"content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0}}}`+"\n\n"...)
}

// toolsBusy reports whether a tool call is incomplete or waiting, so that other content must
// wait too.
func (e *StreamEncoder) toolsBusy() bool {
	if e.open == openTool && !e.tools[e.openTool].scan.decided {
		return true
	}
	for i := range e.tools {
		if e.tools[i].state == toolPending {
			return true
		}
	}
	return false
}

// tool returns the state of tool call k, growing the table (reusing old buffers) as needed.
func (e *StreamEncoder) tool(k int) *encTool {
	for len(e.tools) <= k {
		if len(e.tools) < cap(e.tools) {
			e.tools = e.tools[:len(e.tools)+1]
			t := &e.tools[len(e.tools)-1]
			*t = encTool{id: t.id[:0], name: t.name[:0], args: t.args[:0]}
		} else {
			e.tools = append(e.tools, encTool{})
		}
	}
	return &e.tools[k]
}

func (e *StreamEncoder) toolCall(dst []byte, ev dialect.Event) []byte {
	if ev.ToolIndex < 0 || ev.ToolIndex > 1<<12 {
		return dst
	}
	e.anyTool = true
	t := e.tool(ev.ToolIndex)
	if t.state != toolUnseen && (len(t.id) > 0 || ev.ID == "") {
		return dst // a repeated start: the first one named the call
	}
	t.id = append(t.id[:0], ev.ID...)
	t.name = append(t.name[:0], ev.Name...)
	if t.state == toolUnseen {
		t.state = toolPending
	}
	if t.state != toolPending {
		return dst
	}
	if e.finished || (e.open == openTool && !e.tools[e.openTool].scan.decided) || e.pendingBefore(ev.ToolIndex) {
		return dst
	}
	dst = e.closeOpen(dst)
	return e.openToolBlock(dst, ev.ToolIndex)
}

// pendingBefore reports whether a call other than k is waiting for its block.
func (e *StreamEncoder) pendingBefore(k int) bool {
	for i := range e.tools {
		if i != k && e.tools[i].state == toolPending && len(e.tools[i].id) > 0 {
			return true
		}
	}
	return false
}

func (e *StreamEncoder) toolArgs(dst []byte, ev dialect.Event) []byte {
	in := inner(ev.Text)
	if len(in) == 0 || ev.ToolIndex < 0 || ev.ToolIndex > 1<<12 {
		return dst
	}
	t := e.tool(ev.ToolIndex)
	switch t.state {
	case toolOpen:
		t.scan.feed(in)
		dst = e.appendDelta(dst, "input_json_delta", "partial_json", ev.Text)
		if t.scan.decided && !e.finished {
			dst = e.advance(dst)
		}
	case toolUnseen, toolPending:
		t.state = toolPending
		t.args = append(t.args, in...)
	}
	// toolClosed: a fragment after the call's JSON was complete (whitespace at most); dropped.
	return dst
}

// advance closes the complete open tool block and opens the waiting calls in index order, as
// long as each one's buffered arguments are already complete.
func (e *StreamEncoder) advance(dst []byte) []byte {
	for e.open == openTool && e.tools[e.openTool].scan.decided {
		k := e.nextPending()
		if k < 0 {
			return dst
		}
		dst = e.closeOpen(dst)
		dst = e.openToolBlock(dst, k)
	}
	return dst
}

func (e *StreamEncoder) nextPending() int {
	for i := range e.tools {
		if e.tools[i].state == toolPending {
			return i
		}
	}
	return -1
}

// openToolBlock opens call k's tool_use block and flushes its buffered fragments.
func (e *StreamEncoder) openToolBlock(dst []byte, k int) []byte {
	dst = e.openBlock(dst, openTool, k)
	t := &e.tools[k]
	if len(t.args) > 0 {
		t.scan.feed(t.args)
		dst = e.frameStart(dst, "content_block_delta", t.block)
		dst = append(dst, `,"delta":{"type":"input_json_delta","partial_json":"`...)
		dst = append(dst, t.args...)
		dst = append(dst, "\"}}\n\n"...)
		t.args = t.args[:0]
	}
	return dst
}

func (e *StreamEncoder) frameStart(dst []byte, name string, index int) []byte {
	dst = append(dst, "event: "...)
	dst = append(dst, name...)
	dst = append(dst, "\ndata: {\"type\":\""...)
	dst = append(dst, name...)
	dst = append(dst, `","index":`...)
	return strconv.AppendInt(dst, int64(index), 10)
}

func (e *StreamEncoder) openBlock(dst []byte, kind uint8, k int) []byte {
	idx := e.next
	e.next++
	e.open = kind
	dst = e.frameStart(dst, "content_block_start", idx)
	switch kind {
	case openText:
		dst = append(dst, `,"content_block":{"type":"text","text":""}}`...)
	case openThinking:
		dst = append(dst, `,"content_block":{"type":"thinking","thinking":"","signature":""}}`...)
	case openTool:
		t := &e.tools[k]
		t.state, t.block = toolOpen, idx
		e.openTool = k
		dst = append(dst, `,"content_block":{"type":"tool_use","id":`...)
		dst = appendToolID(dst, dialect.View(t.id))
		dst = append(dst, `,"name":`...)
		dst = dialect.AppendJSONString(dst, dialect.View(t.name))
		dst = append(dst, `,"input":{}}}`...)
	}
	return append(dst, "\n\n"...)
}

func (e *StreamEncoder) appendDelta(dst []byte, typ, field string, lit []byte) []byte {
	dst = e.frameStart(dst, "content_block_delta", e.next-1)
	dst = append(dst, `,"delta":{"type":"`...)
	dst = append(dst, typ...)
	dst = append(dst, `","`...)
	dst = append(dst, field...)
	dst = append(dst, `":`...)
	dst = append(dst, lit...)
	return append(dst, "}}\n\n"...)
}

func (e *StreamEncoder) closeOpen(dst []byte) []byte {
	if e.open == openNone {
		return dst
	}
	if e.open == openTool {
		e.tools[e.openTool].state = toolClosed
		e.openTool = -1
	}
	e.open = openNone
	dst = e.frameStart(dst, "content_block_stop", e.next-1)
	return append(dst, "}\n\n"...)
}

// closeAll closes the open block, then sends the waiting tool calls and deferred content each
// as a whole block.
func (e *StreamEncoder) closeAll(dst []byte) []byte {
	e.finished = true
	dst = e.closeOpen(dst)
	for k := range e.tools {
		if e.tools[k].state == toolPending {
			dst = e.openToolBlock(dst, k)
			dst = e.closeOpen(dst)
		}
	}
	for _, late := range [2]struct {
		kind uint8
		buf  []byte
	}{{openThinking, e.lateThink}, {openText, e.lateText}} {
		if len(late.buf) == 0 {
			continue
		}
		dst = e.openBlock(dst, late.kind, -1)
		typ, field := "text_delta", "text"
		if late.kind == openThinking {
			typ, field = "thinking_delta", "thinking"
		}
		dst = e.frameStart(dst, "content_block_delta", e.next-1)
		dst = append(dst, `,"delta":{"type":"`...)
		dst = append(dst, typ...)
		dst = append(dst, `","`...)
		dst = append(dst, field...)
		dst = append(dst, `":"`...)
		dst = append(dst, late.buf...)
		dst = append(dst, "\"}}\n\n"...)
		dst = e.closeOpen(dst)
	}
	e.lateThink, e.lateText = e.lateThink[:0], e.lateText[:0]
	return dst
}
