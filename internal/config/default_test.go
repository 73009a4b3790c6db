package config

import (
	"testing"
)

func TestDefault(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-openai")
	t.Setenv("ANTHROPIC_API_KEY", "") // set but empty: the key is empty, not a problem
	c := Default()
	if c.File != "" {
		t.Errorf("File = %q, want empty", c.File)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("Default().Validate(): %v", err)
	}
	want := []struct{ name, dialect, baseURL, key string }{
		{"openai", "openai", "https://api.openai.com/v1", "sk-openai"},
		{"anthropic", "anthropic", "https://api.anthropic.com", ""},
	}
	if len(c.Deployments) != len(want) {
		t.Fatalf("got %d deployments, want %d", len(c.Deployments), len(want))
	}
	for i, w := range want {
		d := c.Deployments[i]
		if d.Name != w.name || d.Provider != w.name || d.Dialect != w.dialect || d.BaseURL != w.baseURL || d.APIKey != w.key {
			t.Errorf("deployment %d = %+v, want %+v", i, d, w)
		}
		for _, r := range d.Routes {
			if r.Price == nil || r.Price.Input <= 0 || r.Price.Output <= r.Price.Input {
				t.Errorf("%s route %s: price %+v is not a plausible list price", d.Name, r.Model, r.Price)
			}
		}
	}
	models := map[string]Model{}
	for _, m := range c.Models {
		models[m.ID] = m
		if m.ContextWindow <= 0 || m.MaxOutputTokens <= 0 || m.MaxOutputTokens >= m.ContextWindow {
			t.Errorf("model %s: context_window %d, max_output_tokens %d", m.ID, m.ContextWindow, m.MaxOutputTokens)
		}
	}
	for _, id := range []string{"gpt-4o", "gpt-4o-mini", "gpt-4.1", "gpt-4.1-mini", "claude-sonnet-4-5", "claude-haiku-4-5", "claude-opus-4-1"} {
		if _, ok := models[id]; !ok {
			t.Errorf("model %s missing from the default catalog", id)
		}
	}
	if a := models["claude-sonnet-4-5"].Aliases; len(a) != 1 || a[0] != "rp-sonnet-4-5" {
		t.Errorf("claude-sonnet-4-5 aliases = %v, want [rp-sonnet-4-5]", a)
	}
	if !c.AuthRequired() {
		t.Error("auth.required is not true by default")
	}
}

func TestDefaultUnsetKeys(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("ANTHROPIC_API_KEY", "")
	// t.Setenv cannot unset; the lookup that Default uses is tested with an empty environment.
	c, err := parse("<built-in>", defaultYAML, env(nil))
	if err != nil {
		t.Fatalf("built-in configuration with no keys set: %v", err)
	}
	for _, d := range c.Deployments {
		if d.APIKey != "" {
			t.Errorf("%s: APIKey = %q, want empty", d.Name, d.APIKey)
		}
	}
}

func TestDefaultIsFresh(t *testing.T) {
	a, b := Default(), Default()
	a.Models[0].ID = "changed"
	a.Deployments[0].Routes[0].Price.Input = 99
	if b.Models[0].ID == "changed" || b.Deployments[0].Routes[0].Price.Input == 99 {
		t.Error("Default() calls share state")
	}
}
