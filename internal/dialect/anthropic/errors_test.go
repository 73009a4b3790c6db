package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/tidwall/gjson"

	"github.com/switchyard-gw/switchyard/internal/dialect"
	"github.com/switchyard-gw/switchyard/internal/failure"
)

// Real error bodies (wire.md §4.6, §4.7 and the issues cited in wire.md §9).
const (
	bodyPromptTooLong = `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208310 tokens > 200000 maximum"},"request_id":"req_011CUvq7sKxQ9fBbMWm3pZ1a"}`
	bodyExceedLimit   = "{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"input length and `max_tokens` exceed context limit: 188059 + 20000 > 200000, decrease input length or `max_tokens` and try again\"},\"request_id\":\"req_2\"}"
	bodyInputTooLong  = `{"type":"error","error":{"type":"invalid_request_error","message":"Input is too long for requested model."}}`
	bodyContentFilter = `{"type":"error","error":{"type":"invalid_request_error","message":"Output blocked by content filtering policy"},"request_id":"req_011CaxpBxEpLvE6AvvuDD5BW"}`
	bodyCredit        = `{"type":"error","error":{"type":"invalid_request_error","message":"Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."},"request_id":"req_011CbrFTcXhtiMzr3s6EocF7"}`
	bodyUsageLimits   = `{"type":"error","error":{"type":"invalid_request_error","message":"You have reached your specified API usage limits. You will regain access on 2026-04-01 at 00:00 UTC."},"request_id":"req_011CZLrUfBVkVHn5T6EqQaf7"}`
	bodyOverloaded    = `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_1"}`
	bodyRateLimit     = `{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed your account's rate limit. Please try again later."},"request_id":"req_011CcR9mkMvXdaiWP4739PSN"}`
	bodySpendCap      = `{"type":"error","error":{"type":"rate_limit_error","message":"Extra usage is required for long context requests."},"request_id":"req_011CZLXBnjyjWVGWUjjW8pGu"}`
	bodyAuth          = `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key: sk-ant-api03-SECRETKEY1234567890"},"request_id":"req_3"}`
	bodyBilling       = `{"type":"error","error":{"type":"billing_error","message":"Your organization has an outstanding balance."},"request_id":"req_4"}`
	bodyPermission    = `{"type":"error","error":{"type":"permission_error","message":"Your API key does not have permission to use the specified resource."},"request_id":"req_5"}`
	bodyNotFound      = `{"type":"error","error":{"type":"not_found_error","message":"model: claude-x-secret-preview"},"request_id":"req_6"}`
	bodyTooLarge      = `{"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum allowed number of bytes."}}`
	bodyAPIError      = `{"type":"error","error":{"type":"api_error","message":"Internal server error"},"request_id":"req_7"}`
	bodyTimeout       = `{"type":"error","error":{"type":"timeout_error","message":"Request timed out while waiting for the model."},"request_id":"req_8"}`
	bodyToolID        = `{"type":"error","error":{"type":"invalid_request_error","message":"messages.1.content.0.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'"},"request_id":"req_9"}`
	bodyTemperature   = `{"type":"error","error":{"type":"invalid_request_error","message":"temperature: Extra inputs are not permitted"},"request_id":"req_10"}`
	bodyDetails       = `{"type":"error","error":{"type":"invalid_request_error","message":"Image dimensions exceed max allowed size: 8000 pixels","details":{"error_code":"image_dimensions_too_large"}},"request_id":"req_11"}`
	bodyConflict      = `{"type":"error","error":{"type":"conflict_error","message":"Conflict."}}`
	bodyBare          = `{"message":"Internal server error"}`
	bodyHTML502       = "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>cloudflare</center>\r\n</body>\r\n</html>\r\n"
	bodyGarbage       = "\x00\xff{{not json at all"
	bodyTruncated     = `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too lo`
)

func headers(kv ...string) func(string) string {
	return func(name string) string {
		for i := 0; i+1 < len(kv); i += 2 {
			if strings.EqualFold(kv[i], name) {
				return kv[i+1]
			}
		}
		return ""
	}
}

var testNow = time.Date(2026, 10, 21, 7, 27, 30, 0, time.UTC)

func fixedNow() time.Time { return testNow }

func providerText(body string) string {
	if m := gjson.Get(body, "error.message"); m.Exists() {
		return m.String()
	}
	return gjson.Get(body, "message").String()
}

// assertNoProviderText fails when any 16-byte window of the provider's message (or the whole
// message, when shorter) appears in one of outs (R-FAIL-7: provider text never reaches callers).
func assertNoProviderText(t *testing.T, provider string, outs ...string) {
	t.Helper()
	const w = 16
	if provider == "" {
		return
	}
	windows := []string{provider}
	if len(provider) > w {
		windows = windows[:0]
		for i := 0; i+w <= len(provider); i++ {
			windows = append(windows, provider[i:i+w])
		}
	}
	for _, out := range outs {
		for _, win := range windows {
			if strings.Contains(out, win) {
				t.Fatalf("provider text %q leaked into %q", win, out)
			}
		}
	}
}

func TestNormalizeError(t *testing.T) {
	tests := []struct {
		name       string
		status     int
		header     func(string) string
		body       string
		class      failure.Class
		retryAfter time.Duration
		causeHas   string
	}{
		{name: "prompt is too long", status: 400, body: bodyPromptTooLong, class: failure.ContextOverflow,
			causeHas: "status 400 type=invalid_request_error"},
		{name: "exceed context limit", status: 400, body: bodyExceedLimit, class: failure.ContextOverflow},
		{name: "input is too long", status: 400, body: bodyInputTooLong, class: failure.ContextOverflow},
		{name: "content filtering policy", status: 400, body: bodyContentFilter, class: failure.ContentPolicy},
		{name: "content policy before status rules", status: 403, body: bodyContentFilter, class: failure.ContentPolicy},
		{name: "content policy before 5xx", status: 500, body: bodyContentFilter, class: failure.ContentPolicy},
		{name: "credit balance is the gateway's", status: 400, body: bodyCredit, class: failure.UpstreamAuth},
		{name: "usage limits are the gateway's", status: 400, body: bodyUsageLimits, class: failure.UpstreamAuth},
		{name: "529 overloaded", status: 529, header: headers("retry-after", "3"), body: bodyOverloaded,
			class: failure.UpstreamError, retryAfter: 3 * time.Second, causeHas: "status 529 type=overloaded_error"},
		{name: "overloaded_error on a 503", status: 503, body: bodyOverloaded, class: failure.UpstreamError},
		{name: "429 with retry-after", status: 429, header: headers("retry-after", "15"), body: bodyRateLimit,
			class: failure.UpstreamRateLimited, retryAfter: 15 * time.Second},
		{name: "429 HTTP-date", status: 429, header: headers("retry-after", "Wed, 21 Oct 2026 07:28:00 GMT"),
			body: bodyRateLimit, class: failure.UpstreamRateLimited, retryAfter: 30 * time.Second},
		{name: "429 retry-after-ms", status: 429, header: headers("retry-after-ms", "750", "retry-after", "1"),
			body: bodyRateLimit, class: failure.UpstreamRateLimited, retryAfter: 750 * time.Millisecond},
		{name: "spend cap 429 without retry-after", status: 429, body: bodySpendCap, class: failure.UpstreamRateLimited},
		{name: "401", status: 401, body: bodyAuth, class: failure.UpstreamAuth},
		{name: "402 billing_error", status: 402, body: bodyBilling, class: failure.UpstreamAuth},
		{name: "403 permission_error", status: 403, body: bodyPermission, class: failure.UpstreamAuth},
		{name: "404 not_found_error fails over", status: 404, body: bodyNotFound, class: failure.UpstreamError},
		{name: "413", status: 413, body: bodyTooLarge, class: failure.RequestTooLarge},
		{name: "413 from Cloudflare, HTML", status: 413, body: "<html><body>413 Request Entity Too Large</body></html>",
			class: failure.RequestTooLarge},
		{name: "500 api_error", status: 500, body: bodyAPIError, class: failure.UpstreamError},
		{name: "504 timeout_error", status: 504, body: bodyTimeout, class: failure.UpstreamTimeout},
		{name: "408", status: 408, body: "", class: failure.UpstreamTimeout},
		{name: "bad tool id", status: 400, body: bodyToolID, class: failure.InvalidRequest},
		{name: "temperature on 2026-10-21", status: 400, body: bodyTemperature, class: failure.InvalidRequest},
		{name: "details.error_code logged", status: 400, body: bodyDetails, class: failure.InvalidRequest,
			causeHas: "error_code=image_dimensions_too_large"},
		{name: "409 conflict", status: 409, body: bodyConflict, class: failure.InvalidRequest},
		{name: "bare message body", status: 500, body: bodyBare, class: failure.UpstreamError},
		{name: "HTML 502", status: 502, body: bodyHTML502, class: failure.UpstreamError},
		{name: "empty 500", status: 500, body: "", class: failure.UpstreamError},
		{name: "garbage 503", status: 503, body: bodyGarbage, class: failure.UpstreamError},
		{name: "garbage 400 by status", status: 400, body: bodyGarbage, class: failure.InvalidRequest},
		{name: "truncated JSON by status", status: 400, body: bodyTruncated, class: failure.InvalidRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := normalizeErr(tt.status, tt.header, []byte(tt.body), fixedNow)
			var fe *failure.Error
			if !errors.As(err, &fe) {
				t.Fatalf("NormalizeError returned %T, want *failure.Error", err)
			}
			if fe.Class != tt.class {
				t.Errorf("class = %s, want %s", fe.Class, tt.class)
			}
			if fe.UpstreamStatus != tt.status {
				t.Errorf("UpstreamStatus = %d, want %d", fe.UpstreamStatus, tt.status)
			}
			if fe.RetryAfter != tt.retryAfter {
				t.Errorf("RetryAfter = %v, want %v", fe.RetryAfter, tt.retryAfter)
			}
			if fe.Msg == "" || fe.Msg != dialect.UpstreamErrMessage(tt.class) || fe.Param != "" || fe.Code != "" {
				t.Errorf("Msg, Param, Code = %q, %q, %q", fe.Msg, fe.Param, fe.Code)
			}
			if fe.Cause == nil || !strings.Contains(fe.Cause.Error(), tt.causeHas) {
				t.Errorf("Cause = %v, want it to contain %q", fe.Cause, tt.causeHas)
			}
			body := string(AppendErrorBody(nil, fe, "req_1"))
			assertNoProviderText(t, providerText(tt.body), fe.Msg, fe.Error(), body,
				string(AppendStreamError(nil, fe, "req_1")))
			if !json.Valid([]byte(body)) {
				t.Errorf("invalid body %s", body)
			}
		})
	}
}

func TestNormalizeErrorNeverLeaksKeys(t *testing.T) {
	fe := failure.From(NormalizeError(401, nil, []byte(bodyAuth)))
	for _, s := range []string{fe.Msg, fe.Error(), string(AppendErrorBody(nil, fe, "r"))} {
		if strings.Contains(s, "sk-ant") || strings.Contains(s, "SECRETKEY") {
			t.Fatalf("credential leaked: %q", s)
		}
	}
	fe = failure.From(NormalizeError(400, nil, []byte(`{"type":"error","error":{"type":"sk-ant-xyz secret","message":"x"}}`)))
	if strings.Contains(fe.Error(), "secret") {
		t.Fatalf("unsafe provider type logged: %q", fe.Error())
	}
}

func TestNormalizeErrorFailover(t *testing.T) {
	// R-FAIL-5/6 through the class: what fails over and what returns at once.
	tests := []struct {
		status    int
		body      string
		failsOver bool
	}{
		{400, bodyPromptTooLong, false},
		{400, bodyContentFilter, false},
		{400, bodyToolID, false},
		{400, bodyCredit, true},
		{529, bodyOverloaded, true},
		{429, bodyRateLimit, true},
		{401, bodyAuth, true},
		{404, bodyNotFound, true},
		{500, bodyAPIError, true},
		{502, bodyHTML502, true},
	}
	for _, tt := range tests {
		fe := failure.From(NormalizeError(tt.status, nil, []byte(tt.body)))
		if got := fe.Class.FailsOver(); got != tt.failsOver {
			t.Errorf("%d %s: FailsOver = %v, want %v", tt.status, fe.Class, got, tt.failsOver)
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	tests := []struct {
		name   string
		header func(string) string
		want   time.Duration
	}{
		{"nil header", nil, 0},
		{"absent", headers(), 0},
		{"seconds", headers("retry-after", "5"), 5 * time.Second},
		{"negative", headers("retry-after", "-1"), 0},
		{"garbage", headers("retry-after", "soon"), 0},
		{"IMF-fixdate", headers("retry-after", "Wed, 21 Oct 2026 07:28:00 GMT"), 30 * time.Second},
		{"date in the past", headers("retry-after", "Wed, 21 Oct 2026 07:00:00 GMT"), 0},
		{"huge saturates", headers("retry-after", "99999999999999999999"), dialect.MaxRetryAfter},
		{"ms", headers("retry-after-ms", "250"), 250 * time.Millisecond},
	}
	for _, tt := range tests {
		if got := dialect.ParseRetryAfter(tt.header, fixedNow); got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestNormalizeStreamError(t *testing.T) {
	tests := []struct {
		name  string
		data  string
		class failure.Class
	}{
		{"overloaded", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_1"}`, failure.UpstreamError},
		{"api_error", `{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`, failure.UpstreamError},
		{"rate limit", `{"type":"error","error":{"type":"rate_limit_error","message":"Rate limited"}}`, failure.UpstreamRateLimited},
		{"context", `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208310 tokens > 200000 maximum"}}`, failure.ContextOverflow},
		{"content filter", `{"type":"error","error":{"details":null,"type":"invalid_request_error","message":"Output blocked by content filtering policy"},"request_id":"req_011CbJJYbhxmN3uwLeQ87QhJ"}`, failure.ContentPolicy},
		{"invalid request", `{"type":"error","error":{"type":"invalid_request_error","message":"messages: at least one message is required"}}`, failure.InvalidRequest},
		{"timeout", `{"type":"error","error":{"type":"timeout_error","message":"Request timed out"}}`, failure.UpstreamTimeout},
		{"auth", `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`, failure.UpstreamAuth},
		{"not found", `{"type":"error","error":{"type":"not_found_error","message":"model: claude-x"}}`, failure.UpstreamError},
		{"unknown type", `{"type":"error","error":{"type":"brand_new_error","message":"?"}}`, failure.UpstreamError},
		{"unparsable", `{"type":"error","error":{"type":"overlo`, failure.UpstreamError},
		{"not json", `event: error`, failure.UpstreamError},
		{"empty", ``, failure.UpstreamError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fe := failure.From(NormalizeStreamError([]byte(tt.data)))
			if fe.Class != tt.class || fe.UpstreamStatus != 200 {
				t.Errorf("got %s status %d, want %s 200", fe.Class, fe.UpstreamStatus, tt.class)
			}
			if !strings.Contains(fe.Cause.Error(), "stream error") {
				t.Errorf("Cause = %v", fe.Cause)
			}
			assertNoProviderText(t, providerText(tt.data), fe.Msg, fe.Error(), string(AppendErrorBody(nil, fe, "r")))
		})
	}
}

// wantNative is R-ERR's Anthropic column, written out independently of nativeErrType.
var wantNative = map[failure.Class]string{
	failure.InvalidRequest:      "invalid_request_error",
	failure.ContextOverflow:     "invalid_request_error",
	failure.ContentPolicy:       "invalid_request_error",
	failure.Authentication:      "authentication_error",
	failure.Permission:          "permission_error",
	failure.ModelUnavailable:    "not_found_error",
	failure.RequestTooLarge:     "request_too_large",
	failure.InsufficientCredit:  "invalid_request_error",
	failure.RateLimited:         "rate_limit_error",
	failure.UpstreamRateLimited: "rate_limit_error",
	failure.UpstreamError:       "api_error",
	failure.UpstreamTimeout:     "api_error",
	failure.UpstreamAuth:        "api_error",
	failure.UpstreamTruncated:   "api_error",
	failure.GatewayError:        "overloaded_error",
	failure.Cancelled:           "api_error",
}

type wireBody struct {
	Type  *string `json:"type"`
	Error *struct {
		Type      *string `json:"type"`
		Message   *string `json:"message"`
		ErrorType *string `json:"error_type"`
	} `json:"error"`
	RequestID *string `json:"request_id"`
}

func decodeBody(t *testing.T, b []byte) wireBody {
	t.Helper()
	var w wireBody
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		t.Fatalf("body %s: %v", b, err)
	}
	if w.Type == nil || *w.Type != "error" || w.Error == nil || w.Error.Type == nil || w.Error.Message == nil ||
		w.Error.ErrorType == nil || w.RequestID == nil {
		t.Fatalf("body %s lacks a field", b)
	}
	return w
}

func TestAppendErrorBodyEveryClass(t *testing.T) {
	if len(wantNative) != len(failure.Classes) {
		t.Fatalf("wantNative covers %d classes, failure.Classes has %d", len(wantNative), len(failure.Classes))
	}
	const msg = "bad \"model\" \\ <x>\n\t\x01 \u2028 é \xff"
	for _, c := range failure.Classes {
		want, ok := wantNative[c]
		if !ok {
			t.Fatalf("class %s missing from wantNative", c)
		}
		for _, withMsg := range []bool{true, false} {
			fe := &failure.Error{Class: c, Param: "ignored", Code: "ignored"}
			if withMsg {
				fe.Msg = msg
			}
			raw := AppendErrorBody([]byte("prefix:"), fe, "req_\"42\"")
			b, ok := strings.CutPrefix(string(raw), "prefix:")
			if !ok || !json.Valid([]byte(b)) {
				t.Fatalf("%s: invalid body %q", c, b)
			}
			w := decodeBody(t, []byte(b))
			wantMsg := strings.ToValidUTF8(msg, "\ufffd")
			if !withMsg {
				wantMsg = dialect.DefaultErrMessage(c)
			}
			if *w.Error.Message != wantMsg || *w.Error.Type != want || *w.Error.ErrorType != string(c) ||
				*w.RequestID != `req_"42"` {
				t.Errorf("%s: body %s", c, b)
			}
		}
	}
	w := decodeBody(t, AppendErrorBody(nil, nil, "req_2"))
	if *w.Error.ErrorType != "upstream_error" || *w.Error.Type != "api_error" {
		t.Errorf("nil error encoded as %s/%s", *w.Error.Type, *w.Error.ErrorType)
	}
}

func TestAppendStreamError(t *testing.T) {
	fe := &failure.Error{Class: failure.UpstreamTruncated}
	got := string(AppendStreamError(nil, fe, "req_1"))
	body := string(AppendErrorBody(nil, fe, "req_1"))
	if got != "event: error\ndata: "+body+"\n\n" || strings.Count(got, "\n") != 3 {
		t.Fatalf("frame = %q", got)
	}
}

func TestAppendErrorBodyAllocs(t *testing.T) {
	fe := &failure.Error{Class: failure.UpstreamError, Msg: "the provider is overloaded or failed"}
	dst := make([]byte, 0, 512)
	if n := testing.AllocsPerRun(100, func() { dst = AppendStreamError(dst[:0], fe, "req_0123456789") }); n != 0 {
		t.Fatalf("AppendStreamError allocates %v times", n)
	}
}

func newClient(url string) sdk.Client {
	return sdk.NewClient(option.WithBaseURL(url), option.WithAPIKey("k"), option.WithMaxRetries(0))
}

var params = sdk.MessageNewParams{
	Model: "claude-x", MaxTokens: 16,
	Messages: []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock("hi"))},
}

// TestSDKDecodesErrorBody checks, with anthropic-sdk-go itself, that every class's body and
// status become an *anthropic.Error with the native type, and that the terminal stream frame
// ends a stream with an API error (wire.md §7.4).
func TestSDKDecodesErrorBody(t *testing.T) {
	for _, c := range failure.Classes {
		if c == failure.Cancelled {
			continue // never written to a caller
		}
		fe := &failure.Error{Class: c, Msg: "gateway message"}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("x-should-retry", "false")
			w.WriteHeader(c.Status())
			w.Write(AppendErrorBody(nil, fe, "req_1"))
		}))
		client := newClient(srv.URL)
		_, err := client.Messages.New(context.Background(), params)
		srv.Close()
		var apiErr *sdk.Error
		if !errors.As(err, &apiErr) {
			t.Fatalf("%s: err = %v, want *anthropic.Error", c, err)
		}
		if apiErr.StatusCode != c.Status() || string(apiErr.Type()) != wantNative[c] || apiErr.Message != "gateway message" {
			t.Errorf("%s: SDK saw status %d type %q message %q", c, apiErr.StatusCode, apiErr.Type(), apiErr.Message)
		}
	}

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-x\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":12,\"output_tokens\":1}}}\n\n"))
		w.Write(AppendStreamError(nil, &failure.Error{Class: failure.UpstreamTruncated}, "req_1"))
	}))
	defer srv.Close()
	client := newClient(srv.URL)
	stream := client.Messages.NewStreaming(context.Background(), params)
	events := 0
	for stream.Next() {
		events++
	}
	var apiErr *sdk.Error
	if events != 1 || !errors.As(stream.Err(), &apiErr) || apiErr.Type() != "api_error" ||
		apiErr.StatusCode != 200 {
		t.Fatalf("events = %d, err = %v; want 1 event then an api_error", events, stream.Err())
	}
}

var benchBodies = []struct {
	name   string
	status int
	header func(string) string
	body   []byte
}{
	{"context_overflow", 400, nil, []byte(bodyExceedLimit)},
	{"overloaded_529", 529, headers("retry-after", "3"), []byte(bodyOverloaded)},
	{"rate_limited", 429, headers("retry-after", "15"), []byte(bodyRateLimit)},
	{"html_502", 502, nil, []byte(bodyHTML502)},
}

func BenchmarkNormalizeError(b *testing.B) {
	for _, bb := range benchBodies {
		b.Run(bb.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = NormalizeError(bb.status, bb.header, bb.body)
			}
		})
	}
}

func BenchmarkAppendErrorBody(b *testing.B) {
	fe := failure.From(NormalizeError(529, nil, []byte(bodyOverloaded)))
	dst := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		dst = AppendErrorBody(dst[:0], fe, "req_0123456789abcdef")
	}
}

// TestNormalizeErrorRedactsSecretCodes: issue 25 item 5: an error_code shaped like a key is
// logged as [redacted].
func TestNormalizeErrorRedactsSecretCodes(t *testing.T) {
	body := `{"type":"error","error":{"type":"invalid_request_error","message":"x","details":{"error_code":"sk_live_51H8abcDEF1234567890xyz"}}}`
	fe := failure.From(NormalizeError(400, nil, []byte(body)))
	if strings.Contains(fe.Error(), "sk_live") || !strings.Contains(fe.Error(), "error_code=[redacted]") {
		t.Errorf("logged as %q", fe.Error())
	}
}
