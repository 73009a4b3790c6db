package catalog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-gw/switchyard/internal/config"
	"github.com/switchyard-gw/switchyard/internal/pricedata"
)

// unpricedConfig: issue 28's routes with no price and no context window anywhere, plus a route
// of a provider the catalog does not list and one with its own price.
func unpricedConfig(t *testing.T, pricing string) *config.Config {
	t.Helper()
	cfg, err := config.Parse("t.yaml", []byte(`
models:
  - {id: claude-sonnet-4-5}
  - {id: gpt-4o-mini}
  - {id: local}
deployments:
  - name: anthropic
    dialect: anthropic
    base_url: https://api.anthropic.com
    routes: [{model: claude-sonnet-4-5}]
  - name: bedrock
    dialect: anthropic
    base_url: https://bedrock.example
    routes: [{model: claude-sonnet-4-5, upstream_model: global.anthropic.claude-sonnet-4-5-20250929-v1:0}]
  - name: openai
    dialect: openai
    base_url: https://api.openai.com/v1
    routes: [{model: gpt-4o-mini, upstream_model: gpt-4o-mini-2024-07-18}, {model: local, price: {input: 1, output: 2}, context_window: 8000}]
  - name: vllm
    provider: my-vllm
    dialect: openai
    base_url: http://10.0.0.1/v1
    routes: [{model: gpt-4o-mini}]
`+pricing))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestCatalogPrices: with no price in the config, Claude Sonnet 4.5 on Anthropic and on
// Bedrock's global inference profile and gpt-4o-mini (a dated id) on OpenAI take their list
// prices, cache prices and context windows from the built-in catalog, and show the source; a
// provider the catalog does not list stays unpriced; a configured price and window stay
// config's. With pricing.catalog false every unconfigured route is unpriced and unwindowed.
func TestCatalogPrices(t *testing.T) {
	c := mustNew(t, unpricedConfig(t, ""))
	for _, tc := range []struct {
		dep, model                   string
		in, out, read, write, w1, ws float64
		window                       int
	}{
		// web_search: USD per search (genai-prices' web_searches_kcount / 1,000); Bedrock lists none.
		{"anthropic", "claude-sonnet-4-5", 3, 15, 0.3, 3.75, 6, 0.01, 200000},
		{"bedrock", "claude-sonnet-4-5", 3, 15, 0.3, 3.75, 3.75, 0, 200000},
		{"openai", "gpt-4o-mini", 0.15, 0.6, 0.075, 0.15, 0.15, 0.01, 128000},
	} {
		r := c.Deployment(tc.dep).route(tc.model)
		if r.PriceSource() != PriceFromCatalog || r.ContextWindowSource != PriceFromCatalog || r.ContextWindowTokens != tc.window {
			t.Errorf("%s %s: price source %s, window %d from %s", tc.dep, tc.model, r.PriceSource(), r.ContextWindowTokens, r.ContextWindowSource)
			continue
		}
		got := r.Price.Rates(1000)
		want := Rates{Input: tc.in, Output: tc.out, CacheRead: tc.read, CacheWrite: tc.write, CacheWrite1h: tc.w1, WebSearch: tc.ws}
		if got != want {
			t.Errorf("%s %s: rates %+v, want %+v", tc.dep, tc.model, got, want)
		}
	}
	if r := c.Deployment("anthropic").route("claude-sonnet-4-5"); r.Price.Rates(200_001).Tier != 200_000 || r.Price.Rates(200_001).Input != 6 {
		t.Errorf("the catalog's long-context tier is lost: %+v", r.Price.Rates(200_001))
	}
	if r := c.Deployment("vllm").route("gpt-4o-mini"); r.Price != nil || r.PriceSource() != PriceFromNone || r.ContextWindowSource != PriceFromNone {
		t.Errorf("a provider the catalog does not list: price %+v from %s", r.Price, r.PriceSource())
	}
	if r := c.Deployment("openai").route("local"); r.PriceSource() != PriceFromConfig || r.ContextWindowTokens != 8000 || r.ContextWindowSource != PriceFromConfig {
		t.Errorf("configured route: price from %s, window %d from %s", r.PriceSource(), r.ContextWindowTokens, r.ContextWindowSource)
	}

	off := mustNew(t, unpricedConfig(t, "pricing: {catalog: false}\n"))
	for _, d := range off.Deployments {
		for _, r := range d.Routes {
			if r.Model != "local" && (r.Price != nil || r.ContextWindowTokens != 0) {
				t.Errorf("catalog off: %s %s priced %+v, window %d", d.Name, r.Model, r.Price, r.ContextWindowTokens)
			}
		}
	}
}

// TestCatalogFile: pricing.catalog_file replaces the built-in catalog (a relative path is
// read from the configuration file's directory); a file that does not parse fails the load.
func TestCatalogFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "prices.json"), []byte(`{"providers":[{"id":"openai","models":[
		{"id":"mini","match":{"starts_with":"gpt-4o-mini"},"context_window":1000,"price":{"input":9,"output":99}}]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := unpricedConfig(t, "pricing: {catalog_file: prices.json}\n")
	cfg.File = filepath.Join(dir, "switchyard.yaml")
	c := mustNew(t, cfg)
	if r := c.Deployment("openai").route("gpt-4o-mini"); r.Price == nil || r.Price.InputPerMTokUSD != 9 || r.Price.CatalogModel != "mini" || r.ContextWindowTokens != 1000 {
		t.Errorf("catalog_file price %+v window %d", r.Price, r.ContextWindowTokens)
	}
	if r := c.Deployment("anthropic").route("claude-sonnet-4-5"); r.Price != nil {
		t.Errorf("the built-in catalog still prices anthropic: %+v", r.Price)
	}
	if err := os.WriteFile(filepath.Join(dir, "bad.json"), []byte(`{"providers":[{"id":"openai","models":[{"id":"x","price":{}}]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg = unpricedConfig(t, "pricing: {catalog_file: bad.json}\n")
	cfg.File = filepath.Join(dir, "switchyard.yaml")
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "bad.json") {
		t.Errorf("a bad catalog_file: %v", err)
	}
}

// TestCatalogProviderBuiltin: with the built-in catalog, a deployment whose provider is a catalog id uses it; otherwise its
// platform (bedrock, vertex, azure) names the catalog provider; otherwise it has none.
func TestCatalogProviderBuiltin(t *testing.T) {
	pc, err := pricedata.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ provider, platform, want string }{
		{"anthropic", "", "anthropic"},
		{"my-claude", "bedrock", "bedrock"},
		{"team-gemini", "vertex", "vertex"},
		{"openai", "azure", "openai"},
		{"corp-azure", "azure", "azure"},
		{"my-vllm", "", ""},
	} {
		if got := CatalogProvider(tc.provider, tc.platform, pc.HasProvider); got != tc.want {
			t.Errorf("CatalogProvider(%q, %q) = %q, want %q", tc.provider, tc.platform, got, tc.want)
		}
	}
	// Through a deployment: the platform's catalog prices a provider id the catalog lacks.
	m := &Model{ID: "claude-sonnet-4-5"}
	r := &Route{Deployment: &Deployment{Provider: "my-claude", Platform: "bedrock"}, Model: m.ID,
		UpstreamModel: "us.anthropic.claude-sonnet-4-5-20250929-v1:0"}
	applyPriceCatalog(pc, m, r, time.Now())
	if r.Price == nil || r.Price.InputPerMTokUSD != 3.3 {
		t.Errorf("bedrock platform price %+v", r.Price)
	}
}

// TestRatesDefaults: contract.md's defaults — cache prices left out bill at input,
// cache_write_1h left out at cache_write; a tier's left-out fields keep the base values; the
// reserve's input price is the highest input-side price.
func TestRatesDefaults(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	p := &Price{InputPerMTokUSD: 2, OutputPerMTokUSD: 8}
	if r := p.Rates(10); r != (Rates{Input: 2, Output: 8, CacheRead: 2, CacheWrite: 2, CacheWrite1h: 2}) {
		t.Errorf("no cache prices: %+v", r)
	}
	p = &Price{InputPerMTokUSD: 3, OutputPerMTokUSD: 15, CacheReadPerMTokUSD: f(0.3), CacheWritePerMTokUSD: f(3.75), CacheWrite1hPerMTokUSD: f(6),
		PerWebSearchUSD: 0.01, Tiers: []PriceTier{{AboveInputTokens: 100, Output: f(20)}, {AboveInputTokens: 1000, Input: f(6), CacheWrite: f(7.5)}}}
	for _, tc := range []struct {
		in   int64
		want Rates
	}{ // the web search price is per call: every tier keeps it
		{100, Rates{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75, CacheWrite1h: 6, WebSearch: 0.01}},
		{101, Rates{Input: 3, Output: 20, CacheRead: 0.3, CacheWrite: 3.75, CacheWrite1h: 6, WebSearch: 0.01, Tier: 100}},
		{1001, Rates{Input: 6, Output: 15, CacheRead: 0.3, CacheWrite: 7.5, CacheWrite1h: 6, WebSearch: 0.01, Tier: 1000}},
	} {
		if r := p.Rates(tc.in); r != tc.want {
			t.Errorf("Rates(%d) = %+v, want %+v", tc.in, r, tc.want)
		}
	}
	if m := p.Rates(10).MaxInput(); m != 6 {
		t.Errorf("MaxInput = %v, want 6 (the one-hour write price)", m)
	}
}
