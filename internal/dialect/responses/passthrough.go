package responses

import (
	"bytes"

	"github.com/tidwall/gjson"

	"github.com/switchyard-gw/switchyard/internal/dialect"
	"github.com/switchyard-gw/switchyard/internal/failure"
	"github.com/switchyard-gw/switchyard/internal/sse"
)

// Pass-through of the Responses API to a deployment that serves it (docs/responses-api.md
// "Pass-through"): the caller's body goes upstream with only `model` rewritten, and the answer
// comes back with only `response.model` echoed as the caller's model. Nothing is decoded beyond
// the few members the commit gate and billing read.

// AppendUpstreamBody appends the caller's body with `model` replaced by upstreamModel; every
// other byte is the caller's (the Responses API reports usage in response.completed whatever
// the request says, so nothing else needs forcing).
func AppendUpstreamBody(dst, body []byte, info *dialect.RequestInfo, upstreamModel string) []byte {
	return dialect.SpliceString(dst, body, info.ModelStart, info.ModelEnd, upstreamModel)
}

// The commit point of a Responses stream (docs/behaviour.md "Responses pass-through"):
// response.created, response.in_progress and response.queued are lifecycle (held before
// commit); every other event is output, the first of which commits, except the terminal ones:
// response.completed and response.incomplete end the stream (FrameDone; usage is read from their
// response.usage), and `error` and response.failed are in-stream errors (FrameError: before
// commit they fail over, after commit the caller gets one terminal error event).

// ScanFrame classifies one upstream Responses event for the commit gate and appends it to dst
// with its response snapshot's `model` echoed as st.RequestedModel. The event's type is its
// `event:` name, else its data's `type`.
func ScanFrame(dst []byte, ev sse.Event, st *dialect.StreamState) ([]byte, dialect.FrameKind) {
	if dialect.TooDeep(ev.Data) {
		return dst, dialect.FrameError
	}
	typ := string(ev.Name)
	root := gjson.Parse(dialect.View(ev.Data))
	if typ == "" {
		typ = root.Get("type").Str
	}
	kind := dialect.FrameSemantic
	switch typ {
	case "response.created", "response.in_progress", "response.queued":
		kind = dialect.FrameLifecycle
	case "response.completed", "response.incomplete":
		kind = dialect.FrameDone
		if u := root.Get("response.usage"); u.IsObject() {
			st.Usage, st.UsageSeen = readUsage(u), true
		}
		if bytes.Contains(ev.Data, webSearchCall) {
			st.Usage.WebSearchRequests = webSearches(root.Get("response.output"))
		}
		st.Finished = true
		st.FinishReason = dialect.InternFinishReason(root.Get("response.status").Str)
	case "error", "response.failed":
		return dst, dialect.FrameError
	case "":
		if len(ev.Data) == 0 {
			return dst, dialect.FrameDrop
		}
	}
	data := ev.Data
	if m := root.Get("response.model"); m.Type == gjson.String && m.Index > 0 && m.Str != st.RequestedModel {
		st.Scratch = dialect.SpliceString(st.Scratch[:0], data, m.Index, m.Index+len(m.Raw), st.RequestedModel)
		data = st.Scratch
	}
	dst = append(dst, "event: "...)
	dst = append(dst, typ...)
	dst = append(dst, "\ndata: "...)
	dst = dialect.AppendOneLine(dst, data)
	return append(dst, "\n\n"...), kind
}

// RewriteResponse checks a non-stream Responses body and appends it with `model` echoed as
// requestedModel, returning the reported usage (ok=false when none). A body that is not a JSON
// object, has no `output` array, has a non-null `error`, or a status of failed, is an
// upstream_error: it fails over, and a 200 that answers nothing never reaches the caller.
func RewriteResponse(dst, body []byte, requestedModel string) ([]byte, dialect.Usage, bool, error) {
	var u dialect.Usage
	if dialect.TooDeep(body) {
		return dst, u, false, dialect.ResponseTooDeep()
	}
	if !dialect.Valid(body) {
		return dst, u, false, errNoAnswer
	}
	root := gjson.Parse(dialect.View(body))
	if !root.IsObject() || !root.Get("output").IsArray() || root.Get("status").Str == "failed" {
		return dst, u, false, errNoAnswer
	}
	if e := root.Get("error"); e.Exists() && e.Type != gjson.Null {
		return dst, u, false, errNoAnswer
	}
	us := root.Get("usage")
	ok := us.IsObject()
	if ok {
		u = readUsage(us)
	}
	if bytes.Contains(body, webSearchCall) {
		u.WebSearchRequests = webSearches(root.Get("output"))
	}
	return dialect.AppendModel(dst, body, root.Get("model"), requestedModel), u, ok, nil
}

var errNoAnswer = &failure.Error{Class: failure.UpstreamError, Msg: "the provider's response answers nothing", UpstreamStatus: 200}

// readUsage reads a Responses usage object: input_tokens (cached ones included, as
// input_tokens_details.cached_tokens), output_tokens (reasoning ones included, as
// output_tokens_details.reasoning_tokens). Input is reported net of cache reads.
func readUsage(u gjson.Result) dialect.Usage {
	in, cached := u.Get("input_tokens").Int(), u.Get("input_tokens_details.cached_tokens").Int()
	return dialect.Usage{Input: max(in-cached, 0), Cached: cached, Output: u.Get("output_tokens").Int(),
		Reasoning: u.Get("output_tokens_details.reasoning_tokens").Int()}
}

// webSearchCall is the output item type of a web search the provider ran; a body without it
// (almost every one) is not walked for items.
var webSearchCall = []byte(`"web_search_call"`)

// webSearches counts the billed web searches of a Responses output array (docs/pricing.md
// "Server-tool calls"): its web_search_call items whose action is a search, or that carry no
// action (the shape before actions were reported); open_page and find_in_page actions are not
// billed per call. Anything but an array counts 0. The count is bounded by the items, which
// the response's size limit bounds.
func webSearches(output gjson.Result) int64 {
	var n int64
	output.ForEach(func(_, item gjson.Result) bool { // nothing unless an array
		if !item.IsObject() {
			return true
		}
		var typ, action gjson.Result
		item.ForEach(func(k, v gjson.Result) bool {
			switch k.Str {
			case "type":
				dialect.KeepFirst(&typ, v)
			case "action":
				dialect.KeepFirst(&action, v)
			}
			return true
		})
		if typ.Raw != `"web_search_call"` { // as written: the same bytes the gate looked for
			return true
		}
		if a := action.Get("type"); !action.IsObject() || !a.Exists() || a.Str == "search" {
			n++
		}
		return true
	})
	return n
}
