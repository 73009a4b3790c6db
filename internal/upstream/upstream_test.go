package upstream

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/failure"
)

// pipeProvider is an in-memory provider: every dial gets one end of a net.Pipe, and serve runs
// on the other end. It works inside a synctest bubble, where time is virtual.
func pipeProvider(t *testing.T, serve func(c net.Conn, req *http.Request)) func(context.Context, string, string) (net.Conn, error) {
	return func(ctx context.Context, _, _ string) (net.Conn, error) {
		client, srv := net.Pipe()
		go func() {
			defer srv.Close()
			req, err := http.ReadRequest(bufio.NewReader(srv))
			if err != nil {
				return
			}
			_, _ = io.Copy(io.Discard, req.Body)
			serve(srv, req)
		}()
		return client, nil
	}
}

func hang(c net.Conn, _ *http.Request) { _, _ = io.Copy(io.Discard, c) } // never answers; ends when the client closes

func testDeployment(d catalog.Dialect) *catalog.Deployment {
	return &catalog.Deployment{Name: "d", Provider: "p", Dialect: d, BaseURL: "http://provider.test/v1", APIKey: "sk-house"}
}

// R-FAIL-5, R-CIRCUIT-5: with the default deadlines, a provider that never sends headers is an
// upstream_timeout marked as a hang after exactly 20 s on a stream and 60 s otherwise.
func TestHeadersDeadlineDefaults(t *testing.T) {
	for _, tc := range []struct {
		stream bool
		want   time.Duration
	}{{true, 20 * time.Second}, {false, 60 * time.Second}} {
		synctest.Test(t, func(t *testing.T) {
			c := New(testDeployment(catalog.OpenAI), Deadlines{Dial: pipeProvider(t, hang)})
			defer c.Close()
			start := time.Now()
			_, err := c.Send(context.Background(), catalog.ProtocolModel, []byte(`{}`), tc.stream, "")
			if got := time.Since(start); got != tc.want {
				t.Errorf("stream=%v: failed after %v, want %v", tc.stream, got, tc.want)
			}
			fe := failure.From(err)
			if fe == nil || fe.Class != failure.UpstreamTimeout || !fe.Hang {
				t.Fatalf("stream=%v: %v, want a hang (upstream_timeout)", tc.stream, err)
			}
		})
	}
}

// R-FAIL-11: the caller's cancellation ends the call at once, as cancelled, not as a hang.
func TestCancelIsNotAHang(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := New(testDeployment(catalog.OpenAI), Deadlines{Dial: pipeProvider(t, hang)})
		defer c.Close()
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(3*time.Second, cancel)
		start := time.Now()
		_, err := c.Send(ctx, catalog.ProtocolModel, []byte(`{}`), true, "")
		if got := time.Since(start); got != 3*time.Second {
			t.Errorf("returned after %v, want 3s", got)
		}
		if fe := failure.From(err); fe.Class != failure.Cancelled || fe.Hang {
			t.Fatalf("%+v, want cancelled", fe)
		}
	})
}

// The idle deadline: headers then silence is a hang after stream_idle, and every read re-arms it.
func TestStreamIdleDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		serve := func(c net.Conn, _ *http.Request) {
			_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
			for range 3 { // three keep-alives 5 s apart, then silence
				time.Sleep(5 * time.Second)
				_, _ = io.WriteString(c, "e\r\n: keep-alive\n\n\r\n")
			}
			_, _ = io.Copy(io.Discard, c)
		}
		c := New(testDeployment(catalog.OpenAI), Deadlines{StreamIdle: 10 * time.Second, Dial: pipeProvider(t, serve)})
		defer c.Close()
		ctx := context.Background()
		call, err := c.Send(ctx, catalog.ProtocolModel, []byte(`{}`), true, "")
		if err != nil {
			t.Fatal(err)
		}
		defer call.Close()
		start := time.Now()
		_, err = io.Copy(io.Discard, call.Body)
		if got := time.Since(start); got != 25*time.Second { // 15 s of keep-alives + 10 s of silence
			t.Errorf("idle deadline fired after %v, want 25s", got)
		}
		fe := failure.From(call.Err(ctx, err))
		if fe.Class != failure.UpstreamTimeout {
			t.Fatalf("%+v", fe)
		}
	})
}

// Upstream headers: the deployment's credential in its dialect's header, the deliberate
// anthropic-version, the caller's anthropic-beta; nothing of the caller's credentials.
func TestUpstreamHeaders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		got := make(chan http.Header, 1)
		serve := func(c net.Conn, req *http.Request) {
			got <- req.Header
			_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
		}
		c := New(testDeployment(catalog.Anthropic), Deadlines{Dial: pipeProvider(t, serve)})
		defer c.Close()
		call, err := c.Send(context.Background(), catalog.ProtocolModel, []byte(`{}`), false, "tools-2024")
		if err != nil {
			t.Fatal(err)
		}
		call.Close()
		h := <-got
		if h.Get("X-Api-Key") != "sk-house" || h.Get("Authorization") != "" || h.Get("Anthropic-Version") != AnthropicVersion ||
			h.Get("Anthropic-Beta") != "tools-2024" {
			t.Fatalf("headers %v", h)
		}
	})
}

// R-CIRCUIT-5: on a stream, the first-output deadline runs from the headers; reads that the
// caller does not report as output (keep-alives) do not extend it, and missing it is a hang.
// Once Output is called, only the idle deadline applies.
func TestFirstOutputDeadline(t *testing.T) {
	for _, output := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			serve := func(c net.Conn, _ *http.Request) {
				_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
				for range 20 { // a keep-alive every 5 s for 100 s, then silence
					time.Sleep(5 * time.Second)
					if _, err := io.WriteString(c, "e\r\n: keep-alive\n\n\r\n"); err != nil {
						return
					}
				}
				_, _ = io.Copy(io.Discard, c)
			}
			c := New(testDeployment(catalog.OpenAI), Deadlines{StreamIdle: 10 * time.Second, Dial: pipeProvider(t, serve)})
			defer c.Close()
			ctx := context.Background()
			call, err := c.Send(ctx, catalog.ProtocolModel, []byte(`{}`), true, "")
			if err != nil {
				t.Fatal(err)
			}
			if output {
				call.Output()
			}
			start := time.Now()
			_, err = io.Copy(io.Discard, call.Body)
			fe := failure.From(call.Err(ctx, err))
			want, msg := 30*time.Second, "first-output"
			if output {
				want, msg = 110*time.Second, "in time" // the keep-alives, then stream_idle
			}
			if got := time.Since(start); got != want {
				t.Errorf("output=%v: failed after %v, want %v", output, got, want)
			}
			if fe.Class != failure.UpstreamTimeout || !fe.Hang || !strings.Contains(fe.Msg, msg) {
				t.Errorf("output=%v: %+v", output, fe)
			}
			call.Close()
			time.Sleep(10 * time.Second) // the provider's next write fails: it returns
		})
	}
}
