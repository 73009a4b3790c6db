package failure

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Error is a classified failure. Msg is safe to show to the caller (it never carries a raw
// provider body, a credential or prompt text); Cause is for logs and tests only.
type Error struct {
	Class Class
	// Msg is the caller-facing message.
	Msg string
	// Param names the offending request field, when one is known ("messages", "n").
	Param string
	// Code is the OpenAI-surface `code` hint (e.g. "context_length_exceeded"); empty uses the
	// class's default code.
	Code string
	// RetryAfter is the provider's or the gateway's retry-after; zero when none applies.
	RetryAfter time.Duration
	// LimitKind fills `x-switchyard-limit-kind` (rpm, tpm, concurrency, budget, credit, health).
	LimitKind string
	// Hang marks an upstream that never sent headers (or went idle) before its deadline:
	// it counts on the (deployment, model) circuit as well (R-CIRCUIT-5).
	Hang bool
	// UpstreamStatus is the HTTP status the provider answered with, 0 when none (transport error).
	UpstreamStatus int
	// Cause is the underlying error, for logs. Never shown to callers.
	Cause error
	// Status, when non-zero, is the HTTP status of the answer instead of the class's: the
	// invalid_request refusals whose HTTP meaning is more exact than 400 (415 for a request body
	// with a Content-Encoding, 405 for a method a path does not serve). It never changes how the
	// failure is routed or billed: that is the class's.
	Status int
}

// HTTPStatus is the status a caller receives for e: Status when set, else Class.Status().
func (e *Error) HTTPStatus() int {
	if e.Status != 0 {
		return e.Status
	}
	return e.Class.Status()
}

// Error implements error. It includes the class and message, not the cause's provider text.
func (e *Error) Error() string {
	if e.Cause != nil {
		return fmt.Sprintf("%s: %s: %v", e.Class, e.Msg, e.Cause)
	}
	return fmt.Sprintf("%s: %s", e.Class, e.Msg)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Cause }

// New returns a classified error with a caller-safe message.
func New(c Class, msg string) error { return &Error{Class: c, Msg: msg} }

// Newf is New with formatting.
func Newf(c Class, format string, args ...any) error {
	return &Error{Class: c, Msg: fmt.Sprintf(format, args...)}
}

// Wrap classifies cause with a caller-safe message.
func Wrap(c Class, msg string, cause error) error { return &Error{Class: c, Msg: msg, Cause: cause} }

// ErrHeadersDeadline is the context cause set when an upstream did not send response headers
// (or went idle) within its deadline.
var ErrHeadersDeadline = errors.New("failure: upstream deadline exceeded")

// ErrShutdown is the context cause set on in-flight requests when the gateway's shutdown grace
// has run out: a request ended this way is answered (or its stream ended) with a
// gateway_error instead of being cut silently.
var ErrShutdown = errors.New("failure: gateway shutting down")

// From returns the classified form of err. A *Error anywhere in the chain is returned as is;
// a context cancellation becomes Cancelled, a deadline cause becomes UpstreamTimeout, and any
// other error (a reset, a refused connection, a TLS failure) is UpstreamError. From(nil) is nil.
func From(err error) *Error {
	if err == nil {
		return nil
	}
	var fe *Error
	if errors.As(err, &fe) {
		return fe
	}
	switch {
	case errors.Is(err, ErrHeadersDeadline), errors.Is(err, context.DeadlineExceeded):
		return &Error{Class: UpstreamTimeout, Msg: "the provider did not answer in time", Hang: true, Cause: err}
	case errors.Is(err, context.Canceled):
		return &Error{Class: Cancelled, Msg: "the request was cancelled", Cause: err}
	}
	return &Error{Class: UpstreamError, Msg: "the provider connection failed", Cause: err}
}

// Invalid returns a caller fault (invalid_request, 400, never fails over) naming the offending
// field param. msg must not carry caller text: field paths and fixed wording only.
func Invalid(param, msg string) error {
	return &Error{Class: InvalidRequest, Param: param, Msg: msg}
}

// ShouldRetry is the `x-should-retry` header of an error answer (contract.md round 3), the
// hint the official SDKs read before their own status rules:
//
//   - false for the caller's errors (invalid_request, context_overflow, content_policy,
//     request_too_large, authentication, permission, model_unavailable), budget and credit
//     refusals (insufficient_credit) and the gateway's own provider credentials or account
//     (upstream_auth: a retry meets the same answer until an operator changes it);
//   - true for rate limits (rate_limited, upstream_rate_limited) and unavailability
//     (upstream_error, upstream_timeout, upstream_truncated);
//   - gateway_error: true when it carries a retry-after (every route cooling down, the
//     in-flight body cap, the shutdown grace), false without one (a model disabled by the
//     operator, a panic while serving the request).
func (e *Error) ShouldRetry() bool {
	switch e.Class {
	case RateLimited, UpstreamRateLimited, UpstreamError, UpstreamTimeout, UpstreamTruncated:
		return true
	case GatewayError:
		return e.RetryAfter > 0
	}
	return false
}
