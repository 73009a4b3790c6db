package catalog

import (
	"strings"
	"testing"

	"github.com/switchyard-gw/switchyard/internal/config"
)

// testConfig is a small catalog: two deployments serving overlapping models, ids with '/' and
// ':', an alias, an id that itself ends in a date, and a model with no route.
func testConfig() *config.Config {
	return &config.Config{
		Models: []config.Model{
			{ID: "claude-sonnet-4-5", Aliases: []string{"rp-sonnet-4-5"}, ContextWindow: 200000, MaxOutputTokens: 64000, Price: &config.Price{Input: 3, Output: 15}},
			{ID: "claude-haiku-4-5", ContextWindow: 200000},
			{ID: "gpt-4o-mini"},
			{ID: "gpt-4o-2024-08-06"},
			{ID: "meta/llama3.1:70b"},
			{ID: "anthropic.claude-3-haiku-20240307-v1:0"},
			{ID: "unrouted"},
		},
		Deployments: []config.Deployment{
			{
				Name: "anthropic", Dialect: "anthropic", BaseURL: "https://api.anthropic.com", APIKey: "k1", Tier: "official",
				Routes: []config.Route{
					{Model: "claude-sonnet-4-5", Price: &config.Price{Input: 3, Output: 15}},
					{Model: "claude-haiku-4-5"},
				},
			},
			{
				Name: "value", Provider: "valuecloud", Dialect: "openai", BaseURL: "http://10.0.0.7/v1", Priority: 1,
				Routes: []config.Route{
					{Model: "claude-sonnet-4-5", UpstreamModel: "anthropic/claude-sonnet-4.5", Weight: 2.5, ContextWindow: 100000},
					{Model: "gpt-4o-mini"},
					{Model: "gpt-4o-2024-08-06"},
					{Model: "meta/llama3.1:70b", UpstreamModel: "llama3.1:70b"},
					{Model: "anthropic.claude-3-haiku-20240307-v1:0"},
				},
			},
		},
	}
}

func mustNew(t testing.TB, cfg *config.Config) *Catalog {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

func TestNewWiring(t *testing.T) {
	c := mustNew(t, testConfig())
	if len(c.Models) != 7 || len(c.Deployments) != 2 {
		t.Fatalf("got %d models, %d deployments", len(c.Models), len(c.Deployments))
	}
	for i, id := range []string{"claude-sonnet-4-5", "claude-haiku-4-5", "gpt-4o-mini"} {
		if c.Models[i].ID != id {
			t.Errorf("Models[%d] = %s, want %s (configuration order)", i, c.Models[i].ID, id)
		}
	}
	a, v := c.Deployment("anthropic"), c.Deployment("value")
	if a != c.Deployments[0] || v != c.Deployments[1] || c.Deployment("nope") != nil {
		t.Fatal("Deployment lookup does not return the catalog's deployments")
	}
	if a.Provider != "anthropic" || v.Provider != "valuecloud" || a.Dialect != Anthropic || v.Dialect != OpenAI || v.Priority != 1 || a.APIKey != "k1" || a.Tier != "official" {
		t.Errorf("deployment fields: %+v %+v", a, v)
	}

	sonnet := c.Model("claude-sonnet-4-5")
	if sonnet == nil || sonnet.ContextWindowTokens != 200000 || sonnet.MaxOutputTokens != 64000 || sonnet.Price.InputPerMTokUSD != 3 || sonnet.Price.OutputPerMTokUSD != 15 || sonnet.Price.Source != PriceFromConfig {
		t.Fatalf("sonnet = %+v", sonnet)
	}
	// Model.Routes in catalog order: deployment order, then route order.
	if len(sonnet.Routes) != 2 || sonnet.Routes[0].Deployment != a || sonnet.Routes[1].Deployment != v {
		t.Fatalf("sonnet routes = %+v", sonnet.Routes)
	}
	r0, r1 := sonnet.Routes[0], sonnet.Routes[1]
	if r0 != a.Routes[0] || r1 != v.Routes[0] {
		t.Error("Model.Routes and Deployment.Routes do not share the same *Route")
	}
	if r0.UpstreamModel != "claude-sonnet-4-5" || r0.Weight != 1 || r0.Price.InputPerMTokUSD != 3 || r0.Price.OutputPerMTokUSD != 15 || r0.PriceSource() != PriceFromConfig || r0.ContextWindowTokens != 0 {
		t.Errorf("route 0 = %+v (defaults: upstream = model, weight 1)", r0)
	}
	if r1.UpstreamModel != "anthropic/claude-sonnet-4.5" || r1.Weight != 2.5 || r1.Price != nil || r1.ContextWindowTokens != 100000 {
		t.Errorf("route 1 = %+v", r1)
	}
	if m := c.Model("unrouted"); m == nil || len(m.Routes) != 0 {
		t.Errorf("unrouted = %+v, want a model with no routes", m)
	}
	if c.Model("rp-sonnet-4-5") != nil || c.Model("claude-sonnet-4-5-20250929") != nil || c.Model("Claude-Sonnet-4-5") != nil {
		t.Error("Model must match exact ids only")
	}
}

func TestNewCopies(t *testing.T) {
	cfg := testConfig()
	c := mustNew(t, cfg)
	cfg.Models[0].Aliases[0] = "changed"
	cfg.Models[0].Price.Input = 99
	cfg.Deployments[0].Routes[0].Price.Input = 99
	m := c.Model("claude-sonnet-4-5")
	if m.Aliases[0] != "rp-sonnet-4-5" || m.Price.InputPerMTokUSD != 3 || m.Routes[0].Price.InputPerMTokUSD != 3 {
		t.Error("the catalog shares memory with the configuration it was built from")
	}
}

func TestNewErrors(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*config.Config)
		want   string
	}{
		{"duplicate model", func(c *config.Config) { c.Models = append(c.Models, config.Model{ID: "gpt-4o-mini"}) }, `model "gpt-4o-mini" is defined twice`},
		{"empty model id", func(c *config.Config) { c.Models = append(c.Models, config.Model{}) }, "empty id"},
		{"alias is an id", func(c *config.Config) { c.Models[1].Aliases = []string{"gpt-4o-mini"} }, `alias "gpt-4o-mini" of model "claude-haiku-4-5" is a model id`},
		{"duplicate alias", func(c *config.Config) { c.Models[1].Aliases = []string{"rp-sonnet-4-5"} }, `alias "rp-sonnet-4-5" is defined twice`},
		{"duplicate deployment", func(c *config.Config) { c.Deployments[1].Name = "anthropic" }, `deployment "anthropic" is defined twice`},
		{"bad dialect", func(c *config.Config) { c.Deployments[0].Dialect = "gemini" }, `unknown dialect "gemini"`},
		{"unknown route model", func(c *config.Config) { c.Deployments[0].Routes[0].Model = "nope" }, `routes model "nope", which is not in the catalog`},
		{"route to alias", func(c *config.Config) { c.Deployments[0].Routes[0].Model = "rp-sonnet-4-5" }, `an alias of "claude-sonnet-4-5"`},
		{"route twice", func(c *config.Config) { c.Deployments[0].Routes[1].Model = "claude-sonnet-4-5" }, `routes model "claude-sonnet-4-5" twice`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			tt.modify(cfg)
			_, err := New(cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New error = %v, want %q", err, tt.want)
			}
		})
	}
	if _, err := New(nil); err == nil {
		t.Error("New(nil) succeeded")
	}
}

// TestNewDefault builds the built-in default catalog.
func TestNewDefault(t *testing.T) {
	c := mustNew(t, config.Default())
	res, err := c.Resolve("rp-sonnet-4-5")
	if err != nil || res.Model.ID != "claude-sonnet-4-5" || len(res.Model.Routes) != 1 || res.Model.Routes[0].Deployment.Name != "anthropic" {
		t.Fatalf("Resolve(rp-sonnet-4-5) = %+v, %v", res, err)
	}
	res, err = c.Resolve("gpt-4o-mini-2024-07-18")
	if err != nil || res.UpstreamModel(res.Model.Routes[0]) != "gpt-4o-mini-2024-07-18" || res.Model.Routes[0].Deployment.Dialect != OpenAI {
		t.Fatalf("Resolve(gpt-4o-mini-2024-07-18) = %+v, %v", res, err)
	}
}
