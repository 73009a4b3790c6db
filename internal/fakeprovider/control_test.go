package fakeprovider

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/switchyard-gw/switchyard/internal/catalog"
)

func TestBehaviorJSON(t *testing.T) {
	b := Behavior{Kind: KindStatus, Status: 429, ErrorType: "tokens", ErrorCode: "rate_limit_exceeded", Message: "m",
		RetryAfter: 5, After: 2, Delay: 1500 * time.Millisecond, Text: "t", Deltas: 4, ToolCall: true,
		ParallelToolCalls: 2, BigArgumentBytes: 10, CachedTokens: 3, KeepAlive: true, SplitWrites: true}
	raw, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"kind", "status", "error_type", "error_code", "message", "retry_after", "after", "delay",
		"text", "deltas", "tool_call", "parallel_tool_calls", "big_argument_bytes", "cached_tokens", "keep_alive", "split_writes"} {
		if !gjson.GetBytes(raw, key).Exists() {
			t.Errorf("field %q missing from %s", key, raw)
		}
	}
	if got := gjson.GetBytes(raw, "delay").String(); got != "1.5s" {
		t.Errorf("delay = %q, want a Go duration string", got)
	}
	var back Behavior
	if err := json.Unmarshal(raw, &back); err != nil || back != b {
		t.Errorf("round trip = %+v, %v", back, err)
	}
	for _, bad := range []string{
		`{"kind":"explode"}`, `{"status":99}`, `{"delay":"soon"}`, `{"delay":"-1s"}`, `{"after":-1}`, `{"kindd":"hang"}`,
	} {
		if err := json.Unmarshal([]byte(bad), &back); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// control calls the control API and decodes its JSON answer.
func control(t *testing.T, base, method, path, body string) (int, gjson.Result) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), method, base+path, strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, gjson.ParseBytes(raw)
}

func TestControlAPI(t *testing.T) {
	p := New("alpha", catalog.OpenAI)
	srv := serve(t, p)
	status, res := control(t, srv.URL, "POST", "/_fake/script",
		`{"behaviors":[{"kind":"status","status":503,"retry_after":2},{"kind":"slow_headers","delay":"1ms"}],"default":{"text":"fine"}}`)
	if status != 200 || res.Get("queued").Int() != 2 || res.Get("default.text").String() != "fine" {
		t.Fatalf("script: %d %s", status, res.Raw)
	}
	want := []int{503, 200, 200}
	for i, w := range want {
		resp := post(t, srv, "/v1/chat/completions", `{"model":"m","messages":[]}`,
			http.Header{"Authorization": {"Bearer sk-secret-abcdef123456"}})
		if resp.StatusCode != w {
			t.Errorf("request %d: %d, want %d", i, resp.StatusCode, w)
		}
		if i == 2 && gjson.GetBytes(bodyOf(t, resp), "choices.0.message.content").String() != "fine" {
			t.Error("the default was not applied once the queue was empty")
		}
	}
	status, res = control(t, srv.URL, "GET", "/_fake/requests", "")
	if status != 200 || res.Get("hits").Int() != 3 || res.Get("requests.0.kind").String() != "status" ||
		res.Get("requests.1.kind").String() != "slow_headers" || res.Get("requests.0.body").Exists() {
		t.Errorf("requests: %s", res.Raw)
	}
	if auth := res.Get("requests.0.header.Authorization.0").String(); auth != "Bearer ****3456" {
		t.Errorf("Authorization shown as %q, want it masked", auth)
	}
	_, res = control(t, srv.URL, "GET", "/_fake/requests?body=1", "")
	if res.Get("requests.0.body.model").String() != "m" {
		t.Errorf("body=1: %s", res.Raw)
	}
	for _, bad := range []string{`{"behaviors":[{"kind":"nope"}]}`, `{"behaviours":[]}`, `not json`} {
		if status, res := control(t, srv.URL, "POST", "/_fake/script", bad); status != 400 || res.Get("error").String() == "" {
			t.Errorf("%s: %d %s", bad, status, res.Raw)
		}
	}
	if status, _ := control(t, srv.URL, "POST", "/_fake/reset", ""); status != 200 || p.Hits() != 0 {
		t.Errorf("reset: %d, hits %d", status, p.Hits())
	}
	if _, res := control(t, srv.URL, "GET", "/_fake/script", ""); res.Get("queued").Int() != 0 || res.Get("default.text").Exists() {
		t.Errorf("after reset: %s", res.Raw)
	}
	if status, _ := control(t, srv.URL, "GET", "/_fake/reset", ""); status != 405 {
		t.Errorf("GET /_fake/reset: %d", status)
	}
}

func TestListenAndServe(t *testing.T) {
	if err := ListenAndServe(t.Context(), "127.0.0.1:0", "grpc", nil); err == nil {
		t.Error("unknown dialect accepted")
	}
	ctx, cancel := context.WithCancel(t.Context())
	logged := make(chan string, 1)
	errc := make(chan error, 1)
	go func() {
		errc <- ListenAndServe(ctx, "127.0.0.1:0", catalog.Anthropic, func(f string, a ...any) { logged <- fmt.Sprintf(f, a...) })
	}()
	addr, ok := strings.CutPrefix(<-logged, "listening on ")
	if !ok {
		t.Fatal("no listening line")
	}
	if status, res := control(t, "http://"+addr, "GET", "/v1/models", ""); status != 200 || res.Get("data.0.id").String() != "fake-anthropic-model" {
		t.Errorf("models: %d %s", status, res.Raw)
	}
	cancel()
	if err := <-errc; err != nil {
		t.Errorf("ListenAndServe = %v", err)
	}
	http.DefaultClient.CloseIdleConnections()
}

// TestServeShutdownEndsHangs checks that a stream left hanging does not hold up Serve's shutdown
// and is dropped rather than completed.
func TestServeShutdownEndsHangs(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := New("x", catalog.OpenAI)
	p.Script(Behavior{Kind: KindHeadersHang})
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() { errc <- Serve(ctx, ln, p) }()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	req, _ := http.NewRequestWithContext(t.Context(), "POST", "http://"+ln.Addr().String()+"/v1/chat/completions",
		strings.NewReader(streamBody(dialects[0].body)))
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// The headers arrived: the handler is now hanging.
	cancel()
	start := time.Now()
	if err := <-errc; err != nil {
		t.Errorf("Serve = %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Serve took %v to shut down", d)
	}
	if _, err := io.ReadAll(resp.Body); err == nil {
		t.Error("the hanging stream ended cleanly instead of being dropped")
	}
}

func TestRequestsRing(t *testing.T) {
	p := New("x", catalog.OpenAI)
	for i := range maxRecorded + 3 {
		p.mu.Lock()
		p.record(Request{Seq: int64(i + 1)})
		p.mu.Unlock()
	}
	reqs := p.Requests()
	if p.Hits() != maxRecorded+3 || len(reqs) != maxRecorded || reqs[0].Seq != 4 || reqs[len(reqs)-1].Seq != maxRecorded+3 {
		t.Errorf("hits %d, %d kept, first %d last %d", p.Hits(), len(reqs), reqs[0].Seq, reqs[len(reqs)-1].Seq)
	}
}
