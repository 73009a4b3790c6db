package fakeprovider

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	anthropicoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/vertex"
	"golang.org/x/oauth2/google"
)

// The Vertex emulator is held to anthropic-sdk-go/v2/vertex, the SDK's own Vertex adapter, and
// to golang.org/x/oauth2/google's service-account flow: if its paths, body rules, token
// endpoint or framing drifted from what they send and read, these fail.

// vertexSDK is the official SDK with its Vertex adapter, authenticated by the service account
// saJSON (whose token_uri names the emulator) and pointed at srv.
func vertexSDK(t *testing.T, srv *httptest.Server, saJSON []byte) anthropic.Client {
	t.Helper()
	creds, err := google.CredentialsFromJSONWithTypeAndParams(context.Background(), saJSON, google.ServiceAccount,
		google.CredentialsParams{Scopes: []string{"https://www.googleapis.com/auth/cloud-platform"}})
	if err != nil {
		t.Fatal(err)
	}
	return anthropic.NewClient(vertex.WithCredentials(context.Background(), "us-east5", "my-project", creds),
		anthropicoption.WithBaseURL(srv.URL+"/"), anthropicoption.WithMaxRetries(0))
}

func TestVertexEmulatorWithVertexSDK(t *testing.T) {
	v := NewVertex("vertex")
	srv := httptest.NewServer(v)
	t.Cleanup(srv.Close)
	client := vertexSDK(t, srv, v.ServiceAccountJSON(srv.URL))
	params := anthropicParams(false)
	params.Model = "claude-sonnet-4-5@20250929"

	m, err := client.Messages.New(t.Context(), params)
	if err != nil {
		t.Fatal(err)
	}
	if m.Content[0].Text != "Hello from vertex." || m.Model != "claude-sonnet-4-5@20250929" {
		t.Fatalf("message %+v", m)
	}

	v.Script(Behavior{ToolCall: true, Deltas: 4})
	tp := anthropicParams(true)
	tp.Model = params.Model
	st := client.Messages.NewStreaming(t.Context(), tp)
	var acc anthropic.Message
	for st.Next() {
		if err := acc.Accumulate(st.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	if acc.StopReason != "tool_use" || len(acc.Content) != 1 || !strings.Contains(string(acc.Content[0].Input), "city") {
		t.Fatalf("streamed %+v", acc)
	}

	n, err := client.Messages.CountTokens(t.Context(), anthropic.MessageCountTokensParams{Model: params.Model, Messages: params.Messages})
	if err != nil || n.InputTokens <= 0 {
		t.Fatalf("count tokens: %v %+v", err, n)
	}

	calls := v.Calls()
	if len(calls) != 3 {
		t.Fatalf("calls %+v", calls)
	}
	for i, want := range []struct{ model, method string }{
		{"claude-sonnet-4-5@20250929", "rawPredict"}, {"claude-sonnet-4-5@20250929", "streamRawPredict"}, {"count-tokens", "rawPredict"},
	} {
		c := calls[i]
		if c.Project != "my-project" || c.Location != "us-east5" || c.Model != want.model || c.Method != want.method ||
			!strings.HasPrefix(c.Authorization, "Bearer ya29.fake-") || c.AnthropicVersion == "" {
			t.Fatalf("call %d %+v", i, c)
		}
	}
	if got := v.TokenHits(); got != 1 {
		t.Fatalf("token endpoint hit %d times, want 1 (one token for every request)", got)
	}
}

func TestVertexEmulatorErrors(t *testing.T) {
	v := NewVertex("vertex")
	srv := httptest.NewServer(v)
	t.Cleanup(srv.Close)
	client := vertexSDK(t, srv, v.ServiceAccountJSON(srv.URL))
	params := anthropicParams(false)

	// A scripted 429 is Google's RESOURCE_EXHAUSTED; on a stream, as a one-element array.
	v.Script(Behavior{Kind: KindStatus, Status: 429})
	_, err := client.Messages.New(t.Context(), params)
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 429 || !strings.Contains(apiErr.RawJSON(), `"status":"RESOURCE_EXHAUSTED"`) {
		t.Fatalf("429: %v", err)
	}
	v.Script(Behavior{Kind: KindStatus, Status: 503})
	st := client.Messages.NewStreaming(t.Context(), params)
	for st.Next() {
	}
	if !errors.As(st.Err(), &apiErr) || apiErr.StatusCode != 503 || !strings.HasPrefix(apiErr.RawJSON(), `[{"error"`) {
		t.Fatalf("503 on a stream: %v", st.Err())
	}
	// Claude's own errors keep Anthropic's shape.
	v.Script(Behavior{Kind: KindContextOverflow})
	_, err = client.Messages.New(t.Context(), params)
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || !strings.Contains(apiErr.RawJSON(), "prompt is too long") {
		t.Fatalf("context overflow: %v", err)
	}

	// A body with model, or without anthropic_version, is refused; no behavior is consumed.
	hits := v.Hits()
	for _, body := range []string{
		`{"anthropic_version":"vertex-2023-10-16","model":"claude","max_tokens":5,"messages":[]}`,
		`{"max_tokens":5,"messages":[]}`,
	} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/projects/p/locations/global/publishers/anthropic/models/claude:rawPredict", strings.NewReader(body))
		req.Header.Set("Authorization", calls(v)[0].Authorization)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 400 {
			t.Fatalf("%s: %d", body, resp.StatusCode)
		}
	}
	if v.Hits() != hits {
		t.Fatal("a refused body consumed a behavior")
	}

	// A token the emulator never issued is UNAUTHENTICATED.
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/projects/p/locations/global/publishers/anthropic/models/claude:rawPredict",
		strings.NewReader(`{"anthropic_version":"vertex-2023-10-16","max_tokens":5,"messages":[]}`))
	req.Header.Set("Authorization", "Bearer ya29.stolen")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Fatalf("unknown token: %d", resp.StatusCode)
	}
}

func calls(v *Vertex) []VertexCall { return v.Calls() }

// TestVertexEmulatorTokenEndpoint: the token endpoint refuses a JWT signed by another key and
// one from a clock skewed by more than 5 minutes, and tokens expire after their lifetime.
func TestVertexEmulatorTokenEndpoint(t *testing.T) {
	v := NewVertex("vertex")
	srv := httptest.NewServer(v)
	t.Cleanup(srv.Close)
	params := anthropicParams(false)

	other := NewVertex("other")
	foreign := vertexSDK(t, srv, other.ServiceAccountJSON(srv.URL))
	_, err := foreign.Messages.New(t.Context(), params)
	if err == nil || !strings.Contains(err.Error(), "invalid_grant") {
		t.Fatalf("foreign key: %v", err)
	}
	v.ServiceAccountJSON(srv.URL) // the emulator checks the audience against its token_uri again

	v.SetClockOffset(6 * time.Minute)
	skewed := vertexSDK(t, srv, v.ServiceAccountJSON(srv.URL))
	_, err = skewed.Messages.New(t.Context(), params)
	if err == nil || !strings.Contains(err.Error(), "invalid_grant") {
		t.Fatalf("skewed clock: %v", err)
	}
	v.SetClockOffset(0)

	v.SetTokenLifetime(time.Second)
	c := vertexSDK(t, srv, v.ServiceAccountJSON(srv.URL))
	if _, err := c.Messages.New(t.Context(), params); err != nil {
		t.Fatal(err)
	}
	v.SetClockOffset(2 * time.Second) // the issued token has expired on the emulator's clock
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/projects/p/locations/global/publishers/anthropic/models/claude:rawPredict",
		strings.NewReader(`{"anthropic_version":"vertex-2023-10-16","max_tokens":5,"messages":[]}`))
	req.Header.Set("Authorization", v.Calls()[len(v.Calls())-1].Authorization)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Fatalf("expired token: %d", resp.StatusCode)
	}
}
