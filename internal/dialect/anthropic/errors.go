package anthropic

import (
	"strconv"
	"time"

	"github.com/tidwall/gjson"

	"github.com/switchyard-gw/switchyard/internal/dialect"
	"github.com/switchyard-gw/switchyard/internal/failure"
)

// NormalizeError classifies an Anthropic-dialect upstream's non-2xx response into a canonical
// failure class, once (R-FAIL-5..7, R-ERR). Routing reads only the returned class.
//
// status is the HTTP status the provider answered with. header looks a response header up by
// name (pass resp.Header.Get; nil means no headers): `retry-after-ms` (milliseconds) takes
// precedence over `retry-after` (seconds or an HTTP-date). body is the response body as read,
// possibly truncated, empty, HTML or garbage: anything that is not an Anthropic error object
// is classified by status alone.
//
// The result is always a non-nil *failure.Error (returned as error) with: a fixed caller-safe
// Msg per class that never contains provider text (provider messages can echo prompt text or
// keys); UpstreamStatus = status; RetryAfter parsed but not clamped (zero when absent; values
// above 24 h saturate there); and a Cause for logs naming the status and the provider's error
// type and details.error_code, never its message.
//
// Rules, first match wins (content policy precedes every status rule, R-FAIL-6):
//   - a message about a content filtering, content or usage policy: content_policy (a refusal
//     on a 200 is stop_reason "refusal", not an error)
//   - a 400 about the gateway's account ("credit balance is too low", "reached your specified
//     API usage limits"): upstream_auth
//   - a message with "prompt is too long", "input is too long" or "exceed context limit":
//     context_overflow
//   - 529 or type overloaded_error: upstream_error
//   - 429 rate_limit_error (a spend-cap 429 without retry-after too): upstream_rate_limited
//   - 401, 402 billing_error, 403 (the gateway's own credentials): upstream_auth
//   - 404 not_found_error (provider-side model not found): upstream_error
//   - 413 request_too_large: request_too_large; 408, 504 timeout_error: upstream_timeout
//   - any other 4xx: invalid_request; 500 api_error, other 5xx and anything else: upstream_error
func NormalizeError(status int, header func(name string) string, body []byte) error {
	return normalizeErr(status, header, body, time.Now)
}

// NormalizeStreamError classifies the data of an in-stream `event: error`,
// `{"type":"error","error":{"type":"overloaded_error",...}}`, into a *failure.Error (returned as
// error, never nil). The error type stands in for the status in the rules of NormalizeError:
// overloaded_error and api_error are upstream_error, rate_limit_error upstream_rate_limited,
// invalid_request_error with context text context_overflow (with policy text content_policy),
// timeout_error upstream_timeout; unknown types, unparsable data and data nested deeper than
// dialect.MaxDepth are upstream_error.
// UpstreamStatus is 200, the status of the stream that carried the event.
func NormalizeStreamError(data []byte) error {
	if dialect.TooDeep(data) {
		fe := dialect.ResponseTooDeep()
		fe.UpstreamStatus = 200
		return fe
	}
	f := readErrFields(200, data)
	f.status = errStreamStatus(f.typ)
	n := classifyErr(f)
	n.c.stream = true
	n.fe.UpstreamStatus = 200
	return &n.fe
}

// AppendErrorBody appends the Anthropic-surface error body for fe (contract.md "Error bodies"):
//
//	{"type":"error","error":{"type":T,"message":M,"error_type":CLASS},"request_id":R}
//
// T is the native type of R-ERR for fe.Class (not_found_error for model_unavailable,
// request_too_large, rate_limit_error, overloaded_error for gateway_error, api_error for the
// upstream classes). M is fe.Msg, or the class's fixed message when fe.Msg is empty. A nil fe or
// an empty class encodes as upstream_error. dst is grown as needed and returned; nothing else is
// allocated.
func AppendErrorBody(dst []byte, fe *failure.Error, requestID string) []byte {
	class, msg := errBodyFields(fe)
	dst = append(dst, `{"type":"error","error":{"type":`...)
	dst = dialect.AppendJSONString(dst, nativeErrType(class))
	dst = append(dst, `,"message":`...)
	dst = dialect.AppendJSONString(dst, msg)
	dst = append(dst, `,"error_type":`...)
	dst = dialect.AppendJSONString(dst, string(class))
	dst = append(dst, `},"request_id":`...)
	dst = dialect.AppendJSONString(dst, requestID)
	return append(dst, '}')
}

// AppendStreamError appends one terminal in-stream error frame for a committed stream
// (R-FAIL-4): `event: error` and `data: ` + the AppendErrorBody JSON, then a blank line. The
// event name is what both Anthropic SDKs turn into an API error (wire.md §7.4); no
// message_stop follows. dst is grown as needed and returned.
func AppendStreamError(dst []byte, fe *failure.Error, requestID string) []byte {
	dst = append(dst, "event: error\ndata: "...)
	dst = AppendErrorBody(dst, fe, requestID)
	return append(dst, "\n\n"...)
}

// errFields are the parts of a provider error that classification reads. The strings are views
// into one copy of the body; msg is matched, never copied out.
type errFields struct {
	status    int
	typ, code string // error.type, error.details.error_code
	msg       string
	hasJSON   bool // the body carried an error object
}

// normalizedErr is a *failure.Error, its log cause and the fields it was classified from, in
// one allocation.
type normalizedErr struct {
	fe failure.Error
	c  errCause
	f  errFields
}

// errCause is the log-only description of a provider error: its status and error type/code
// tokens, never its message.
type errCause struct {
	stream    bool
	status    int
	typ, code string
}

func (c *errCause) Error() string {
	b := make([]byte, 0, 96)
	b = append(b, "anthropic upstream "...)
	if c.stream {
		b = append(b, "stream error"...)
	} else {
		b = append(b, "status "...)
		b = strconv.AppendInt(b, int64(c.status), 10)
	}
	b = dialect.AppendErrToken(b, " type=", c.typ)
	b = dialect.AppendErrToken(b, " error_code=", c.code)
	return string(b)
}

func normalizeErr(status int, header func(string) string, body []byte, now func() time.Time) error {
	n := classifyErr(readErrFields(status, body))
	n.fe.RetryAfter = dialect.ParseRetryAfter(header, now)
	return &n.fe
}

// readErrFields extracts the error object of body: {"type":"error","error":{...}}, or a bare
// {"type","message"} as some proxies send it. Anything else leaves every field empty.
func readErrFields(status int, body []byte) errFields {
	f := errFields{status: status}
	if !dialect.IsJSONObjectStart(body) || dialect.TooDeep(body) { // too deep: read as not JSON
		return f
	}
	s := string(body) // one copy; every field below is a view into it
	e := gjson.Get(s, "error")
	if !e.IsObject() {
		e = gjson.Parse(s)
		if !e.Get("message").Exists() {
			return f
		}
	}
	f.hasJSON = true
	e.ForEach(func(k, v gjson.Result) bool { // one pass over the error object
		switch k.Str {
		case "type":
			f.typ = errToken(v)
		case "details":
			f.code = errToken(v.Get("error_code"))
		case "message":
			if v.Type == gjson.String {
				f.msg = v.Str
			}
		}
		return true
	})
	return f
}

// errToken returns r as an identifier (letters, digits, _ . - :; at most 64 bytes) or "".
// Provider type and code strings pass through it before reaching logs.
func errToken(r gjson.Result) string {
	var s string
	switch r.Type {
	case gjson.String:
		s = r.Str
	case gjson.Number:
		s = r.Raw
	default:
		return ""
	}
	if len(s) == 0 || len(s) > 64 {
		return ""
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '_' || c == '.' || c == '-' || c == ':') {
			return ""
		}
	}
	return s
}

// errRule maps one upstream error shape to a class. errRules is read in order; the first match
// wins.
type errRule struct {
	class failure.Class
	match func(f *errFields) bool
}

var errRules = [...]errRule{
	{failure.ContentPolicy, func(f *errFields) bool { // R-FAIL-6: before every status rule
		return errContainsAny(f.msg, "content filtering policy", "content policy", "usage policy")
	}},
	{failure.UpstreamAuth, func(f *errFields) bool { // the gateway's balance or spend limit
		return f.status == 400 && errContainsAny(f.msg, "credit balance is too low", "specified api usage limits")
	}},
	{failure.ContextOverflow, func(f *errFields) bool {
		return errContainsAny(f.msg, "prompt is too long", "input is too long", "exceed context limit")
	}},
	{failure.UpstreamError, func(f *errFields) bool { return f.status == 529 || f.typ == "overloaded_error" }},
	{failure.UpstreamRateLimited, func(f *errFields) bool { return f.status == 429 }},
	{failure.UpstreamAuth, func(f *errFields) bool { return f.status == 401 || f.status == 402 || f.status == 403 }},
	{failure.UpstreamError, func(f *errFields) bool { return f.status == 404 }},
	{failure.RequestTooLarge, func(f *errFields) bool { return f.status == 413 }},
	{failure.UpstreamTimeout, func(f *errFields) bool { return f.status == 408 || f.status == 504 }},
	{failure.InvalidRequest, func(f *errFields) bool { return f.status >= 400 && f.status < 500 }},
}

func classifyErr(f errFields) *normalizedErr {
	// f is matched inside n, which is on the heap anyway: the rules' indirect calls would
	// otherwise move a second copy there.
	n := &normalizedErr{f: f}
	class := failure.UpstreamError
	for i := range errRules {
		if errRules[i].match(&n.f) {
			class = errRules[i].class
			break
		}
	}
	n.fe = failure.Error{Class: class, Msg: dialect.UpstreamErrMessage(class), UpstreamStatus: f.status}
	n.c = errCause{status: f.status, typ: f.typ, code: f.code}
	n.fe.Cause = &n.c
	return n
}

// errStreamStatus gives an in-stream error the HTTP status its type has on a response
// (wire.md §4.6), so that one rule table serves both paths.
func errStreamStatus(typ string) int {
	switch typ {
	case "invalid_request_error":
		return 400
	case "authentication_error":
		return 401
	case "billing_error":
		return 402
	case "permission_error":
		return 403
	case "not_found_error":
		return 404
	case "request_too_large":
		return 413
	case "rate_limit_error":
		return 429
	case "timeout_error":
		return 504
	case "overloaded_error":
		return 529
	}
	return 500 // api_error, unknown types, unparsable data
}

// nativeErrType is the Anthropic-surface error type of a class (R-ERR).
func nativeErrType(c failure.Class) string {
	switch c {
	case failure.InvalidRequest, failure.ContextOverflow, failure.ContentPolicy, failure.InsufficientCredit:
		return "invalid_request_error"
	case failure.Authentication:
		return "authentication_error"
	case failure.Permission:
		return "permission_error"
	case failure.ModelUnavailable:
		return "not_found_error"
	case failure.RequestTooLarge:
		return "request_too_large"
	case failure.RateLimited, failure.UpstreamRateLimited:
		return "rate_limit_error"
	case failure.GatewayError:
		return "overloaded_error"
	}
	return "api_error" // upstream_*, cancelled and unknown classes
}

func errBodyFields(fe *failure.Error) (class failure.Class, msg string) {
	if fe == nil {
		return failure.UpstreamError, dialect.DefaultErrMessage(failure.UpstreamError)
	}
	class = fe.Class
	if class == "" {
		class = failure.UpstreamError
	}
	msg = fe.Msg
	if msg == "" {
		msg = dialect.DefaultErrMessage(class)
	}
	return class, msg
}

// errContainsAny reports whether s contains any of the lower-case ASCII substrs, ignoring
// ASCII case.
func errContainsAny(s string, substrs ...string) bool {
	for _, sub := range substrs {
		if dialect.IndexFold(s, sub) >= 0 {
			return true
		}
	}
	return false
}
