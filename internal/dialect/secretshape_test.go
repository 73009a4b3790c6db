package dialect

import "testing"

// LooksSecret holds for key-shaped tokens and never for the providers' own error types and codes.
func TestLooksSecret(t *testing.T) {
	for _, s := range []string{"sk_live_51H8abcDEF1234567890xyz", "sk-ant-api03-abc", "AKIAIOSFODNN7EXAMPLE",
		"ghp_16C7e42F292c6912E7710c838347Ae178B4a", "req_8a7b6c5d4e3f2a1b0c9d8e7f"} {
		if !LooksSecret(s) {
			t.Errorf("LooksSecret(%q) = false", s)
		}
	}
	for _, s := range []string{"", "invalid_request_error", "context_length_exceeded", "unsupported_country_region_territory",
		"model_not_found", "DeploymentNotFound", "ResponsibleAIPolicyViolation", "misalignment_policy_violation",
		"rate_limit_exceeded", "insufficient_quota", "404", "previous_response_not_found", "content_policy_violation"} {
		if LooksSecret(s) {
			t.Errorf("LooksSecret(%q) = true", s)
		}
	}
}
