package responses

import (
	"strconv"
	"time"

	"github.com/tidwall/gjson"

	"github.com/switchyard-gw/switchyard/internal/dialect"
	"github.com/switchyard-gw/switchyard/internal/failure"
)

type itemKind uint8

const (
	kindMessage itemKind = iota + 1
	kindReasoning
	kindCall
)

// streamItem is one output item of the stream. Its text lives in the parts p0..p0+pn of the
// encoder (message and reasoning items), its arguments and signature in its own buffers; every
// buffer holds JSON-escaped text without quotes (concatenated provider literals).
type streamItem struct {
	kind         itemKind
	status       string // "" while open (written "in_progress"), then completed or incomplete
	p0, pn       int
	callID, name string
	namespace    string // the function's Responses namespace, when the caller's tool had one
	args, sig    []byte
}

// streamPart is one content part of a message (output_text or refusal) or reasoning item
// (reasoning_text).
type streamPart struct {
	typ  dialect.PartType // PartText, PartRefusal or PartThinking
	buf  []byte
	open bool
}

// StreamEncoder turns canonical events into Responses-API stream events for the caller (wire.md
// §2.2). Every frame has an `event:` line and a `data:` object whose "type" repeats the event
// name and whose sequence_number increases by one per frame from 0. The stream is
//
//	response.created, response.in_progress,
//	per item: response.output_item.added, [response.content_part.added, deltas,
//	  the part's .done, response.content_part.done]..., response.output_item.done,
//	response.completed | response.incomplete
//
// with no [DONE]. The created/in_progress snapshots are lifecycle frames (R-FAIL-2). The
// terminal event carries the whole Response (AppendResponse's shape) with every item's
// accumulated text and arguments and the usage. It is a value type: Reset prepares it for an
// attempt, keeping its buffers, so that steady-state deltas allocate nothing. It is not safe
// for concurrent use.
type StreamEncoder struct {
	model, requestID string
	rid              []byte // requestID JSON-escaped, without quotes
	created          int64
	seq              int64
	started, done    bool
	stop             dialect.StopReason
	usage            dialect.Usage
	items            []streamItem
	parts            []streamPart
	cur              int   // 1 + index of the open message or reasoning item; 0 when none
	calls            []int // tool index -> 1 + item index; 0 when unknown
	scratch          []byte
}

// Reset prepares e for an attempt: requestedModel is echoed in every Response snapshot, the
// response id is "resp_" + requestID and item ids derive from requestID. includeUsage is
// accepted for symmetry with the other surfaces' encoders and changes nothing: the Responses
// API always reports usage in its terminal event.
func (e *StreamEncoder) Reset(requestedModel, requestID string, includeUsage bool) {
	_ = includeUsage
	e.model, e.requestID = requestedModel, requestID
	e.rid = appendStringBody(e.rid[:0], requestID)
	e.created = time.Now().Unix()
	e.seq, e.started, e.done, e.stop, e.usage = 0, false, false, "", dialect.Usage{}
	e.items, e.parts, e.calls, e.cur = e.items[:0], e.parts[:0], e.calls[:0], 0
}

// Append appends the frames for ev (possibly none) to dst and returns it:
//
//   - EventStart: response.created and response.in_progress (status in_progress, usage null).
//     Any other event that arrives first is preceded by them, so they are always first and sent
//     once.
//   - EventText, EventRefusal: response.output_text.delta / response.refusal.delta, opening a
//     message item and an output_text / refusal content part when needed.
//   - EventReasoning: response.reasoning_text.delta in a reasoning item (one item per thinking
//     block: a delta after a signature opens a new item). EventSignature: no frame; it becomes
//     the item's encrypted_content.
//   - EventToolCall: a function_call item {call_id, name, arguments:""}; EventToolArgs:
//     response.function_call_arguments.delta for the call of that tool index (calls may
//     interleave, also with text: call items stay open until the finish; fragments of an unknown
//     call are dropped).
//   - EventFinish: closes every open item (the .done events with the accumulated text or
//     arguments, then response.output_item.done); items closed here are "incomplete" when the
//     stop reason makes the response incomplete.
//   - EventUsage: nothing; remembered for the terminal event.
//   - EventDone: closes what is open, then response.completed, or response.incomplete with
//     incomplete_details (max_output_tokens, content_filter), carrying the whole Response.
//   - EventError: nothing (the relay writes the terminal failure, AppendError).
//
// Opening a message or reasoning item closes every open item; opening a function call closes
// the open message or reasoning item. Text fields are copied as the raw JSON string literals
// they are. Once dst and the encoder's buffers have capacity, Append allocates nothing.
func (e *StreamEncoder) Append(dst []byte, ev dialect.Event) []byte {
	if e.done {
		return dst
	}
	switch ev.Type {
	case dialect.EventStart:
		return e.start(dst)
	case dialect.EventText, dialect.EventRefusal:
		if !nonEmptyLiteral(ev.Text) {
			return dst
		}
		typ, name := dialect.PartText, "response.output_text.delta"
		if ev.Type == dialect.EventRefusal {
			typ, name = dialect.PartRefusal, "response.refusal.delta"
		}
		dst = e.start(dst)
		var pi int
		dst, pi = e.messagePart(dst, typ)
		it := e.cur - 1
		dst = e.frame(dst, name)
		dst = e.itemRef(dst, it)
		dst = append(dst, `,"content_index":`...)
		dst = strconv.AppendInt(dst, int64(pi-e.items[it].p0), 10)
		dst = append(dst, `,"delta":`...)
		dst = append(dst, ev.Text...)
		if typ == dialect.PartText {
			dst = append(dst, `,"logprobs":[]`...)
		}
		e.parts[pi].buf = append(e.parts[pi].buf, ev.Text[1:len(ev.Text)-1]...)
		return append(dst, "}\n\n"...)
	case dialect.EventReasoning:
		if !nonEmptyLiteral(ev.Text) {
			return dst
		}
		dst = e.start(dst)
		if e.cur == 0 || e.items[e.cur-1].kind != kindReasoning || len(e.items[e.cur-1].sig) > 0 {
			dst = e.openItem(dst, kindReasoning)
		}
		it := e.cur - 1
		pi := e.items[it].p0 + e.items[it].pn - 1
		if e.items[it].pn == 0 {
			dst, pi = e.openPart(dst, it, dialect.PartThinking)
		}
		dst = e.frame(dst, "response.reasoning_text.delta")
		dst = e.itemRef(dst, it)
		dst = append(dst, `,"content_index":`...)
		dst = strconv.AppendInt(dst, int64(pi-e.items[it].p0), 10)
		dst = append(dst, `,"delta":`...)
		dst = append(dst, ev.Text...)
		e.parts[pi].buf = append(e.parts[pi].buf, ev.Text[1:len(ev.Text)-1]...)
		return append(dst, "}\n\n"...)
	case dialect.EventSignature:
		if !nonEmptyLiteral(ev.Text) {
			return dst
		}
		dst = e.start(dst)
		if e.cur == 0 || e.items[e.cur-1].kind != kindReasoning {
			dst = e.openItem(dst, kindReasoning)
		}
		it := &e.items[e.cur-1]
		it.sig = append(it.sig, ev.Text[1:len(ev.Text)-1]...)
		return dst
	case dialect.EventToolCall:
		dst = e.start(dst)
		if e.cur != 0 {
			dst = e.closeItem(dst, e.cur-1, statusCompleted)
		}
		for len(e.calls) <= ev.ToolIndex {
			e.calls = append(e.calls, 0)
		}
		n := e.newItem(kindCall)
		e.items[n].callID, e.items[n].name, e.items[n].namespace = ev.ID, ev.Name, ev.Namespace
		e.calls[ev.ToolIndex] = n + 1
		return e.itemFrame(dst, "response.output_item.added", n)
	case dialect.EventToolArgs:
		if !nonEmptyLiteral(ev.Text) || ev.ToolIndex < 0 || ev.ToolIndex >= len(e.calls) || e.calls[ev.ToolIndex] == 0 {
			return dst
		}
		n := e.calls[ev.ToolIndex] - 1
		if e.items[n].status != "" {
			return dst
		}
		dst = e.frame(dst, "response.function_call_arguments.delta")
		dst = e.itemRef(dst, n)
		dst = append(dst, `,"delta":`...)
		dst = append(dst, ev.Text...)
		e.items[n].args = append(e.items[n].args, ev.Text[1:len(ev.Text)-1]...)
		return append(dst, "}\n\n"...)
	case dialect.EventFinish:
		e.stop = ev.Stop
		dst = e.start(dst)
		status, _ := statusOf(ev.Stop)
		return e.closeAll(dst, status)
	case dialect.EventUsage:
		e.usage = ev.Usage
	case dialect.EventDone:
		dst = e.start(dst)
		status, reason := statusOf(e.stop)
		dst = e.closeAll(dst, status)
		e.done = true
		name := "response.completed"
		if status == statusIncomplete {
			name = "response.incomplete"
		}
		dst = e.frame(dst, name)
		dst = append(dst, `,"response":`...)
		dst = e.appendSnapshot(dst, status, reason, nil, &e.usage)
		return append(dst, "}\n\n"...)
	}
	return dst
}

// nonEmptyLiteral reports whether lit is a JSON string literal with content (not `""`).
func nonEmptyLiteral(lit []byte) bool { return len(lit) > 2 && lit[0] == '"' }

// start writes response.created and response.in_progress once.
func (e *StreamEncoder) start(dst []byte) []byte {
	if e.started {
		return dst
	}
	e.started = true
	for _, name := range [...]string{"response.created", "response.in_progress"} {
		dst = e.frame(dst, name)
		dst = append(dst, `,"response":`...)
		dst = e.appendSnapshot(dst, statusInProgress, "", nil, nil)
		dst = append(dst, "}\n\n"...)
	}
	return dst
}

// frame opens an event frame up to the sequence number: the caller appends `,"key":value`
// members and "}\n\n".
func (e *StreamEncoder) frame(dst []byte, name string) []byte {
	dst = append(dst, "event: "...)
	dst = append(dst, name...)
	dst = append(dst, "\ndata: {\"type\":\""...)
	dst = append(dst, name...)
	dst = append(dst, `","sequence_number":`...)
	dst = strconv.AppendInt(dst, e.seq, 10)
	e.seq++
	return dst
}

var idPrefix = [...]string{kindMessage: "msg_", kindReasoning: "rs_", kindCall: "fc_"}

// itemRef writes `,"item_id":ID,"output_index":n`.
func (e *StreamEncoder) itemRef(dst []byte, n int) []byte {
	dst = append(dst, `,"item_id":`...)
	dst = appendItemID(dst, idPrefix[e.items[n].kind], e.rid, n)
	dst = append(dst, `,"output_index":`...)
	return strconv.AppendInt(dst, int64(n), 10)
}

// itemFrame writes an output_item.added or .done frame with item n as it is now.
func (e *StreamEncoder) itemFrame(dst []byte, name string, n int) []byte {
	dst = e.frame(dst, name)
	dst = append(dst, `,"output_index":`...)
	dst = strconv.AppendInt(dst, int64(n), 10)
	dst = append(dst, `,"item":`...)
	dst = e.appendItem(dst, n)
	return append(dst, "}\n\n"...)
}

// partFrame writes a content_part.added or .done frame with part pi of item n as it is now.
func (e *StreamEncoder) partFrame(dst []byte, name string, n, pi int) []byte {
	dst = e.frame(dst, name)
	dst = e.itemRef(dst, n)
	dst = append(dst, `,"content_index":`...)
	dst = strconv.AppendInt(dst, int64(pi-e.items[n].p0), 10)
	dst = append(dst, `,"part":`...)
	dst = e.appendPart(dst, pi)
	return append(dst, "}\n\n"...)
}

func (e *StreamEncoder) appendPart(dst []byte, pi int) []byte {
	p := &e.parts[pi]
	dst = appendPartOpen(dst, p.typ)
	dst = append(dst, '"')
	dst = append(dst, p.buf...)
	dst = append(dst, '"')
	return appendPartClose(dst, p.typ)
}

// appendItem writes item n as a Responses output item.
func (e *StreamEncoder) appendItem(dst []byte, n int) []byte {
	it := &e.items[n]
	status := it.status
	if status == "" {
		status = statusInProgress
	}
	switch it.kind {
	case kindCall:
		dst = appendItemHead(dst, "fc_", e.rid, n, "function_call", status)
		dst = append(dst, `,"call_id":`...)
		dst = dialect.AppendJSONString(dst, it.callID)
		dst = append(dst, `,"name":`...)
		dst = dialect.AppendJSONString(dst, it.name)
		if it.namespace != "" {
			dst = append(dst, `,"namespace":`...)
			dst = dialect.AppendJSONString(dst, it.namespace)
		}
		dst = append(dst, `,"arguments":"`...)
		dst = append(dst, it.args...)
		return append(dst, `"}`...)
	case kindReasoning:
		dst = appendItemHead(dst, "rs_", e.rid, n, "reasoning", status)
		dst = append(dst, `,"summary":[],"content":[`...)
	default:
		dst = appendItemHead(dst, "msg_", e.rid, n, "message", status)
		dst = append(dst, `,"role":"assistant","content":[`...)
	}
	for k := 0; k < it.pn; k++ {
		if k > 0 {
			dst = append(dst, ',')
		}
		dst = e.appendPart(dst, it.p0+k)
	}
	dst = append(dst, ']')
	if it.kind == kindReasoning {
		dst = append(dst, `,"encrypted_content":`...)
		if len(it.sig) == 0 {
			dst = append(dst, "null"...)
		} else {
			dst = append(dst, '"')
			dst = append(dst, it.sig...)
			dst = append(dst, '"')
		}
	}
	return append(dst, '}')
}

// appendSnapshot writes the Response object with every item as it is now; errObj is the
// response's error object (nil: null) and u its usage (nil: null).
func (e *StreamEncoder) appendSnapshot(dst []byte, status, reason string, errObj []byte, u *dialect.Usage) []byte {
	dst = appendResponseOpen(dst, e.rid, e.created, status, reason, e.model, errObj)
	if status != statusInProgress {
		for n := range e.items {
			if n > 0 {
				dst = append(dst, ',')
			}
			dst = e.appendItem(dst, n)
		}
	}
	return appendResponseClose(dst, u)
}

// newItem appends an open item of kind, reusing a previous attempt's buffers, and returns its
// index.
func (e *StreamEncoder) newItem(kind itemKind) int {
	n := len(e.items)
	if n < cap(e.items) {
		e.items = e.items[:n+1]
	} else {
		e.items = append(e.items, streamItem{})
	}
	it := &e.items[n]
	*it = streamItem{kind: kind, p0: len(e.parts), args: it.args[:0], sig: it.sig[:0]}
	return n
}

// openItem closes the open message and reasoning items and opens a message or reasoning item
// as the current one. Function-call items stay open until the finish: an upstream may send a
// call's last argument fragments after text, and a closed call could not take them (its
// arguments would end as invalid JSON).
func (e *StreamEncoder) openItem(dst []byte, kind itemKind) []byte {
	for n := range e.items {
		if e.items[n].kind != kindCall {
			dst = e.closeItem(dst, n, statusCompleted)
		}
	}
	n := e.newItem(kind)
	e.cur = n + 1
	return e.itemFrame(dst, "response.output_item.added", n)
}

// openPart appends an open content part of typ to item n (the current item, whose parts are
// the last ones) and returns its index.
func (e *StreamEncoder) openPart(dst []byte, n int, typ dialect.PartType) ([]byte, int) {
	pi := len(e.parts)
	if pi < cap(e.parts) {
		e.parts = e.parts[:pi+1]
	} else {
		e.parts = append(e.parts, streamPart{})
	}
	e.parts[pi] = streamPart{typ: typ, buf: e.parts[pi].buf[:0], open: true}
	e.items[n].pn++
	return e.partFrame(dst, "response.content_part.added", n, pi), pi
}

// messagePart returns the open content part of typ in the open message item, opening the item
// and the part as needed.
func (e *StreamEncoder) messagePart(dst []byte, typ dialect.PartType) ([]byte, int) {
	if e.cur == 0 || e.items[e.cur-1].kind != kindMessage {
		dst = e.openItem(dst, kindMessage)
	}
	n := e.cur - 1
	it := &e.items[n]
	if it.pn > 0 {
		pi := it.p0 + it.pn - 1
		if p := &e.parts[pi]; p.open && p.typ == typ {
			return dst, pi
		}
		dst = e.closePart(dst, n, pi)
	}
	return e.openPart(dst, n, typ)
}

// closePart writes the part's .done event with its accumulated text and content_part.done.
func (e *StreamEncoder) closePart(dst []byte, n, pi int) []byte {
	p := &e.parts[pi]
	if !p.open {
		return dst
	}
	p.open = false
	name, key := "response.output_text.done", `,"text":"`
	switch p.typ {
	case dialect.PartRefusal:
		name, key = "response.refusal.done", `,"refusal":"`
	case dialect.PartThinking:
		name = "response.reasoning_text.done"
	}
	dst = e.frame(dst, name)
	dst = e.itemRef(dst, n)
	dst = append(dst, `,"content_index":`...)
	dst = strconv.AppendInt(dst, int64(pi-e.items[n].p0), 10)
	dst = append(dst, key...)
	dst = append(dst, p.buf...)
	dst = append(dst, '"')
	if p.typ == dialect.PartText {
		dst = append(dst, `,"logprobs":[]`...)
	}
	dst = append(dst, "}\n\n"...)
	return e.partFrame(dst, "response.content_part.done", n, pi)
}

// closeItem finishes item n with status: its open part, function_call_arguments.done for a
// call (empty arguments become "{}"), then output_item.done.
func (e *StreamEncoder) closeItem(dst []byte, n int, status string) []byte {
	it := &e.items[n]
	if it.status != "" {
		return dst
	}
	if it.pn > 0 {
		dst = e.closePart(dst, n, it.p0+it.pn-1)
		it = &e.items[n]
	}
	if it.kind == kindCall {
		if len(it.args) == 0 {
			it.args = append(it.args, "{}"...)
		}
		dst = e.frame(dst, "response.function_call_arguments.done")
		dst = e.itemRef(dst, n)
		dst = append(dst, `,"arguments":"`...)
		dst = append(dst, e.items[n].args...)
		dst = append(dst, "\"}\n\n"...)
	}
	e.items[n].status = status
	if e.cur == n+1 {
		e.cur = 0
	}
	return e.itemFrame(dst, "response.output_item.done", n)
}

// closeAll closes every open item in output order.
func (e *StreamEncoder) closeAll(dst []byte, status string) []byte {
	for n := range e.items {
		dst = e.closeItem(dst, n, status)
	}
	return dst
}

// AppendError appends the terminal failure of a committed stream (R-FAIL-4): ONE frame,
//
//	event: response.failed
//	data: {"type":"response.failed","sequence_number":N,"error":{message,type,param,code,metadata},
//	       "request_id":R,"response":{...,"status":"failed","error":{"code":C,"message":M},...}}
//
// The nested response is the documented response.failed payload (the output so far, open items
// "in_progress", the usage seen so far). The top-level "error" and "request_id" members are
// openai.AppendErrorBody's: openai-go, openai-node and openai-python end a stream with an error
// only on a data object with a top-level "error" key (wire.md §7.4), which the documented
// response.failed and error events lack, so without it openai-go's Responses stream would end
// with Err() == nil. C is the error code, or "server_error" for the api_error type. No frame
// follows; Append does nothing afterwards.
func (e *StreamEncoder) AppendError(dst []byte, fe *failure.Error) []byte {
	e.done = true
	e.scratch = AppendErrorBody(e.scratch[:0], fe, e.requestID)
	body := e.scratch
	dst = e.frame(dst, "response.failed")
	dst = append(dst, ',')
	dst = append(dst, body[1:len(body)-1]...) // `"error":{...},"request_id":R`
	n := len(e.scratch)
	errObj := append(e.scratch, `{"code":`...)
	code := dialect.Get(body, "error.code")
	switch {
	case code.Type == gjson.String:
		errObj = append(errObj, code.Raw...)
	case dialect.Get(body, "error.type").Str == "api_error":
		errObj = append(errObj, `"server_error"`...)
	default:
		errObj = append(errObj, dialect.Get(body, "error.type").Raw...)
	}
	errObj = append(errObj, `,"message":`...)
	errObj = append(errObj, dialect.Get(body, "error.message").Raw...)
	errObj = append(errObj, '}')
	e.scratch = errObj
	dst = append(dst, `,"response":`...)
	dst = e.appendSnapshot(dst, statusFailed, "", errObj[n:], &e.usage)
	return append(dst, "}\n\n"...)
}

// AppendStreamError appends the terminal failure frame of AppendError for a stream whose
// encoder is not at hand: sequence_number 0, an empty model and no output. Prefer the method,
// which continues the sequence and carries the output so far.
func AppendStreamError(dst []byte, fe *failure.Error, requestID string) []byte {
	var e StreamEncoder
	e.Reset("", requestID, true)
	return e.AppendError(dst, fe)
}
