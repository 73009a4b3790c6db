package server

import "testing"

// TestGenAIProviderName: an attempt on a platform carries the semantic conventions' value of
// that platform as gen_ai.provider.name; on a dialect's own API, the deployment's provider id.
func TestGenAIProviderName(t *testing.T) {
	for _, tt := range []struct{ platform, provider, want string }{
		{"bedrock", "aws-prod", "aws.bedrock"},
		{"vertex", "gcp", "gcp.vertex_ai"},
		{"azure", "azure-eu", "azure.ai.openai"},
		{"openai", "openai", "openai"},
		{"anthropic", "anthropic", "anthropic"},
		{"openai", "vllm", "vllm"},
		{"", "reseller", "reseller"},
	} {
		if got := genAIProviderName(tt.platform, tt.provider); got != tt.want {
			t.Errorf("genAIProviderName(%q, %q) = %q, want %q", tt.platform, tt.provider, got, tt.want)
		}
	}
}
