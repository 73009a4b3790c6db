package dialect

import "github.com/switchyard-gw/switchyard/internal/failure"

// The pieces the dialects' upstream error normalizers share (dialect/openai and
// dialect/anthropic NormalizeError): the caller-safe messages of a class, which never carry
// provider text (R-ERR), the JSON sniff of an error body, and the log tokens of a Cause.

// UpstreamErrMessage is the fixed caller-facing message for a class decided from a provider
// error: never the provider's own text, which can echo prompt text or keys.
func UpstreamErrMessage(c failure.Class) string {
	switch c {
	case failure.ContentPolicy:
		return "the provider refused the request under its content policy"
	case failure.ContextOverflow:
		return "the request exceeds the model's context window"
	case failure.UpstreamAuth:
		return "the provider rejected the gateway's credentials or account"
	case failure.UpstreamRateLimited:
		return "the provider is rate limiting the gateway"
	case failure.RequestTooLarge:
		return "the request is too large for the provider"
	case failure.UpstreamTimeout:
		return "the provider did not answer in time"
	case failure.InvalidRequest:
		return "the provider rejected the request as invalid"
	}
	return "the provider is overloaded or failed"
}

// DefaultErrMessage is the error body's message for a class when the error carries none: the
// gateway's own classes by name, the upstream classes as UpstreamErrMessage.
func DefaultErrMessage(c failure.Class) string {
	switch c {
	case failure.InvalidRequest:
		return "the request is invalid"
	case failure.Authentication:
		return "invalid or missing API key"
	case failure.Permission:
		return "the API key is not allowed to make this request"
	case failure.ModelUnavailable:
		return "the requested model is not available"
	case failure.RequestTooLarge:
		return "the request is too large"
	case failure.InsufficientCredit:
		return "the API key's budget is exhausted"
	case failure.RateLimited:
		return "rate limit exceeded"
	case failure.UpstreamTruncated:
		return "the provider stream ended before the response was complete"
	case failure.GatewayError:
		return "all deployments cooling down"
	case failure.Cancelled:
		return "the request was cancelled"
	}
	return UpstreamErrMessage(c)
}

// IsJSONObjectStart reports whether b's first byte after JSON white space is '{': an error
// body worth reading as a provider's error object (anything else is classified by status).
func IsJSONObjectStart(b []byte) bool {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return c == '{'
	}
	return false
}

// AppendErrToken appends key and v to b, a log line of a normalized error's Cause, when v is
// not empty; a v shaped like a secret (LooksSecret: a key the provider echoed in its error
// code) is appended as RedactedToken, so that no credential reaches a log.
func AppendErrToken(b []byte, key, v string) []byte {
	if v == "" {
		return b
	}
	if LooksSecret(v) { // a key echoed in a code never reaches a log
		v = RedactedToken
	}
	return append(append(b, key...), v...)
}
