package catalog

import (
	"testing"

	"github.com/switchyard-gw/switchyard/internal/config"
)

// TestPlatformDefaults: a deployment's platform defaults to its dialect's own API, the settings
// blocks reach the catalog, and responses defaults to true only for OpenAI's own API and for
// Azure where it serves the Responses API (contract.md, round 3: its v1 API, or a preview
// api_version from 2025-03-01-preview on; not the GA 2024-10-21), unless the config says
// otherwise.
func TestPlatformDefaults(t *testing.T) {
	no := false
	yes := true
	cfg := &config.Config{Deployments: []config.Deployment{
		{Name: "openai", Dialect: "openai", BaseURL: "https://api.openai.com/v1/"},
		{Name: "vllm", Dialect: "openai", BaseURL: "http://10.0.0.7/v1"},
		{Name: "vllm-responses", Dialect: "openai", BaseURL: "http://10.0.0.8/v1", Responses: &yes},
		{Name: "openai-off", Dialect: "openai", BaseURL: "https://api.openai.com/v1", Responses: &no},
		{Name: "azure", Dialect: "openai", Platform: "azure", BaseURL: "https://r.openai.azure.com", Azure: &config.Azure{APIVersion: "2024-10-21"}},
		{Name: "azure-v1", Dialect: "openai", Platform: "azure", BaseURL: "https://r.openai.azure.com"},
		{Name: "azure-preview", Dialect: "openai", Platform: "azure", BaseURL: "https://r.openai.azure.com", Azure: &config.Azure{APIVersion: "2025-04-01-preview"}},
		{Name: "azure-old-preview", Dialect: "openai", Platform: "azure", BaseURL: "https://r.openai.azure.com", Azure: &config.Azure{APIVersion: "2024-12-01-preview"}},
		{Name: "azure-ga-on", Dialect: "openai", Platform: "azure", BaseURL: "https://r.openai.azure.com", Azure: &config.Azure{APIVersion: "2024-10-21"}, Responses: &yes},
		{Name: "anthropic", Dialect: "anthropic", BaseURL: "https://api.anthropic.com"},
		{Name: "bedrock", Dialect: "anthropic", Platform: "bedrock", AWS: &config.AWS{Region: "us-east-1", Profile: "prod"}},
		{Name: "vertex", Dialect: "anthropic", Platform: "vertex", Vertex: &config.Vertex{Project: "p", Location: "global"}},
	}}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		platform  Platform
		responses bool
	}{
		"openai": {PlatformOpenAI, true}, "vllm": {PlatformOpenAI, false}, "vllm-responses": {PlatformOpenAI, true},
		"openai-off": {PlatformOpenAI, false}, "azure": {PlatformAzure, false}, "azure-v1": {PlatformAzure, true},
		"azure-preview": {PlatformAzure, true}, "azure-old-preview": {PlatformAzure, false}, "azure-ga-on": {PlatformAzure, true}, "anthropic": {PlatformAnthropic, false},
		"bedrock": {PlatformBedrock, false}, "vertex": {PlatformVertex, false},
	}
	for name, w := range want {
		d := c.Deployment(name)
		if d == nil {
			t.Fatalf("no deployment %q", name)
		}
		if d.Platform != w.platform || d.Responses != w.responses {
			t.Errorf("%s: platform %q responses %v, want %q %v", name, d.Platform, d.Responses, w.platform, w.responses)
		}
	}
	if d := c.Deployment("bedrock"); d.AWS != (AWS{Region: "us-east-1", Profile: "prod"}) {
		t.Errorf("bedrock AWS = %+v", d.AWS)
	}
	if d := c.Deployment("vertex"); d.Vertex != (Vertex{Project: "p", Location: "global"}) {
		t.Errorf("vertex settings = %+v", d.Vertex)
	}
	if d := c.Deployment("azure"); d.Azure.APIVersion != "2024-10-21" {
		t.Errorf("azure settings = %+v", d.Azure)
	}
}

// TestCatalogProvider: the price catalog's provider of a deployment is its provider id when the
// catalog knows it, else its platform when that is a cloud hosting the model (contract.md
// round 4); a reseller on a dialect's own API is never priced at the maker's list price.
func TestCatalogProvider(t *testing.T) {
	known := func(id string) bool {
		switch id {
		case "openai", "anthropic", "google", "bedrock", "vertex", "azure":
			return true
		}
		return false
	}
	for _, tt := range []struct{ provider, platform, want string }{
		{"anthropic", "anthropic", "anthropic"},
		{"openai", "openai", "openai"},
		{"aws-prod", "bedrock", "bedrock"},
		{"gcp", "vertex", "vertex"},
		{"azure-eu", "azure", "azure"},
		{"reseller", "openai", ""},
		{"anthropic-backup", "anthropic", ""},
		{"google", "openai", "google"},
	} {
		if got := CatalogProvider(tt.provider, tt.platform, known); got != tt.want {
			t.Errorf("CatalogProvider(%q, %q) = %q, want %q", tt.provider, tt.platform, got, tt.want)
		}
	}
}
