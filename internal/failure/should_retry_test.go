package failure

import (
	"testing"
	"time"
)

// TestShouldRetry pins x-should-retry for every class (contract.md round 3, docs/errors.md).
func TestShouldRetry(t *testing.T) {
	want := map[Class]bool{
		InvalidRequest: false, ContextOverflow: false, ContentPolicy: false, Authentication: false,
		Permission: false, ModelUnavailable: false, RequestTooLarge: false, InsufficientCredit: false,
		RateLimited: true, UpstreamRateLimited: true, UpstreamError: true, UpstreamTimeout: true,
		UpstreamAuth: false, UpstreamTruncated: true, GatewayError: false, Cancelled: false,
	}
	for _, c := range Classes {
		w, ok := want[c]
		if !ok {
			t.Fatalf("class %s has no expectation", c)
		}
		if got := (&Error{Class: c}).ShouldRetry(); got != w {
			t.Errorf("%s: ShouldRetry %v, want %v", c, got, w)
		}
	}
	// A gateway_error with a retry-after (all cooling, in-flight bodies, shutdown) is retried.
	if !(&Error{Class: GatewayError, RetryAfter: 5 * time.Second}).ShouldRetry() {
		t.Error("gateway_error with retry-after: ShouldRetry false, want true")
	}
}
