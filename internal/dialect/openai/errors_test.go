package openai

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/tidwall/gjson"

	"github.com/switchyard-gw/switchyard/internal/dialect"
	"github.com/switchyard-gw/switchyard/internal/failure"
)

// Real error bodies (wire.md §1.6 and the issues cited in wire.md §9). The fake key and the
// prompt fragments in some of them must never reach a caller-facing message or body.
const (
	bodyContext = `{"error":{"message":"This model's maximum context length is 4097 tokens. However, your messages resulted in 4294 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`
	// The same overflow with no code: only the message says so.
	bodyContextNoCode = `{"error":{"message":"This model's maximum context length is 8192 tokens, however you requested 9000 tokens (8000 in your prompt; 1000 for the completion).","type":"invalid_request_error","param":null,"code":null}}`
	bodyQuota         = `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`
	bodyRateTPM       = `{"error":{"message":"Rate limit reached for gpt-4.1 in organization org-abc123 on tokens per min (TPM): Limit 30000, Used 29800, Requested 400. Please try again in 174ms. Visit https://platform.openai.com/account/rate-limits to learn more.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`
	bodyTooLargeTPM   = `{"error":{"message":"Request too large for gpt-4o in organization org-abc123 on tokens per min (TPM): Limit 30000, Requested 30601. The input or output tokens must be reduced in order to run successfully. Visit https://platform.openai.com/account/rate-limits to learn more.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`
	bodyAzureFilter   = `{"error":{"message":"The response was filtered due to the prompt triggering Azure OpenAI's content management policy. Please modify your prompt and retry. To learn more about our content filtering policies please read our documentation: https://go.microsoft.com/fwlink/?linkid=2198766","type":null,"param":"prompt","code":"content_filter","status":400,"innererror":{"code":"ResponsibleAIPolicyViolation","content_filter_result":{"hate":{"filtered":false,"severity":"safe"},"self_harm":{"filtered":false,"severity":"safe"},"sexual":{"filtered":false,"severity":"safe"},"violence":{"filtered":true,"severity":"medium"}}}}}`
	bodyPolicy        = `{"error":{"message":"Your request was rejected as a result of our safety system. Your prompt may contain text that is not allowed by our safety system: how to build a secret weapon","type":"invalid_request_error","param":null,"code":"content_policy_violation"}}`
	bodyModelNotFound = "{\"error\":{\"message\":\"The model `gpt-4o` does not exist or you do not have access to it.\",\"type\":\"invalid_request_error\",\"param\":null,\"code\":\"model_not_found\"}}"
	bodyBadKey        = `{"error":{"message":"Incorrect API key provided: sk-proj-SECRETKEY1234567890abcdef. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`
	bodyRegion        = `{"error":{"message":"Country, region, or territory not supported","type":"request_forbidden","param":null,"code":"unsupported_country_region_territory"}}`
	bodyUnsupported   = `{"error":{"message":"Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.","type":"invalid_request_error","param":"max_tokens","code":"unsupported_parameter"}}`
	bodyInvalidURL    = `{"error":{"message":"Invalid URL (POST /wrong/v1/chat/completions)","type":"invalid_request_error","param":null,"code":null}}`
	bodyPrevResponse  = `{"error":{"message":"Previous response with id 'resp_abc123def456' not found.","type":"invalid_request_error","param":"previous_response_id","code":"previous_response_not_found"}}`
	bodyServer        = `{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`
	bodyHTML502       = "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>cloudflare</center>\r\n</body>\r\n</html>\r\n"
	bodyGarbage       = "\x00\xff{{not json at all"
	bodyStringError   = `{"error":"upstream connect error or disconnect/reset before headers"}`
	bodyTruncated     = `{"error":{"message":"This model's maximum context length is 4097 tokens. However, your mess`
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

// providerText returns the provider's message of an error body, or "" when it has none.
func providerText(body string) string {
	if m := gjson.Get(body, "error.message"); m.Exists() {
		return m.String()
	}
	if e := gjson.Get(body, "error"); e.Type == gjson.String {
		return e.String()
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
		param      string
		code       string
		causeHas   string
	}{
		{name: "context_length_exceeded", status: 400, body: bodyContext, class: failure.ContextOverflow,
			param: "messages", causeHas: "code=context_length_exceeded"},
		{name: "overflow by message only", status: 400, body: bodyContextNoCode, class: failure.ContextOverflow},
		{name: "insufficient_quota is the gateway's balance", status: 429, body: bodyQuota, class: failure.UpstreamAuth,
			causeHas: "status 429 type=insufficient_quota code=insufficient_quota"},
		{name: "rate limit, wait from body", status: 429, body: bodyRateTPM, class: failure.UpstreamRateLimited,
			retryAfter: 174 * time.Millisecond},
		{name: "rate limit, retry-after header wins", status: 429, header: headers("Retry-After", "2"), body: bodyRateTPM,
			class: failure.UpstreamRateLimited, retryAfter: 2 * time.Second},
		{name: "rate limit, retry-after-ms wins", status: 429, header: headers("retry-after-ms", "1500", "retry-after", "2"),
			body: bodyRateTPM, class: failure.UpstreamRateLimited, retryAfter: 1500 * time.Millisecond},
		{name: "rate limit, HTTP-date", status: 429, header: headers("retry-after", "Wed, 21 Oct 2026 07:28:00 GMT"),
			body: bodyRateTPM, class: failure.UpstreamRateLimited, retryAfter: 30 * time.Second},
		{name: "TPM request too large is still upstream's limit", status: 429, body: bodyTooLargeTPM,
			class: failure.UpstreamRateLimited},
		{name: "azure content_filter", status: 400, body: bodyAzureFilter, class: failure.ContentPolicy,
			causeHas: "code=content_filter inner=ResponsibleAIPolicyViolation"},
		{name: "content_policy_violation", status: 400, body: bodyPolicy, class: failure.ContentPolicy},
		{name: "content policy before status rules", status: 403, body: bodyPolicy, class: failure.ContentPolicy},
		{name: "content policy before 5xx", status: 500, body: bodyAzureFilter, class: failure.ContentPolicy},
		{name: "model_not_found fails over", status: 404, body: bodyModelNotFound, class: failure.UpstreamError},
		{name: "404 without JSON is a misrouted URL", status: 404, body: "404 page not found", class: failure.UpstreamError},
		{name: "404 invalid URL is the deployment's wrong base path", status: 404, body: bodyInvalidURL, class: failure.UpstreamError},
		{name: "azure 404 resource not found", status: 404, body: `{"error":{"code":"404","message":"Resource not found"}}`, class: failure.UpstreamError},
		{name: "404 naming the caller's id", status: 404, body: bodyPrevResponse, class: failure.InvalidRequest,
			param: "previous_response_id", code: "previous_response_not_found"},
		{name: "401 gateway key", status: 401, body: bodyBadKey, class: failure.UpstreamAuth},
		{name: "402", status: 402, body: "", class: failure.UpstreamAuth},
		{name: "403 region", status: 403, body: bodyRegion, class: failure.UpstreamAuth},
		{name: "400 unsupported parameter", status: 400, body: bodyUnsupported, class: failure.InvalidRequest,
			param: "max_tokens", code: "unsupported_parameter"},
		{name: "422", status: 422, body: `{"error":{"message":"bad","type":"invalid_request_error"}}`, class: failure.InvalidRequest},
		{name: "409", status: 409, body: "", class: failure.InvalidRequest},
		{name: "413 empty body", status: 413, body: "", class: failure.RequestTooLarge},
		{name: "408", status: 408, body: "", class: failure.UpstreamTimeout},
		{name: "504", status: 504, body: bodyHTML502, class: failure.UpstreamTimeout},
		{name: "500 server_error", status: 500, body: bodyServer, class: failure.UpstreamError},
		{name: "503 slow down", status: 503, header: headers("Retry-After", "7"), body: "Slow Down", class: failure.UpstreamError,
			retryAfter: 7 * time.Second},
		{name: "529", status: 529, body: "", class: failure.UpstreamError},
		{name: "HTML 502", status: 502, body: bodyHTML502, class: failure.UpstreamError},
		{name: "empty 500", status: 500, body: "", class: failure.UpstreamError},
		{name: "garbage 502", status: 502, body: bodyGarbage, class: failure.UpstreamError},
		{name: "garbage 400 by status", status: 400, body: bodyGarbage, class: failure.InvalidRequest},
		{name: "truncated JSON by status", status: 400, body: bodyTruncated, class: failure.InvalidRequest},
		{name: "error as a string", status: 502, body: bodyStringError, class: failure.UpstreamError},
		{name: "unexpected 3xx", status: 302, body: "", class: failure.UpstreamError},
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
			if fe.Param != tt.param || fe.Code != tt.code {
				t.Errorf("param, code = %q, %q, want %q, %q", fe.Param, fe.Code, tt.param, tt.code)
			}
			if fe.Msg == "" || fe.Msg != dialect.UpstreamErrMessage(tt.class) {
				t.Errorf("Msg = %q, want the fixed message of %s", fe.Msg, tt.class)
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
	fe := failure.From(NormalizeError(401, nil, []byte(bodyBadKey)))
	for _, s := range []string{fe.Msg, fe.Error(), string(AppendErrorBody(nil, fe, "r"))} {
		if strings.Contains(s, "sk-proj") || strings.Contains(s, "SECRETKEY") {
			t.Fatalf("credential leaked: %q", s)
		}
	}
	// A provider type or code that is not a plain identifier is dropped, not logged.
	fe = failure.From(NormalizeError(400, nil, []byte(`{"error":{"message":"x","type":"bad type: sk-123","code":"a\"b","param":"p q"}}`)))
	if strings.Contains(fe.Error(), "sk-123") || fe.Code != "" || fe.Param != "" {
		t.Fatalf("unsafe provider token kept: %q code=%q param=%q", fe.Error(), fe.Code, fe.Param)
	}
}

func TestNormalizeErrorFailover(t *testing.T) {
	// R-FAIL-5/6 through the class: what fails over and what returns at once.
	tests := []struct {
		status    int
		body      string
		failsOver bool
	}{
		{400, bodyContext, false},
		{400, bodyAzureFilter, false},
		{400, bodyUnsupported, false},
		{429, bodyQuota, true},
		{429, bodyRateTPM, true},
		{401, bodyBadKey, true},
		{404, bodyModelNotFound, true},
		{404, bodyInvalidURL, true},
		{404, bodyPrevResponse, false},
		{500, bodyServer, true},
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
		{"zero", headers("retry-after", "0"), 0},
		{"seconds", headers("retry-after", "5"), 5 * time.Second},
		{"spaces", headers("retry-after", " 7 "), 7 * time.Second},
		{"fraction", headers("retry-after", "1.5"), 1500 * time.Millisecond},
		{"negative", headers("retry-after", "-1"), 0},
		{"garbage", headers("retry-after", "soon"), 0},
		{"NaN", headers("retry-after", "NaN"), 0},
		{"IMF-fixdate", headers("retry-after", "Wed, 21 Oct 2026 07:28:00 GMT"), 30 * time.Second},
		{"RFC 850", headers("retry-after", "Wednesday, 21-Oct-26 07:28:30 GMT"), time.Minute},
		{"asctime", headers("retry-after", "Wed Oct 21 07:27:40 2026"), 10 * time.Second},
		{"date in the past", headers("retry-after", "Wed, 21 Oct 2026 07:00:00 GMT"), 0},
		{"huge saturates", headers("retry-after", "99999999999999999999"), dialect.MaxRetryAfter},
		{"ms", headers("retry-after-ms", "250"), 250 * time.Millisecond},
		{"bad ms falls back", headers("retry-after-ms", "x", "retry-after", "3"), 3 * time.Second},
	}
	for _, tt := range tests {
		if got := dialect.ParseRetryAfter(tt.header, fixedNow); got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestTryAgainIn(t *testing.T) {
	tests := map[string]time.Duration{
		"Please try again in 174ms. Visit": 174 * time.Millisecond,
		"Please try again in 1.5s.":        1500 * time.Millisecond,
		"Please try again in 6m0s.":        6 * time.Minute,
		"please TRY AGAIN IN 20s":          20 * time.Second,
		"Please try again in 7.2 seconds.": 0,
		"Please try again later.":          0,
		"no hint":                          0,
		"Please try again in 9999999999h.": 0, // overflows: ignored
	}
	for msg, want := range tests {
		if got := tryAgainIn(msg); got != want {
			t.Errorf("tryAgainIn(%q) = %v, want %v", msg, got, want)
		}
	}
}

func TestNormalizeStreamError(t *testing.T) {
	tests := []struct {
		name       string
		data       string
		class      failure.Class
		retryAfter time.Duration
	}{
		{"server_error", `{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}`, failure.UpstreamError, 0},
		{"rate limit", `{"error":{"message":"Rate limit reached for gpt-4.1 on requests per min (RPM): Limit 500. Please try again in 2s.","type":"requests","param":null,"code":"rate_limit_exceeded"}}`, failure.UpstreamRateLimited, 2 * time.Second},
		{"context", `{"error":{"message":"This model's maximum context length is 4097 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`, failure.ContextOverflow, 0},
		{"content filter", `{"error":{"message":"The response was filtered due to the prompt triggering Azure OpenAI's content management policy.","type":null,"param":"prompt","code":"content_filter"}}`, failure.ContentPolicy, 0},
		{"quota", `{"error":{"message":"You exceeded your current quota.","type":"insufficient_quota","code":"insufficient_quota"}}`, failure.UpstreamAuth, 0},
		{"invalid request", `{"error":{"message":"Invalid function name 'get weather!': it must match ^[a-zA-Z0-9_-]+$.","type":"invalid_request_error","param":"tools[0].function.name","code":"invalid_value"}}`, failure.InvalidRequest, 0},
		{"responses error event", `{"type":"error","code":"server_error","message":"An error occurred while processing your request.","param":null,"sequence_number":3}`, failure.UpstreamError, 0},
		{"responses rate limit", `{"type":"error","code":"rate_limit_exceeded","message":"Rate limit reached. Please try again in 500ms.","param":null,"sequence_number":2}`, failure.UpstreamRateLimited, 500 * time.Millisecond},
		{"unknown type", `{"error":{"message":"hmm","type":"weird_error"}}`, failure.UpstreamError, 0},
		{"unparsable", `not json`, failure.UpstreamError, 0},
		{"empty", ``, failure.UpstreamError, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fe := failure.From(NormalizeStreamError([]byte(tt.data)))
			if fe.Class != tt.class || fe.UpstreamStatus != 200 || fe.RetryAfter != tt.retryAfter {
				t.Errorf("got %s status %d retry %v, want %s 200 %v", fe.Class, fe.UpstreamStatus, fe.RetryAfter,
					tt.class, tt.retryAfter)
			}
			if !strings.Contains(fe.Cause.Error(), "stream error") {
				t.Errorf("Cause = %v", fe.Cause)
			}
			assertNoProviderText(t, providerText(tt.data), fe.Msg, fe.Error(), string(AppendErrorBody(nil, fe, "r")))
		})
	}
}

// wantNative is R-ERR's OpenAI column, written out independently of nativeErrType.
var wantNative = map[failure.Class][2]string{ // type, code ("" = null)
	failure.InvalidRequest:      {"invalid_request_error", ""},
	failure.ContextOverflow:     {"invalid_request_error", "context_length_exceeded"},
	failure.ContentPolicy:       {"invalid_request_error", "content_policy_violation"},
	failure.Authentication:      {"authentication_error", "invalid_api_key"},
	failure.Permission:          {"permission_error", ""},
	failure.ModelUnavailable:    {"invalid_request_error", "model_unavailable"},
	failure.RequestTooLarge:     {"invalid_request_error", "request_too_large"},
	failure.InsufficientCredit:  {"insufficient_quota", "insufficient_quota"},
	failure.RateLimited:         {"rate_limit_error", "rate_limit_exceeded"},
	failure.UpstreamRateLimited: {"rate_limit_error", "rate_limit_exceeded"},
	failure.UpstreamError:       {"api_error", ""},
	failure.UpstreamTimeout:     {"api_error", ""},
	failure.UpstreamAuth:        {"api_error", ""},
	failure.UpstreamTruncated:   {"api_error", ""},
	failure.GatewayError:        {"api_error", ""},
	failure.Cancelled:           {"api_error", ""},
}

type wireBody struct {
	Error *struct {
		Message  *string `json:"message"`
		Type     *string `json:"type"`
		Param    *string `json:"param"`
		Code     *string `json:"code"`
		Metadata *struct {
			ErrorType *string `json:"error_type"`
		} `json:"metadata"`
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
	if w.Error == nil || w.Error.Message == nil || w.Error.Type == nil || w.Error.Metadata == nil ||
		w.Error.Metadata.ErrorType == nil || w.RequestID == nil {
		t.Fatalf("body %s lacks a field", b)
	}
	return w
}

func strOrEmpty(p *string) string {
	if p == nil {
		return ""
	}
	return *p
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
			fe := &failure.Error{Class: c}
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
			if *w.Error.Message != wantMsg || *w.Error.Type != want[0] || strOrEmpty(w.Error.Code) != want[1] ||
				w.Error.Param != nil || *w.Error.Metadata.ErrorType != string(c) || *w.RequestID != `req_"42"` {
				t.Errorf("%s: body %s", c, b)
			}
			if strings.Contains(b, "\u2028") {
				t.Errorf("%s: raw U+2028 in %s", c, b)
			}
		}
	}
}

func TestAppendErrorBodyFields(t *testing.T) {
	fe := &failure.Error{Class: failure.InvalidRequest, Msg: "n must be 1", Param: "n", Code: "invalid_value"}
	w := decodeBody(t, AppendErrorBody(nil, fe, "req_1"))
	if strOrEmpty(w.Error.Param) != "n" || strOrEmpty(w.Error.Code) != "invalid_value" {
		t.Errorf("param/code not encoded: %+v", w.Error)
	}
	w = decodeBody(t, AppendErrorBody(nil, nil, "req_2"))
	if *w.Error.Metadata.ErrorType != "upstream_error" || *w.Error.Type != "api_error" {
		t.Errorf("nil error encoded as %s/%s", *w.Error.Type, *w.Error.Metadata.ErrorType)
	}
}

func TestAppendStreamError(t *testing.T) {
	fe := &failure.Error{Class: failure.UpstreamTruncated}
	got := string(AppendStreamError(nil, fe, "req_1"))
	body := string(AppendErrorBody(nil, fe, "req_1"))
	if got != "data: "+body+"\n\n" || strings.Count(got, "\n") != 2 {
		t.Fatalf("frame = %q", got)
	}
}

func TestAppendErrorBodyAllocs(t *testing.T) {
	fe := &failure.Error{Class: failure.ContextOverflow, Msg: "the request exceeds the model's context window", Param: "messages"}
	dst := make([]byte, 0, 512)
	if n := testing.AllocsPerRun(100, func() { dst = AppendStreamError(dst[:0], fe, "req_0123456789") }); n != 0 {
		t.Fatalf("AppendStreamError allocates %v times", n)
	}
}

// TestSDKDecodesErrorBody checks, with openai-go itself, that every class's body and status
// become an *openai.Error with the native type and code, and that the terminal stream frame
// ends a stream with an error (wire.md §7.4).
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
		client := sdk.NewClient(option.WithBaseURL(srv.URL+"/v1"), option.WithAPIKey("k"), option.WithMaxRetries(0))
		_, err := client.Chat.Completions.New(context.Background(), sdk.ChatCompletionNewParams{
			Model: "gpt-x", Messages: []sdk.ChatCompletionMessageParamUnion{sdk.UserMessage("hi")},
		})
		srv.Close()
		var apiErr *sdk.Error
		if !errors.As(err, &apiErr) {
			t.Fatalf("%s: err = %v, want *openai.Error", c, err)
		}
		if apiErr.StatusCode != c.Status() || apiErr.Type != wantNative[c][0] || apiErr.Code != wantNative[c][1] ||
			apiErr.Message != "gateway message" {
			t.Errorf("%s: SDK saw status %d type %q code %q message %q", c, apiErr.StatusCode, apiErr.Type, apiErr.Code,
				apiErr.Message)
		}
	}

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte(`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-x","choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"},"finish_reason":null}]}` + "\n\n"))
		w.Write(AppendStreamError(nil, &failure.Error{Class: failure.UpstreamTruncated}, "req_1"))
	}))
	defer srv.Close()
	client := sdk.NewClient(option.WithBaseURL(srv.URL+"/v1"), option.WithAPIKey("k"), option.WithMaxRetries(0))
	stream := client.Chat.Completions.NewStreaming(context.Background(), sdk.ChatCompletionNewParams{
		Model: "gpt-x", Messages: []sdk.ChatCompletionMessageParamUnion{sdk.UserMessage("hi")},
	})
	chunks := 0
	for stream.Next() {
		chunks++
	}
	if chunks != 1 || stream.Err() == nil || !strings.Contains(stream.Err().Error(), "upstream_truncated") {
		t.Fatalf("chunks = %d, err = %v; want 1 chunk then the terminal error", chunks, stream.Err())
	}
}

var benchBodies = []struct {
	name   string
	status int
	header func(string) string
	body   []byte
}{
	{"context_overflow", 400, nil, []byte(bodyContext)},
	{"rate_limited", 429, headers("retry-after", "2"), []byte(bodyRateTPM)},
	{"azure_content_filter", 400, nil, []byte(bodyAzureFilter)},
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
	fe := failure.From(NormalizeError(400, nil, []byte(bodyContext)))
	dst := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		dst = AppendErrorBody(dst[:0], fe, "req_0123456789abcdef")
	}
}

// A provider code or param that does not look like one (a key, an id, mixed case) never reaches
// the caller, even on a caller-fault 400/422.
func TestProviderCodeShapedLikeASecret(t *testing.T) {
	body := []byte(`{"error":{"message":"x","type":"invalid_request_error","param":"sk-proj-ABCDEF123456","code":"sk-proj-ABCDEF123456"}}`)
	fe := failure.From(NormalizeError(422, nil, body))
	if fe.Code != "" || fe.Param != "" {
		t.Fatalf("code %q param %q reached the caller", fe.Code, fe.Param)
	}
	fe = failure.From(NormalizeError(400, nil, []byte(`{"error":{"message":"x","type":"invalid_request_error","param":"messages[0].content","code":"invalid_value"}}`)))
	if fe.Code != "invalid_value" || fe.Param != "messages[0].content" {
		t.Fatalf("plain code/param withheld: %q %q", fe.Code, fe.Param)
	}
}

// TestNormalizeErrorRedactsSecretCodes: issue 25 item 5: a provider error whose code has the
// shape of a key (sk_live_…) never reaches a log line (the Cause names it [redacted]) nor the
// caller's body (no code), while word-shaped codes are still logged and relayed.
func TestNormalizeErrorRedactsSecretCodes(t *testing.T) {
	for _, code := range []string{"sk_live_51H8abcDEF1234567890xyz", "sk-proj-abcdef123456", "AKIAIOSFODNN7EXAMPLE", "key_4f9a8b7c6d5e4f3a2b1c0d9e"} {
		body := `{"error":{"message":"bad","type":"invalid_request_error","param":null,"code":"` + code + `"}}`
		fe := failure.From(NormalizeError(400, nil, []byte(body)))
		if strings.Contains(fe.Error(), code) || !strings.Contains(fe.Error(), "code=[redacted]") {
			t.Errorf("%s: logged as %q", code, fe.Error())
		}
		if fe.Code != "" {
			t.Errorf("%s: relayed to the caller as code %q", code, fe.Code)
		}
		fe = failure.From(NormalizeStreamError([]byte(body)))
		if strings.Contains(fe.Error(), code) {
			t.Errorf("%s: in-stream error logged as %q", code, fe.Error())
		}
	}
	fe := failure.From(NormalizeError(400, nil, []byte(bodyUnsupported)))
	if fe.Code != "unsupported_parameter" || !strings.Contains(fe.Error(), "code=unsupported_parameter") {
		t.Errorf("a word-shaped code: %q, %q", fe.Code, fe.Error())
	}
}
