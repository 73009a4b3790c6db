package server_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/fakeprovider"
)

// Request hygiene (issue 9 scope 4; docs/behaviour.md "Request limits"): raw TCP callers that
// trickle, truncate, garble or oversize their requests get a clear error in their dialect, and
// hold no memory once their request ends.

// hyDial opens a raw TCP connection to the gateway, closed at the end of the test.
func hyDial(t *testing.T, g *gateway) *net.TCPConn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(g.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c.(*net.TCPConn)
}

// hyHead is the request line and headers of a POST to path, ending in the blank line.
func hyHead(path string, hdr ...string) string {
	var b strings.Builder
	b.WriteString("POST " + path + " HTTP/1.1\r\nHost: gateway\r\nContent-Type: application/json\r\n")
	for _, h := range hdr {
		b.WriteString(h + "\r\n")
	}
	b.WriteString("\r\n")
	return b.String()
}

// hyRead reads one response from c (the body whole), failing after a generous 20 s: every case
// here must end long before.
func hyRead(t *testing.T, c net.Conn, br *bufio.Reader) (*http.Response, []byte) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	if br == nil {
		br = bufio.NewReader(c)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("reading the response: %v", err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the response body: %v", err)
	}
	resp.Body.Close()
	return resp, b
}

// hyWaitInflight waits (generously) until the gateway's in-flight body bytes are want.
func hyWaitInflight(t *testing.T, g *gateway, want int64) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for g.Srv.InflightBodyBytes() != want {
		if time.Now().After(deadline) {
			t.Fatalf("in-flight body bytes %d, want %d", g.Srv.InflightBodyBytes(), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// hyMetric waits until the gateway's /metrics has a sample line containing every one of parts.
func hyMetric(t *testing.T, g *gateway, parts ...string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, body := icGet(t, g.URL, "/metrics")
		if resp.StatusCode == 200 {
			for _, line := range strings.Split(string(body), "\n") {
				ok := true
				for _, p := range parts {
					ok = ok && strings.Contains(line, p)
				}
				if ok {
					return
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("/metrics never had a line with %q:\n%s", parts, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestBodyTimeout: a caller trickling its body one byte at a time past server.body_timeout gets
// 400 invalid_request in its dialect (audited) and its connection, goroutine and in-flight bytes
// are released; the deadline covers only the body: a kept-alive connection's next request and
// a stream longer than body_timeout are not cut.
func TestBodyTimeout(t *testing.T) {
	t.Parallel()
	g := startGateway(t, "server: {body_timeout: 300ms}\n"+twoDeployments, oa("oa-primary"), oa("oa-backup"), an("an-primary"), an("an-backup"))
	for _, d := range []catalog.Dialect{catalog.OpenAI, catalog.Anthropic} {
		t.Run(string(d), func(t *testing.T) {
			c := hyDial(t, g)
			if _, err := io.WriteString(c, hyHead(icPath(d), "Content-Length: 5000")+`{"model":`); err != nil {
				t.Fatal(err)
			}
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Go(func() { // one byte every 50 ms: the body would take minutes
				tick := time.NewTicker(50 * time.Millisecond)
				defer tick.Stop()
				for {
					select {
					case <-stop:
						return
					case <-tick.C:
						if _, err := c.Write([]byte(" ")); err != nil {
							return
						}
					}
				}
			})
			resp, body := hyRead(t, c, nil)
			close(stop)
			wg.Wait()
			icCheckError(t, d, resp, body, 400, "invalid_request", "invalid_request_error")
			if msg := hyMessage(d, body); !strings.Contains(msg, "not received in time") {
				t.Errorf("message %q", msg)
			}
			rec := g.generation(t, resp.Header.Get("X-Request-Id"))
			if rec.Status != 400 || rec.ErrorCode != "invalid_request" || len(rec.Attempts) != 0 {
				t.Errorf("audit %d %s, %d attempts", rec.Status, rec.ErrorCode, len(rec.Attempts))
			}
		})
	}
	hyWaitInflight(t, g, 0)

	t.Run("keep-alive and a long stream", func(t *testing.T) {
		g.Fakes["oa-primary"].Script(fakeprovider.Behavior{Text: "one two three four five six", Deltas: 6, Delay: 150 * time.Millisecond})
		c := hyDial(t, g)
		br := bufio.NewReader(c)
		body := icChatBody("gpt-4o-mini", true)
		if _, err := io.WriteString(c, hyHead("/v1/chat/completions", "Content-Length: "+strconv.Itoa(len(body)))+body); err != nil {
			t.Fatal(err)
		}
		resp, sse := hyRead(t, c, br) // ~900 ms of stream, three body timeouts
		if resp.StatusCode != 200 || !strings.Contains(string(sse), "data: [DONE]") {
			t.Fatalf("stream: %d %s", resp.StatusCode, sse)
		}
		var text strings.Builder
		for _, d := range icSSEData(t, sse) {
			text.WriteString(gjson.Get(d, "choices.0.delta.content").String())
		}
		if text.String() != "one two three four five six" {
			t.Fatalf("stream text %q", text.String())
		}
		time.Sleep(400 * time.Millisecond) // idle past body_timeout, then the same connection again
		body = icChatBody("gpt-4o-mini", false)
		if _, err := io.WriteString(c, hyHead("/v1/chat/completions", "Content-Length: "+strconv.Itoa(len(body)))+body); err != nil {
			t.Fatal(err)
		}
		if resp, b := hyRead(t, c, br); resp.StatusCode != 200 {
			t.Fatalf("second request on the kept-alive connection: %d %s", resp.StatusCode, b)
		}
	})
}

// hyMessage is the error message of an error body in dialect d.
func hyMessage(_ catalog.Dialect, body []byte) string {
	return gjson.GetBytes(body, "error.message").String()
}

const hyCapYAML = `
server: {max_inflight_body_bytes: 1048576, max_body_bytes: 4194304}
`

// TestInflightBodyCap: server.max_inflight_body_bytes bounds the bytes all bodies in flight
// hold. A request whose Content-Length does not fit is refused at once, before its body is
// read, with 503 gateway_error, retry-after and x-switchyard-limit-kind inflight_body in its
// dialect; a body alone over the cap is 413; a chunked body is refused when it reaches the cap;
// small requests still pass; every byte is given back when the requests end.
func TestInflightBodyCap(t *testing.T) {
	t.Parallel()
	g := startGateway(t, hyCapYAML+twoDeployments, oa("oa-primary"), oa("oa-backup"), an("an-primary"), an("an-backup"))

	// A holds 700000 of the 1 MiB: its body is announced, never sent.
	holder := hyDial(t, g)
	if _, err := io.WriteString(holder, hyHead("/v1/chat/completions", "Content-Length: 700000")+`{"model":"gpt-4o-mini",`); err != nil {
		t.Fatal(err)
	}
	hyWaitInflight(t, g, 700000)
	// A reload does not forget it: the bodies in flight are counted across snapshots.
	cat, err := catalog.New(g.Srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Srv.Reload(g.Srv.Config(), cat); err != nil {
		t.Fatal(err)
	}

	for _, d := range []catalog.Dialect{catalog.OpenAI, catalog.Anthropic} {
		c := hyDial(t, g) // its 600000 bytes do not fit: refused without sending one
		if _, err := io.WriteString(c, hyHead(icPath(d), "Content-Length: 600000")); err != nil {
			t.Fatal(err)
		}
		resp, body := hyRead(t, c, nil)
		native := "api_error"
		if d == catalog.Anthropic {
			native = "overloaded_error"
		}
		icCheckError(t, d, resp, body, 503, "gateway_error", native)
		if resp.Header.Get("Retry-After") != "1" || resp.Header.Get("X-Switchyard-Limit-Kind") != "inflight_body" {
			t.Errorf("%s: retry-after %q, limit kind %q", d, resp.Header.Get("Retry-After"), resp.Header.Get("X-Switchyard-Limit-Kind"))
		}
		rec := g.generation(t, resp.Header.Get("X-Request-Id"))
		if rec.Status != 503 || rec.ErrorCode != "gateway_error" {
			t.Errorf("%s: audit %d %s", d, rec.Status, rec.ErrorCode)
		}
	}

	// A body alone over the cap (under max_body_bytes) is 413.
	c := hyDial(t, g)
	if _, err := io.WriteString(c, hyHead("/v1/chat/completions", "Content-Length: 2000000")); err != nil {
		t.Fatal(err)
	}
	resp, body := hyRead(t, c, nil)
	icCheckError(t, catalog.OpenAI, resp, body, 413, "request_too_large", "invalid_request_error")

	// A chunked body is charged as it arrives: 400000 bytes do not fit in the 348576 left.
	c = hyDial(t, g)
	var wg sync.WaitGroup
	wg.Go(func() {
		_, _ = io.WriteString(c, hyHead("/v1/chat/completions", "Transfer-Encoding: chunked")+
			fmt.Sprintf("%x\r\n", 400000)+strings.Repeat(" ", 400000)+"\r\n0\r\n\r\n")
	})
	resp, body = hyRead(t, c, nil)
	_ = c.Close()
	wg.Wait()
	icCheckError(t, catalog.OpenAI, resp, body, 503, "gateway_error", "api_error")

	// Small requests still pass, through both SDKs' surfaces.
	if resp, b := icCall(t, g.URL, catalog.OpenAI, "gpt-4o-mini", false); resp.StatusCode != 200 {
		t.Fatalf("small request: %d %s", resp.StatusCode, b)
	}
	if resp, b := icCall(t, g.URL, catalog.Anthropic, "claude-haiku-4-5", false); resp.StatusCode != 200 {
		t.Fatalf("small request: %d %s", resp.StatusCode, b)
	}
	hyWaitInflight(t, g, 700000) // the refused and the served gave back all they took

	_ = holder.Close()
	hyWaitInflight(t, g, 0)

	// Concurrent 300 KB bodies over a 1 MiB cap: each is served or refused with retry-after,
	// and the counter returns to 0.
	big := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"` + strings.Repeat("x", 300000) + `"}]}`
	var mu sync.Mutex
	statuses := map[int]int{}
	for range 8 {
		wg.Go(func() {
			resp, err := http.Post(g.URL+"/v1/chat/completions", "application/json", strings.NewReader(big))
			if err != nil {
				t.Errorf("post: %v", err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 503 && resp.Header.Get("Retry-After") == "" {
				t.Errorf("503 without retry-after")
			}
			mu.Lock()
			statuses[resp.StatusCode]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if statuses[200]+statuses[503] != 8 || statuses[200] == 0 {
		t.Errorf("statuses %v, want only 200 and 503, some 200", statuses)
	}
	hyWaitInflight(t, g, 0)
	hyMetric(t, g, "switchyard_inflight_body_bytes 0")
}

// TestMalformedFraming: a body that cannot be read (bad chunked framing; shorter than its
// Content-Length, then the caller's sending side closed) from a caller still connected is 400
// invalid_request "malformed or truncated" in its dialect, audited as such, never an empty 200;
// only a caller that is gone (its connection reset) is cancelled and gets nothing.
func TestMalformedFraming(t *testing.T) {
	t.Parallel()
	g := startTwo(t)
	cases := []struct {
		name string
		d    catalog.Dialect
		send func(c *net.TCPConn) error
	}{
		{"bad chunk size", catalog.OpenAI, func(c *net.TCPConn) error {
			_, err := io.WriteString(c, hyHead("/v1/chat/completions", "Transfer-Encoding: chunked")+"zz\r\n{}\r\n0\r\n\r\n")
			return err
		}},
		{"bad chunk size", catalog.Anthropic, func(c *net.TCPConn) error {
			_, err := io.WriteString(c, hyHead("/v1/messages", "Transfer-Encoding: chunked")+"5\r\n{\"mo\"XX0\r\n\r\n")
			return err
		}},
		{"truncated", catalog.OpenAI, func(c *net.TCPConn) error {
			if _, err := io.WriteString(c, hyHead("/v1/chat/completions", "Content-Length: 500")+`{"model":"gpt-4o-mini"`); err != nil {
				return err
			}
			return c.CloseWrite()
		}},
		{"truncated chunked", catalog.Anthropic, func(c *net.TCPConn) error {
			if _, err := io.WriteString(c, hyHead("/v1/messages", "Transfer-Encoding: chunked")+"100\r\n{\"model\""); err != nil {
				return err
			}
			return c.CloseWrite()
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name+"/"+string(tc.d), func(t *testing.T) {
			c := hyDial(t, g)
			if err := tc.send(c); err != nil {
				t.Fatal(err)
			}
			resp, body := hyRead(t, c, nil)
			icCheckError(t, tc.d, resp, body, 400, "invalid_request", "invalid_request_error")
			if msg := hyMessage(tc.d, body); msg != "the request body could not be read: malformed or truncated" {
				t.Errorf("message %q", msg)
			}
			rec := g.generation(t, resp.Header.Get("X-Request-Id"))
			if rec.Status != 400 || rec.ErrorCode != "invalid_request" {
				t.Errorf("audit %d %s", rec.Status, rec.ErrorCode)
			}
		})
	}

	t.Run("gone", func(t *testing.T) {
		c := hyDial(t, g)
		if _, err := io.WriteString(c, hyHead("/v1/chat/completions", "Content-Length: 500")+`{"model":`); err != nil {
			t.Fatal(err)
		}
		hyWaitInflight(t, g, 500) // the handler is reading the body
		_ = c.SetLinger(0)        // close with a reset: the caller is gone
		_ = c.Close()
		hyMetric(t, g, "switchyard_requests_total{", `error_code="cancelled"`, `status="499"`, `surface="openai.chat"`, "} 1")
		hyWaitInflight(t, g, 0)
	})
	icNoHits(t, g)
}
