package failure

// Class is the canonical failure class of R-ERR: the `error_type` in every error body and the
// `error_code` of an attempt in the audit. The string values are part of the public contract.
type Class string

// The canonical classes of requirements.md R-ERR. Names and statuses are fixed by the contract.
const (
	InvalidRequest      Class = "invalid_request"       // 400, caller fault
	ContextOverflow     Class = "context_overflow"      // 400, never fails over (R-FAIL-6)
	ContentPolicy       Class = "content_policy"        // 400, never fails over (R-FAIL-6)
	Authentication      Class = "authentication"        // 401, the caller's key
	Permission          Class = "permission"            // 403, the caller is not allowed
	ModelUnavailable    Class = "model_unavailable"     // 404, unknown model (R-MODEL-2)
	RequestTooLarge     Class = "request_too_large"     // 413
	InsufficientCredit  Class = "insufficient_credit"   // 402, the caller's budget
	RateLimited         Class = "rate_limited"          // 429, the caller's own limit
	UpstreamRateLimited Class = "upstream_rate_limited" // 429 from a provider; fails over
	UpstreamError       Class = "upstream_error"        // 5xx, 529, reset, garbage, in-stream error
	UpstreamTimeout     Class = "upstream_timeout"      // headers deadline or idle deadline missed (a hang)
	UpstreamAuth        Class = "upstream_auth"         // the gateway's own provider credentials or balance
	UpstreamTruncated   Class = "upstream_truncated"    // failure after commit; in-stream only
	GatewayError        Class = "gateway_error"         // 503: all deployments cooling down
	Cancelled           Class = "cancelled"             // the caller went away; 499 in logs only
)

// Classes lists every class, in the order of R-ERR. docs/errors.md documents each one.
var Classes = []Class{
	InvalidRequest, ContextOverflow, ContentPolicy, Authentication, Permission, ModelUnavailable,
	RequestTooLarge, InsufficientCredit, RateLimited, UpstreamRateLimited, UpstreamError,
	UpstreamTimeout, UpstreamAuth, UpstreamTruncated, GatewayError, Cancelled,
}

// StatusClientClosedRequest is the 499 recorded in logs for a caller that went away.
const StatusClientClosedRequest = 499

// Status is the HTTP status (a plain int: this package stays free of net/http) a caller receives for the class (R-ERR). UpstreamTruncated is only
// ever sent in-stream; its 502 is what a non-stream body would carry.
func (c Class) Status() int {
	switch c {
	case InvalidRequest, ContextOverflow, ContentPolicy:
		return 400
	case Authentication:
		return 401
	case Permission:
		return 403
	case ModelUnavailable:
		return 404
	case RequestTooLarge:
		return 413
	case InsufficientCredit:
		return 402
	case RateLimited, UpstreamRateLimited:
		return 429
	case UpstreamTimeout:
		return 504
	case GatewayError:
		return 503
	case Cancelled:
		return StatusClientClosedRequest
	default: // UpstreamError, UpstreamAuth, UpstreamTruncated and any unknown class
		return 502
	}
}

// FailsOver reports whether a failure of this class, before commit, moves the request to the next
// candidate of the plan (R-FAIL-5, R-FAIL-6). The decision is made here once; routing never reads
// raw provider errors (R-FAIL-7).
func (c Class) FailsOver() bool {
	switch c {
	case UpstreamRateLimited, UpstreamError, UpstreamTimeout, UpstreamAuth:
		return true
	}
	return false
}

// CountsOnCircuit reports whether a failure of this class counts against a deployment's circuit
// (R-CIRCUIT-3). Caller faults and cancellations never count; a truncation after commit does.
func (c Class) CountsOnCircuit() bool {
	return c.FailsOver() || c == UpstreamTruncated
}

// CallerFault reports whether the failure was caused by the request itself (malformed, too large,
// over the context window, refused by policy). Such failures stop a request at once and are
// excluded from reliability denominators (R-ORDER-4).
func (c Class) CallerFault() bool {
	switch c {
	case InvalidRequest, ContextOverflow, ContentPolicy, RequestTooLarge:
		return true
	}
	return false
}
