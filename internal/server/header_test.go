package server_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchyard-gw/switchyard/internal/catalog"
)

// TestHeaderBlockTooLarge: a header block over server.max_header_bytes (1 MiB by default) is
// 431 with a JSON error (request_too_large) in the dialect of the request's path and an
// x-request-id, not net/http's plain text; on a kept-alive connection too.
func TestHeaderBlockTooLarge(t *testing.T) {
	t.Parallel()
	// net/http's own answer is still exactly what the gateway's connection replaces.
	pin := &http.Server{Handler: http.NotFoundHandler(), MaxHeaderBytes: 4096}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = pin.Serve(ln) }()
	t.Cleanup(func() { _ = pin.Close() })
	raw := hyOversized(t, ln.Addr().String(), "/v1/messages", 16<<10)
	if want := "HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n431 Request Header Fields Too Large"; raw != want {
		t.Fatalf("net/http's 431 changed (update go431 in listen.go):\n%q", raw)
	}

	g := startTwo(t)
	for _, d := range []catalog.Dialect{catalog.OpenAI, catalog.Anthropic} {
		t.Run(string(d), func(t *testing.T) {
			raw := hyOversized(t, strings.TrimPrefix(g.URL, "http://"), icPath(d), 1100<<10)
			resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(raw)), nil)
			if err != nil {
				t.Fatalf("%v in %q", err, raw)
			}
			body, _ := io.ReadAll(resp.Body)
			native := "invalid_request_error"
			if d == catalog.Anthropic {
				native = "request_too_large"
			}
			icCheckError(t, d, resp, body, 431, "request_too_large", native)
			if resp.Header.Get("Content-Type") != "application/json" || resp.Header.Get("Request-Id") != resp.Header.Get("X-Request-Id") {
				t.Errorf("headers %v", resp.Header)
			}
		})
	}
	t.Run("kept-alive", func(t *testing.T) {
		c := hyDial(t, g)
		br := bufio.NewReader(c)
		if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: gateway\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		if resp, b := hyRead(t, c, br); resp.StatusCode != 200 {
			t.Fatalf("healthz %d %s", resp.StatusCode, b)
		}
		var wg sync.WaitGroup
		wg.Go(func() {
			_, _ = io.WriteString(c, "POST /v1/messages HTTP/1.1\r\nHost: gateway\r\nX-Pad: "+strings.Repeat("a", 1100<<10)+"\r\n\r\n")
		})
		resp, body := hyRead(t, c, br)
		_ = c.Close()
		wg.Wait()
		icCheckError(t, catalog.Anthropic, resp, body, 431, "request_too_large", "request_too_large")
	})
}

// hyOversized sends a request to path on addr whose header block has pad bytes of one header
// and returns everything the server answered before closing.
func hyOversized(t *testing.T, addr, path string, pad int) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer c.Close()
	wg.Go(func() {
		_, _ = io.WriteString(c, "POST "+path+" HTTP/1.1\r\nHost: gateway\r\nX-Pad: "+strings.Repeat("a", pad)+"\r\n\r\n")
	})
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	b, err := io.ReadAll(c)
	if err != nil && len(b) == 0 {
		t.Fatalf("reading the answer: %v", err)
	}
	return string(b)
}
