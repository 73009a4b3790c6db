package dialect

import (
	"bytes"
	"strconv"
	"strings"
	"unsafe"

	"github.com/switchyard-gw/switchyard/internal/failure"

	"github.com/tidwall/gjson"
)

// RequestInfo is what the gateway reads from a same-dialect request body without decoding it
// (R-DIALECT-3): the few fields routing and the commit gate need. The body itself is forwarded
// with only `model` (and, on OpenAI streams, `stream_options.include_usage`) rewritten.
type RequestInfo struct {
	// Model is the caller's model string, as sent.
	Model string
	// Stream is the request's `stream` flag.
	Stream bool
	// IncludeUsage is OpenAI's `stream_options.include_usage` as the caller sent it: the usage
	// chunk reaches the caller only when it asked (usage is always requested upstream).
	IncludeUsage bool
	// MaxTokens is the request's output cap in tokens (max_tokens / max_completion_tokens), 0 when absent.
	MaxTokens int64
	// ModelStart and ModelEnd are the byte offsets of the `model` JSON string value (quotes
	// included) in the body, for the splice that rewrites it.
	ModelStart, ModelEnd int
	// Images is the number of images an images request asks for (its `n`, default 1); 0 on
	// every other surface.
	Images int
}

// FrameKind classifies one upstream stream event for the commit gate (R-FAIL-2).
type FrameKind uint8

// The frame kinds.
const (
	// FrameLifecycle frames (OpenAI's role-only chunk, Anthropic message_start, ping, an empty
	// content_block_start, keep-alives) are held before commit and never commit by themselves.
	FrameLifecycle FrameKind = iota
	// FrameSemantic frames carry output: a text, reasoning or tool-call delta, a refusal or a
	// finish reason. The first one commits the attempt. A usage report alone is not semantic:
	// some providers report usage on every chunk (R-FAIL-2's final usage report commits through
	// the finish it follows, or the end of stream after it).
	FrameSemantic
	// FrameDone is the dialect's normal end of stream (`data: [DONE]`, `message_stop`).
	FrameDone
	// FrameError is an in-stream error event; the relay normalizes it and never forwards it.
	FrameError
	// FrameDrop is consumed but not forwarded (a usage chunk the caller did not ask for).
	FrameDrop
)

// StreamState is the per-attempt state of a same-dialect stream scan: the caller's model id
// echoed in every frame, and the usage the provider reported so far.
type StreamState struct {
	// RequestedModel is echoed in place of the provider's model id (R-MODEL-6).
	RequestedModel string
	// IncludeUsage forwards OpenAI usage chunks (the caller asked for them).
	IncludeUsage bool
	// Usage is the provider-reported usage seen so far (the latest report); UsageSeen says
	// whether any was reported.
	Usage     Usage
	UsageSeen bool
	// Finished says the provider sent its finish (an OpenAI finish_reason, an Anthropic
	// message_delta with a stop_reason): a clean end of stream after it is a complete answer,
	// not a truncation, even without the terminal frame ([DONE], message_stop).
	Finished bool
	// FinishReason is the provider's finish reason as sent (an OpenAI finish_reason, an
	// Anthropic stop_reason), interned by InternFinishReason; "" until the finish. It feeds the
	// attempt span's gen_ai.response.finish_reasons (docs/observability.md).
	FinishReason string
	// Scratch is reused between frames to build rewritten data without allocating.
	Scratch []byte
}

// Reset prepares st for a new attempt, keeping its scratch buffer.
func (st *StreamState) Reset(requestedModel string, includeUsage bool) {
	*st = StreamState{RequestedModel: requestedModel, IncludeUsage: includeUsage, Scratch: st.Scratch[:0]}
}

// maxFinishReason bounds a finish reason kept from a provider (bytes): a longer one is cut.
const maxFinishReason = 32

// InternFinishReason returns s as a string that may be kept past the frame it was read from:
// a constant for the finish and stop reasons the OpenAI and Anthropic APIs document (no
// allocation), otherwise a copy of at most 32 bytes of s (s may be a View of a reused buffer).
func InternFinishReason(s string) string {
	switch s {
	case "":
		return ""
	case "stop":
		return "stop"
	case "length":
		return "length"
	case "tool_calls":
		return "tool_calls"
	case "content_filter":
		return "content_filter"
	case "function_call":
		return "function_call"
	case "end_turn":
		return "end_turn"
	case "max_tokens":
		return "max_tokens"
	case "stop_sequence":
		return "stop_sequence"
	case "tool_use":
		return "tool_use"
	case "pause_turn":
		return "pause_turn"
	case "refusal":
		return "refusal"
	case "model_context_window_exceeded":
		return "model_context_window_exceeded"
	}
	if len(s) > maxFinishReason {
		s = s[:maxFinishReason]
	}
	return strings.Clone(s)
}

// View returns b as a string without copying. The string must not outlive b or be retained:
// it serves gjson lookups whose results are used at once.
func View(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// Get looks path up in json without copying (see View).
func Get(json []byte, path string) gjson.Result { return gjson.Get(View(json), path) }

// SpliceString appends json with the raw value at [start,end) replaced by the JSON string s.
func SpliceString(dst, json []byte, start, end int, s string) []byte {
	dst = append(dst, json[:start]...)
	dst = AppendJSONString(dst, s)
	return append(dst, json[end:]...)
}

// EmptyArray reports whether a, a JSON array, has no element ("[]", "[ ]"): one look at its raw
// text, no parse.
func EmptyArray(a gjson.Result) bool {
	return len(a.Raw) >= 2 && strings.TrimSpace(a.Raw[1:len(a.Raw)-1]) == ""
}

// AppendWithModel appends json with the string value at path replaced by model, when present
// and different; otherwise json unchanged. Used to echo the caller's model id (R-MODEL-6).
func AppendWithModel(dst, json []byte, path, model string) []byte {
	return AppendModel(dst, json, Get(json, path), model)
}

// AppendOneLine appends data with every line break (LF or CR, both end an SSE line) replaced by
// a space, so that a JSON payload that arrived split over several `data:` lines is forwarded as
// one line and no byte of it can start a new SSE line at the caller. Outside strings a line
// break is JSON whitespace, and inside strings it cannot occur raw, so JSON is unchanged.
func AppendOneLine(dst, data []byte) []byte {
	if bytes.IndexByte(data, '\n') < 0 && bytes.IndexByte(data, '\r') < 0 {
		return append(dst, data...)
	}
	n := len(dst)
	dst = append(dst, data...)
	for i, c := range dst[n:] {
		if c == '\n' || c == '\r' {
			dst[n+i] = ' '
		}
	}
	return dst
}

// ScanObject calls visit for every member of the JSON object obj, in one pass, and returns the
// first member name that appears twice ("" when none). A body with duplicate keys is refused by
// the callers: the gateway routes on the first `model` while a provider may read the last, so
// duplicates would let a caller reach a model it was not routed to.
func ScanObject(obj gjson.Result, visit func(key string, v gjson.Result)) (dup string) {
	var seen [48]string
	n := 0
	var extra map[string]struct{}
	obj.ForEach(func(k, v gjson.Result) bool {
		for i := 0; i < n; i++ {
			if seen[i] == k.Str {
				dup = k.Str
				return false
			}
		}
		if n < len(seen) {
			seen[n] = k.Str
			n++
		} else {
			if extra == nil {
				extra = make(map[string]struct{})
			}
			if _, ok := extra[k.Str]; ok {
				dup = k.Str
				return false
			}
			extra[k.Str] = struct{}{}
		}
		visit(k.Str, v)
		return true
	})
	return dup
}

// ScanBody checks that body is one JSON object nested at most MaxDepth levels with no duplicate
// member names, calling visit for each member in one pass. Errors are *failure.Error
// invalid_request (the body is nested too deep, is not JSON, not an object, or repeats a key, which would let a caller route on one `model` and be served
// another).
func ScanBody(body []byte, visit func(key string, v gjson.Result)) error {
	if err := CheckRequestJSON(body); err != nil {
		return err
	}
	root := gjson.Parse(View(body))
	if !root.IsObject() {
		return &failure.Error{Class: failure.InvalidRequest, Msg: "the request body must be a JSON object"}
	}
	if dup := ScanObject(root, visit); dup != "" {
		return &failure.Error{Class: failure.InvalidRequest, Param: dup, Msg: "the request body has the key " + strconv.Quote(dup) + " more than once"}
	}
	return nil
}

// Meaningful reports whether a field that cannot be carried was set to something that asks for
// behaviour: null, false, 0, "" and empty containers are the defaults and are not reported as
// dropped.
func Meaningful(v gjson.Result) bool {
	switch v.Type {
	case gjson.Null, gjson.False:
		return false
	case gjson.Number:
		return v.Num != 0
	case gjson.String:
		return v.Str != ""
	case gjson.JSON:
		any := false
		v.ForEach(func(_, _ gjson.Result) bool { any = true; return false })
		return any
	}
	return v.Exists()
}

// AppendModel appends json with model, the member a ScanAnswer (or a path lookup) found in it,
// replaced by the string s when it is a string that differs; otherwise json unchanged. It
// echoes the caller's model id (R-MODEL-6) without looking the member up again.
func AppendModel(dst, json []byte, model gjson.Result, s string) []byte {
	if model.Type != gjson.String || model.Index <= 0 || model.Str == s {
		return append(dst, json...)
	}
	return SpliceString(dst, json, model.Index, model.Index+len(model.Raw), s)
}
