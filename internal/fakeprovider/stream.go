package fakeprovider

import (
	"context"
	"errors"
	"net/http"
	"time"
)

// frame is one SSE event as written on the wire, ending in a blank line.
type frame struct {
	data  []byte
	delta bool // a content delta: counted by Behavior.After and preceded by Behavior.Delay
}

// frames is a whole stream: its first preamble frames are the lifecycle preamble (sent before any
// content delta, and all that KindPreambleError sends).
type frames struct {
	list     []frame
	preamble int
}

// errCallerGone reports that the request context ended, or a write failed, before the provider
// finished its answer.
var errCallerGone = errors.New("fakeprovider: caller went away")

// keepAliveLine is the SSE comment interleaved between frames by Behavior.KeepAlive.
var keepAliveLine = []byte(": keep-alive\n\n")

// sseWriter writes and flushes stream frames, honouring KeepAlive and SplitWrites.
type sseWriter struct {
	w         http.ResponseWriter
	rc        *http.ResponseController
	ctx       context.Context
	keepAlive bool
	split     bool
	written   int // frames written so far
}

// newSSEWriter sets the event-stream headers (not yet sent).
func newSSEWriter(ctx context.Context, w http.ResponseWriter, b Behavior) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	return &sseWriter{w: w, rc: http.NewResponseController(w), ctx: ctx, keepAlive: b.KeepAlive, split: b.SplitWrites}
}

// start sends the 200 status and the headers now.
func (s *sseWriter) start() error {
	s.w.WriteHeader(http.StatusOK)
	return s.flush()
}

// flush flushes what was written; a failure means the caller went away.
func (s *sseWriter) flush() error {
	if err := s.rc.Flush(); err != nil {
		return errCallerGone
	}
	return nil
}

// write writes p and flushes it.
func (s *sseWriter) write(p []byte) error {
	if _, err := s.w.Write(p); err != nil {
		return errCallerGone
	}
	return s.flush()
}

// frame writes one frame (a keep-alive comment first when asked and it is not the first frame),
// in two flushed halves when SplitWrites is set.
func (s *sseWriter) frame(p []byte) error {
	if s.keepAlive && s.written > 0 {
		if err := s.write(keepAliveLine); err != nil {
			return err
		}
	}
	s.written++
	if s.split && len(p) > 1 {
		if err := s.write(p[:len(p)/2]); err != nil {
			return err
		}
		p = p[len(p)/2:]
	}
	return s.write(p)
}

// wait waits d, or returns errCallerGone when the request context ends first.
func wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		if ctx.Err() != nil {
			return errCallerGone
		}
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return errCallerGone
	}
}

// streamUntil writes fs, waiting gap before each content delta. With limit >= 0 it stops right
// after the limit-th content delta (right after the preamble when limit is 0) and reports
// stopped = true; with limit < 0 it writes every frame.
func (s *sseWriter) streamUntil(fs frames, gap time.Duration, limit int) (stopped bool, err error) {
	sent := 0
	for i, f := range fs.list {
		if limit >= 0 && sent == limit && i >= fs.preamble {
			return true, nil
		}
		if f.delta {
			if err := wait(s.ctx, gap); err != nil {
				return false, err
			}
			sent++
		}
		if err := s.frame(f.data); err != nil {
			return false, err
		}
	}
	return false, nil
}
