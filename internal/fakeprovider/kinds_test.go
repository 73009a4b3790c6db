package fakeprovider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/switchyard-gw/switchyard/internal/catalog"
)

// Raw-HTTP tests: what each Kind puts on the wire, checked frame by frame.

// rawPost sends body to path and reads the whole answer; err is the transport or body-read error.
func rawPost(ctx context.Context, srv *httptest.Server, path, body string, h http.Header) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+path, strings.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp, data, err
}

// post is rawPost that fails the test on a transport error; the returned body is readable again.
func post(t *testing.T, srv *httptest.Server, path, body string, h http.Header) *http.Response {
	t.Helper()
	resp, data, err := rawPost(t.Context(), srv, path, body, h)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(data))
	return resp
}

func bodyOf(t *testing.T, resp *http.Response) []byte {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// event is one parsed SSE event.
type event struct {
	name, data string
}

// parseSSE splits a stream into events, skipping comment lines; it fails on a frame that has a
// line other than event:, data: or a comment.
func parseSSE(t *testing.T, raw []byte) []event {
	t.Helper()
	var out []event
	for _, block := range strings.Split(string(raw), "\n\n") {
		if block == "" {
			continue
		}
		var ev event
		for _, line := range strings.Split(block, "\n") {
			switch {
			case strings.HasPrefix(line, ":"):
			case strings.HasPrefix(line, "event: "):
				ev.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				ev.data = strings.TrimPrefix(line, "data: ")
			default:
				t.Fatalf("unexpected SSE line %q", line)
			}
		}
		if ev.data != "" || ev.name != "" {
			out = append(out, ev)
		}
	}
	return out
}

// dialectCase is the per-dialect data of the raw tests.
type dialectCase struct {
	d        catalog.Dialect
	path     string
	body     string // a non-streaming request
	terminal string // the data of the last frame of a complete stream
}

var dialects = []dialectCase{
	{catalog.OpenAI, "/v1/chat/completions", `{"model":"gpt-x","messages":[{"role":"user","content":"hi"}]}`, "[DONE]"},
	{catalog.Anthropic, "/v1/messages", `{"model":"claude-x","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`, `{"type":"message_stop"}`},
}

// streamBody turns a request body into its streaming form.
func streamBody(body string) string {
	return strings.Replace(body, "{", `{"stream":true,`, 1)
}

func TestOpenAIStreamShape(t *testing.T) {
	for _, includeUsage := range []bool{false, true} {
		p := New("alpha", catalog.OpenAI)
		srv := serve(t, p)
		body := `{"model":"gpt-x","stream":true,"messages":[]}`
		if includeUsage {
			body = `{"model":"gpt-x","stream":true,"stream_options":{"include_usage":true},"messages":[]}`
		}
		resp := post(t, srv, "/chat/completions", body, nil) // the base URL without /v1 works too
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
			t.Fatalf("Content-Type %q", ct)
		}
		evs := parseSSE(t, bodyOf(t, resp))
		last := evs[len(evs)-1]
		if last.data != "[DONE]" {
			t.Fatalf("last frame %q", last.data)
		}
		chunks := evs[:len(evs)-1]
		id := gjson.Get(chunks[0].data, "id").String()
		for i, c := range chunks {
			if c.name != "" {
				t.Errorf("chunk %d has event %q", i, c.name)
			}
			if got := gjson.Get(c.data, "id").String(); got != id {
				t.Errorf("chunk %d id %q != %q", i, got, id)
			}
			if gjson.Get(c.data, "usage").Exists() != includeUsage {
				t.Errorf("chunk %d usage presence %v with include_usage %v", i, gjson.Get(c.data, "usage").Exists(), includeUsage)
			}
		}
		first := gjson.Parse(chunks[0].data)
		if first.Get("choices.0.delta.role").String() != "assistant" || first.Get("choices.0.delta.content").String() != "" {
			t.Errorf("first chunk is not role-only: %s", chunks[0].data)
		}
		want := 1 + 3 + 1 // role, deltas, finish
		if includeUsage {
			want++
			u := gjson.Parse(chunks[len(chunks)-1].data)
			if u.Get("choices.#").Int() != 0 || u.Get("usage.completion_tokens").Int() != 3 ||
				u.Get("usage.prompt_tokens").Int() != int64((len(body)+3)/4) {
				t.Errorf("usage chunk %s", u.Raw)
			}
		}
		if len(chunks) != want {
			t.Errorf("include_usage %v: %d chunks, want %d", includeUsage, len(chunks), want)
		}
	}
}

func TestAnthropicStreamShape(t *testing.T) {
	p := New("beta", catalog.Anthropic)
	p.Script(Behavior{ParallelToolCalls: 2, Deltas: 2})
	srv := serve(t, p)
	resp := post(t, srv, "/v1/messages", streamBody(dialects[1].body), nil)
	evs := parseSSE(t, bodyOf(t, resp))
	var names []string
	next := 0
	for _, ev := range evs {
		names = append(names, ev.name)
		if typ := gjson.Get(ev.data, "type").String(); typ != ev.name {
			t.Errorf("event %q carries type %q", ev.name, typ)
		}
		if ev.name == "content_block_start" {
			if idx := int(gjson.Get(ev.data, "index").Int()); idx != next {
				t.Errorf("block index %d, want %d", idx, next)
			}
			next++
		}
	}
	want := "message_start content_block_start ping content_block_delta content_block_delta content_block_stop " +
		"content_block_start content_block_delta content_block_delta content_block_stop message_delta message_stop"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("events\n got %s\nwant %s", got, want)
	}
	if in := gjson.Get(evs[0].data, "message.usage.input_tokens").Int(); in != int64((len(streamBody(dialects[1].body))+3)/4) {
		t.Errorf("message_start input_tokens %d", in)
	}
}

func TestKinds(t *testing.T) {
	for _, dc := range dialects {
		t.Run(string(dc.d), func(t *testing.T) {
			for _, tc := range []struct {
				name   string
				b      Behavior
				stream bool
				check  func(t *testing.T, resp *http.Response, body []byte, err error)
			}{
				{"reset", Behavior{Kind: KindReset}, false, func(t *testing.T, resp *http.Response, body []byte, err error) {
					if err == nil || resp != nil {
						t.Fatalf("want a transport error, got %v %v", resp, err)
					}
				}},
				{"cut/stream", Behavior{Kind: KindCut, After: 2}, true, func(t *testing.T, resp *http.Response, body []byte, err error) {
					if !errors.Is(err, io.ErrUnexpectedEOF) {
						t.Errorf("read error %v, want unexpected EOF", err)
					}
					if n := strings.Count(string(body), `"type":"text_delta"`) + strings.Count(string(body), `"delta":{"content":`); n != 2 {
						t.Errorf("%d deltas before the cut, want 2", n)
					}
					if bytes.Contains(body, []byte(dc.terminal)) {
						t.Error("terminal frame sent")
					}
				}},
				{"cut/nonstream", Behavior{Kind: KindCut}, false, func(t *testing.T, resp *http.Response, body []byte, err error) {
					if resp == nil || resp.StatusCode != 200 || !errors.Is(err, io.ErrUnexpectedEOF) {
						t.Errorf("want 200 then unexpected EOF, got %v", err)
					}
				}},
				{"truncate", Behavior{Kind: KindTruncate, After: 1}, true, func(t *testing.T, resp *http.Response, body []byte, err error) {
					if err != nil || bytes.Contains(body, []byte(dc.terminal)) {
						t.Errorf("want a clean end without terminal frame, got %v %q", err, body)
					}
				}},
				{"stream_error", Behavior{Kind: KindStreamError, After: 1, ErrorCode: "boom"}, true, func(t *testing.T, resp *http.Response, body []byte, err error) {
					evs := parseSSE(t, body)
					last := evs[len(evs)-1]
					if dc.d == catalog.OpenAI && (gjson.Get(last.data, "error.type").String() != "server_error" || gjson.Get(last.data, "error.code").String() != "boom") {
						t.Errorf("last frame %q", last.data)
					}
					if dc.d == catalog.Anthropic && (last.name != "error" || gjson.Get(last.data, "error.type").String() != "api_error" ||
						gjson.Get(last.data, "error.details.error_code").String() != "boom") {
						t.Errorf("last frame %q %q", last.name, last.data)
					}
				}},
				{"preamble_error", Behavior{Kind: KindPreambleError, Text: "never sent"}, true, func(t *testing.T, resp *http.Response, body []byte, err error) {
					if bytes.Contains(body, []byte("never")) {
						t.Error("content sent before the preamble error")
					}
					evs := parseSSE(t, body)
					want := 2 // role chunk, error
					if dc.d == catalog.Anthropic {
						want = 4 // message_start, content_block_start, ping, error
					}
					if len(evs) != want || !strings.Contains(evs[len(evs)-1].data, "overload") {
						t.Errorf("frames %+v", evs)
					}
				}},
				{"garbage/nonstream", Behavior{Kind: KindGarbage}, false, func(t *testing.T, resp *http.Response, body []byte, err error) {
					if resp.StatusCode != 200 || json.Valid(body) {
						t.Errorf("status %d valid JSON %v", resp.StatusCode, json.Valid(body))
					}
				}},
				{"garbage/stream", Behavior{Kind: KindGarbage}, true, func(t *testing.T, resp *http.Response, body []byte, err error) {
					evs := parseSSE(t, body)
					if resp.StatusCode != 200 || len(evs) != 1 || json.Valid([]byte(evs[0].data)) {
						t.Errorf("status %d frames %+v", resp.StatusCode, evs)
					}
				}},
				{"html_502", Behavior{Kind: KindHTML502, RetryAfter: 3}, true, func(t *testing.T, resp *http.Response, body []byte, err error) {
					if resp.StatusCode != 502 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") ||
						!bytes.HasPrefix(body, []byte("<html>")) || resp.Header.Get("Retry-After") != "3" {
						t.Errorf("status %d type %q body %q", resp.StatusCode, resp.Header.Get("Content-Type"), body)
					}
				}},
				{"keep_alive", Behavior{KeepAlive: true}, true, func(t *testing.T, resp *http.Response, body []byte, err error) {
					if !bytes.Contains(body, []byte("\n: keep-alive\n\n")) || !bytes.HasSuffix(body, []byte(dc.terminal+"\n\n")) {
						t.Errorf("body %q", body)
					}
				}},
				{"context_overflow", Behavior{Kind: KindContextOverflow}, false, func(t *testing.T, resp *http.Response, body []byte, err error) {
					msg := gjson.GetBytes(body, "error.message").String()
					if resp.StatusCode != 400 || !(strings.Contains(msg, "prompt is too long") || gjson.GetBytes(body, "error.code").String() == "context_length_exceeded") {
						t.Errorf("status %d body %s", resp.StatusCode, body)
					}
				}},
			} {
				t.Run(tc.name, func(t *testing.T) {
					p := New("x", dc.d)
					p.Script(tc.b)
					srv := serve(t, p)
					body := dc.body
					if tc.stream {
						body = streamBody(body)
					}
					resp, data, err := rawPost(t.Context(), srv, dc.path, body, nil)
					tc.check(t, resp, data, err)
					if len(p.Requests()) != 1 || p.Requests()[0].Kind != tc.b.Kind {
						t.Errorf("recorded %+v", p.Requests())
					}
					select {
					case r := <-p.Closed():
						t.Errorf("request %d reported closed, but the provider dropped it itself", r.Seq)
					default:
					}
				})
			}
		})
	}
}

// TestCallerDisconnect is the "caller disconnects -> upstream closed within a second" check: the
// provider sees the request context end and reports it on Closed.
func TestCallerDisconnect(t *testing.T) {
	for _, dc := range dialects {
		for _, b := range []Behavior{{Kind: KindHeadersHang}, {Delay: time.Hour}} {
			t.Run(string(dc.d)+"/"+string(b.Kind), func(t *testing.T) {
				p := New("x", dc.d)
				p.Script(b)
				srv := serve(t, p)
				ctx, cancel := context.WithCancel(t.Context())
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+dc.path, strings.NewReader(streamBody(dc.body)))
				resp, err := srv.Client().Do(req)
				if err != nil {
					t.Fatal(err)
				}
				if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
					t.Fatalf("status %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
				}
				cancel()
				resp.Body.Close()
				select {
				case r := <-p.Closed():
					if r.Seq != 1 || !r.Stream {
						t.Errorf("closed request %+v", r)
					}
				case <-time.After(time.Second):
					t.Fatal("the provider did not see the caller go away within a second")
				}
			})
		}
	}
}

func TestRejectedRequests(t *testing.T) {
	for _, tc := range []struct {
		d      catalog.Dialect
		path   string
		body   string
		status int
		typ    string
	}{
		{catalog.OpenAI, "/v1/chat/completions", `{not json`, 400, "invalid_request_error"},
		{catalog.OpenAI, "/v1/chat/completions", `{"model":"m"}`, 400, "invalid_request_error"},
		{catalog.Anthropic, "/v1/messages", `{"model":"m","messages":[]}`, 400, "invalid_request_error"},
		{catalog.Anthropic, "/v1/chat/completions", `{}`, 404, "not_found_error"},
		{catalog.OpenAI, "/v1/messages", `{}`, 404, "invalid_request_error"},
	} {
		p := New("x", tc.d)
		p.Script(Behavior{Kind: KindStatus, Status: 503})
		srv := serve(t, p)
		resp := post(t, srv, tc.path, tc.body, nil)
		body := bodyOf(t, resp)
		if resp.StatusCode != tc.status || gjson.GetBytes(body, "error.type").String() != tc.typ {
			t.Errorf("%s %s %s: %d %s", tc.d, tc.path, tc.body, resp.StatusCode, body)
		}
		if tc.d == catalog.Anthropic && gjson.GetBytes(body, "type").String() != "error" {
			t.Errorf("anthropic body %s", body)
		}
		// Nothing was consumed: the scripted 503 is still queued.
		if got := p.scriptState().Queued; got != 1 {
			t.Errorf("%s %s: queue %d, want 1", tc.d, tc.body, got)
		}
	}
}

func TestModels(t *testing.T) {
	for _, tc := range []struct {
		d    catalog.Dialect
		path string
	}{
		{catalog.OpenAI, "data.0.object"},
		{catalog.Anthropic, "data.0.type"},
	} {
		p := New("x", tc.d)
		p.SetModels("m1", "m2")
		srv := serve(t, p)
		resp, err := srv.Client().Get(srv.URL + "/v1/models")
		if err != nil {
			t.Fatal(err)
		}
		body := bodyOf(t, resp)
		resp.Body.Close()
		if gjson.GetBytes(body, "data.#").Int() != 2 || gjson.GetBytes(body, "data.1.id").String() != "m2" ||
			gjson.GetBytes(body, tc.path).String() != "model" {
			t.Errorf("%s: %s", tc.d, body)
		}
		if p.Hits() != 0 {
			t.Errorf("GET /v1/models counted as a model request")
		}
	}
}
