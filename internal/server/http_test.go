package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	anthropicopt "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	openaiopt "github.com/openai/openai-go/v3/option"
	"github.com/tidwall/gjson"

	"github.com/switchyard-gw/switchyard/internal/audit"
	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/config"
	"github.com/switchyard-gw/switchyard/internal/fakeprovider"
	"github.com/switchyard-gw/switchyard/internal/server"
	"github.com/switchyard-gw/switchyard/internal/store/sqlite"
)

// icTap sits in front of one emulated provider: it reports every arrival on Arrived (buffered,
// reports dropped when full) and, while armed, holds the next single arrival until Release.
type icTap struct {
	Arrived chan struct{}
	armed   atomic.Bool
	release chan struct{}
}

func icNewTap() *icTap {
	return &icTap{Arrived: make(chan struct{}, 256), release: make(chan struct{})}
}

// Hold arms the tap: the next arrival is held (before the provider sees it) until Release.
func (tp *icTap) Hold() { tp.armed.Store(true) }

// Release lets the held request through; call at most once.
func (tp *icTap) Release() { close(tp.release) }

func (tp *icTap) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/_fake/") || r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		select {
		case tp.Arrived <- struct{}{}:
		default:
		}
		if tp.armed.CompareAndSwap(true, false) {
			select {
			case <-tp.release:
			case <-r.Context().Done():
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// icHooked is a gateway started by icStartHooked: its http.Server is exposed (for Shutdown),
// each emulated provider has a tap, and Served receives one value each time the gateway's handler
// returned (buffered; values dropped when full).
type icHooked struct {
	*gateway
	HS     *http.Server
	Taps   map[string]*icTap
	Served chan struct{}
}

// icStartHooked is startGateway (harness_test.go) with taps in front of the providers and a
// notification after every served request.
func icStartHooked(t *testing.T, yaml string, fakes ...fakeSpec) *icHooked {
	t.Helper()
	hg := &icHooked{
		gateway: &gateway{Clock: &fakeClock{now: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}, Fakes: map[string]*fakeprovider.Provider{}},
		Taps:    map[string]*icTap{},
		Served:  make(chan struct{}, 1024),
	}
	g := hg.gateway
	for _, f := range fakes {
		p := fakeprovider.New(f.Name, f.Dialect)
		tp := icNewTap()
		ts := httptest.NewServer(tp.wrap(p))
		t.Cleanup(ts.Close)
		base := ts.URL
		if f.Dialect == catalog.OpenAI {
			base += "/v1"
		}
		yaml = strings.ReplaceAll(yaml, "{{"+f.Name+"}}", base)
		g.Fakes[f.Name], hg.Taps[f.Name] = p, tp
	}
	cfg, err := config.Parse("test.yaml", []byte(yaml))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	cat, err := catalog.New(cfg)
	if err != nil {
		t.Fatalf("catalog: %v", err)
	}
	st, err := sqlite.Open(context.Background(), "sqlite://:memory:")
	if err != nil {
		t.Fatalf("store: %v", err)
	}
	g.Rec = audit.NewRecorder(st, audit.Options{FlushInterval: 5 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = g.Rec.Run(ctx) }()
	g.Srv, err = server.New(cfg, cat, server.Options{Recorder: g.Rec, Ready: st.Ping, Now: g.Clock.Now, Logf: t.Logf})
	if err != nil {
		t.Fatalf("server: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hg.HS = g.Srv.HTTPServer()
	hg.HS.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			select {
			case hg.Served <- struct{}{}:
			default:
			}
		}()
		g.Srv.ServeHTTP(w, r)
	})
	served := make(chan struct{})
	go func() { defer close(served); _ = hg.HS.Serve(g.Srv.Listener(ln)) }()
	g.URL = "http://" + ln.Addr().String()
	t.Cleanup(func() {
		sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer scancel()
		_ = hg.HS.Shutdown(sctx)
		<-served
		g.Srv.Close()
		cancel()
		<-done
		_ = st.Close()
	})
	return hg
}

// icPost sends body to path on the gateway with the given header pairs and returns the response
// with its whole body read.
func icPost(t *testing.T, url, path, body string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return icDo(t, req)
}

// icGet sends a GET to path on the gateway with the given header pairs.
func icGet(t *testing.T, url, path string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return icDo(t, req)
}

// icTry is icPost for goroutines other than the test's: it reports errors instead of failing.
func icTry(url, path, body string) (*http.Response, []byte, error) {
	resp, err := http.Post(url+path, "application/json", strings.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

func icDo(t *testing.T, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", req.Method, req.URL.Path, err)
	}
	return resp, b
}

// icChatBody and icMsgBody are minimal valid request bodies of each surface.
func icChatBody(model string, stream bool) string {
	b := `{"model":` + icJSONString(model) + `,"messages":[{"role":"user","content":"Hello"}]`
	if stream {
		b += `,"stream":true`
	}
	return b + "}"
}

func icMsgBody(model string, stream bool) string {
	b := `{"model":` + icJSONString(model) + `,"max_tokens":64,"messages":[{"role":"user","content":"Hello"}]`
	if stream {
		b += `,"stream":true`
	}
	return b + "}"
}

func icJSONString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// icPath is the model-call path of a surface.
func icPath(d catalog.Dialect) string {
	if d == catalog.Anthropic {
		return "/v1/messages"
	}
	return "/v1/chat/completions"
}

// icBody is a minimal valid request body for a surface.
func icBody(d catalog.Dialect, model string, stream bool) string {
	if d == catalog.Anthropic {
		return icMsgBody(model, stream)
	}
	return icChatBody(model, stream)
}

// icCall makes one model call on a surface and fails the test unless it was served (200).
func icCall(t *testing.T, url string, d catalog.Dialect, model string, stream bool) (*http.Response, []byte) {
	t.Helper()
	resp, b := icPost(t, url, icPath(d), icBody(d, model, stream))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s: status %d, body %s", icPath(d), model, resp.StatusCode, b)
	}
	return resp, b
}

// icCheckError checks that an error response is in the surface's dialect, carries the
// contract's headers, and names class as its canonical error_type, with request_id equal to
// x-request-id (R-ERR, R-AUDIT-1).
func icCheckError(t *testing.T, d catalog.Dialect, resp *http.Response, body []byte, status int, class, nativeType string) {
	t.Helper()
	if resp.StatusCode != status {
		t.Fatalf("status %d, want %d; body %s", resp.StatusCode, status, body)
	}
	if got := resp.Header.Get("X-Switchyard-Error-Code"); got != class {
		t.Errorf("x-switchyard-error-code %q, want %q", got, class)
	}
	rid := resp.Header.Get("X-Request-Id")
	if rid == "" || gjson.GetBytes(body, "request_id").String() != rid {
		t.Errorf("request_id %q in body, x-request-id %q", gjson.GetBytes(body, "request_id").String(), rid)
	}
	if d == catalog.Anthropic {
		if gjson.GetBytes(body, "type").String() != "error" || gjson.GetBytes(body, "error.type").String() != nativeType ||
			gjson.GetBytes(body, "error.error_type").String() != class {
			t.Errorf("anthropic error body %s, want type %s / error_type %s", body, nativeType, class)
		}
		return
	}
	if gjson.GetBytes(body, "error.type").String() != nativeType || gjson.GetBytes(body, "error.metadata.error_type").String() != class {
		t.Errorf("openai error body %s, want type %s / error_type %s", body, nativeType, class)
	}
}

// icNoHits fails when any emulated provider received a model request.
func icNoHits(t *testing.T, g *gateway) {
	t.Helper()
	for name, f := range g.Fakes {
		if n := f.Hits(); n != 0 {
			t.Errorf("provider %s got %d requests, want none", name, n)
		}
	}
}

const icAuthYAML = `
auth: {required: true}
server: {max_body_bytes: 4096}
keys:
  - {name: alice, secret: sk-sy-alice, account: acme}
  - {name: bob, secret: sk-sy-bob, account: globex}
models:
  - id: gpt-4o-mini
  - id: claude-haiku-4-5
deployments:
  - name: oa
    dialect: openai
    base_url: "{{oa}}"
    api_key: sk-house-oa
    routes: [{model: gpt-4o-mini, price: {input: 1, output: 1}}]
  - name: an
    dialect: anthropic
    base_url: "{{an}}"
    api_key: sk-ant-house-an
    routes: [{model: claude-haiku-4-5, price: {input: 1, output: 1}}]
`

func icStartAuth(t *testing.T) *gateway {
	return startGateway(t, icAuthYAML, oa("oa"), an("an"))
}

// TestAuthRequired: with auth.required, a missing or wrong key is 401 authentication in the
// caller's dialect (native types, both SDKs) and reaches no provider (R-DIALECT-1, R-ERR,
// R-FAIL-5 "the caller's own authentication is checked before routing").
func TestAuthRequired(t *testing.T) {
	t.Parallel()
	g := icStartAuth(t)
	for _, d := range []catalog.Dialect{catalog.OpenAI, catalog.Anthropic} {
		t.Run(string(d)+"/no key", func(t *testing.T) {
			resp, b := icPost(t, g.URL, icPath(d), icBody(d, icModel(d), false))
			icCheckError(t, d, resp, b, 401, "authentication", "authentication_error")
		})
		t.Run(string(d)+"/wrong key bearer", func(t *testing.T) {
			resp, b := icPost(t, g.URL, icPath(d), icBody(d, icModel(d), false), "Authorization", "Bearer sk-sy-mallory")
			icCheckError(t, d, resp, b, 401, "authentication", "authentication_error")
		})
		t.Run(string(d)+"/wrong key x-api-key", func(t *testing.T) {
			resp, b := icPost(t, g.URL, icPath(d), icBody(d, icModel(d), false), "X-Api-Key", "sk-sy-mallory")
			icCheckError(t, d, resp, b, 401, "authentication", "authentication_error")
		})
	}
	ctx := context.Background()
	oc, ac := g.openaiClient(), g.anthropicClient()
	_, err := oc.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model: "gpt-4o-mini", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello")},
	})
	var oe *openai.Error
	if !errors.As(err, &oe) || oe.StatusCode != 401 || oe.Type != "authentication_error" {
		t.Errorf("openai SDK with a wrong key: %v (%+v)", err, oe)
	}
	_, err = ac.Messages.New(ctx, anthropic.MessageNewParams{
		Model: "claude-haiku-4-5", MaxTokens: 64,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello"))},
	})
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != 401 || ae.Type() != "authentication_error" {
		t.Errorf("anthropic SDK with a wrong key: %v", err)
	}
	icNoHits(t, g)
}

// icOAKey and icANKey set the caller's key of an SDK client.
func icOAKey(key string) openaiopt.RequestOption    { return openaiopt.WithAPIKey(key) }
func icANKey(key string) anthropicopt.RequestOption { return anthropicopt.WithAPIKey(key) }

func icModel(d catalog.Dialect) string {
	if d == catalog.Anthropic {
		return "claude-haiku-4-5"
	}
	return "gpt-4o-mini"
}

// TestAuthStylesAndCredentialIsolation: both auth styles work on both surfaces (R-DIALECT-1);
// the caller's key never reaches the provider, which gets the house key; hop-by-hop headers,
// the caller's other headers and its Accept-Encoding are not forwarded (wire.md §6).
func TestAuthStylesAndCredentialIsolation(t *testing.T) {
	t.Parallel()
	g := icStartAuth(t)
	ctx := context.Background()
	// The official SDKs: OpenAI sends Authorization: Bearer, Anthropic sends x-api-key.
	oc := g.openaiClient(icOAKey("sk-sy-alice"))
	if _, err := oc.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model: "gpt-4o-mini", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello")},
	}); err != nil {
		t.Fatalf("openai SDK with a valid key: %v", err)
	}
	ac := g.anthropicClient(icANKey("sk-sy-alice"))
	if _, err := ac.Messages.New(ctx, anthropic.MessageNewParams{
		Model: "claude-haiku-4-5", MaxTokens: 64,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello"))},
	}); err != nil {
		t.Fatalf("anthropic SDK with a valid key: %v", err)
	}
	// Crosswise, with hop-by-hop and other caller headers.
	extra := []string{"Connection", "X-Hop", "X-Hop", "secret-hop", "Te", "trailers", "Proxy-Authorization", "Basic c2VjcmV0",
		"Accept-Encoding", "br, zstd", "X-Custom-Caller", "caller-header", "Keep-Alive", "timeout=5", "Upgrade-Insecure-Requests", "1"}
	for _, tc := range []struct {
		d    catalog.Dialect
		auth []string
	}{
		{catalog.OpenAI, []string{"X-Api-Key", "sk-sy-bob"}},
		{catalog.Anthropic, []string{"Authorization", "Bearer sk-sy-bob"}},
	} {
		resp, b := icPost(t, g.URL, icPath(tc.d), icBody(tc.d, icModel(tc.d), false), append(tc.auth, extra...)...)
		if resp.StatusCode != 200 {
			t.Fatalf("%s with %s: status %d %s", tc.d, tc.auth[0], resp.StatusCode, b)
		}
	}
	for name, house := range map[string]string{"oa": "sk-house-oa", "an": "sk-ant-house-an"} {
		reqs := g.Fakes[name].Requests()
		if len(reqs) != 2 {
			t.Fatalf("%s: %d requests, want 2", name, len(reqs))
		}
		for i, r := range reqs {
			got := r.APIKey
			if name == "oa" {
				got = strings.TrimPrefix(r.Authorization, "Bearer ")
			}
			if got != house {
				t.Errorf("%s request %d: provider credential %q, want the house key", name, i, got)
			}
			for k, vs := range r.Header {
				for _, v := range vs {
					if strings.Contains(v, "sk-sy-") {
						t.Errorf("%s request %d: caller key reached the provider in %s", name, i, k)
					}
				}
			}
			for _, h := range []string{"X-Hop", "Te", "Proxy-Authorization", "X-Custom-Caller", "Keep-Alive", "Upgrade-Insecure-Requests"} {
				if v := r.Header.Get(h); v != "" {
					t.Errorf("%s request %d: caller header %s: %q forwarded", name, i, h, v)
				}
			}
			if ae := r.Header.Get("Accept-Encoding"); strings.Contains(ae, "br") || strings.Contains(ae, "zstd") {
				t.Errorf("%s request %d: caller's Accept-Encoding forwarded: %q", name, i, ae)
			}
		}
	}
}

// TestBadInputChangesNothing: malformed JSON, wrong types, missing fields and an oversized body
// are answered in the caller's dialect (400 invalid_request, 413 request_too_large), reach no
// provider, and leave the circuits as they were (R-ERR, R-CIRCUIT-3, R-DIALECT-1).
func TestBadInputChangesNothing(t *testing.T) {
	t.Parallel()
	g := icStartAuth(t) // max_body_bytes: 4096
	key := []string{"Authorization", "Bearer sk-sy-alice"}
	huge := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"` + strings.Repeat("x", 5000) + `"}]}`
	hugeMsg := `{"model":"claude-haiku-4-5","max_tokens":8,"messages":[{"role":"user","content":"` + strings.Repeat("x", 5000) + `"}]}`
	cases := []struct {
		name   string
		d      catalog.Dialect
		body   string
		status int
		class  string
		native string
		param  string
	}{
		{"malformed json", catalog.OpenAI, `{"model":"gpt-4o-mini","messages":[`, 400, "invalid_request", "invalid_request_error", ""},
		{"model is a number", catalog.OpenAI, `{"model":5,"messages":[]}`, 400, "invalid_request", "invalid_request_error", "model"},
		{"stream is a string", catalog.OpenAI, `{"model":"gpt-4o-mini","stream":"yes","messages":[]}`, 400, "invalid_request", "invalid_request_error", "stream"},
		{"missing messages", catalog.OpenAI, `{"model":"gpt-4o-mini"}`, 400, "invalid_request", "invalid_request_error", "messages"},
		{"not an object", catalog.OpenAI, `[1,2]`, 400, "invalid_request", "invalid_request_error", ""},
		{"huge body", catalog.OpenAI, huge, 413, "request_too_large", "invalid_request_error", ""},
		{"malformed json", catalog.Anthropic, `{"model":`, 400, "invalid_request", "invalid_request_error", ""},
		{"model is a number", catalog.Anthropic, `{"model":5,"max_tokens":8,"messages":[]}`, 400, "invalid_request", "invalid_request_error", ""},
		{"stream is a string", catalog.Anthropic, `{"model":"claude-haiku-4-5","max_tokens":8,"stream":"yes","messages":[]}`, 400, "invalid_request", "invalid_request_error", ""},
		{"missing messages", catalog.Anthropic, `{"model":"claude-haiku-4-5","max_tokens":8}`, 400, "invalid_request", "invalid_request_error", ""},
		{"missing max_tokens", catalog.Anthropic, `{"model":"claude-haiku-4-5","messages":[]}`, 400, "invalid_request", "invalid_request_error", ""},
		{"huge body", catalog.Anthropic, hugeMsg, 413, "request_too_large", "request_too_large", ""},
	}
	for _, tc := range cases {
		t.Run(string(tc.d)+"/"+tc.name, func(t *testing.T) {
			resp, b := icPost(t, g.URL, icPath(tc.d), tc.body, key...)
			icCheckError(t, tc.d, resp, b, tc.status, tc.class, tc.native)
			if tc.param != "" && gjson.GetBytes(b, "error.param").String() != tc.param {
				t.Errorf("param %q, want %q", gjson.GetBytes(b, "error.param").String(), tc.param)
			}
		})
	}
	// A chunked body (no Content-Length) over the limit is refused the same way.
	req, _ := http.NewRequest(http.MethodPost, g.URL+"/v1/chat/completions", io.MultiReader(strings.NewReader(huge)))
	req.Header.Set("Authorization", "Bearer sk-sy-alice")
	resp, b := icDo(t, req)
	icCheckError(t, catalog.OpenAI, resp, b, 413, "request_too_large", "invalid_request_error")
	icNoHits(t, g)
	for _, c := range g.Srv.Circuits().States() {
		t.Errorf("bad input created or moved a circuit: %+v", c)
	}
	// Still served normally afterwards.
	if resp, b := icPost(t, g.URL, "/v1/chat/completions", icChatBody("gpt-4o-mini", false), key...); resp.StatusCode != 200 {
		t.Fatalf("after bad input: %d %s", resp.StatusCode, b)
	}
}

// TestPassThroughPreservesUnknownFields: same-dialect traffic passes through with only the model
// id rewritten; unknown fields and formatting survive byte for byte (R-DIALECT-3, R-MODEL-4).
func TestPassThroughPreservesUnknownFields(t *testing.T) {
	t.Parallel()
	g := startTwo(t)
	oaBody := "{ \"model\" : \"mini\",\n  \"messages\":[{\"role\":\"user\",\"content\":\"Hi \\u00e9\"}],\n" +
		"  \"x_vendor_thing\": {\"a\":[1, 2.50, {\"b\":null}], \"c\":\"\\\"q\\\"\"}, \"logit_bias\":{\"50256\":-100},\n" +
		"  \"metadata\" : {\"trace\":\"t-1\"}, \"temperature\": 0.30 }"
	anBody := "{\"max_tokens\":16, \"model\":\"rp-haiku-4-5\", \"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"Hi\",\"cache_control\":{\"type\":\"ephemeral\"}}]}],\n" +
		" \"x_vendor_thing\":{\"deep\":[true,false,null]}, \"top_k\": 7, \"metadata\":{\"user_id\":\"u-1\"}}"
	for _, tc := range []struct {
		d              catalog.Dialect
		body, from, to string
		fake           string
	}{
		{catalog.OpenAI, oaBody, `"mini"`, `"gpt-4o-mini"`, "oa-primary"},
		{catalog.Anthropic, anBody, `"rp-haiku-4-5"`, `"claude-haiku-4-5"`, "an-primary"},
	} {
		resp, b := icPost(t, g.URL, icPath(tc.d), tc.body)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", tc.d, resp.StatusCode, b)
		}
		reqs := g.Fakes[tc.fake].Requests()
		if len(reqs) != 1 {
			t.Fatalf("%s: %d upstream requests", tc.d, len(reqs))
		}
		want := strings.Replace(tc.body, tc.from, tc.to, 1)
		if string(reqs[0].Body) != want {
			t.Errorf("%s upstream body\n got %s\nwant %s", tc.d, reqs[0].Body, want)
		}
	}
}

// icSSEData returns the data payloads of an SSE body, in order.
func icSSEData(t *testing.T, body []byte) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, d)
		}
	}
	return out
}

// TestStreamUsageOptIn: an OpenAI stream always asks the provider for usage (billing needs it),
// but the caller receives a usage chunk only when it asked, exactly once (R-DIALECT-3,
// wire.md §8.1).
func TestStreamUsageOptIn(t *testing.T) {
	t.Parallel()
	g := startTwo(t)
	for _, tc := range []struct {
		name      string
		body      string
		wantUsage int
	}{
		{"without stream_options", icChatBody("gpt-4o-mini", true), 0},
		{"include_usage false", `{"model":"gpt-4o-mini","stream":true,"stream_options":{"include_usage":false},"messages":[{"role":"user","content":"Hello"}]}`, 0},
		{"include_usage true", `{"model":"gpt-4o-mini","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Hello"}]}`, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := g.Fakes["oa-primary"].Hits()
			resp, b := icPost(t, g.URL, "/v1/chat/completions", tc.body)
			if resp.StatusCode != 200 {
				t.Fatalf("%d %s", resp.StatusCode, b)
			}
			reqs := g.Fakes["oa-primary"].Requests()
			if len(reqs) != before+1 {
				t.Fatalf("upstream requests %d, want %d", len(reqs), before+1)
			}
			if !gjson.GetBytes(reqs[before].Body, "stream_options.include_usage").Bool() {
				t.Errorf("upstream body without include_usage: %s", reqs[before].Body)
			}
			usage, done := 0, 0
			for _, d := range icSSEData(t, b) {
				if d == "[DONE]" {
					done++
					continue
				}
				if gjson.Get(d, "usage").IsObject() {
					usage++
				}
			}
			if usage != tc.wantUsage || done != 1 {
				t.Errorf("usage chunks %d (want %d), [DONE] %d; stream:\n%s", usage, tc.wantUsage, done, b)
			}
		})
	}
}

// TestOtherDialectRouteIsTranslated: a model served only by deployments of the other dialect is
// served through translation (R-DIALECT-2, R-ADMIT-5), on both surfaces, with one attempt.
func TestOtherDialectRouteIsTranslated(t *testing.T) {
	t.Parallel()
	g := startGateway(t, `
auth: {required: false}
models: [{id: only-anthropic}, {id: only-openai}]
deployments:
  - name: an
    dialect: anthropic
    base_url: "{{an}}"
    routes: [{model: only-anthropic}]
  - name: oa
    dialect: openai
    base_url: "{{oa}}"
    routes: [{model: only-openai}]
`, an("an"), oa("oa"))
	for _, tc := range []struct {
		d          catalog.Dialect
		model, dep string
	}{{catalog.OpenAI, "only-anthropic", "an"}, {catalog.Anthropic, "only-openai", "oa"}} {
		resp, b := icPost(t, g.URL, icPath(tc.d), icBody(tc.d, tc.model, false))
		if resp.StatusCode != 200 || resp.Header.Get("x-switchyard-deployment") != tc.dep || resp.Header.Get("x-switchyard-attempts") != "1" {
			t.Fatalf("%s via %s: %d %v %s", tc.model, tc.d, resp.StatusCode, resp.Header, b)
		}
		if got := gjson.GetBytes(b, "model").String(); got != tc.model {
			t.Errorf("model echoed %q, want %q", got, tc.model)
		}
		if !strings.Contains(string(b), "Hello from "+tc.dep+".") {
			t.Errorf("answer not translated: %s", b)
		}
	}
}

// TestModelsAndProbes: GET /v1/models answers in the OpenAI shape, and in the Anthropic shape
// when anthropic-version is sent (both SDKs' Models.List); /healthz, /readyz and /metrics need
// no key (contract.md HTTP; R-DIALECT-1).
func TestModelsAndProbes(t *testing.T) {
	t.Parallel()
	g := icStartAuth(t)
	ctx := context.Background()
	want := []string{"gpt-4o-mini", "claude-haiku-4-5"}
	oc, ac := g.openaiClient(icOAKey("sk-sy-alice")), g.anthropicClient(icANKey("sk-sy-alice"))
	op, err := oc.Models.List(ctx)
	if err != nil {
		t.Fatalf("openai Models.List: %v", err)
	}
	var got []string
	for _, m := range op.Data {
		if m.Object != "model" {
			t.Errorf("openai model object %q", m.Object)
		}
		got = append(got, m.ID)
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("openai models %v, want %v", got, want)
	}
	ap, err := ac.Models.List(ctx, anthropic.ModelListParams{})
	if err != nil {
		t.Fatalf("anthropic Models.List: %v", err)
	}
	got = got[:0]
	for _, m := range ap.Data {
		if m.Type != "model" {
			t.Errorf("anthropic model type %q", m.Type)
		}
		got = append(got, m.ID)
	}
	if strings.Join(got, ",") != strings.Join(want, ",") || ap.HasMore {
		t.Errorf("anthropic models %v (has_more %v), want %v", got, ap.HasMore, want)
	}
	// Without a key the list is refused like any other call.
	resp, b := icGet(t, g.URL, "/v1/models")
	icCheckError(t, catalog.OpenAI, resp, b, 401, "authentication", "authentication_error")
	for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
		resp, b := icGet(t, g.URL, path)
		if resp.StatusCode != 200 {
			t.Errorf("GET %s without a key: %d %s", path, resp.StatusCode, b)
		}
		if resp.Header.Get("X-Request-Id") == "" {
			t.Errorf("GET %s: no x-request-id", path)
		}
	}
}

// TestGracefulShutdownCompletesStream: http.Server.Shutdown while a stream is in flight lets the
// stream finish completely (contract.md "On SIGTERM ... let in-flight requests and streams
// finish").
func TestGracefulShutdownCompletesStream(t *testing.T) {
	t.Parallel()
	hg := icStartHooked(t, twoDeployments, oa("oa-primary"), oa("oa-backup"), an("an-primary"), an("an-backup"))
	hg.Fakes["oa-primary"].Script(fakeprovider.Behavior{Text: "one two three four five six", Deltas: 6, Delay: 50 * time.Millisecond})
	req, _ := http.NewRequest(http.MethodPost, hg.URL+"/v1/chat/completions", strings.NewReader(icChatBody("gpt-4o-mini", true)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	br := bufio.NewReader(resp.Body)
	// Read up to the first content chunk: the stream is committed and in flight.
	var seen []string
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("before shutdown: %v", err)
		}
		if d, ok := strings.CutPrefix(strings.TrimSpace(line), "data: "); ok {
			seen = append(seen, d)
			if gjson.Get(d, "choices.0.delta.content").String() != "" {
				break
			}
		}
	}
	started := make(chan struct{})
	var once sync.Once
	hg.HS.RegisterOnShutdown(func() { once.Do(func() { close(started) }) })
	shutErr := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		shutErr <- hg.HS.Shutdown(ctx)
	}()
	<-started // Shutdown is under way while the stream still has five deltas to send
	rest, err := io.ReadAll(br)
	if err != nil {
		t.Fatalf("stream broken by shutdown: %v", err)
	}
	seen = append(seen, icSSEData(t, rest)...)
	var text strings.Builder
	for _, d := range seen {
		text.WriteString(gjson.Get(d, "choices.0.delta.content").String())
	}
	if text.String() != "one two three four five six" || seen[len(seen)-1] != "[DONE]" {
		t.Fatalf("stream after shutdown: text %q, last %q", text.String(), seen[len(seen)-1])
	}
	if err := <-shutErr; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	// New calls are refused once the server is shut down.
	if r, err := http.Post(hg.URL+"/v1/chat/completions", "application/json", strings.NewReader(icChatBody("gpt-4o-mini", false))); err == nil {
		r.Body.Close()
		t.Errorf("a request after Shutdown was accepted: %d", r.StatusCode)
	}
}
