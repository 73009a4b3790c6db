package openai

import (
	"strings"

	"github.com/tidwall/gjson"

	"github.com/switchyard-gw/switchyard/internal/dialect"
	"github.com/switchyard-gw/switchyard/internal/failure"
	"github.com/switchyard-gw/switchyard/internal/sse"
)

// ParseRequest reads the fields routing needs from a chat-completions body without decoding it
// (R-DIALECT-3). Errors are *failure.Error of class invalid_request naming the field:
// a body that is not a JSON object, a missing or non-string `model`, a non-boolean `stream`,
// a non-integer `n` or `n` > 1 (R-MODEL-7), a non-array `messages`.
func ParseRequest(body []byte) (dialect.RequestInfo, error) {
	var info dialect.RequestInfo
	var m, msgs, stream, n, so, maxc, maxt gjson.Result
	if err := dialect.ScanBody(body, func(k string, v gjson.Result) {
		switch k {
		case "model":
			m = v
		case "messages":
			msgs = v
		case "stream":
			stream = v
		case "n":
			n = v
		case "stream_options":
			so = v
		case "max_completion_tokens":
			maxc = v
		case "max_tokens":
			maxt = v
		}
	}); err != nil {
		return info, err
	}
	if m.Type != gjson.String || m.Str == "" {
		return info, &failure.Error{Class: failure.InvalidRequest, Param: "model", Msg: "`model` is required and must be a non-empty string"}
	}
	info.Model = strings.Clone(m.Str) // m.Str aliases the body
	info.ModelStart, info.ModelEnd = m.Index, m.Index+len(m.Raw)
	if !msgs.IsArray() {
		return info, &failure.Error{Class: failure.InvalidRequest, Param: "messages", Msg: "`messages` is required and must be an array"}
	}
	switch stream.Type {
	case gjson.Null, gjson.False:
	case gjson.True:
		info.Stream = true
	default:
		return info, &failure.Error{Class: failure.InvalidRequest, Param: "stream", Msg: "`stream` must be a boolean"}
	}
	if n.Exists() && n.Type != gjson.Null {
		if n.Type != gjson.Number || n.Num != float64(int64(n.Num)) || n.Num < 1 {
			return info, &failure.Error{Class: failure.InvalidRequest, Param: "n", Msg: "`n` must be a positive integer"}
		}
		if n.Num > 1 {
			return info, &failure.Error{Class: failure.InvalidRequest, Param: "n", Msg: "`n` > 1 is not supported: every response has a single choice"}
		}
	}
	if so.Exists() && so.Type != gjson.Null {
		if !so.IsObject() {
			return info, &failure.Error{Class: failure.InvalidRequest, Param: "stream_options", Msg: "`stream_options` must be an object"}
		}
		info.IncludeUsage = so.Get("include_usage").Type == gjson.True
	}
	for _, c := range [...]struct {
		k string
		v gjson.Result
	}{{"max_completion_tokens", maxc}, {"max_tokens", maxt}} {
		if c.v.Exists() && c.v.Type != gjson.Null {
			if c.v.Type != gjson.Number || c.v.Num < 0 || c.v.Num != float64(int64(c.v.Num)) || c.v.Num > 1e15 {
				return info, &failure.Error{Class: failure.InvalidRequest, Param: c.k, Msg: "`" + c.k + "` must be an integer from 0 to 10^15"}
			}
			info.MaxTokens = int64(c.v.Num)
			break
		}
	}
	// Last: a body with another fault is refused for that one, as the API would.
	if dialect.EmptyArray(msgs) { // the OpenAI API's own answer to an empty list
		return info, &failure.Error{Class: failure.InvalidRequest, Param: "messages", Msg: "[] is too short - 'messages'"}
	}
	return info, nil
}

// AppendUpstreamBody appends the body sent upstream: the caller's body with `model` replaced by
// upstreamModel and, on a stream, `stream_options.include_usage` forced on so that usage is
// always reported for billing (wire.md §8.1). Every other byte is the caller's.
func AppendUpstreamBody(dst, body []byte, info *dialect.RequestInfo, upstreamModel string) []byte {
	if !info.Stream || info.IncludeUsage {
		return dialect.SpliceString(dst, body, info.ModelStart, info.ModelEnd, upstreamModel)
	}
	so := dialect.Get(body, "stream_options")
	if !so.Exists() || so.Type == gjson.Null {
		// Insert the member right after the opening brace; the model splice comes later in the body.
		open := 0
		for open < len(body) && body[open] != '{' {
			open++
		}
		dst = append(dst, body[:open+1]...)
		dst = append(dst, `"stream_options":{"include_usage":true},`...)
		return dialect.SpliceString(dst, body[open+1:], info.ModelStart-open-1, info.ModelEnd-open-1, upstreamModel)
	}
	// stream_options present without include_usage: rare; rebuild the object member.
	start, end := so.Index, so.Index+len(so.Raw)
	obj := so.Raw
	inner := obj[1 : len(obj)-1]
	iu := so.Get("include_usage")
	var member []byte
	if iu.Exists() { // iu.Index is absolute in body, like so.Index
		rel := iu.Index - so.Index
		member = append(member, obj[:rel]...)
		member = append(member, "true"...)
		member = append(member, obj[rel+len(iu.Raw):]...)
	} else {
		member = append(member, `{"include_usage":true`...)
		if len(trimSpace(inner)) > 0 {
			member = append(member, ',')
			member = append(member, inner...)
		}
		member = append(member, '}')
	}
	// Splice model and stream_options in body order.
	if info.ModelStart < start {
		dst = dialect.SpliceString(dst, body[:start], info.ModelStart, info.ModelEnd, upstreamModel)
		dst = append(dst, member...)
		return append(dst, body[end:]...)
	}
	dst = append(dst, body[:start]...)
	dst = append(dst, member...)
	return dialect.SpliceString(dst, body[end:], info.ModelStart-end, info.ModelEnd-end, upstreamModel)
}

func trimSpace(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\n' || s[0] == '\t' || s[0] == '\r') {
		s = s[1:]
	}
	return s
}

// ScanFrame classifies one upstream chat-completions stream event and, for frames to forward,
// appends the re-framed event (model echoed as st.RequestedModel) to dst (R-FAIL-2, R-MODEL-6).
// Usage reports update st.Usage (the latest wins) and never commit on their own; a usage-only
// chunk is forwarded only when the caller asked (FrameDrop otherwise). A finish_reason sets
// st.Finished. FrameError frames are not appended: the caller gets the gateway's own error; data
// nested deeper than dialect.MaxDepth is a FrameError too (a provider failure).
func ScanFrame(dst []byte, ev sse.Event, st *dialect.StreamState) ([]byte, dialect.FrameKind) {
	data := ev.Data
	if len(data) == 6 && string(data) == "[DONE]" {
		return append(dst, "data: [DONE]\n\n"...), dialect.FrameDone
	}
	if dialect.TooDeep(data) {
		return dst, dialect.FrameError // NormalizeStreamError names the depth limit
	}
	// One pass over the top-level members; each value is then read in place.
	var model, usage, choices gjson.Result
	isError := false
	gjson.Parse(dialect.View(data)).ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "model":
			model = v
		case "usage":
			usage = v
		case "choices":
			choices = v
		case "error":
			isError = true
			return false
		}
		return true
	})
	if isError {
		return dst, dialect.FrameError
	}
	kind := dialect.FrameLifecycle
	first := choices.Get("0")
	if usage.IsObject() {
		// The latest report wins; a report alone never commits (providers that report usage
		// on every chunk would otherwise commit on their role-only first chunk).
		readUsage(usage, &st.Usage)
		st.UsageSeen = true
		if !st.IncludeUsage && !first.Exists() {
			return dst, dialect.FrameDrop
		}
	}
	if choices.IsArray() && first.Exists() {
		semantic, finished, reason := scanChoice(first)
		if semantic {
			kind = dialect.FrameSemantic
		}
		if finished && !st.Finished {
			st.Finished, st.FinishReason = true, dialect.InternFinishReason(reason)
		}
	}
	if model.Type != gjson.String || model.Index <= 0 || model.Str == st.RequestedModel {
		return appendData(dst, data), kind
	}
	st.Scratch = dialect.SpliceString(st.Scratch[:0], data, model.Index, model.Index+len(model.Raw), st.RequestedModel)
	return appendData(dst, st.Scratch), kind
}

// scanChoice reports whether a chunk's first choice carries output or a finish reason
// (semantic), and whether it carries the finish reason (finished).
func scanChoice(c gjson.Result) (semantic, finished bool, reason string) {
	c.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "finish_reason":
			if v.Type != gjson.Null {
				semantic, finished = true, true
				if v.Type == gjson.String {
					reason = v.Str
				}
			}
		case "delta":
			if !semantic {
				semantic = v.IsObject() && deltaIsSemantic(v)
			}
		}
		return !finished
	})
	return semantic, finished, reason
}

// deltaIsSemantic reports whether a chunk delta carries output (text, reasoning, a tool call or
// a refusal); a role-only or empty delta does not.
func deltaIsSemantic(d gjson.Result) bool {
	semantic := false
	d.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "role", "obfuscation":
			return true
		case "content", "refusal", "reasoning", "reasoning_content":
			if v.Type == gjson.String && v.Str != "" {
				semantic = true
			}
		case "tool_calls", "function_call", "audio":
			if v.Type != gjson.Null {
				semantic = true
			}
		}
		return !semantic
	})
	return semantic
}

func appendData(dst, data []byte) []byte {
	dst = append(dst, "data: "...)
	dst = dialect.AppendOneLine(dst, data)
	return append(dst, '\n', '\n')
}

// readUsage converts an OpenAI usage object into the canonical additive form, in one pass over
// its members (a repeated member counts once, its first value, as a path lookup reads it).
func readUsage(u gjson.Result, out *dialect.Usage) {
	var prompt, completion, pd, cd, cached, write, reasoning gjson.Result
	u.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "prompt_tokens":
			dialect.KeepFirst(&prompt, v)
		case "completion_tokens":
			dialect.KeepFirst(&completion, v)
		case "prompt_tokens_details":
			dialect.KeepFirst(&pd, v)
		case "completion_tokens_details":
			dialect.KeepFirst(&cd, v)
		}
		return true
	})
	pd.ForEach(func(k, v gjson.Result) bool { // nothing unless an object
		switch k.Str {
		case "cached_tokens":
			dialect.KeepFirst(&cached, v)
		case "cache_write_tokens":
			dialect.KeepFirst(&write, v)
		}
		return true
	})
	cd.ForEach(func(k, v gjson.Result) bool {
		if k.Str == "reasoning_tokens" {
			dialect.KeepFirst(&reasoning, v)
		}
		return true
	})
	in := prompt.Int() - cached.Int() - write.Int()
	if in < 0 {
		in = 0
	}
	*out = dialect.Usage{
		Input: in, Cached: cached.Int(), CacheWrite: write.Int(),
		Output:    completion.Int(),
		Reasoning: reasoning.Int(),
	}
}

// RewriteResponse checks a non-stream chat.completion body, appends it to dst with `model`
// echoed as requestedModel, and returns the reported usage (ok=false when the body has none).
// A body that is not a JSON object, or one without a non-empty `choices` array (an `error`
// object, `{}`), is an upstream_error: it fails over, nothing was sent yet, and a 200 that
// answers nothing never reaches the caller as a success.
func RewriteResponse(dst, body []byte, requestedModel string) ([]byte, dialect.Usage, bool, error) {
	return rewriteAnswer(dst, body, requestedModel, "choices")
}

// RewriteEmbeddingsResponse is RewriteResponse for a POST /v1/embeddings answer: it must hold a
// non-empty `data` array.
func RewriteEmbeddingsResponse(dst, body []byte, requestedModel string) ([]byte, dialect.Usage, bool, error) {
	return rewriteAnswer(dst, body, requestedModel, "data")
}

// rewriteAnswer checks that body is a JSON object whose member answer is a non-empty array and
// has no top-level `error` member, then echoes the model and reads the usage.
func rewriteAnswer(dst, body []byte, requestedModel, answer string) ([]byte, dialect.Usage, bool, error) {
	var u dialect.Usage
	a, err := dialect.ScanAnswer(body, answer, false) // depth, validity and the answer in one pass
	if err != nil {
		return dst, u, false, err
	}
	ok := a.Usage.IsObject()
	if ok {
		readUsage(a.Usage, &u)
	}
	return dialect.AppendModel(dst, body, a.Model, requestedModel), u, ok, nil
}
