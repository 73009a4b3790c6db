package server_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/switchyard-gw/switchyard/internal/audit"
)

// crashNesting is 12 million `[` and their closers: 24 MB, under the default body cap. Before
// the depth gate, gjson's recursive validator overflowed the goroutine stack on it, which kills
// the whole process (issue 9).
var crashNesting = strings.Repeat("[", 12_000_000) + strings.Repeat("]", 12_000_000)

// TestDeepRequestBodyRefused: a request body nested deeper than 128 levels gets a clean 400
// invalid_request in the caller's dialect naming the limit, on every model surface, nothing is
// sent upstream, and the gateway serves the next request.
func TestDeepRequestBodyRefused(t *testing.T) {
	g := startTwo(t)
	for _, tc := range []struct {
		s    surface
		path string
		body string
	}{
		{oaSurface, "/v1/chat/completions", `{"model":"gpt-4o-mini","messages":` + crashNesting + `}`},
		{anSurface, "/v1/messages", `{"model":"claude-haiku-4-5","max_tokens":5,"messages":` + crashNesting + `}`},
		{oaSurface, "/v1/responses", `{"model":"gpt-4o-mini","input":` + crashNesting + `}`},
		{oaSurface, "/v1/embeddings", `{"model":"gpt-4o-mini","input":` + crashNesting + `}`},
		{anSurface, "/v1/messages/count_tokens", `{"model":"claude-haiku-4-5","messages":` + crashNesting + `}`},
	} {
		s := tc.s
		s.path = tc.path
		resp, body := s.post(t, g, tc.body)
		if resp.StatusCode != http.StatusBadRequest || errorType(body) != "invalid_request" {
			t.Fatalf("%s: %d %.300s, want 400 invalid_request", tc.path, resp.StatusCode, body)
		}
		msg, typ := gjson.GetBytes(body, "error.message").Str, gjson.GetBytes(body, "error.type").Str
		if !strings.Contains(msg, "nested deeper than 128 levels") {
			t.Errorf("%s: message %q does not name the limit", tc.path, msg)
		}
		if typ != "invalid_request_error" {
			t.Errorf("%s: error.type %q, want the dialect's invalid_request_error", tc.path, typ)
		}
		if s.anthropic() && gjson.GetBytes(body, "type").Str != "error" {
			t.Errorf("%s: not an Anthropic error body: %.200s", tc.path, body)
		}
		if resp.Header.Get("X-Request-Id") == "" {
			t.Errorf("%s: no x-request-id", tc.path)
		}
	}
	for name, f := range g.Fakes {
		if h := f.Hits(); h != 0 {
			t.Errorf("%s was called %d times for refused bodies", name, h)
		}
	}
	for _, s := range surfaces { // the process is alive and serving
		if r := s.call(t.Context(), g, false); r.Err != nil || r.Text != hello(s.primary) {
			t.Fatalf("%s after the deep bodies: %q %v", s.name, r.Text, r.Err)
		}
	}
}

// deepProvider is a provider of either dialect that answers every model request 200 with a
// body (or a first stream event) nested 12 million levels deep.
func deepProvider(t *testing.T, anthropic bool) (url string, hits *atomic.Int32) {
	hits = new(atomic.Int32)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		b, _ := io.ReadAll(r.Body)
		if !gjson.GetBytes(b, "stream").Bool() {
			w.Header().Set("Content-Type", "application/json")
			if anthropic {
				_, _ = io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"c","content":[{"type":"text","text":"deep"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1},"x":`+crashNesting+`}`)
			} else {
				_, _ = io.WriteString(w, `{"id":"c1","object":"chat.completion","model":"g","choices":[{"index":0,"message":{"role":"assistant","content":"deep"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1},"x":`+crashNesting+`}`)
			}
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		if anthropic {
			_, _ = io.WriteString(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"deep\"},\"x\":"+crashNesting+"}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
		} else {
			_, _ = io.WriteString(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"g\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"deep\"}}],\"x\":"+crashNesting+"}\n\ndata: [DONE]\n\n")
		}
	}))
	t.Cleanup(ts.Close)
	if !anthropic {
		return ts.URL + "/v1", hits
	}
	return ts.URL, hits
}

// TestDeepProviderAnswerFailsOver: a provider whose 200 body, or first stream event, nests 12
// million levels deep is a provider failure (upstream_error on its attempt): the request fails
// over to the next deployment before anything reached the caller, with both SDKs, streaming
// and not.
func TestDeepProviderAnswerFailsOver(t *testing.T) {
	for _, s := range surfaces {
		for _, stream := range []bool{false, true} {
			url, hits := deepProvider(t, s.anthropic())
			yaml := strings.ReplaceAll(twoDeployments, "{{"+s.primary+"}}", url)
			var fakes []fakeSpec
			for _, f := range []fakeSpec{oa("oa-primary"), oa("oa-backup"), an("an-primary"), an("an-backup")} {
				if f.Name != s.primary {
					fakes = append(fakes, f)
				}
			}
			g := startGateway(t, yaml, fakes...)
			r := s.call(t.Context(), g, stream)
			if r.Err != nil || r.Text != hello(s.backup) {
				t.Fatalf("%s stream=%t: %q %v (raw %s), want the backup's answer", s.name, stream, r.Text, r.Err, r.Raw)
			}
			if h := hits.Load(); h != 1 {
				t.Errorf("%s stream=%t: deep provider hits %d, want 1", s.name, stream, h)
			}
			rec := waitGeneration(t, g, r.Header.Get("X-Request-Id"))
			if len(rec.Attempts) != 2 {
				t.Fatalf("%s stream=%t: attempts %+v, want 2", s.name, stream, rec.Attempts)
			}
			if a := rec.Attempts[0]; a.Deployment != s.primary || a.Outcome != audit.OutcomeFailed || a.ErrorCode != "upstream_error" {
				t.Errorf("%s stream=%t: attempt 1 = %s %s %s, want %s failed upstream_error", s.name, stream, a.Deployment, a.Outcome, a.ErrorCode, s.primary)
			}
		}
	}
}
