package upstream

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/tidwall/gjson"

	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/dialect/anthropic"
	"github.com/switchyard-gw/switchyard/internal/failure"
	"github.com/switchyard-gw/switchyard/internal/fakeprovider"
)

const (
	bedrockAKID   = "AKIDUPSTREAMTEST0001"
	bedrockSecret = "upstream-test-secret-key-000000000000001"
	bedrockModel  = "us.anthropic.claude-haiku-4-5-20251001-v1:0"
)

// bedrockEmulator starts the Bedrock emulator with cfg (the test credential when cfg names
// none) and returns it with a deployment pointed at it.
func bedrockEmulator(t *testing.T, cfg fakeprovider.BedrockConfig) (*fakeprovider.Bedrock, *catalog.Deployment) {
	t.Helper()
	if cfg.AccessKeyID == "" {
		cfg.AccessKeyID, cfg.SecretAccessKey = bedrockAKID, bedrockSecret
	}
	b := fakeprovider.NewBedrock(fakeprovider.New("bedrock", catalog.Anthropic), cfg)
	srv := httptest.NewServer(b)
	t.Cleanup(srv.Close)
	dep := &catalog.Deployment{Name: "bedrock-east", Provider: "bedrock", Dialect: catalog.Anthropic, Platform: catalog.PlatformBedrock,
		BaseURL: srv.URL + "/ignored/path", AWS: catalog.AWS{Region: "us-east-1", AccessKeyID: bedrockAKID, SecretAccessKey: bedrockSecret}}
	return b, dep
}

func bedrockClient(t *testing.T, dep *catalog.Deployment) *Client {
	c := New(dep, Deadlines{})
	t.Cleanup(c.Close)
	return c
}

const bedrockReq = `{"model":"` + bedrockModel + `","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"Say hello"}]}`

// send performs one attempt and returns its status, headers' content type and whole body.
func send(t *testing.T, c *Client, op catalog.Protocol, body string, stream bool, beta string) (*Call, []byte, error) {
	t.Helper()
	call, err := c.Send(t.Context(), op, []byte(body), stream, beta)
	if err != nil {
		return nil, nil, err
	}
	defer call.Close()
	out, rerr := io.ReadAll(call.Body)
	return call, out, rerr
}

func TestBedrockBody(t *testing.T) {
	in := []byte(bedrockReq)
	orig := string(in)
	out, err := bedrockBody(in, "beta-a, beta-b,,", false)
	if err != nil {
		t.Fatal(err)
	}
	if string(in) != orig {
		t.Fatal("bedrockBody modified the relay's body")
	}
	if gjson.GetBytes(out, "model").Exists() || gjson.GetBytes(out, "stream").Exists() || !gjson.ValidBytes(out) ||
		gjson.GetBytes(out, "anthropic_version").Str != BedrockAnthropicVersion || gjson.GetBytes(out, "anthropic_beta").Raw != `["beta-a","beta-b"]` ||
		gjson.GetBytes(out, "max_tokens").Int() != 50 || gjson.GetBytes(out, "messages.0.content").Str != "Say hello" {
		t.Fatalf("body = %s", out)
	}
	out, err = bedrockBody([]byte(`{"model":"m","messages":[]}`), "", true)
	if err != nil || string(out) != `{"messages":[],"anthropic_version":"bedrock-2023-05-31","max_tokens":1}` {
		t.Fatalf("count_tokens body = %s, %v", out, err)
	}
	if out, err = bedrockBody([]byte(`{"model":"m"}`), "", false); err != nil || string(out) != `{"anthropic_version":"bedrock-2023-05-31"}` {
		t.Fatalf("body = %s, %v", out, err)
	}
	if bedrockFoundationModel(bedrockModel) != "anthropic.claude-haiku-4-5-20251001-v1:0" ||
		bedrockFoundationModel("anthropic.claude-3-5-haiku-20241022-v1:0") != "anthropic.claude-3-5-haiku-20241022-v1:0" ||
		bedrockFoundationModel("arn:aws:bedrock:us-east-1:1:inference-profile/us.anthropic.x") != "arn:aws:bedrock:us-east-1:1:inference-profile/us.anthropic.x" {
		t.Fatal("bedrockFoundationModel")
	}
}

func TestBedrockBase(t *testing.T) {
	dep := &catalog.Deployment{AWS: catalog.AWS{Region: "eu-west-3"}}
	if got := bedrockBase(dep); got != "https://bedrock-runtime.eu-west-3.amazonaws.com" {
		t.Fatal(got)
	}
	dep.BaseURL = "https://vpce-1.bedrock-runtime.eu-west-3.vpce.amazonaws.com/some/path"
	if got := bedrockBase(dep); got != "https://vpce-1.bedrock-runtime.eu-west-3.vpce.amazonaws.com" {
		t.Fatal(got)
	}
}

func TestBedrockInvokeSigV4(t *testing.T) {
	b, dep := bedrockEmulator(t, fakeprovider.BedrockConfig{})
	b.Provider().Script(fakeprovider.Behavior{ToolCall: true})
	c := bedrockClient(t, dep)
	call, out, err := send(t, c, catalog.ProtocolModel, bedrockReq, false, "tools-2024-04-04")
	if err != nil || call.Status != 200 {
		t.Fatalf("status %v, err %v, body %s", call, err, out)
	}
	if gjson.GetBytes(out, "content.0.type").Str != "tool_use" || gjson.GetBytes(out, "usage.output_tokens").Int() == 0 {
		t.Fatalf("body %s", out)
	}
	reqs := b.Requests()
	if len(reqs) != 1 || reqs[0].Auth != "sigv4" || reqs[0].Operation != "invoke" || reqs[0].ModelID != bedrockModel ||
		reqs[0].Path != "/model/"+bedrockModel+"/invoke" {
		t.Fatalf("requests %+v", reqs)
	}
	if gjson.GetBytes(reqs[0].Body, "anthropic_beta").Raw != `["tools-2024-04-04"]` || reqs[0].Header.Get("Anthropic-Beta") != "" ||
		reqs[0].Header.Get("Anthropic-Version") != "" || reqs[0].Header.Get("X-Api-Key") != "" {
		t.Fatalf("request %s %v", reqs[0].Body, reqs[0].Header)
	}
}

func TestBedrockStreamIsSSE(t *testing.T) {
	b, dep := bedrockEmulator(t, fakeprovider.BedrockConfig{})
	b.Provider().Script(fakeprovider.Behavior{Text: "one two three four", Deltas: 4, SplitWrites: true, KeepAlive: true})
	c := bedrockClient(t, dep)
	call, out, err := send(t, c, catalog.ProtocolModel, bedrockReq, true, "")
	if err != nil || call.Status != 200 || call.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("call %+v err %v", call, err)
	}
	var types []string
	text := ""
	for frame := range strings.SplitSeq(strings.TrimSuffix(string(out), "\n\n"), "\n\n") {
		ev, data, ok := strings.Cut(frame, "\n")
		data, _ = strings.CutPrefix(data, "data: ")
		if !ok || !strings.HasPrefix(ev, "event: ") || !gjson.Valid(data) || gjson.Get(data, "type").Str != ev[len("event: "):] {
			t.Fatalf("frame %q", frame)
		}
		types = append(types, ev[len("event: "):])
		text += gjson.Get(data, "delta.text").Str
		if strings.Contains(data, "invocationMetrics") {
			t.Fatalf("Bedrock's metrics reached the Anthropic wire: %s", data)
		}
	}
	want := "message_start content_block_start ping content_block_delta content_block_delta content_block_delta content_block_delta content_block_stop message_delta message_stop"
	if strings.Join(types, " ") != want || text != "one two three four" {
		t.Fatalf("events %v, text %q", types, text)
	}
	if r := b.Requests(); r[0].Operation != "invoke-with-response-stream" || r[0].Header.Get("Accept") != "application/vnd.amazon.eventstream" {
		t.Fatalf("request %+v", r[0])
	}
}

// The commit gate reads a Bedrock exception frame as the Anthropic error event of the same
// class: throttling is upstream_rate_limited, a model stream error or unavailability fails over
// as upstream_error, a validation error about the input's length is context_overflow.
func TestBedrockStreamExceptions(t *testing.T) {
	for _, tc := range []struct {
		b     fakeprovider.Behavior
		class failure.Class
		code  string
	}{
		{fakeprovider.Behavior{Kind: fakeprovider.KindStreamError, After: 1}, failure.UpstreamError, "modelStreamErrorException"},
		{fakeprovider.Behavior{Kind: fakeprovider.KindPreambleError}, failure.UpstreamError, "serviceUnavailableException"},
		{fakeprovider.Behavior{Kind: fakeprovider.KindStreamError, After: 2, ErrorType: "throttlingException"}, failure.UpstreamRateLimited, "throttlingException"},
		{fakeprovider.Behavior{Kind: fakeprovider.KindStreamError, ErrorType: "internalServerException"}, failure.UpstreamError, "internalServerException"},
		{fakeprovider.Behavior{Kind: fakeprovider.KindStreamError, ErrorType: "modelTimeoutException"}, failure.UpstreamTimeout, "modelTimeoutException"},
		{fakeprovider.Behavior{Kind: fakeprovider.KindStreamError, ErrorType: "validationException", Message: "Input is too long for requested model."}, failure.ContextOverflow, "validationException"},
		{fakeprovider.Behavior{Kind: fakeprovider.KindStreamError, ErrorType: "validationException", Message: "bad"}, failure.InvalidRequest, "validationException"},
	} {
		b, dep := bedrockEmulator(t, fakeprovider.BedrockConfig{})
		b.Provider().Script(tc.b)
		_, out, err := send(t, bedrockClient(t, dep), catalog.ProtocolModel, bedrockReq, true, "")
		if err != nil {
			t.Fatal(err)
		}
		s := string(out)
		i := strings.Index(s, "event: error\ndata: ")
		if i < 0 || strings.Count(s, "event: content_block_delta") != tc.b.After {
			t.Fatalf("%+v: stream %q", tc.b, s)
		}
		data := strings.TrimSuffix(s[i+len("event: error\ndata: "):], "\n\n")
		fe := failure.From(anthropic.NormalizeStreamError([]byte(data)))
		if fe.Class != tc.class || !strings.Contains(fe.Cause.Error(), "error_code="+tc.code) {
			t.Fatalf("%+v: %s is %s (%v), want %s", tc.b, data, fe.Class, fe.Cause, tc.class)
		}
	}
}

// Bedrock's error answers come back in Anthropic's shape with the status that
// anthropic.NormalizeError classifies as the AWS error type means, and a log cause that names
// the type (a clock skew as such) and never the message or a credential.
func TestBedrockErrorClasses(t *testing.T) {
	skewed := func() time.Time { return time.Now().Add(-10 * time.Minute) }
	for _, tc := range []struct {
		name   string
		cfg    fakeprovider.BedrockConfig
		b      fakeprovider.Behavior
		secret string
		class  failure.Class
		code   string
	}{
		{"throttling", fakeprovider.BedrockConfig{}, fakeprovider.Behavior{Kind: fakeprovider.KindStatus, Status: 429}, "", failure.UpstreamRateLimited, "ThrottlingException"},
		{"unavailable", fakeprovider.BedrockConfig{}, fakeprovider.Behavior{Kind: fakeprovider.KindStatus, Status: 503}, "", failure.UpstreamError, "ServiceUnavailableException"},
		{"internal", fakeprovider.BedrockConfig{}, fakeprovider.Behavior{Kind: fakeprovider.KindStatus, Status: 500}, "", failure.UpstreamError, "InternalServerException"},
		{"model timeout", fakeprovider.BedrockConfig{}, fakeprovider.Behavior{Kind: fakeprovider.KindStatus, Status: 504}, "", failure.UpstreamTimeout, "ModelTimeoutException"},
		{"model error", fakeprovider.BedrockConfig{}, fakeprovider.Behavior{Kind: fakeprovider.KindStatus, Status: 424, ErrorType: "ModelErrorException"}, "", failure.UpstreamError, "ModelErrorException"},
		{"not ready", fakeprovider.BedrockConfig{}, fakeprovider.Behavior{Kind: fakeprovider.KindStatus, Status: 429, ErrorType: "ModelNotReadyException"}, "", failure.UpstreamError, "ModelNotReadyException"},
		{"not found", fakeprovider.BedrockConfig{}, fakeprovider.Behavior{Kind: fakeprovider.KindStatus, Status: 404}, "", failure.UpstreamError, "ResourceNotFoundException"},
		{"validation", fakeprovider.BedrockConfig{}, fakeprovider.Behavior{Kind: fakeprovider.KindStatus, Status: 400}, "", failure.InvalidRequest, "ValidationException"},
		{"context overflow", fakeprovider.BedrockConfig{}, fakeprovider.Behavior{Kind: fakeprovider.KindContextOverflow}, "", failure.ContextOverflow, "ValidationException"},
		{"access denied", fakeprovider.BedrockConfig{}, fakeprovider.Behavior{Kind: fakeprovider.KindStatus, Status: 403}, "", failure.UpstreamAuth, "AccessDeniedException"},
		{"wrong secret", fakeprovider.BedrockConfig{}, fakeprovider.Behavior{}, "wrong-secret", failure.UpstreamAuth, "InvalidSignatureException"},
		{"clock skew", fakeprovider.BedrockConfig{Now: skewed}, fakeprovider.Behavior{}, "", failure.UpstreamAuth, "InvalidSignatureException:clock_skew"},
		{"unknown key", fakeprovider.BedrockConfig{AccessKeyID: "AKIDSOMEONEELSE00001", SecretAccessKey: "x"}, fakeprovider.Behavior{}, "", failure.UpstreamAuth, "UnrecognizedClientException"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, dep := bedrockEmulator(t, tc.cfg)
			b.Provider().Script(tc.b)
			if tc.secret != "" {
				dep.AWS.SecretAccessKey = tc.secret
			}
			for _, stream := range []bool{false, true} {
				b.Provider().Script(tc.b)
				call, out, err := send(t, bedrockClient(t, dep), catalog.ProtocolModel, bedrockReq, stream, "")
				if err != nil {
					t.Fatal(err)
				}
				fe := failure.From(anthropic.NormalizeError(call.Status, call.Header.Get, out))
				cause := fe.Cause.Error()
				if fe.Class != tc.class || !strings.HasSuffix(cause, "error_code="+tc.code) {
					t.Fatalf("stream %v: %d %s is %s (%s), want %s %s", stream, call.Status, out, fe.Class, cause, tc.class, tc.code)
				}
				if strings.Contains(cause, "signature") || strings.Contains(cause, bedrockSecret) || strings.Contains(cause, "Too many") {
					t.Fatalf("the cause carries provider text: %s", cause)
				}
			}
		})
	}
}

func TestBedrockGarbageStream(t *testing.T) {
	b, dep := bedrockEmulator(t, fakeprovider.BedrockConfig{})
	b.Provider().Script(fakeprovider.Behavior{Kind: fakeprovider.KindGarbage})
	_, _, err := send(t, bedrockClient(t, dep), catalog.ProtocolModel, bedrockReq, true, "")
	if err == nil {
		t.Fatal("a corrupt event stream read without error")
	}
	b.Provider().Script(fakeprovider.Behavior{Kind: fakeprovider.KindCut, After: 1})
	_, out, err := send(t, bedrockClient(t, dep), catalog.ProtocolModel, bedrockReq, true, "")
	if err == nil || !errors.Is(err, io.ErrUnexpectedEOF) && !strings.Contains(err.Error(), "EOF") {
		t.Fatalf("a cut stream read %q, %v", out, err)
	}
}

func TestBedrockCountTokens(t *testing.T) {
	b, dep := bedrockEmulator(t, fakeprovider.BedrockConfig{})
	call, out, err := send(t, bedrockClient(t, dep), catalog.ProtocolCountTokens,
		`{"model":"`+bedrockModel+`","messages":[{"role":"user","content":"Say hello"}]}`, false, "")
	if err != nil || call.Status != 200 || gjson.GetBytes(out, "input_tokens").Int() <= 0 {
		t.Fatalf("%v %s %v", call, out, err)
	}
	r := b.Requests()
	if len(r) != 1 || r[0].Path != "/model/anthropic.claude-haiku-4-5-20251001-v1:0/count-tokens" {
		t.Fatalf("requests %+v", r)
	}
	inner, _ := base64.StdEncoding.DecodeString(gjson.GetBytes(r[0].Body, "input.invokeModel.body").Str)
	if gjson.GetBytes(inner, "anthropic_version").Str != BedrockAnthropicVersion || gjson.GetBytes(inner, "model").Exists() {
		t.Fatalf("invoke body %s", inner)
	}
}

func TestBedrockAPIKey(t *testing.T) {
	b, dep := bedrockEmulator(t, fakeprovider.BedrockConfig{APIKey: "bedrock-key-1"})
	dep.APIKey = "bedrock-key-1"
	call, out, err := send(t, bedrockClient(t, dep), catalog.ProtocolModel, bedrockReq, false, "")
	if err != nil || call.Status != 200 {
		t.Fatalf("%v %s %v", call, out, err)
	}
	if r := b.Requests(); r[0].Auth != "bearer" || r[0].Header.Get("X-Amz-Date") != "" {
		t.Fatalf("request %+v", r[0])
	}
	dep.APIKey = "bedrock-key-2"
	call, out, _ = send(t, bedrockClient(t, dep), catalog.ProtocolModel, bedrockReq, false, "")
	if fe := failure.From(anthropic.NormalizeError(call.Status, call.Header.Get, out)); fe.Class != failure.UpstreamAuth {
		t.Fatalf("wrong key: %d %s is %s", call.Status, out, fe.Class)
	}
}

// isolateAWS points the AWS SDK's default chain at an empty environment: no keys, no shared
// files, no instance metadata, so that nothing on the machine and no network is read.
func isolateAWS(t *testing.T) string {
	dir := t.TempDir()
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE",
		"AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_BEARER_TOKEN_BEDROCK"} {
		t.Setenv(k, "")
	}
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	return dir
}

func TestBedrockDefaultChainEnvironment(t *testing.T) {
	isolateAWS(t)
	t.Setenv("AWS_ACCESS_KEY_ID", bedrockAKID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", bedrockSecret)
	t.Setenv("AWS_SESSION_TOKEN", "session-token-1")
	b, dep := bedrockEmulator(t, fakeprovider.BedrockConfig{SessionToken: "session-token-1"})
	dep.AWS = catalog.AWS{Region: "us-east-1"}
	call, out, err := send(t, bedrockClient(t, dep), catalog.ProtocolModel, bedrockReq, false, "")
	if err != nil || call.Status != 200 || b.Requests()[0].Header.Get("X-Amz-Security-Token") != "session-token-1" {
		t.Fatalf("%v %s %v", call, out, err)
	}
}

func TestBedrockDefaultChainProfile(t *testing.T) {
	dir := isolateAWS(t)
	creds := "[default]\naws_access_key_id = AKIDNOTTHISONE000001\naws_secret_access_key = nope\n\n[gateway]\naws_access_key_id = " +
		bedrockAKID + "\naws_secret_access_key = " + bedrockSecret + "\n"
	if err := os.WriteFile(filepath.Join(dir, "credentials"), []byte(creds), 0o600); err != nil {
		t.Fatal(err)
	}
	b, dep := bedrockEmulator(t, fakeprovider.BedrockConfig{})
	dep.AWS = catalog.AWS{Region: "us-east-1", Profile: "gateway"}
	call, out, err := send(t, bedrockClient(t, dep), catalog.ProtocolModel, bedrockReq, false, "")
	if err != nil || call.Status != 200 || b.Requests()[0].Auth != "sigv4" {
		t.Fatalf("%v %s %v", call, out, err)
	}
	dep.AWS.Profile = "missing"
	_, _, err = send(t, bedrockClient(t, dep), catalog.ProtocolModel, bedrockReq, false, "")
	if fe := failure.From(err); fe.Class != failure.UpstreamAuth || !strings.Contains(fe.Cause.Error(), "missing") {
		t.Fatalf("missing profile: %v", err)
	}
}

func TestBedrockNoCredentials(t *testing.T) {
	isolateAWS(t)
	b, dep := bedrockEmulator(t, fakeprovider.BedrockConfig{})
	dep.AWS = catalog.AWS{Region: "us-east-1"}
	_, _, err := send(t, bedrockClient(t, dep), catalog.ProtocolModel, bedrockReq, false, "")
	fe := failure.From(err)
	if fe.Class != failure.UpstreamAuth || !strings.HasPrefix(fe.Cause.Error(), "bedrock: aws credentials: ") || len(b.Requests()) != 0 {
		t.Fatalf("no credentials: %v", err)
	}
}

// countingProvider hands out credentials that expire at *expires, counting fetches.
type countingProvider struct {
	fetches atomic.Int32
	expires time.Time
	block   chan struct{} // when set, fetches after the first wait for it
}

func (p *countingProvider) Retrieve(ctx context.Context) (aws.Credentials, error) {
	n := p.fetches.Add(1)
	if p.block != nil && n > 1 {
		<-p.block
	}
	return aws.Credentials{AccessKeyID: "AKID" + string(rune('0'+n)), SecretAccessKey: "s", CanExpire: true, Expires: p.expires}, nil
}

// A request never waits for a credential fetch while the credential in use is valid: near its
// expiry one background fetch replaces it; only an expired credential makes a request wait.
func TestBedrockCredentialRefresh(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	p := &countingProvider{expires: now.Add(time.Hour)}
	c := newAWSCreds(p)
	c.now = func() time.Time { return now }
	for range 3 {
		if cr, err := c.get(t.Context()); err != nil || cr.AccessKeyID != "AKID1" {
			t.Fatal(cr, err)
		}
	}
	if p.fetches.Load() != 1 {
		t.Fatalf("%d fetches for one valid credential", p.fetches.Load())
	}
	// Within the refresh window: the request gets the current credential at once, while a
	// fetch (held by block) runs in the background.
	p.block = make(chan struct{})
	p.expires = now.Add(2 * time.Hour)
	now = now.Add(time.Hour - 2*time.Minute)
	for range 3 {
		if cr, err := c.get(t.Context()); err != nil || cr.AccessKeyID != "AKID1" {
			t.Fatal(cr, err)
		}
	}
	close(p.block)
	for c.refreshing.Load() {
		time.Sleep(time.Millisecond)
	}
	if cr, _ := c.get(t.Context()); cr.AccessKeyID != "AKID2" || p.fetches.Load() != 2 {
		t.Fatalf("after the refresh: %s, %d fetches", cr.AccessKeyID, p.fetches.Load())
	}
	// Expired: the request waits for a fetch.
	p.block = nil
	p.expires = now.Add(10 * time.Hour)
	now = now.Add(3 * time.Hour)
	if cr, _ := c.get(t.Context()); cr.AccessKeyID != "AKID3" || p.fetches.Load() != 3 {
		t.Fatalf("expired: %s, %d fetches", cr.AccessKeyID, p.fetches.Load())
	}
}

// bedrockFrames encodes event-stream messages: chunks of the Anthropic events given, then
// extra.
func bedrockFrames(t *testing.T, events []string, extra ...eventstream.Message) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := eventstream.NewEncoder()
	for _, ev := range events {
		payload := `{"bytes":"` + base64.StdEncoding.EncodeToString([]byte(ev)) + `","p":"abc"}`
		if err := enc.Encode(&buf, eventstream.Message{Headers: eventstream.Headers{
			{Name: ":event-type", Value: eventstream.StringValue("chunk")},
			{Name: ":message-type", Value: eventstream.StringValue("event")},
		}, Payload: []byte(payload)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range extra {
		if err := enc.Encode(&buf, m); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

func TestBedrockSSEReader(t *testing.T) {
	events := []string{`{"type":"message_start","message":{"usage":{"input_tokens":3}}}`,
		`{"type":"message_stop","amazon-bedrock-invocationMetrics":{"inputTokenCount":3}}`}
	whole := bedrockFrames(t, events)
	out, err := io.ReadAll(newBedrockSSE(io.NopCloser(bytes.NewReader(whole))))
	want := "event: message_start\ndata: " + events[0] + "\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	if err != nil || string(out) != want {
		t.Fatalf("%q, %v", out, err)
	}
	// A body cut inside a message is an unexpected EOF, not the end of the stream.
	_, err = io.ReadAll(newBedrockSSE(io.NopCloser(bytes.NewReader(whole[:len(whole)-7]))))
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("cut: %v", err)
	}
	// An error message (:message-type error) becomes an Anthropic error event.
	errMsg := eventstream.Message{Headers: eventstream.Headers{
		{Name: ":message-type", Value: eventstream.StringValue("error")},
		{Name: ":error-code", Value: eventstream.StringValue("ThrottlingException")},
		{Name: ":error-message", Value: eventstream.StringValue("slow down")},
	}}
	out, err = io.ReadAll(newBedrockSSE(io.NopCloser(bytes.NewReader(bedrockFrames(t, nil, errMsg)))))
	data, _ := strings.CutPrefix(strings.TrimSuffix(string(out), "\n\n"), "event: error\ndata: ")
	if err != nil || failure.From(anthropic.NormalizeStreamError([]byte(data))).Class != failure.UpstreamRateLimited {
		t.Fatalf("%q, %v", out, err)
	}
	// Events that would break the SSE framing or are not Bedrock's end the body with an error.
	for _, bad := range [][]byte{
		bedrockFrames(t, []string{`{"type":"message_start\nevent: x"}`}),
		bedrockFrames(t, []string{`not json`}),
		bedrockFrames(t, nil, eventstream.Message{Headers: eventstream.Headers{{Name: ":message-type", Value: eventstream.StringValue("other")}}}),
		[]byte("data: {\"this is\": \"SSE, not an event stream\"}\n\n"),
	} {
		if _, err := io.ReadAll(newBedrockSSE(io.NopCloser(bytes.NewReader(bad)))); err == nil || errors.Is(err, io.EOF) {
			t.Fatalf("%q read without error (%v)", bad, err)
		}
	}
}

// FuzzBedrockSSE: whatever bytes a Bedrock stream carries (event-stream frames whole, cut,
// with odd headers, or garbage), the reader never panics, ends (with io.EOF or an error), and
// what it yields is SSE framing the relay can trust: only "event: NAME" and "data: …" lines,
// each block ended by a blank line, and no more output than the payloads it decoded allow.
func FuzzBedrockSSE(f *testing.F) {
	t := &testing.T{}
	events := []string{`{"type":"message_start","message":{"usage":{"input_tokens":3}}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}`,
		`{"type":"message_stop","amazon-bedrock-invocationMetrics":{"inputTokenCount":3}}`}
	whole := bedrockFrames(t, events)
	f.Add(whole)
	f.Add(whole[:len(whole)-7])
	f.Add(bedrockFrames(t, nil, eventstream.Message{Headers: eventstream.Headers{
		{Name: ":message-type", Value: eventstream.StringValue("exception")},
		{Name: ":exception-type", Value: eventstream.StringValue("throttlingException")},
	}, Payload: []byte(`{"message":"slow down"}`)}))
	f.Add(bedrockFrames(t, []string{`{"type":"message_start\nevent: x"}`}))
	f.Add([]byte("data: {}\n\n"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, in []byte) {
		r := newBedrockSSE(io.NopCloser(bytes.NewReader(in)))
		var out []byte
		buf := make([]byte, 7) // small reads: the reader must keep its place across them
		for range 1 << 20 {
			n, err := r.Read(buf)
			out = append(out, buf[:n]...)
			if err != nil {
				break
			}
			if n == 0 {
				t.Fatal("Read returned 0 bytes and no error")
			}
		}
		// A chunk's base64 payload decodes to fewer bytes than it takes; an error event is a
		// bounded message. Either way the SSE text is bounded by the input plus framing.
		if len(out) > 2*len(in)+4096 {
			t.Fatalf("%d bytes of SSE from %d bytes of input", len(out), len(in))
		}
		if len(out) == 0 {
			return
		}
		if !bytes.HasSuffix(out, []byte("\n\n")) {
			t.Fatalf("SSE output does not end a block: %q", out)
		}
		for _, line := range strings.Split(strings.TrimSuffix(string(out), "\n\n"), "\n") {
			if line != "" && !strings.HasPrefix(line, "event: ") && !strings.HasPrefix(line, "data: ") {
				t.Fatalf("SSE line %q is neither event nor data:\n%q", line, out)
			}
		}
	})
}
