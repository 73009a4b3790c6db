package openai

import (
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/switchyard-gw/switchyard/internal/dialect"
	"github.com/switchyard-gw/switchyard/internal/failure"
)

// NormalizeError classifies an OpenAI-dialect upstream's non-2xx response into a canonical
// failure class, once (R-FAIL-5..7, R-ERR). Routing reads only the returned class.
//
// status is the HTTP status the provider answered with. header looks a response header up by
// name (pass resp.Header.Get; nil means no headers): `retry-after-ms` (milliseconds, as the
// OpenAI SDKs honour it) takes precedence over `retry-after` (seconds or an HTTP-date). On a 429
// without either header, the "Please try again in 174ms" hint of the body is used. body is the
// response body as read, possibly truncated, empty, HTML or garbage: anything that is not an
// OpenAI error object is classified by status alone.
//
// The result is always a non-nil *failure.Error (returned as error) with: a fixed caller-safe
// Msg per class that never contains provider text (provider messages can echo prompt text or
// keys); UpstreamStatus = status; RetryAfter parsed but not clamped (zero when absent; values
// above 24 h saturate there); Param (for invalid_request and context_overflow) and Code (for
// invalid_request), from the provider's structured fields and only when they are plain
// identifiers; and a Cause for logs naming the status and the provider's error type and code,
// never its message.
//
// Rules, first match wins (content policy precedes every status rule, R-FAIL-6):
//   - code content_policy_violation, content_filter (Azure, type null) or another policy code,
//     or Azure innererror.code ResponsibleAIPolicyViolation: content_policy
//   - code context_length_exceeded, or a message with "maximum context length" or Gemini's
//     "exceeds the maximum number of tokens allowed": context_overflow
//   - type or code insufficient_quota (the gateway's provider balance), or Gemini's 400 "API key
//     not valid" (the gateway's key): upstream_auth
//   - 429 (including a TPM "Request too large" 429, still a limit on the gateway's account):
//     upstream_rate_limited
//   - 401, 402, 403 (the gateway's own credentials): upstream_auth
//   - 404 that names a part of the caller's request (a param, or a code ending in _not_found
//     other than model_not_found: previous_response_not_found) falls through to invalid_request;
//     every other 404 is the deployment's and upstream_error (fails over, counts on the
//     circuit): model_not_found, Azure's DeploymentNotFound or "Resource not found", a body
//     without a JSON error, and OpenAI's own answer to a wrong base path, `Invalid URL (POST
//     /wrong/v1/chat/completions)` of type invalid_request_error with no code (seed 003: "HTTP
//     404, 408, and 5xx advance")
//   - 413: request_too_large; 408, 504: upstream_timeout
//   - any other 4xx: invalid_request; 5xx and anything else: upstream_error
func NormalizeError(status int, header func(name string) string, body []byte) error {
	return normalizeErr(status, header, body, time.Now)
}

// NormalizeStreamError classifies the data of an in-stream error event, `data: {"error":{...}}`
// on Chat Completions or a Responses `{"type":"error","code":...}`, into a *failure.Error
// (returned as error, never nil). The class follows the provider's error type and code through
// the same rules as NormalizeError (server_error and unknown types: upstream_error;
// rate_limit_exceeded: upstream_rate_limited; context_length_exceeded: context_overflow; ...);
// unparsable data is upstream_error, and so is data nested deeper than dialect.MaxDepth. UpstreamStatus is 200, the status of the stream that
// carried the event; RetryAfter comes from a "try again in" hint when the class is
// upstream_rate_limited.
func NormalizeStreamError(data []byte) error {
	if dialect.TooDeep(data) {
		fe := dialect.ResponseTooDeep()
		fe.UpstreamStatus = 200
		return fe
	}
	f := readErrFields(200, data)
	f.status = errStreamStatus(f)
	n := classifyErr(f)
	n.c.stream = true
	n.fe.UpstreamStatus = 200
	if n.fe.Class == failure.UpstreamRateLimited {
		n.fe.RetryAfter = tryAgainIn(f.msg)
	}
	return &n.fe
}

// AppendErrorBody appends the OpenAI-surface error body for fe (contract.md "Error bodies"):
//
//	{"error":{"message":M,"type":T,"param":P|null,"code":C|null,"metadata":{"error_type":CLASS}},"request_id":R}
//
// T and the default C are the native strings of R-ERR for fe.Class; fe.Code, when set, replaces
// the default code. M is fe.Msg, or the class's fixed message when fe.Msg is empty. A nil fe or
// an empty class encodes as upstream_error. dst is grown as needed and returned; nothing else is
// allocated.
func AppendErrorBody(dst []byte, fe *failure.Error, requestID string) []byte {
	class, msg, param, code := errBodyFields(fe)
	typ, defCode := nativeErrType(class)
	if code == "" {
		code = defCode
	}
	dst = append(dst, `{"error":{"message":`...)
	dst = dialect.AppendJSONString(dst, msg)
	dst = append(dst, `,"type":`...)
	dst = dialect.AppendJSONString(dst, typ)
	dst = append(dst, `,"param":`...)
	dst = dialect.AppendJSONStringOrNull(dst, param)
	dst = append(dst, `,"code":`...)
	dst = dialect.AppendJSONStringOrNull(dst, code)
	dst = append(dst, `,"metadata":{"error_type":`...)
	dst = dialect.AppendJSONString(dst, string(class))
	dst = append(dst, `}},"request_id":`...)
	dst = dialect.AppendJSONString(dst, requestID)
	return append(dst, '}')
}

// AppendStreamError appends one terminal in-stream error frame for a committed stream
// (R-FAIL-4): `data: ` + the AppendErrorBody JSON + a blank line. Its top-level "error" key is
// what openai-go and openai-node turn into a stream error (wire.md §7.4); no `event:` line and
// no `[DONE]` follow. dst is grown as needed and returned.
func AppendStreamError(dst []byte, fe *failure.Error, requestID string) []byte {
	dst = append(dst, "data: "...)
	dst = AppendErrorBody(dst, fe, requestID)
	return append(dst, "\n\n"...)
}

// errFields are the parts of a provider error that classification reads. The strings are views
// into one copy of the body; msg is matched, never copied out.
type errFields struct {
	status     int
	typ, code  string
	inner      string // Azure innererror.code
	param, msg string
	hasJSON    bool // the body carried an error object (or an error string)
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
	stream          bool
	status          int
	typ, code, more string
}

func (c *errCause) Error() string {
	b := make([]byte, 0, 96)
	b = append(b, "openai upstream "...)
	if c.stream {
		b = append(b, "stream error"...)
	} else {
		b = append(b, "status "...)
		b = strconv.AppendInt(b, int64(c.status), 10)
	}
	b = dialect.AppendErrToken(b, " type=", c.typ)
	b = dialect.AppendErrToken(b, " code=", c.code)
	b = dialect.AppendErrToken(b, " inner=", c.more)
	return string(b)
}

func normalizeErr(status int, header func(string) string, body []byte, now func() time.Time) error {
	f := readErrFields(status, body)
	n := classifyErr(f)
	n.fe.RetryAfter = dialect.ParseRetryAfter(header, now)
	if n.fe.RetryAfter == 0 && n.fe.Class == failure.UpstreamRateLimited {
		n.fe.RetryAfter = tryAgainIn(f.msg)
	}
	return &n.fe
}

// readErrFields extracts the error object of body: {"error":{...}} (OpenAI, Azure, Google), a
// top-level {"type","code","message"} (Responses stream errors, some compatible servers),
// {"error":"text"}, or the first element of a JSON array of these (Google). Anything else
// leaves every field empty.
func readErrFields(status int, body []byte) errFields {
	f := errFields{status: status}
	if dialect.TooDeep(body) { // too deep: read as not JSON
		return f
	}
	var s string
	switch {
	case dialect.IsJSONObjectStart(body):
		s = string(body) // one copy; every field below is a view into it
	case isJSONArrayStart(body):
		// Google's APIs (Gemini's OpenAI-compatible endpoint among them) can answer a
		// one-element array of their {"error":{"code","message","status"}} object.
		if first := gjson.GetBytes(body, "0"); first.IsObject() {
			s = first.Raw
		} else {
			return f
		}
	default:
		return f
	}
	e := gjson.Get(s, "error")
	switch {
	case e.IsObject():
		f.hasJSON = true
	case e.Type == gjson.String:
		f.hasJSON = true
		f.msg = e.Str
		return f
	default:
		e = gjson.Parse(s)
		if !e.Get("message").Exists() && !e.Get("code").Exists() {
			return f
		}
		f.hasJSON = true
	}
	e.ForEach(func(k, v gjson.Result) bool { // one pass over the error object
		switch k.Str {
		case "type":
			f.typ = errToken(v)
		case "code":
			f.code = errToken(v)
		case "param":
			f.param = errToken(v)
		case "innererror":
			f.inner = errToken(v.Get("code"))
		case "message":
			if v.Type == gjson.String {
				f.msg = v.Str
			}
		}
		return true
	})
	return f
}

// token returns r as an identifier (letters, digits, _ . - : [ ]; at most 64 bytes) or "".
// Provider type and code strings pass through it before reaching logs or a caller body.
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
			c == '_' || c == '.' || c == '-' || c == ':' || c == '[' || c == ']') {
			return ""
		}
	}
	return s
}

// callerCode keeps a provider code for the caller only when it has the shape of OpenAI's codes:
// lower-case words joined by underscores (invalid_value, unsupported_parameter). Anything else
// (a code carrying an id, a key or mixed case) is withheld: provider text never reaches callers.
func callerCode(s string) string {
	if dialect.LooksSecret(s) {
		return ""
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c == '_') {
			return ""
		}
	}
	return s
}

// callerParam keeps a provider param for the caller only when it has the shape of a request
// path (messages[0].content): lower-case words, digits in brackets, dots and underscores.
func callerParam(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '[' || c == ']') {
			return ""
		}
	}
	return s
}

func isJSONArrayStart(b []byte) bool {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return c == '['
	}
	return false
}

// errRule maps one upstream error shape to a class. errRules is read in order; the first match wins.
type errRule struct {
	class failure.Class
	match func(f *errFields) bool
}

var errRules = [...]errRule{
	{failure.ContentPolicy, isErrContentPolicy}, // R-FAIL-6: before every status rule
	{failure.ContextOverflow, func(f *errFields) bool {
		return f.code == "context_length_exceeded" || errContainsFold(f.msg, "maximum context length") ||
			errContainsFold(f.msg, "exceeds the maximum number of tokens allowed") // Gemini
	}},
	{failure.UpstreamAuth, func(f *errFields) bool {
		return f.typ == "insufficient_quota" || f.code == "insufficient_quota" ||
			errContainsFold(f.msg, "api key not valid") // Gemini answers a bad key with a 400
	}},
	{failure.UpstreamRateLimited, func(f *errFields) bool { return f.status == 429 }},
	{failure.UpstreamAuth, func(f *errFields) bool { return f.status == 401 || f.status == 402 || f.status == 403 }},
	{failure.UpstreamError, func(f *errFields) bool { return f.status == 404 && !namesCallerPart(f) }},
	{failure.RequestTooLarge, func(f *errFields) bool { return f.status == 413 }},
	{failure.UpstreamTimeout, func(f *errFields) bool { return f.status == 408 || f.status == 504 }},
	{failure.InvalidRequest, func(f *errFields) bool { return f.status >= 400 && f.status < 500 }},
}

// namesCallerPart reports whether a 404 names something the caller's request carried: a param
// (previous_response_id), or a code ending in _not_found other than the model's. Such a 404 is
// the caller's; any other 404 (a wrong path, an unknown model or deployment) is the deployment's.
func namesCallerPart(f *errFields) bool {
	return f.param != "" || (strings.HasSuffix(f.code, "_not_found") && f.code != "model_not_found")
}

// errPolicyCodes are the provider codes that mean the input or output was refused under a content
// policy: Chat (content_policy_violation), Azure (content_filter) and the Responses API codes.
var errPolicyCodes = [...]string{
	"content_policy_violation", "content_filter", "image_content_policy_violation",
	"bio_policy", "misalignment_policy_violation", "invalid_prompt",
}

func isErrContentPolicy(f *errFields) bool {
	for _, c := range errPolicyCodes {
		if f.code == c || f.typ == c {
			return true
		}
	}
	return f.inner == "ResponsibleAIPolicyViolation" ||
		errContainsFold(f.msg, "content management policy")
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
	n.c = errCause{status: f.status, typ: f.typ, code: f.code, more: f.inner}
	if class == failure.InvalidRequest {
		n.fe.Param, n.fe.Code = callerParam(f.param), callerCode(f.code)
	}
	if class == failure.ContextOverflow {
		n.fe.Param = callerParam(f.param)
	}
	n.fe.Cause = &n.c
	return n
}

// errStreamStatus gives an in-stream error the HTTP status its type would have had, so that one
// rule table serves both paths.
func errStreamStatus(f errFields) int {
	switch f.typ {
	case "invalid_request_error":
		return 400
	case "authentication_error":
		return 401
	case "permission_error":
		return 403
	case "not_found_error":
		return 404
	case "rate_limit_error", "requests", "tokens":
		return 429
	}
	switch f.code {
	case "rate_limit_exceeded":
		return 429
	case "model_not_found":
		return 404
	}
	return 500
}

// nativeErrType is the OpenAI-surface type and default code of a class (R-ERR; codes of wire.md §5.6).
func nativeErrType(c failure.Class) (typ, code string) {
	switch c {
	case failure.InvalidRequest:
		return "invalid_request_error", ""
	case failure.ContextOverflow:
		return "invalid_request_error", "context_length_exceeded"
	case failure.ContentPolicy:
		return "invalid_request_error", "content_policy_violation"
	case failure.Authentication:
		return "authentication_error", "invalid_api_key"
	case failure.Permission:
		return "permission_error", ""
	case failure.ModelUnavailable:
		return "invalid_request_error", "model_unavailable"
	case failure.RequestTooLarge:
		return "invalid_request_error", "request_too_large"
	case failure.InsufficientCredit:
		return "insufficient_quota", "insufficient_quota"
	case failure.RateLimited, failure.UpstreamRateLimited:
		return "rate_limit_error", "rate_limit_exceeded"
	}
	return "api_error", "" // upstream_*, gateway_error, cancelled and unknown classes
}

func errBodyFields(fe *failure.Error) (class failure.Class, msg, param, code string) {
	if fe == nil {
		return failure.UpstreamError, dialect.DefaultErrMessage(failure.UpstreamError), "", ""
	}
	class = fe.Class
	if class == "" {
		class = failure.UpstreamError
	}
	msg = fe.Msg
	if msg == "" {
		msg = dialect.DefaultErrMessage(class)
	}
	return class, msg, fe.Param, fe.Code
}

// tryAgainIn parses the wait of OpenAI's rate-limit message ("... Please try again in 174ms.",
// "in 1.5s", "in 6m0s"), zero when absent. Only the duration is read from the text.
func tryAgainIn(msg string) time.Duration {
	const key = "try again in "
	i := dialect.IndexFold(msg, key)
	if i < 0 {
		return 0
	}
	rest := msg[i+len(key):]
	end := 0
	for end < len(rest) && (rest[end] >= '0' && rest[end] <= '9' || rest[end] == '.' ||
		rest[end] >= 'a' && rest[end] <= 'z') {
		end++
	}
	d, err := time.ParseDuration(strings.TrimRight(rest[:end], "."))
	if err != nil || d < 0 {
		return 0
	}
	return min(d, dialect.MaxRetryAfter)
}

// errContainsFold reports whether s contains the lower-case ASCII substr, ignoring ASCII case.
func errContainsFold(s, substr string) bool { return dialect.IndexFold(s, substr) >= 0 }
