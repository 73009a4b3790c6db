package anthropic

import (
	"strings"

	"github.com/tidwall/gjson"

	"github.com/switchyard-gw/switchyard/internal/dialect"
	"github.com/switchyard-gw/switchyard/internal/failure"
	"github.com/switchyard-gw/switchyard/internal/sse"
)

// errNoMessages is the refusal of `messages: []`, in the Anthropic API's words. Shared: nothing
// mutates it.
var errNoMessages = &failure.Error{Class: failure.InvalidRequest, Param: "messages", Msg: "messages: at least one message is required"}

// ParseRequest reads the fields routing needs from a messages body without decoding it
// (R-DIALECT-3). Errors are *failure.Error of class invalid_request naming the field: a body
// that is not a JSON object, a missing or non-string `model`, a non-array or empty `messages`,
// a non-boolean `stream`, a missing or non-integer `max_tokens`.
func ParseRequest(body []byte) (dialect.RequestInfo, error) {
	var info dialect.RequestInfo
	var m, msgs, stream, mt gjson.Result
	if err := dialect.ScanBody(body, func(k string, v gjson.Result) {
		switch k {
		case "model":
			m = v
		case "messages":
			msgs = v
		case "stream":
			stream = v
		case "max_tokens":
			mt = v
		}
	}); err != nil {
		return info, err
	}
	if m.Type != gjson.String || m.Str == "" {
		return info, &failure.Error{Class: failure.InvalidRequest, Param: "model", Msg: "model: a non-empty string is required"}
	}
	info.Model = strings.Clone(m.Str)
	info.ModelStart, info.ModelEnd = m.Index, m.Index+len(m.Raw)
	if !msgs.IsArray() {
		return info, &failure.Error{Class: failure.InvalidRequest, Param: "messages", Msg: "messages: an array is required"}
	}
	switch stream.Type {
	case gjson.Null, gjson.False:
	case gjson.True:
		info.Stream = true
	default:
		return info, &failure.Error{Class: failure.InvalidRequest, Param: "stream", Msg: "stream: a boolean is required"}
	}
	if mt.Type != gjson.Number || mt.Num < 0 || mt.Num != float64(int64(mt.Num)) || mt.Num > 1e15 {
		return info, &failure.Error{Class: failure.InvalidRequest, Param: "max_tokens", Msg: "max_tokens: an integer from 0 to 10^15 is required"}
	}
	info.MaxTokens = int64(mt.Num)
	// Last: a body with another fault is refused for that one, as the API would.
	if dialect.EmptyArray(msgs) { // the Anthropic API's own answer to an empty list
		return info, errNoMessages
	}
	return info, nil
}

// AppendUpstreamBody appends the body sent upstream: the caller's body with `model` replaced by
// upstreamModel. Anthropic always reports usage, so nothing else changes.
func AppendUpstreamBody(dst, body []byte, info *dialect.RequestInfo, upstreamModel string) []byte {
	return dialect.SpliceString(dst, body, info.ModelStart, info.ModelEnd, upstreamModel)
}

// ScanFrame classifies one upstream messages stream event and, for frames to forward, appends
// the re-framed event (with `event:` and `data:` lines; message_start's model echoed as
// st.RequestedModel) to dst (R-FAIL-2, R-MODEL-6). message_start's input-token preamble and
// message_delta's cumulative usage update st.Usage; a message_delta with a stop_reason is the
// finish (semantic, st.Finished), one without is lifecycle. FrameError frames are not appended;
// data nested deeper than dialect.MaxDepth is a FrameError too (a provider failure). The event
// name written is the event's type from the fixed set of EventName; an event of any other type
// is FrameDrop (not forwarded, commits nothing).
func ScanFrame(dst []byte, ev sse.Event, st *dialect.StreamState) ([]byte, dialect.FrameKind) {
	if dialect.TooDeep(ev.Data) {
		return dst, dialect.FrameError // NormalizeStreamError names the depth limit
	}
	root := gjson.Parse(dialect.View(ev.Data))
	var typ string // one of the fixed set: never the provider's bytes
	if len(ev.Name) > 0 {
		typ = EventName(dialect.View(ev.Name))
	} else {
		typ = EventName(root.Get("type").Str)
	}
	if typ == "" {
		return dst, dialect.FrameDrop // an event type this gateway does not know: not forwarded
	}
	kind := dialect.FrameLifecycle
	data := ev.Data
	switch typ {
	case "error":
		return dst, dialect.FrameError
	case "message_stop":
		kind = dialect.FrameDone
	case "message_start":
		readUsage(root.Get("message.usage"), &st.Usage, true)
		st.Scratch = dialect.AppendWithModel(st.Scratch[:0], data, "message.model", st.RequestedModel)
		data = st.Scratch
	case "content_block_start":
		if blockIsSemantic(root.Get("content_block")) {
			kind = dialect.FrameSemantic
		}
	case "content_block_delta":
		if deltaIsSemantic(root.Get("delta")) {
			kind = dialect.FrameSemantic
		}
	case "message_delta":
		// The stop reason and the cumulative usage report (R-FAIL-2). A message_delta without a
		// stop reason (a provider reporting usage as it goes) updates the usage and commits
		// nothing.
		readUsage(root.Get("usage"), &st.Usage, false)
		st.UsageSeen = true
		if sr := root.Get("delta.stop_reason"); sr.Type == gjson.String && sr.Str != "" {
			kind = dialect.FrameSemantic
			if !st.Finished {
				st.FinishReason = dialect.InternFinishReason(sr.Str)
			}
			st.Finished = true
		}
	}
	return appendEvent(dst, typ, data), kind
}

// EventName returns the caller-facing name of an Anthropic stream event type: one of the fixed
// set Anthropic documents (message_start, content_block_start, content_block_delta,
// content_block_stop, message_delta, message_stop, ping, error), as this package's constant,
// never the provider's bytes; "" for any other type. An `event:` line written to a caller is
// always one of these, so an upstream cannot inject SSE lines or events through the name (a
// JSON "type" may hold a line break).
func EventName(typ string) string {
	switch typ {
	case "message_start":
		return "message_start"
	case "content_block_start":
		return "content_block_start"
	case "content_block_delta":
		return "content_block_delta"
	case "content_block_stop":
		return "content_block_stop"
	case "message_delta":
		return "message_delta"
	case "message_stop":
		return "message_stop"
	case "ping":
		return "ping"
	case "error":
		return "error"
	}
	return ""
}

func blockIsSemantic(b gjson.Result) bool {
	switch b.Get("type").Str {
	case "text":
		return b.Get("text").Str != ""
	case "thinking":
		return b.Get("thinking").Str != ""
	case "":
		return false
	}
	return true // tool_use, server_tool_use, redacted_thinking, results: output
}

func deltaIsSemantic(d gjson.Result) bool {
	switch d.Get("type").Str {
	case "text_delta":
		return d.Get("text").Str != ""
	case "thinking_delta":
		return d.Get("thinking").Str != ""
	case "input_json_delta":
		return true
	case "signature_delta", "citations_delta":
		return true
	}
	return d.Exists()
}

func appendEvent(dst []byte, name string, data []byte) []byte {
	dst = append(dst, "event: "...)
	dst = append(dst, name...)
	dst = append(dst, "\ndata: "...)
	dst = dialect.AppendOneLine(dst, data)
	return append(dst, '\n', '\n')
}

// readUsage merges an Anthropic usage object into out. Values are cumulative; a field overwrites
// only when present (as the official accumulator does). Anthropic's input_tokens already exclude
// cache reads and writes, which is the canonical form; cache_creation's
// ephemeral_1h_input_tokens is the one-hour part of cache_creation_input_tokens (CacheWrite1h);
// server_tool_use.web_search_requests is the count of web searches billed per call
// (WebSearchRequests; its web_fetch_requests are not billed per call, so not read).
func readUsage(u gjson.Result, out *dialect.Usage, start bool) {
	if !u.IsObject() {
		return
	}
	// One pass over the members; a repeated member counts once, its first value, as a path
	// lookup reads it.
	var in, cached, write, output, details, thinking, creation, w5m, w1h, tools, searches gjson.Result
	u.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "input_tokens":
			dialect.KeepFirst(&in, v)
		case "cache_read_input_tokens":
			dialect.KeepFirst(&cached, v)
		case "cache_creation_input_tokens":
			dialect.KeepFirst(&write, v)
		case "cache_creation":
			dialect.KeepFirst(&creation, v)
		case "output_tokens":
			dialect.KeepFirst(&output, v)
		case "output_tokens_details":
			dialect.KeepFirst(&details, v)
		case "server_tool_use":
			dialect.KeepFirst(&tools, v)
		}
		return true
	})
	creation.ForEach(func(k, v gjson.Result) bool { // nothing unless an object
		switch k.Str {
		case "ephemeral_5m_input_tokens":
			dialect.KeepFirst(&w5m, v)
		case "ephemeral_1h_input_tokens":
			dialect.KeepFirst(&w1h, v)
		}
		return true
	})
	details.ForEach(func(k, v gjson.Result) bool { // nothing unless an object
		if k.Str == "thinking_tokens" {
			dialect.KeepFirst(&thinking, v)
		}
		return true
	})
	tools.ForEach(func(k, v gjson.Result) bool { // nothing unless an object
		if k.Str == "web_search_requests" {
			dialect.KeepFirst(&searches, v)
		}
		return true
	})
	if in.Exists() {
		out.Input = in.Int()
	}
	if cached.Exists() {
		out.Cached = cached.Int()
	}
	if write.Exists() {
		out.CacheWrite = write.Int()
	}
	if w1h.Exists() {
		out.CacheWrite1h = w1h.Int()
	}
	if !write.Exists() && (w5m.Exists() || w1h.Exists()) {
		// The breakdown without its total (not seen from Anthropic; a proxy may send it).
		out.CacheWrite = max(w5m.Int(), 0) + max(w1h.Int(), 0)
	}
	if output.Exists() && !start {
		out.Output = output.Int()
	}
	if thinking.Exists() {
		out.Reasoning = thinking.Int()
	}
	if searches.Exists() {
		out.WebSearchRequests = searches.Int()
	}
}

// RewriteResponse checks a non-stream message body, appends it to dst with `model` echoed as
// requestedModel, and returns the reported usage (ok=false when the body has none). A body that
// is not a JSON object, or one without a `content` array (an `error` object, `{}`), is an
// upstream_error: it fails over, nothing was sent yet, and a 200 that answers nothing never
// reaches the caller as a success. An empty `content` array is a message (a model may stop at
// once).
func RewriteResponse(dst, body []byte, requestedModel string) ([]byte, dialect.Usage, bool, error) {
	a, err := dialect.ScanAnswer(body, "content", true) // depth, validity and the answer in one pass
	if err != nil {
		return dst, dialect.Usage{}, false, err
	}
	return rewriteChecked(dst, body, a, requestedModel)
}

// rewriteChecked appends a checked answer body to dst with `model` echoed and reads its usage.
func rewriteChecked(dst, body []byte, a dialect.Answer, requestedModel string) ([]byte, dialect.Usage, bool, error) {
	var u dialect.Usage
	ok := a.Usage.IsObject()
	if ok {
		readUsage(a.Usage, &u, false)
	}
	return dialect.AppendModel(dst, body, a.Model, requestedModel), u, ok, nil
}
