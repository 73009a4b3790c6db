package fakeprovider

import (
	"bytes"
	"net/http"
	"strconv"
	"strings"
)

// platformWriter sits between a platform emulator (Vertex, Azure) and the Provider it wraps:
// a successful event stream goes through as it is written (after prefix, and with each write
// passed through edit when set), and every other answer is held back whole, so that the
// platform can rewrite it into its own shape (finish) before anything is sent.
type platformWriter struct {
	w      http.ResponseWriter
	status int
	hold   bool
	buf    bytes.Buffer
	// prefix is written once, right after the headers of a 200 event stream.
	prefix []byte
	// edit, when set, rewrites each write of a 200 event stream.
	edit func([]byte) []byte
}

func (pw *platformWriter) Header() http.Header { return pw.w.Header() }

func (pw *platformWriter) WriteHeader(status int) {
	if pw.status != 0 {
		return
	}
	pw.status = status
	if status == http.StatusOK && strings.HasPrefix(pw.w.Header().Get("Content-Type"), "text/event-stream") {
		pw.w.WriteHeader(status)
		if len(pw.prefix) > 0 {
			_, _ = pw.w.Write(pw.prefix) // a failed write surfaces on the next one
		}
		return
	}
	pw.hold = true
}

func (pw *platformWriter) Write(b []byte) (int, error) {
	if pw.status == 0 {
		pw.WriteHeader(http.StatusOK)
	}
	if pw.hold {
		return pw.buf.Write(b)
	}
	if pw.edit != nil {
		if _, err := pw.w.Write(pw.edit(b)); err != nil {
			return 0, err
		}
		return len(b), nil
	}
	return pw.w.Write(b)
}

// FlushError flushes a stream that goes through; a held answer is flushed by finish.
func (pw *platformWriter) FlushError() error {
	if pw.hold || pw.status == 0 {
		return nil
	}
	return http.NewResponseController(pw.w).Flush()
}

// Unwrap lets http.ResponseController reach the connection (Hijack for KindReset).
func (pw *platformWriter) Unwrap() http.ResponseWriter { return pw.w }

// finish sends a held answer, rewritten by rewrite (which may change the headers it is given
// and returns the status and body to send); nothing when the answer went through already.
func (pw *platformWriter) finish(rewrite func(status int, h http.Header, body []byte) (int, []byte)) {
	if !pw.hold {
		return
	}
	status, body := pw.status, pw.buf.Bytes()
	if rewrite != nil {
		status, body = rewrite(status, pw.w.Header(), body)
	}
	pw.w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	pw.w.WriteHeader(status)
	_, _ = pw.w.Write(body) // a failed write only means the caller left
}

// abort sends what a held answer had written before the wrapped Provider dropped the
// connection (KindCut on a non-stream request: half a body), so that the caller still sees the
// headers and then a cut.
func (pw *platformWriter) abort() {
	if !pw.hold {
		return
	}
	pw.w.WriteHeader(pw.status)
	_, _ = pw.w.Write(pw.buf.Bytes())
	_ = http.NewResponseController(pw.w).Flush()
}

// serveWrapped serves r with the Provider p through pw, then sends pw's held answer through
// rewrite. A handler abort (a scripted cut) is passed on after abort.
func serveWrapped(p *Provider, pw *platformWriter, r *http.Request, rewrite func(int, http.Header, []byte) (int, []byte)) {
	defer func() {
		if v := recover(); v != nil {
			pw.abort()
			panic(v)
		}
	}()
	p.ServeHTTP(pw, r)
	pw.finish(rewrite)
}
