package fakeprovider

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchyard-gw/switchyard/internal/catalog"
)

// Timing tests run the handler directly inside a synctest bubble (no network), so delays and
// hangs are measured on the bubble's fake clock.

// serveDirect runs p.ServeHTTP on a recorder and swallows the http.ErrAbortHandler panic with
// which the provider drops a connection; aborted reports whether it happened.
func serveDirect(p *Provider, req *http.Request) (rec *httptest.ResponseRecorder, aborted bool) {
	rec = httptest.NewRecorder()
	defer func() {
		if v := recover(); v != nil {
			if v != http.ErrAbortHandler {
				panic(v)
			}
			aborted = true
		}
	}()
	p.ServeHTTP(rec, req)
	return rec, false
}

func modelRequest(ctx context.Context, d catalog.Dialect, stream bool) *http.Request {
	dc := dialects[0]
	if d == catalog.Anthropic {
		dc = dialects[1]
	}
	body := dc.body
	if stream {
		body = streamBody(body)
	}
	return httptest.NewRequestWithContext(ctx, http.MethodPost, dc.path, strings.NewReader(body))
}

func TestDelays(t *testing.T) {
	for _, tc := range []struct {
		name   string
		b      Behavior
		stream bool
		want   time.Duration
	}{
		{"slow_headers", Behavior{Kind: KindSlowHeaders, Delay: 3 * time.Second}, true, 3 * time.Second},
		{"slow_headers/nonstream", Behavior{Kind: KindSlowHeaders, Delay: 3 * time.Second}, false, 3 * time.Second},
		{"gap per delta", Behavior{Delay: 500 * time.Millisecond, Deltas: 4}, true, 2 * time.Second},
		{"gap per argument delta", Behavior{Delay: time.Second, ToolCall: true, Deltas: 2}, true, 2 * time.Second},
		{"nonstream waits once", Behavior{Delay: 500 * time.Millisecond, Deltas: 4}, false, 500 * time.Millisecond},
		{"cut waits for the deltas it sends", Behavior{Kind: KindTruncate, After: 1, Delay: time.Second}, true, time.Second},
	} {
		for _, d := range []catalog.Dialect{catalog.OpenAI, catalog.Anthropic} {
			t.Run(tc.name+"/"+string(d), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					p := New("x", d)
					p.Script(tc.b)
					start := time.Now()
					rec, aborted := serveDirect(p, modelRequest(t.Context(), d, tc.stream))
					if got := time.Since(start); got != tc.want || aborted || rec.Code != 200 {
						t.Errorf("took %v (want %v), aborted %v, status %d", got, tc.want, aborted, rec.Code)
					}
				})
			})
		}
	}
}

// TestHangsEndWithContext checks that hangs and waits return as soon as the request context ends,
// and that each is reported on Closed.
func TestHangsEndWithContext(t *testing.T) {
	for _, b := range []Behavior{
		{Kind: KindHang},
		{Kind: KindHeadersHang},
		{Kind: KindSlowHeaders, Delay: time.Hour},
		{Delay: time.Hour},
	} {
		t.Run(string(b.Kind), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := New("x", catalog.OpenAI)
				p.Script(b)
				ctx, cancel := context.WithCancel(t.Context())
				done := make(chan bool)
				go func() {
					_, aborted := serveDirect(p, modelRequest(ctx, catalog.OpenAI, true))
					done <- aborted
				}()
				synctest.Wait()
				select {
				case <-done:
					t.Fatal("returned before the context ended")
				default:
				}
				start := time.Now()
				cancel()
				if aborted := <-done; !aborted {
					t.Error("the connection was not dropped")
				}
				if time.Since(start) != 0 {
					t.Errorf("returned %v after the context ended", time.Since(start))
				}
				select {
				case r := <-p.Closed():
					if r.Seq != 1 {
						t.Errorf("closed %+v", r)
					}
				default:
					t.Error("not reported on Closed")
				}
			})
		})
	}
}

func TestClosedDoesNotBlock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New("x", catalog.OpenAI)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		for range closedBuffer + 5 {
			p.Script(Behavior{Kind: KindHang})
			serveDirect(p, modelRequest(ctx, catalog.OpenAI, false))
		}
		if len(p.Closed()) != closedBuffer {
			t.Errorf("Closed holds %d, want %d", len(p.Closed()), closedBuffer)
		}
	})
}

func TestSplit(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want []string
	}{
		{"Hello from x.", 3, []string{"Hell", "o fr", "om x."}},
		{"héllo", 5, []string{"h", "é", "l", "l", "o"}},
		{"ab", 5, []string{"a", "b"}},
		{"abc", 1, []string{"abc"}},
		{"{}", 3, []string{"{", "}"}},
	} {
		got := split(tc.s, tc.n)
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("split(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}

// BenchmarkStream measures one complete streamed answer through ServeHTTP (no network), the cost
// the provider adds to a load harness.
func BenchmarkStream(b *testing.B) {
	for _, d := range []catalog.Dialect{catalog.OpenAI, catalog.Anthropic} {
		b.Run(string(d), func(b *testing.B) {
			p := New("x", d)
			b.ReportAllocs()
			for b.Loop() {
				if _, aborted := serveDirect(p, modelRequest(b.Context(), d, true)); aborted {
					b.Fatal("aborted")
				}
				p.Reset()
			}
		})
	}
}
