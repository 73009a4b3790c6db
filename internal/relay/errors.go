package relay

import (
	"net/http"
	"strconv"
	"time"

	"github.com/switchyard-gw/switchyard/internal/failure"
)

// WriteError writes a caller-facing error in the codec's dialect: the status of the class, the
// contract's headers (x-switchyard-error-code, x-should-retry, retry-after,
// x-switchyard-limit-kind, x-switchyard-attempts) and the error body. buf is scratch space (may be nil).
func WriteError(w http.ResponseWriter, codec Codec, requestID string, fe *failure.Error, attempts int, buf []byte) {
	writeErrorHeaders(w.Header(), fe, attempts)
	status := fe.HTTPStatus()
	if status == failure.StatusClientClosedRequest {
		return // nobody to answer
	}
	w.WriteHeader(status)
	_, _ = w.Write(codec.AppendErrorBody(buf, fe, requestID))
}

// The x-should-retry values (failure.Error.ShouldRetry), shared: nothing mutates them.
var shouldRetryTrue, shouldRetryFalse = []string{"true"}, []string{"false"}

// writeErrorHeaders sets the headers of an error response (WriteError).
func writeErrorHeaders(h http.Header, fe *failure.Error, attempts int) {
	h["Content-Type"] = jsonValue
	h["X-Switchyard-Error-Code"] = []string{string(fe.Class)}
	h["X-Switchyard-Attempts"] = attemptsValue(attempts)
	if fe.ShouldRetry() {
		h["X-Should-Retry"] = shouldRetryTrue
	} else {
		h["X-Should-Retry"] = shouldRetryFalse
	}
	if fe.RetryAfter > 0 {
		secs := int((fe.RetryAfter + time.Second - 1) / time.Second)
		h["Retry-After"] = []string{strconv.Itoa(secs)}
	}
	if fe.LimitKind != "" {
		h["X-Switchyard-Limit-Kind"] = []string{fe.LimitKind}
	}
}

// Answered reports whether this package started a response on the writer whose header map is
// h: the commit and WriteError both set x-switchyard-attempts before writing. A panic handler
// must not write after that: the response (a stream, or a body) is under way or complete, and
// the relay ends a running stream itself.
func Answered(h http.Header) bool { return h["X-Switchyard-Attempts"] != nil }
