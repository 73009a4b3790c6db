package upstream

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"golang.org/x/oauth2"

	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/dialect/anthropic"
	"github.com/switchyard-gw/switchyard/internal/failure"
)

// TestVertexBody: the message body loses model (it goes in the URL) and gains
// anthropic_version vertex-2023-10-16 (replacing any the caller sent); stream and every other
// member stay, in order; count_tokens keeps its model.
func TestVertexBody(t *testing.T) {
	in := []byte(`{"model":"claude-sonnet-4-5@20250929","anthropic_version":"x","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi \"model\""}]}`)
	out, model := vertexBody(in, true)
	if model != "claude-sonnet-4-5@20250929" {
		t.Fatalf("model %q", model)
	}
	want := `{"anthropic_version":"vertex-2023-10-16","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi \"model\""}]}`
	if string(out) != want {
		t.Fatalf("body\n%s\nwant\n%s", out, want)
	}
	out, model = vertexBody([]byte(`{"model":"claude-x","messages":[]}`), false)
	if string(out) != `{"anthropic_version":"vertex-2023-10-16","model":"claude-x","messages":[]}` || model != "claude-x" {
		t.Fatalf("count_tokens body %s", out)
	}
}

// TestVertexURL: the host follows the location (global and the multi-regions included) or
// base_url's scheme and host; the model is path-escaped; streams use :streamRawPredict.
func TestVertexURL(t *testing.T) {
	for _, tc := range []struct {
		loc, base, want string
	}{
		{"us-east5", "", "https://us-east5-aiplatform.googleapis.com/v1/projects/my-proj/locations/us-east5/publishers/anthropic/models/{model}:rawPredict"},
		{"global", "", "https://aiplatform.googleapis.com/v1/projects/my-proj/locations/global/publishers/anthropic/models/{model}:rawPredict"},
		{"eu", "", "https://aiplatform.eu.rep.googleapis.com/v1/projects/my-proj/locations/eu/publishers/anthropic/models/{model}:rawPredict"},
		{"europe-west1", "http://127.0.0.1:9/ignored/path", "http://127.0.0.1:9/v1/projects/my-proj/locations/europe-west1/publishers/anthropic/models/{model}:rawPredict"},
	} {
		dep := &catalog.Deployment{Dialect: catalog.Anthropic, Platform: catalog.PlatformVertex, BaseURL: tc.base,
			Vertex: catalog.Vertex{Project: "my-proj", Location: tc.loc}}
		if got := EndpointOf(dep, catalog.ProtocolModel); got != tc.want {
			t.Errorf("%s: %s", tc.loc, got)
		}
	}
	dep := &catalog.Deployment{Name: "vx", Dialect: catalog.Anthropic, Platform: catalog.PlatformVertex,
		Vertex: catalog.Vertex{Project: "my-proj", Location: "us-east5"}}
	v := newVertex(dep, &http.Transport{}).(*vertex)
	v.tokens.cur.Store(&heldToken{auth: []string{"Bearer tok"}, expiry: time.Now().Add(time.Hour)})
	h := http.Header{}
	req, err := v.request(t.Context(), catalog.ProtocolModel, []byte(`{"model":"claude a/b@1","stream":true}`), true, "beta-1", h)
	if err != nil {
		t.Fatal(err)
	}
	if got := req.URL.String(); got != "https://us-east5-aiplatform.googleapis.com/v1/projects/my-proj/locations/us-east5/publishers/anthropic/models/claude%20a%2Fb@1:streamRawPredict" {
		t.Fatalf("URL %s", got)
	}
	if h.Get("Authorization") != "Bearer tok" || h.Get("Anthropic-Beta") != "beta-1" || h.Get("Anthropic-Version") != "" || h.Get("X-Api-Key") != "" {
		t.Fatalf("headers %v", h)
	}
	req, err = v.request(t.Context(), catalog.ProtocolCountTokens, []byte(`{"model":"claude-x"}`), false, "", http.Header{})
	if err != nil || !strings.HasSuffix(req.URL.Path, "/models/count-tokens:rawPredict") {
		t.Fatalf("count tokens: %v %v", err, req.URL)
	}
}

// TestGoogleErrorsClassify: contract.md round 3. Google's error shape, object or array,
// becomes Anthropic's, and anthropic.NormalizeError then gives the class the issue names;
// Claude's own errors pass untouched.
func TestGoogleErrorsClassify(t *testing.T) {
	for _, tc := range []struct {
		status int
		body   string
		class  failure.Class
	}{
		{429, `{"error":{"code":429,"message":"Quota exceeded for aiplatform.googleapis.com/online_prediction_requests_per_base_model","status":"RESOURCE_EXHAUSTED"}}`, failure.UpstreamRateLimited},
		{429, `[{"error":{"code":429,"message":"Quota exceeded","status":"RESOURCE_EXHAUSTED"}}]`, failure.UpstreamRateLimited},
		{503, `{"error":{"code":503,"message":"The service is currently unavailable.","status":"UNAVAILABLE"}}`, failure.UpstreamError},
		{403, `{"error":{"code":403,"message":"Permission 'aiplatform.endpoints.predict' denied","status":"PERMISSION_DENIED"}}`, failure.UpstreamAuth},
		{401, `[{"error":{"code":401,"message":"Request had invalid authentication credentials.","status":"UNAUTHENTICATED"}}]`, failure.UpstreamAuth},
		{404, `{"error":{"code":404,"message":"Publisher Model not found.","status":"NOT_FOUND"}}`, failure.UpstreamError},
		{500, `{"error":{"code":500,"message":"Internal error encountered.","status":"INTERNAL"}}`, failure.UpstreamError},
		{504, `{"error":{"code":504,"message":"Deadline expired","status":"DEADLINE_EXCEEDED"}}`, failure.UpstreamTimeout},
		{400, `{"error":{"code":400,"message":"Invalid JSON payload","status":"INVALID_ARGUMENT"}}`, failure.InvalidRequest},
		{400, `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}`, failure.ContextOverflow},
		{529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, failure.UpstreamError},
	} {
		resp := &http.Response{StatusCode: tc.status, Header: http.Header{}, Body: readCloser(tc.body)}
		(&vertex{}).answer(resp, false)
		b := readAllString(t, resp)
		fe := failure.From(anthropic.NormalizeError(resp.StatusCode, resp.Header.Get, []byte(b)))
		if fe.Class != tc.class {
			t.Errorf("%s: class %s, want %s (rewritten %d %s)", tc.body, fe.Class, tc.class, resp.StatusCode, b)
		}
		if strings.Contains(tc.body, `"UNAVAILABLE"`) && (resp.StatusCode != 503 || fe.UpstreamStatus != 503) {
			// docs/errors.md "Upstream 529 and 503": Google's 503 stays the caller's 503
			t.Errorf("UNAVAILABLE rewritten to %d (upstream status %d), want 503", resp.StatusCode, fe.UpstreamStatus)
		}
		if strings.HasPrefix(tc.body, `{"type"`) && b != tc.body {
			t.Errorf("Claude's own error was rewritten: %s", b)
		}
		if strings.Contains(tc.body, `"status"`) && gjson.Get(b, "error.details.error_code").Str == "" {
			t.Errorf("the Google status is not kept for the logs: %s", b)
		}
	}
}

// blockingSource is a token source that counts its calls and blocks each until release.
type blockingSource struct {
	calls   atomic.Int32
	release chan struct{}
	tok     func(n int32) (*oauth2.Token, error)
}

func (s *blockingSource) fetch() (*oauth2.Token, error) {
	n := s.calls.Add(1)
	<-s.release
	return s.tok(n)
}

// TestGoogleTokensNeverWaitWhileValid: the issue's "a request never waits for a token fetch
// while a valid token exists". With a token five minutes or less from expiry, a request gets it
// at once while a single background fetch runs (the fetch is blocked here: the request would
// hang if it waited); the new token replaces it when the fetch ends. With no valid token,
// requests wait, all for one fetch.
func TestGoogleTokensNeverWaitWhileValid(t *testing.T) {
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	src := &blockingSource{release: make(chan struct{}), tok: func(n int32) (*oauth2.Token, error) {
		return &oauth2.Token{AccessToken: "tok" + string(rune('0'+n)), Expiry: now.Add(time.Hour)}, nil
	}}
	g := &googleTokens{deployment: "vx", now: func() time.Time { return now }, src: src.fetch}

	// No token: two requests wait for the same fetch.
	got := make(chan string, 2)
	for range 2 {
		go func() {
			h, err := g.header(context.Background())
			if err != nil {
				got <- err.Error()
				return
			}
			got <- h[0]
		}()
	}
	for src.calls.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	select {
	case h := <-got:
		t.Fatalf("a request without a token did not wait: %s", h)
	case <-time.After(20 * time.Millisecond):
	}
	close(src.release)
	if a, b := <-got, <-got; a != "Bearer tok1" || b != "Bearer tok1" {
		t.Fatalf("got %s and %s", a, b)
	}
	if n := src.calls.Load(); n != 1 {
		t.Fatalf("%d fetches, want 1", n)
	}

	// Within the refresh window: the current token at once, one background fetch.
	src.release = make(chan struct{})
	now = now.Add(56 * time.Minute)
	for range 3 {
		h, err := g.header(context.Background())
		if err != nil || h[0] != "Bearer tok1" {
			t.Fatalf("stale-but-valid: %v %v", h, err)
		}
	}
	for src.calls.Load() != 2 {
		time.Sleep(time.Millisecond)
	}
	close(src.release)
	deadline := time.Now().Add(5 * time.Second)
	for {
		h, _ := g.header(context.Background())
		if h[0] == "Bearer tok2" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the background fetch never replaced the token")
		}
		time.Sleep(time.Millisecond)
	}
	if n := src.calls.Load(); n != 2 {
		t.Fatalf("%d fetches, want 2", n)
	}
}

// TestGoogleTokensFailure: a token endpoint that refuses the credential is upstream_auth, with
// the endpoint's error code and description (never a credential) in the cause the relay logs;
// a second request within a second gets the same answer without another fetch.
func TestGoogleTokensFailure(t *testing.T) {
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	var calls atomic.Int32
	g := &googleTokens{deployment: "vx", now: func() time.Time { return now }, src: func() (*oauth2.Token, error) {
		calls.Add(1)
		// As x/oauth2/jwt returns it: the OAuth2 error fields left in the body.
		return nil, &oauth2.RetrieveError{Response: &http.Response{StatusCode: 400},
			Body: []byte(`{"error":"invalid_grant","error_description":"Invalid JWT Signature.","secret":"x"}`)}
	}}
	for range 2 {
		_, err := g.header(context.Background())
		fe := failure.From(err)
		if fe.Class != failure.UpstreamAuth || !fe.Class.FailsOver() {
			t.Fatalf("class %s", fe.Class)
		}
		msg := fe.Error()
		if !strings.Contains(msg, "invalid_grant") || !strings.Contains(msg, "Invalid JWT Signature.") || !strings.Contains(msg, "deployment vx") || strings.Contains(msg, "secret") {
			t.Fatalf("log line %q", msg)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("%d fetches within a second, want 1", n)
	}
	now = now.Add(2 * time.Second)
	_, _ = g.header(context.Background())
	if n := calls.Load(); n != 2 {
		t.Fatalf("no new fetch after a second: %d", n)
	}
	var te *tokenError
	if _, err := g.header(context.Background()); !errors.As(err, &te) {
		t.Fatalf("cause %v", err)
	}
}

func readCloser(s string) *stringBody { return &stringBody{strings.NewReader(s)} }

type stringBody struct{ *strings.Reader }

func (*stringBody) Close() error { return nil }

func readAllString(t *testing.T, resp *http.Response) string {
	t.Helper()
	var b strings.Builder
	buf := make([]byte, 512)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return b.String()
}
