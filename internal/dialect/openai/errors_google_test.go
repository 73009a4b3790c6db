package openai

import (
	"testing"

	"github.com/switchyard-gw/switchyard/internal/failure"
)

// TestNormalizeGoogleErrors: Gemini's OpenAI-compatible endpoint answers Google's error
// object, sometimes as a one-element array; both are read (docs/platforms.md, Gemini): its
// context overflow is context_overflow (never failed over), a 429 RESOURCE_EXHAUSTED
// upstream_rate_limited, a refused key (a 400 there) upstream_auth, and the caller's 400 invalid_request.
func TestNormalizeGoogleErrors(t *testing.T) {
	for _, tc := range []struct {
		status int
		body   string
		class  failure.Class
	}{
		{400, `[{"error":{"code":400,"message":"The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}]`, failure.ContextOverflow},
		{400, `{"error":{"code":400,"message":"The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}`, failure.ContextOverflow},
		{429, `[{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED"}}]`, failure.UpstreamRateLimited},
		{400, `[{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT"}}]`, failure.UpstreamAuth},
		{400, `[{"error":{"code":400,"message":"Request contains an invalid argument.","status":"INVALID_ARGUMENT"}}]`, failure.InvalidRequest},
		{401, `[{"error":{"code":401,"message":"Request had invalid authentication credentials.","status":"UNAUTHENTICATED"}}]`, failure.UpstreamAuth},
		{503, `[{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}]`, failure.UpstreamError},
		{400, `[1,2]`, failure.InvalidRequest},
	} {
		fe := failure.From(NormalizeError(tc.status, nil, []byte(tc.body)))
		if fe.Class != tc.class {
			t.Errorf("%d %s: %s, want %s", tc.status, tc.body, fe.Class, tc.class)
		}
	}
}
