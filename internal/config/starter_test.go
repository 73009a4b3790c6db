package config

import (
	"reflect"
	"strings"
	"testing"
)

// The starter file of `switchyard init` is valid (with its documented variables set) and
// serves exactly the built-in catalog, so the two cannot drift apart.
func TestStarter(t *testing.T) {
	env := map[string]string{"SWITCHYARD_API_KEY": "k-0123456789", "OPENAI_API_KEY": "sk-o", "ANTHROPIC_API_KEY": "sk-a"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	cfg, err := parse("switchyard.yaml", Starter(), lookup)
	if err != nil {
		t.Fatalf("starter does not load: %v", err)
	}
	def, err := parse("<built-in>", defaultYAML, lookup)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cfg.Models, def.Models) {
		t.Errorf("starter models differ from the built-in catalog:\n%+v\n%+v", cfg.Models, def.Models)
	}
	if !reflect.DeepEqual(cfg.Deployments, def.Deployments) {
		t.Errorf("starter deployments differ from the built-in catalog:\n%+v\n%+v", cfg.Deployments, def.Deployments)
	}
	if !cfg.AuthRequired() || len(cfg.Keys) != 1 || cfg.Keys[0].Secret != "k-0123456789" {
		t.Errorf("starter auth: required %v, keys %+v", cfg.AuthRequired(), cfg.Keys)
	}
	// Every top-level section is present (written or shown commented out) and explained.
	text := string(Starter())
	for _, section := range yamlFieldNames(Config{}) {
		if !strings.Contains(text, "\n"+section+":") && !strings.Contains(text, "\n# "+section+":") {
			t.Errorf("starter does not show section %q", section)
		}
	}
	// Without the caller key variable the problem names it.
	delete(env, "SWITCHYARD_API_KEY")
	if _, err := parse("switchyard.yaml", Starter(), lookup); err == nil || !strings.Contains(err.Error(), "SWITCHYARD_API_KEY") {
		t.Errorf("starter without SWITCHYARD_API_KEY: %v; want a problem naming it", err)
	}
}

func yamlFieldNames(v any) []string {
	var out []string
	for name := range yamlFields(reflect.TypeOf(v)) {
		out = append(out, name)
	}
	return out
}
