package server

import (
	"bytes"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/failure"
	"github.com/switchyard-gw/switchyard/internal/relay"
)

// HTTPServer returns the http.Server to serve s with, on the listener s.Listener wraps:
//
//	hs := srv.HTTPServer()
//	err := hs.Serve(srv.Listener(ln))
//
// Its deadlines: 30 s for a request's header block (from its first byte), 120 s for an idle
// kept-alive connection; the body's is server.body_timeout (readBody); nothing bounds the time
// of an answer (a stream). Its header limit is server.max_header_bytes; a larger header block
// is answered in the caller's dialect by the connections of s.Listener (see conn). Set
// BaseContext and the like on the result as needed; keep ConnState.
func (s *Server) HTTPServer() *http.Server {
	return &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    s.maxHeader,
		ConnState:         connState,
	}
}

// Listener wraps ln so that its connections answer an oversized header block in the caller's
// dialect (see conn). Serve the http.Server of HTTPServer on it.
func (s *Server) Listener(ln net.Listener) net.Listener { return &listener{Listener: ln, s: s} }

type listener struct {
	net.Listener
	s *Server
}

func (l *listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &conn{Conn: c, s: l.s, armed: true}, nil
}

// go431 is the whole answer net/http writes itself, before any handler runs, to a request
// whose header block passes http.Server.MaxHeaderBytes (net/http server.go, conn.serve; one
// Write of exactly these bytes, then it closes the connection). TestHeaderBlockTooLarge fails
// if a Go release changes it.
const go431 = "HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n431 Request Header Fields Too Large"

// conn is a server connection that answers an oversized header block in the caller's dialect,
// with a request id, instead of net/http's plain-text 431.
//
// Why a connection wrapper: net/http reads the header block and answers 431 itself before any
// handler exists, so no handler (nor http.Server option) can shape that answer; and raising
// MaxHeaderBytes to enforce the limit in a front handler would only move the plain 431 to a
// larger block while holding more memory per connection. So net/http keeps enforcing the
// limit (its memory bound is unchanged), and conn replaces that one answer on its way out: a
// Write of exactly go431 becomes a 431 with a JSON error body (request_too_large) of the
// dialect of the request's path (/v1/messages... is Anthropic, anything else OpenAI) and
// x-request-id. The path is read from the request line, the first bytes read after the
// connection opened or went idle (ConnState, set by HTTPServer); it costs one flag test per Read
// and one length compare per Write.
type conn struct {
	net.Conn
	s *Server
	// armed is set while the bytes read are the start of a request (a new or idle connection);
	// line holds up to len(line) of them, until the end of the request line.
	armed bool
	n     int
	line  [256]byte
}

func (c *conn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if c.armed && n > 0 {
		k := copy(c.line[c.n:], p[:n])
		if bytes.IndexByte(p[:k], '\n') >= 0 || c.n+k == len(c.line) {
			c.armed = false
		}
		c.n += k
	}
	return n, err
}

func (c *conn) Write(p []byte) (int, error) {
	if len(p) == len(go431) && string(p) == go431 {
		if _, err := c.Conn.Write(c.s.append431(nil, c.line[:c.n])); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// CloseWrite half-closes the connection when the underlying one can (net/http uses it to let a
// client read the 431 before the connection closes).
func (c *conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// connState re-arms a connection's request-line capture when it goes idle between requests.
func connState(nc net.Conn, st http.ConnState) {
	if st != http.StateIdle {
		return
	}
	if c, ok := nc.(*conn); ok {
		c.armed, c.n = true, 0
	}
}

// append431 appends the whole 431 response to a request whose request line (or its start) is
// line: the header block is over server.max_header_bytes.
func (s *Server) append431(dst, line []byte) []byte {
	d := catalog.OpenAI
	if anthropicTarget(line) {
		d = catalog.Anthropic
	}
	rid := newRequestID()
	fe := &failure.Error{Class: failure.RequestTooLarge,
		Msg: "the request's header block is larger than the gateway's limit of " + strconv.Itoa(s.maxHeader) + " bytes"}
	body := relay.CodecFor(d).AppendErrorBody(nil, fe, rid)
	s.logf("request %s: header block over %d bytes, answered 431", rid, s.maxHeader)
	dst = append(dst, "HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Type: application/json\r\nX-Request-Id: "...)
	dst = append(dst, rid...)
	dst = append(dst, "\r\nRequest-Id: "...)
	dst = append(dst, rid...)
	dst = append(dst, "\r\nX-Switchyard-Error-Code: "...)
	dst = append(dst, fe.Class...)
	dst = append(dst, "\r\nX-Should-Retry: false\r\nContent-Length: "...)
	dst = strconv.AppendInt(dst, int64(len(body)), 10)
	dst = append(dst, "\r\nConnection: close\r\n\r\n"...)
	return append(dst, body...)
}

// anthropicTarget reports whether a request line's target is an Anthropic path (/v1/messages,
// /v1/messages/count_tokens): the token after the first space. A line missing its first bytes
// still works ("ST /v1/messages HTTP/1.1").
func anthropicTarget(line []byte) bool {
	i := bytes.IndexByte(line, ' ')
	if i < 0 {
		return false
	}
	return bytes.HasPrefix(line[i+1:], []byte("/v1/messages"))
}
