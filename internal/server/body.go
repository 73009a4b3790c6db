package server

import (
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/switchyard-gw/switchyard/internal/failure"
)

// The request-body memory rules (docs/behaviour.md "Request limits").
const (
	// maxPooledBytes is the largest buffer a callState keeps when it goes back to the pool: a
	// larger one (a 30 MB body) is dropped for the garbage collector instead of being held by
	// the pool for as long as the process runs.
	maxPooledBytes = 1 << 20
	// bodyStep is how many bytes of the in-flight cap a body of unknown length (chunked) takes
	// at a time, before it reads them.
	bodyStep = 64 << 10
)

// LimitKindInflightBody is the x-switchyard-limit-kind of a request refused because the bodies
// of the requests in flight already hold server.max_inflight_body_bytes.
const LimitKindInflightBody = "inflight_body"

// errInflightFull is the refusal of a body that does not fit in the in-flight cap now: 503
// gateway_error, retry-after 1 s (the SDKs retry it). Shared: nothing mutates it.
var errInflightFull = &failure.Error{Class: failure.GatewayError, RetryAfter: time.Second, LimitKind: LimitKindInflightBody,
	Msg: "the gateway is holding too many request bodies at once; retry shortly"}

// InflightBodyBytes is the number of bytes the requests in flight hold charged to
// server.max_inflight_body_bytes (also the gauge switchyard_inflight_body_bytes); 0 when no
// request is reading or holding a body.
func (s *Server) InflightBodyBytes() int64 { return s.inflight.Load() }

// holdBody charges n more bytes of cs's body to the in-flight cap (an exact compare-and-swap:
// concurrent requests never take more than the cap together). Over the cap it is errInflightFull,
// or 413 request_too_large when the body alone would pass it.
func (s *Server) holdBody(cs *callState, n int64) error {
	if cs.held+n > s.maxInflight {
		return &failure.Error{Class: failure.RequestTooLarge,
			Msg: "the request body is larger than the gateway's limit of " + strconv.FormatInt(s.maxInflight, 10) + " bytes for all request bodies in flight"}
	}
	for {
		cur := s.inflight.Load()
		if cur+n > s.maxInflight {
			return errInflightFull
		}
		if s.inflight.CompareAndSwap(cur, cur+n) {
			cs.held += n
			return nil
		}
	}
}

// releaseCall ends a request's hold on its working memory and returns cs to the pool: the
// in-flight bytes it was charged are given back (once: held is zeroed), and a body or stripped
// buffer over maxPooledBytes is dropped rather than kept by the pool.
func (s *Server) releaseCall(cs *callState) {
	if cs.held != 0 {
		s.inflight.Add(-cs.held)
		cs.held = 0
	}
	if cap(cs.body) > maxPooledBytes {
		cs.body = nil
	}
	if cap(cs.stripped) > maxPooledBytes {
		cs.stripped = nil
	}
	s.pool.Put(cs)
}

// readKnown reads a body of Content-Length n (0 < n <= max_body_bytes) into cs.body: its n
// bytes are charged before any is read, into a buffer of exactly n bytes (net/http ends such a
// body exactly there).
func (s *Server) readKnown(src io.Reader, cs *callState, n int64) error {
	if err := s.holdBody(cs, n); err != nil {
		return err
	}
	if int64(cap(cs.body)) < n {
		cs.body = make([]byte, n)
	}
	cs.body = cs.body[:n]
	_, err := io.ReadFull(src, cs.body)
	return err
}

// readChunked reads a body of unknown length (chunked) into cs.body, charging it to the
// in-flight cap bodyStep bytes at a time before reading them; max_body_bytes is src's limit.
func (s *Server) readChunked(src io.Reader, cs *callState) error {
	b := cs.body[:0]
	defer func() { cs.body = b }()
	for {
		if int64(len(b)) == cs.held {
			if err := s.holdBody(cs, min(bodyStep, max(s.maxInflight-cs.held, 1))); err != nil {
				return err
			}
		}
		if len(b) == cap(b) {
			b = slices.Grow(b, bodyStep)
		}
		m, err := src.Read(b[len(b):min(int64(cap(b)), cs.held)])
		b = b[:len(b)+m]
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// bodyReadError classifies a failed body read (docs/errors.md "Request limits"). A caller that
// is still connected gets a clear 4xx; nothing is answered only to one that is gone:
//   - over server.max_body_bytes: 413 request_too_large;
//   - the in-flight cap (holdBody's errors) as they are;
//   - server.body_timeout passed: 400 invalid_request "not received in time";
//   - the connection reset or closed under the read: cancelled (the caller went away);
//   - anything else (malformed chunked framing, a body shorter than its Content-Length
//     followed by the end of the caller's sending side): 400 invalid_request "malformed or
//     truncated". TCP cannot tell a caller that closed only its sending side from one that
//     closed the whole connection after a clean FIN, so the latter gets the same 400 (which
//     nobody reads) and is audited as such.
func (s *Server) bodyReadError(err error) error {
	var fe *failure.Error
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &fe):
		return fe
	case errors.As(err, &mbe):
		return tooLarge(s.maxBody)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return &failure.Error{Class: failure.InvalidRequest, Cause: err,
			Msg: "the request body was not received in time (the gateway waits " + s.bodyTimeout.String() + " for a body)"}
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, net.ErrClosed):
		return &failure.Error{Class: failure.Cancelled, Msg: "the caller went away while sending the request body", Cause: err}
	}
	return &failure.Error{Class: failure.InvalidRequest, Msg: "the request body could not be read: malformed or truncated", Cause: err}
}
