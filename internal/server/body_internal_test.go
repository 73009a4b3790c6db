package server

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"

	"github.com/switchyard-gw/switchyard/internal/failure"
)

func testBodyServer() *Server {
	s := &Server{maxBody: 32 << 20, maxInflight: 256 << 20, bodyTimeout: 30e9, inflight: new(atomic.Int64)}
	s.pool.New = func() any { return new(callState) }
	return s
}

// TestReleaseDropsOversizedBuffers: a callState going back to the pool keeps a body or stripped
// buffer of at most maxPooledBytes and drops a larger one (the pool would hold it forever),
// and gives its in-flight bytes back exactly once.
func TestReleaseDropsOversizedBuffers(t *testing.T) {
	s := testBodyServer()
	big := &callState{body: make([]byte, 30<<20), stripped: make([]byte, 0, maxPooledBytes+1)}
	if err := s.holdBody(big, 30<<20); err != nil {
		t.Fatal(err)
	}
	s.releaseCall(big)
	if big.body != nil || big.stripped != nil {
		t.Errorf("buffers put back into the pool: body cap %d, stripped cap %d", cap(big.body), cap(big.stripped))
	}
	if big.held != 0 || s.InflightBodyBytes() != 0 {
		t.Errorf("held %d, in flight %d after release", big.held, s.InflightBodyBytes())
	}
	s.releaseCall(big) // a second release gives nothing back twice
	if s.InflightBodyBytes() != 0 {
		t.Errorf("in flight %d after a second release", s.InflightBodyBytes())
	}
	small := &callState{body: make([]byte, maxPooledBytes), stripped: make([]byte, 10)}
	s.releaseCall(small)
	if cap(small.body) != maxPooledBytes || cap(small.stripped) != 10 {
		t.Errorf("buffers of at most %d bytes dropped: body cap %d, stripped cap %d", maxPooledBytes, cap(small.body), cap(small.stripped))
	}
}

// TestReadBodyExact: a body of known length is read into a buffer of exactly its length
// (bytes.Buffer.ReadFrom doubled it at the end); a chunked one is charged in steps; both are
// returned whole, and what they were charged is given back by releaseCall.
func TestReadBodyExact(t *testing.T) {
	s := testBodyServer()
	payload := strings.Repeat("x", 3<<20)
	for _, chunked := range []bool{false, true} {
		r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", iotest.HalfReader(strings.NewReader(payload)))
		r.ContentLength = int64(len(payload))
		if chunked {
			r.ContentLength = -1
		}
		cs := s.pool.Get().(*callState)
		body, err := s.readBody(httptest.NewRecorder(), r, cs)
		if err != nil || !bytes.Equal(body, []byte(payload)) {
			t.Fatalf("chunked %v: %d bytes, %v", chunked, len(body), err)
		}
		if !chunked && cap(cs.body) != len(payload) {
			t.Errorf("buffer cap %d for a %d-byte body", cap(cs.body), len(payload))
		}
		if s.InflightBodyBytes() < int64(len(payload)) || s.InflightBodyBytes() > int64(len(payload))+bodyStep {
			t.Errorf("chunked %v: in flight %d for a %d-byte body", chunked, s.InflightBodyBytes(), len(payload))
		}
		s.releaseCall(cs)
		if s.InflightBodyBytes() != 0 || cs.body != nil {
			t.Errorf("chunked %v: in flight %d, body cap %d after release", chunked, s.InflightBodyBytes(), cap(cs.body))
		}
	}
}

// TestHoldBodyCap: the in-flight cap is never passed; a body alone over it is 413.
func TestHoldBodyCap(t *testing.T) {
	s := testBodyServer()
	s.maxInflight = 1000
	a, b := new(callState), new(callState)
	if err := s.holdBody(a, 600); err != nil {
		t.Fatal(err)
	}
	if err := s.holdBody(b, 500); err != errInflightFull {
		t.Fatalf("over the cap: %v", err)
	}
	if err := s.holdBody(b, 1001); failure.From(err).Class != failure.RequestTooLarge {
		t.Fatalf("alone over the cap: %v", err)
	}
	if err := s.holdBody(b, 400); err != nil || s.InflightBodyBytes() != 1000 {
		t.Fatalf("up to the cap: %v, %d", err, s.InflightBodyBytes())
	}
	s.releaseCall(a)
	s.releaseCall(b)
	if s.InflightBodyBytes() != 0 {
		t.Fatalf("in flight %d", s.InflightBodyBytes())
	}
}

// rewindBody is a request body that can be read again (for AllocsPerRun).
type rewindBody struct{ *strings.Reader }

func (rewindBody) Close() error { return nil }

// deadlineRecorder is a recorder that takes read deadlines, as net/http's connections do (a
// plain recorder's ErrNotSupported is built with fmt.Errorf: two allocations a served request
// never makes).
type deadlineRecorder struct {
	*httptest.ResponseRecorder
	deadlines int
}

func (d *deadlineRecorder) SetReadDeadline(time.Time) error { d.deadlines++; return nil }

// TestReadBodyAllocs: reading a body into a reused buffer big enough (a pooled callState's)
// allocates nothing but net/http's MaxBytesReader. (The pool itself is left out: under -race
// it drops a quarter of what it is given.)
func TestReadBodyAllocs(t *testing.T) {
	s := testBodyServer()
	payload := strings.Repeat("x", 4096)
	src := rewindBody{strings.NewReader(payload)}
	r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", src)
	r.ContentLength = int64(len(payload))
	w := &deadlineRecorder{ResponseRecorder: httptest.NewRecorder()}
	cs := new(callState)
	n := testing.AllocsPerRun(200, func() {
		src.Reset(payload)
		if body, err := s.readBody(w, r, cs); err != nil || len(body) != len(payload) {
			t.Fatalf("%d bytes, %v", len(body), err)
		}
		s.inflight.Add(-cs.held)
		cs.held = 0
	})
	if n > 1 {
		t.Errorf("%v allocations per body read, want at most 1 (MaxBytesReader)", n)
	}
	if w.deadlines != 2*201 { // set and cleared, per run (and AllocsPerRun's warm-up run)
		t.Errorf("%d read deadlines set", w.deadlines)
	}
}
