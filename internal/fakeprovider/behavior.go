package fakeprovider

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// Kind names what a Behavior makes the provider do. The string values are the `kind` of the
// control API (POST /_fake/script) and are part of the user-facing contract
// (docs/fake-provider.md).
type Kind string

// The behaviors the provider can emulate. "stream:" kinds act on streaming requests; on a
// non-streaming request they fall back as documented on each constant.
const (
	// KindOK is a normal answer, streamed or not per the request's "stream" field.
	KindOK Kind = ""
	// KindStatus is an error status (Behavior.Status, default 500) with that dialect's real error
	// body for it, and Retry-After when Behavior.RetryAfter > 0.
	KindStatus Kind = "status"
	// KindReset closes the connection before sending headers (hijack, SO_LINGER 0, close: the
	// caller sees a connection reset). On HTTP/2 the stream is reset instead.
	KindReset Kind = "reset"
	// KindHang never sends headers; the handler returns when the request context ends.
	KindHang Kind = "hang"
	// KindHeadersHang sends 200 with event-stream headers (flushed), then hangs until the request
	// context ends.
	KindHeadersHang Kind = "headers_hang"
	// KindPreambleError (stream) sends the lifecycle preamble (OpenAI: the role-only chunk;
	// Anthropic: message_start, content_block_start, ping) then an in-stream overload error event,
	// before any content delta. On a non-streaming request it answers the overload status
	// (OpenAI 503 server_error, Anthropic 529 overloaded_error).
	KindPreambleError Kind = "preamble_error"
	// KindCut (stream) sends the preamble and Behavior.After content deltas, then drops the
	// connection abruptly with no terminal frame (the caller's read fails with an unexpected EOF).
	// On a non-streaming request it sends the headers and half of the body, then drops.
	KindCut Kind = "cut"
	// KindTruncate (stream) sends the preamble and Behavior.After content deltas, then ends the
	// response cleanly with no terminal frame ([DONE] / message_stop never comes), which no SDK
	// reports as an error. On a non-streaming request it behaves like KindCut.
	KindTruncate Kind = "truncate"
	// KindStreamError (stream) sends the preamble and Behavior.After content deltas, then an
	// in-stream error event (OpenAI data: {"error":...} server_error; Anthropic event: error
	// api_error) and ends the response. On a non-streaming request it answers 500.
	KindStreamError Kind = "stream_error"
	// KindContentPolicy is the dialect's content-policy refusal: OpenAI 400 invalid_request_error
	// code content_policy_violation; Anthropic 400 invalid_request_error "Output blocked by
	// content filtering policy".
	KindContentPolicy Kind = "content_policy"
	// KindContextOverflow is the dialect's context overflow: OpenAI 400 code
	// context_length_exceeded; Anthropic 400 "prompt is too long: N tokens > 200000 maximum".
	KindContextOverflow Kind = "context_overflow"
	// KindSlowHeaders waits Behavior.Delay (or until the request context ends), then answers
	// normally with no gap between deltas.
	KindSlowHeaders Kind = "slow_headers"
	// KindGarbage answers 200 with a body that is not JSON (non-stream), or event-stream headers
	// and one line that is not a valid event (stream), then ends the response.
	KindGarbage Kind = "garbage"
	// KindHTML502 answers 502 with an HTML page body, as a proxy in front of a provider does.
	KindHTML502 Kind = "html_502"
)

// kinds lists every Kind, in documentation order; used for validation and error messages.
var kinds = []Kind{KindOK, KindStatus, KindReset, KindHang, KindHeadersHang, KindPreambleError,
	KindCut, KindTruncate, KindStreamError, KindContentPolicy, KindContextOverflow,
	KindSlowHeaders, KindGarbage, KindHTML502, KindPingOnly, KindNoDone}

// valid reports whether k is a known Kind.
func (k Kind) valid() bool {
	for _, v := range kinds {
		if k == v {
			return true
		}
	}
	return false
}

// Behavior is what the provider does with one model request. The zero value is a normal
// successful answer: the text "Hello from <name>." in 3 deltas.
type Behavior struct {
	// Kind selects the behavior; zero is KindOK.
	Kind Kind
	// Status is the HTTP status of KindStatus (100-599; zero means 500). The body is the
	// dialect's real error body for that status.
	Status int
	// ErrorType, ErrorCode and Message override the fields of the error body (OpenAI
	// error.type/code/message; Anthropic error.type/message and error.details.error_code) of
	// every error this behavior produces, in-stream errors included. Empty keeps the default.
	ErrorType, ErrorCode, Message string
	// RetryAfter, in seconds, sets the Retry-After header on error statuses when > 0.
	RetryAfter int
	// After is, for KindCut, KindTruncate and KindStreamError, the number of content deltas (text
	// pieces or tool-argument fragments) sent before the failure; it is capped at the answer's
	// number of deltas. Zero fails right after the preamble.
	After int
	// Delay is, for KindSlowHeaders, the wait before the headers. For the other answering kinds
	// it is the wait before each content delta of a stream, or before the headers of a
	// non-streaming answer. Zero means no wait.
	Delay time.Duration
	// Text is the answer text; empty means "Hello from <name>.".
	Text string
	// Deltas is the number of pieces the text (or each tool call's arguments) is split into;
	// zero or negative means 3. It is capped at the length of the text in characters.
	Deltas int
	// ToolCall answers with a call to the request's first tool (arguments are valid JSON built
	// from its schema) instead of text.
	ToolCall bool
	// ParallelToolCalls answers with N tool calls (cycling through the request's tools) instead
	// of text; it implies ToolCall when > 0.
	ParallelToolCalls int
	// BigArgumentBytes, when > 0, makes each tool call's arguments about this many bytes long and
	// sends them as one single delta (e.g. 200<<10 to test long SSE lines). It implies ToolCall.
	BigArgumentBytes int
	// CachedTokens is the number of prompt tokens reported as cache reads (OpenAI
	// prompt_tokens_details.cached_tokens, Anthropic cache_read_input_tokens); it is capped at the
	// prompt tokens.
	CachedTokens int
	// Usage, when set, replaces the reported usage of a successful answer (both dialects,
	// streamed or not): prompt tokens are Input + CacheRead + CacheWrite, cache reads
	// CacheRead (OpenAI prompt_tokens_details.cached_tokens, Anthropic cache_read_input_tokens),
	// cache writes CacheWrite (Anthropic cache_creation_input_tokens, with cache_creation's
	// ephemeral_1h_input_tokens CacheWrite1h and ephemeral_5m_input_tokens the rest; OpenAI
	// reports none), output tokens Output, and Anthropic's server_tool_use.web_search_requests
	// WebSearchRequests (OpenAI chat reports none). CachedTokens is ignored then.
	Usage *ScriptedUsage
	// KeepAlive interleaves the SSE comment line ": keep-alive" between stream frames.
	KeepAlive bool
	// SplitWrites flushes each stream frame in two halves, split mid-line, so that events
	// straddle the caller's reads.
	SplitWrites bool
	// HostedToolCall (Responses API only) puts a completed web_search_call output item, a call
	// of a tool the provider runs itself, before the answer.
	HostedToolCall bool
}

// behaviorJSON is the wire form of Behavior in the control API: snake_case names and a Go
// duration string for delay.
type behaviorJSON struct {
	Kind              Kind           `json:"kind,omitempty"`
	Status            int            `json:"status,omitempty"`
	ErrorType         string         `json:"error_type,omitempty"`
	ErrorCode         string         `json:"error_code,omitempty"`
	Message           string         `json:"message,omitempty"`
	RetryAfter        int            `json:"retry_after,omitempty"`
	After             int            `json:"after,omitempty"`
	Delay             string         `json:"delay,omitempty"`
	Text              string         `json:"text,omitempty"`
	Deltas            int            `json:"deltas,omitempty"`
	ToolCall          bool           `json:"tool_call,omitempty"`
	ParallelToolCalls int            `json:"parallel_tool_calls,omitempty"`
	BigArgumentBytes  int            `json:"big_argument_bytes,omitempty"`
	CachedTokens      int            `json:"cached_tokens,omitempty"`
	Usage             *ScriptedUsage `json:"usage,omitempty"`
	KeepAlive         bool           `json:"keep_alive,omitempty"`
	SplitWrites       bool           `json:"split_writes,omitempty"`
	HostedToolCall    bool           `json:"hosted_tool_call,omitempty"`
}

// MarshalJSON encodes b in the control API form: snake_case field names, zero fields omitted,
// delay as a Go duration string ("1.5s").
func (b Behavior) MarshalJSON() ([]byte, error) {
	j := behaviorJSON{
		Kind: b.Kind, Status: b.Status, ErrorType: b.ErrorType, ErrorCode: b.ErrorCode,
		Message: b.Message, RetryAfter: b.RetryAfter, After: b.After, Text: b.Text,
		Deltas: b.Deltas, ToolCall: b.ToolCall, ParallelToolCalls: b.ParallelToolCalls,
		BigArgumentBytes: b.BigArgumentBytes, CachedTokens: b.CachedTokens, Usage: b.Usage,
		KeepAlive: b.KeepAlive, SplitWrites: b.SplitWrites, HostedToolCall: b.HostedToolCall,
	}
	if b.Delay != 0 {
		j.Delay = b.Delay.String()
	}
	return json.Marshal(j)
}

// UnmarshalJSON decodes the control API form of a Behavior. It rejects unknown field names, an
// unknown kind, a delay that is not a non-negative Go duration and a status outside 100-599.
func (b *Behavior) UnmarshalJSON(data []byte) error {
	var j behaviorJSON
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return fmt.Errorf("fakeprovider: behavior: %w", err)
	}
	var d time.Duration
	if j.Delay != "" {
		var err error
		if d, err = time.ParseDuration(j.Delay); err != nil || d < 0 {
			return fmt.Errorf("fakeprovider: behavior: delay %q is not a non-negative Go duration such as \"2s\"", j.Delay)
		}
	}
	nb := Behavior{
		Kind: j.Kind, Status: j.Status, ErrorType: j.ErrorType, ErrorCode: j.ErrorCode,
		Message: j.Message, RetryAfter: j.RetryAfter, After: j.After, Delay: d, Text: j.Text,
		Deltas: j.Deltas, ToolCall: j.ToolCall, ParallelToolCalls: j.ParallelToolCalls,
		BigArgumentBytes: j.BigArgumentBytes, CachedTokens: j.CachedTokens, Usage: j.Usage,
		KeepAlive: j.KeepAlive, SplitWrites: j.SplitWrites, HostedToolCall: j.HostedToolCall,
	}
	if err := nb.Validate(); err != nil {
		return err
	}
	*b = nb
	return nil
}

// Validate reports a Behavior the provider cannot carry out as scripted: an unknown Kind, a Status
// outside 100-599 (zero is allowed), or a negative count or duration. The provider itself never
// rejects a Behavior: an unknown Kind is answered with a 500 naming it.
func (b Behavior) Validate() error {
	if !b.Kind.valid() {
		return fmt.Errorf("fakeprovider: unknown behavior kind %q (known: %v)", b.Kind, kinds[1:])
	}
	if b.Status != 0 && (b.Status < 100 || b.Status > 599) {
		return fmt.Errorf("fakeprovider: behavior status %d is outside 100-599", b.Status)
	}
	if b.RetryAfter < 0 || b.After < 0 || b.Delay < 0 || b.Deltas < 0 || b.ParallelToolCalls < 0 ||
		b.BigArgumentBytes < 0 || b.CachedTokens < 0 || b.Usage.negative() {
		return fmt.Errorf("fakeprovider: behavior has a negative count or duration")
	}
	if b.BigArgumentBytes > MaxBigArgumentBytes || b.Deltas > MaxDeltas || b.ParallelToolCalls > MaxDeltas {
		return fmt.Errorf("fakeprovider: behavior asks for more than %d argument bytes or %d deltas or tool calls", MaxBigArgumentBytes, MaxDeltas)
	}
	return nil
}

// ScriptedUsage is the usage a successful answer reports (Behavior.Usage), in tokens.
type ScriptedUsage struct {
	Input        int `json:"input"` // uncached input
	CacheRead    int `json:"cache_read"`
	CacheWrite   int `json:"cache_write"`    // all cache writes, the one-hour ones included
	CacheWrite1h int `json:"cache_write_1h"` // the one-hour part of CacheWrite
	Output       int `json:"output"`
	// WebSearchRequests is the count of server-side web searches (Anthropic only:
	// usage.server_tool_use.web_search_requests, in the message and the stream's message_delta).
	WebSearchRequests int `json:"web_search_requests"`
}

func (u *ScriptedUsage) negative() bool {
	return u != nil && (u.Input < 0 || u.CacheRead < 0 || u.CacheWrite < 0 || u.CacheWrite1h < 0 ||
		u.CacheWrite1h > u.CacheWrite || u.Output < 0 || u.WebSearchRequests < 0)
}

// Caps on what one scripted answer may ask for, so that a script cannot exhaust memory.
const (
	MaxBigArgumentBytes = 16 << 20
	MaxDeltas           = 100000
)

// isToolAnswer reports whether b answers with tool calls instead of text.
func (b Behavior) isToolAnswer() bool {
	return b.ToolCall || b.ParallelToolCalls > 0 || b.BigArgumentBytes > 0
}
