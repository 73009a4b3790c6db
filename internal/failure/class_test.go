package failure

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// R-ERR: every class's status, failover and circuit behaviour as the requirements table fixes them.
func TestClassTable(t *testing.T) {
	for _, tc := range []struct {
		c        Class
		status   int
		failover bool
		counts   bool
	}{
		{InvalidRequest, 400, false, false},
		{ContextOverflow, 400, false, false},
		{ContentPolicy, 400, false, false},
		{Authentication, 401, false, false},
		{Permission, 403, false, false},
		{ModelUnavailable, 404, false, false},
		{RequestTooLarge, 413, false, false},
		{InsufficientCredit, 402, false, false},
		{RateLimited, 429, false, false},
		{UpstreamRateLimited, 429, true, true},
		{UpstreamError, 502, true, true},
		{UpstreamTimeout, 504, true, true},
		{UpstreamAuth, 502, true, true},
		{UpstreamTruncated, 502, false, true},
		{GatewayError, 503, false, false},
		{Cancelled, 499, false, false},
	} {
		if tc.c.Status() != tc.status || tc.c.FailsOver() != tc.failover || tc.c.CountsOnCircuit() != tc.counts {
			t.Errorf("%s: status %d failover %v counts %v", tc.c, tc.c.Status(), tc.c.FailsOver(), tc.c.CountsOnCircuit())
		}
	}
	if len(Classes) != 16 {
		t.Errorf("Classes lists %d classes", len(Classes))
	}
}

// From finds a classified error in a chain and classifies the rest: deadlines are hangs,
// cancellations are cancelled, anything else an upstream error.
func TestFrom(t *testing.T) {
	fe := &Error{Class: ContentPolicy, Msg: "x"}
	if From(fmt.Errorf("wrapped: %w", fe)) != fe {
		t.Error("wrapped *Error not found")
	}
	if got := From(ErrHeadersDeadline); got.Class != UpstreamTimeout || !got.Hang {
		t.Errorf("deadline: %+v", got)
	}
	if got := From(context.Canceled); got.Class != Cancelled {
		t.Errorf("cancel: %+v", got)
	}
	if got := From(errors.New("connection reset")); got.Class != UpstreamError || got.Msg == "connection reset" {
		t.Errorf("reset: %+v", got)
	}
	if From(nil) != nil {
		t.Error("From(nil) != nil")
	}
}
