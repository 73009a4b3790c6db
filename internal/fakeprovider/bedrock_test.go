package fakeprovider

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/bedrock"
	anthropicoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/tidwall/gjson"

	"github.com/switchyard-gw/switchyard/internal/catalog"
)

// These tests hold the Bedrock emulator to the official SDK's own Bedrock adapter
// (anthropic-sdk-go/v2/bedrock: its URL and body rewriting, its SigV4 signing, its event-stream
// decoding): if the emulator's paths, checks, framing or error shapes drifted from what the SDK
// sends and reads, these would fail.

const (
	testAKID   = "AKIDFAKEBEDROCK00001"
	testSecret = "fake-secret-access-key-0000000000000001"
	testModel  = "us.anthropic.claude-haiku-4-5-20251001-v1:0"
)

func newTestBedrock(t *testing.T, cfg BedrockConfig) (*Bedrock, *httptest.Server) {
	t.Helper()
	t.Setenv("AWS_BEARER_TOKEN_BEDROCK", "")
	if cfg.AccessKeyID == "" {
		cfg.AccessKeyID, cfg.SecretAccessKey = testAKID, testSecret
	}
	b := NewBedrock(New("bedrock", catalog.Anthropic), cfg)
	srv := httptest.NewServer(b)
	t.Cleanup(srv.Close)
	return b, srv
}

// sdkBedrockClient is the official SDK on Bedrock with static credentials (akid, secret),
// pointed at srv.
func sdkBedrockClient(srv *httptest.Server, akid, secret string) anthropic.Client {
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider(akid, secret, "")}
	return anthropic.NewClient(bedrock.WithConfig(cfg), anthropicoption.WithBaseURL(srv.URL),
		anthropicoption.WithMaxRetries(0), anthropicoption.WithHTTPClient(srv.Client()))
}

func bedrockParams(tools bool) anthropic.MessageNewParams {
	p := anthropicParams(tools)
	p.Model = testModel
	return p
}

func TestBedrockSDKMessageToolCall(t *testing.T) {
	b, srv := newTestBedrock(t, BedrockConfig{})
	b.Provider().Script(Behavior{ToolCall: true})
	client := sdkBedrockClient(srv, testAKID, testSecret)
	msg, err := client.Messages.New(t.Context(), bedrockParams(true), anthropicoption.WithHeader("anthropic-beta", "beta-one, beta-two"))
	if err != nil {
		t.Fatal(err)
	}
	if len(msg.Content) != 1 || msg.Content[0].Type != "tool_use" || msg.Content[0].Name != "get_weather" || msg.StopReason != "tool_use" {
		t.Fatalf("message = %+v", msg)
	}
	if msg.Model != testModel || msg.Usage.InputTokens == 0 || msg.Usage.OutputTokens == 0 {
		t.Fatalf("model %q, usage %+v", msg.Model, msg.Usage)
	}
	reqs := b.Requests()
	if len(reqs) != 1 || reqs[0].Auth != "sigv4" || reqs[0].Operation != "invoke" || reqs[0].ModelID != testModel || reqs[0].Rejected != "" {
		t.Fatalf("requests = %+v", reqs)
	}
	body := reqs[0].Body
	if gjson.GetBytes(body, "model").Exists() || gjson.GetBytes(body, "stream").Exists() ||
		gjson.GetBytes(body, "anthropic_version").Str == "" || gjson.GetBytes(body, "anthropic_beta").Raw != `["beta-one","beta-two"]` {
		t.Fatalf("bedrock body = %s", body)
	}
	inner := b.Provider().Requests()
	if len(inner) != 1 || inner[0].Model != testModel || inner[0].Stream || inner[0].Header.Get("Anthropic-Beta") != "beta-one,beta-two" {
		t.Fatalf("provider saw %+v", inner)
	}
}

func TestBedrockSDKStream(t *testing.T) {
	b, srv := newTestBedrock(t, BedrockConfig{})
	b.Provider().Script(Behavior{Text: "Hello from Bedrock.", Deltas: 4, KeepAlive: true, SplitWrites: true, CachedTokens: 2})
	client := sdkBedrockClient(srv, testAKID, testSecret)
	stream := client.Messages.NewStreaming(t.Context(), bedrockParams(false))
	var msg anthropic.Message
	deltas := 0
	for stream.Next() {
		ev := stream.Current()
		if err := msg.Accumulate(ev); err != nil {
			t.Fatal(err)
		}
		if ev.Type == "content_block_delta" {
			deltas++
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if deltas != 4 || len(msg.Content) != 1 || msg.Content[0].Text != "Hello from Bedrock." || msg.StopReason != "end_turn" {
		t.Fatalf("deltas %d, message %+v", deltas, msg)
	}
	if msg.Usage.CacheReadInputTokens != 2 || msg.Usage.OutputTokens == 0 {
		t.Fatalf("usage %+v", msg.Usage)
	}
	if r := b.Requests(); len(r) != 1 || r[0].Operation != "invoke-with-response-stream" {
		t.Fatalf("requests %+v", r)
	}
}

func TestBedrockSDKStreamException(t *testing.T) {
	for _, tc := range []struct {
		b    Behavior
		want string
	}{
		{Behavior{Kind: KindStreamError, After: 1}, "modelStreamErrorException"},
		{Behavior{Kind: KindPreambleError}, "serviceUnavailableException"},
		{Behavior{Kind: KindStreamError, After: 2, ErrorType: "throttlingException"}, "throttlingException"},
		{Behavior{Kind: KindStreamError, After: 1, ErrorType: "rate_limit_error"}, "throttlingException"},
	} {
		b, srv := newTestBedrock(t, BedrockConfig{})
		b.Provider().Script(tc.b)
		client := sdkBedrockClient(srv, testAKID, testSecret)
		stream := client.Messages.NewStreaming(t.Context(), bedrockParams(false))
		deltas := 0
		for stream.Next() {
			if stream.Current().Type == "content_block_delta" {
				deltas++
			}
		}
		err := stream.Err()
		if err == nil || !strings.Contains(err.Error(), tc.want) || deltas != tc.b.After {
			t.Fatalf("%+v: %d deltas, err %v; want %s after %d", tc.b, deltas, err, tc.want, tc.b.After)
		}
	}
}

func TestBedrockSDKErrors(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cfg      BedrockConfig
		b        Behavior
		akid     string
		secret   string
		status   int
		typ, msg string
	}{
		{"throttling", BedrockConfig{}, Behavior{Kind: KindStatus, Status: 429}, testAKID, testSecret, 429, "ThrottlingException", "Too many requests"},
		{"unavailable", BedrockConfig{}, Behavior{Kind: KindStatus, Status: 529}, testAKID, testSecret, 503, "ServiceUnavailableException", ""},
		{"overflow", BedrockConfig{}, Behavior{Kind: KindContextOverflow}, testAKID, testSecret, 400, "ValidationException", "Input is too long"},
		{"scripted type", BedrockConfig{}, Behavior{Kind: KindStatus, Status: 424, ErrorType: "ModelErrorException"}, testAKID, testSecret, 424, "ModelErrorException", ""},
		{"wrong secret", BedrockConfig{}, Behavior{}, testAKID, "not-the-secret", 403, "InvalidSignatureException", "does not match"},
		{"unknown key", BedrockConfig{}, Behavior{}, "AKIDUNKNOWN000000000", testSecret, 403, "UnrecognizedClientException", ""},
		{"clock behind", BedrockConfig{Now: func() time.Time { return time.Now().Add(6 * time.Minute) }}, Behavior{}, testAKID, testSecret, 403, "InvalidSignatureException", "Signature expired"},
		{"clock ahead", BedrockConfig{Now: func() time.Time { return time.Now().Add(-6 * time.Minute) }}, Behavior{}, testAKID, testSecret, 403, "InvalidSignatureException", "Signature not yet current"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, srv := newTestBedrock(t, tc.cfg)
			b.Provider().Script(tc.b)
			var resp *http.Response
			client := sdkBedrockClient(srv, tc.akid, tc.secret)
			_, err := client.Messages.New(t.Context(), bedrockParams(false), anthropicoption.WithResponseInto(&resp))
			var apiErr *anthropic.Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != tc.status {
				t.Fatalf("err = %v, want status %d", err, tc.status)
			}
			h := apiErr.Response.Header.Get("X-Amzn-Errortype")
			if !strings.HasPrefix(h, tc.typ+":") || !strings.Contains(apiErr.RawJSON(), tc.msg) || !gjson.Valid(apiErr.RawJSON()) {
				t.Fatalf("x-amzn-ErrorType %q, body %s", h, apiErr.RawJSON())
			}
			if tc.b.Kind == KindOK && b.Provider().Hits() != 0 {
				t.Fatal("a request that failed authentication reached the provider")
			}
		})
	}
}

func TestBedrockSDKAPIKey(t *testing.T) {
	b, srv := newTestBedrock(t, BedrockConfig{APIKey: "bedrock-api-key-123"})
	t.Setenv("AWS_BEARER_TOKEN_BEDROCK", "bedrock-api-key-123")
	client := sdkBedrockClient(srv, "unused", "unused")
	msg, err := client.Messages.New(t.Context(), bedrockParams(false))
	if err != nil || msg.Content[0].Text != "Hello from bedrock." {
		t.Fatalf("msg %+v, err %v", msg, err)
	}
	if r := b.Requests(); len(r) != 1 || r[0].Auth != "bearer" || r[0].Header.Get("Authorization") != "Bearer bedrock-api-key-123" {
		t.Fatalf("requests %+v", r)
	}
	t.Setenv("AWS_BEARER_TOKEN_BEDROCK", "another-key")
	client = sdkBedrockClient(srv, "unused", "unused")
	_, err = client.Messages.New(t.Context(), bedrockParams(false))
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 403 || !strings.HasPrefix(apiErr.Response.Header.Get("X-Amzn-Errortype"), "AccessDeniedException") {
		t.Fatalf("wrong key: %v", err)
	}
}

// signedPost sends body to path on srv signed with the test credential.
func signedPost(t *testing.T, srv *httptest.Server, path string, body []byte) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	sum := sha256.Sum256(body)
	creds := aws.Credentials{AccessKeyID: testAKID, SecretAccessKey: testSecret}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, req, hex.EncodeToString(sum[:]), "bedrock", "us-east-1", time.Now()); err != nil {
		t.Fatal(err)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp, out
}

func TestBedrockRefusesAnthropicBodies(t *testing.T) {
	b, srv := newTestBedrock(t, BedrockConfig{})
	path := "/model/" + url.PathEscape(testModel) + "/invoke"
	for _, tc := range []struct{ body, want string }{
		{`{"model":"x","anthropic_version":"bedrock-2023-05-31","max_tokens":5,"messages":[]}`, "extraneous key [model]"},
		{`{"stream":true,"anthropic_version":"bedrock-2023-05-31","max_tokens":5,"messages":[]}`, "extraneous key [stream]"},
		{`{"max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, "required key [anthropic_version] not found"},
		{`{"anthropic_version":"bedrock-2099","max_tokens":5,"messages":[]}`, "anthropic_version"},
		{`not json`, "Malformed input request"},
	} {
		resp, out := signedPost(t, srv, path, []byte(tc.body))
		if resp.StatusCode != 400 || !strings.HasPrefix(resp.Header.Get("X-Amzn-Errortype"), "ValidationException") || !strings.Contains(string(out), tc.want) {
			t.Fatalf("%s: %d %s %s", tc.body, resp.StatusCode, resp.Header.Get("X-Amzn-Errortype"), out)
		}
	}
	if b.Provider().Hits() != 0 {
		t.Fatal("a refused body reached the provider")
	}
	resp, out := signedPost(t, srv, "/model/x/converse", []byte(`{}`))
	if resp.StatusCode != 404 {
		t.Fatalf("unknown operation: %d %s", resp.StatusCode, out)
	}
}

func TestBedrockCountTokens(t *testing.T) {
	b, srv := newTestBedrock(t, BedrockConfig{})
	invoke := `{"anthropic_version":"bedrock-2023-05-31","max_tokens":1,"messages":[{"role":"user","content":"Say hello"}]}`
	body := `{"input":{"invokeModel":{"body":"` + base64.StdEncoding.EncodeToString([]byte(invoke)) + `"}}}`
	resp, out := signedPost(t, srv, "/model/anthropic.claude-haiku-4-5-20251001-v1:0/count-tokens", []byte(body))
	if resp.StatusCode != 200 || gjson.GetBytes(out, "inputTokens").Int() <= 0 || gjson.GetBytes(out, "input_tokens").Exists() {
		t.Fatalf("%d %s", resp.StatusCode, out)
	}
	if r := b.Provider().Requests(); len(r) != 1 || r[0].Path != countTokensPath || r[0].Model != "anthropic.claude-haiku-4-5-20251001-v1:0" {
		t.Fatalf("provider saw %+v", r)
	}
}
