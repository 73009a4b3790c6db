package litellm

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/config"
)

var update = flag.Bool("update", false, "rewrite the golden files")

var envRefRe = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// TestGolden converts each LiteLLM config under testdata (written from LiteLLM's proxy
// documentation: openai, anthropic, azure, bedrock, vertex, gemini, groq, vllm, ollama; router
// settings; os.environ keys) and compares the configuration and the notes with the golden
// files; every output passes Switchyard's validation with the variables it reads set.
func TestGolden(t *testing.T) {
	inputs, _ := filepath.Glob("testdata/*.yaml")
	if len(inputs) < 4 {
		t.Fatalf("testdata holds %d LiteLLM configs", len(inputs))
	}
	for _, in := range inputs {
		name := strings.TrimSuffix(filepath.Base(in), ".yaml")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			out, notes, err := Convert(filepath.Base(in), data)
			if err != nil {
				t.Fatal(err)
			}
			var nb strings.Builder
			for _, n := range notes {
				nb.WriteString(n.String() + "\n")
			}
			golden(t, "testdata/"+name+".golden", out)
			golden(t, "testdata/"+name+".notes", []byte(nb.String()))

			for _, m := range envRefRe.FindAllSubmatch(out, -1) {
				v := "https://set-by-test.example.com"
				if name := string(m[1]); strings.HasSuffix(name, "_LOCATION") || strings.HasSuffix(name, "_REGION_NAME") {
					v = "us-east5" // a region or location, not a URL
				}
				t.Setenv(string(m[1]), v)
			}
			cfg, err := config.Parse("switchyard.yaml", out)
			if err != nil {
				t.Fatalf("output does not load:\n%v\n%s", err, out)
			}
			if len(cfg.Models) == 0 || len(cfg.Deployments) == 0 {
				t.Fatalf("output has %d models and %d deployments", len(cfg.Models), len(cfg.Deployments))
			}
			if _, err := catalog.New(cfg); err != nil {
				t.Fatalf("catalog: %v", err)
			}
			checkNothingDropped(t, data, out, notes)
		})
	}
}

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/litellm -update)", err)
	}
	if string(want) != string(got) {
		t.Errorf("%s differs; got:\n%s", path, got)
	}
}

// mapped are the settings Convert carries into the output (each one's value shows there).
var mapped = map[string]bool{
	"model_name": true, "litellm_params.model": true, "litellm_params.api_base": true, "litellm_params.api_key": true,
	"litellm_params.order": true, "litellm_params.weight": true, "litellm_params.input_cost_per_token": true,
	"litellm_params.output_cost_per_token": true, "model_info.max_input_tokens": true, "model_info.max_output_tokens": true,
	"model_info.max_tokens": true, "model_info.input_cost_per_token": true, "model_info.output_cost_per_token": true,
	"model_info.mode": true, "model_info.id": true,
	"litellm_params.aws_region_name": true, "litellm_params.aws_access_key_id": true, "litellm_params.aws_secret_access_key": true,
	"litellm_params.aws_session_token": true, "litellm_params.aws_profile_name": true, "litellm_params.vertex_project": true,
	"litellm_params.vertex_location": true, "litellm_params.vertex_credentials": true, "litellm_params.api_version": true,
	"router_settings.routing_strategy": true, "router_settings.cooldown_time": true, "router_settings.stream_timeout": true,
	"router_settings.model_group_alias": true,
}

func init() {
	for _, k := range priceKeys { // the cache costs and long-context tiers (TestConvertCachePrices)
		mapped["litellm_params."+k], mapped["model_info."+k] = true, true
	}
}

// checkNothingDropped: every setting of the input is either carried into the output or named
// by a note (a skipped model_list entry covers all of its settings).
func checkNothingDropped(t *testing.T, in, out []byte, notes []Note) {
	t.Helper()
	var doc map[string]any
	if err := yaml.Unmarshal(in, &doc); err != nil {
		t.Fatal(err)
	}
	noted := func(path string) bool {
		for _, n := range notes {
			if n.Path == path || strings.HasPrefix(path, n.Path+".") {
				return true
			}
		}
		return false
	}
	check := func(path, generic string) {
		if !mapped[generic] && !noted(path) {
			t.Errorf("%s is neither mapped nor noted", path)
		}
	}
	list, _ := doc["model_list"].([]any)
	for i, e := range list {
		m, _ := e.(map[string]any)
		p := "model_list[" + itoa(i) + "]"
		for k, v := range m {
			sub, isMap := v.(map[string]any)
			if !isMap {
				check(p+"."+k, k)
				continue
			}
			for kk := range sub {
				check(p+"."+k+"."+kk, k+"."+kk)
			}
		}
	}
	for _, sec := range []string{"router_settings", "litellm_settings", "general_settings"} {
		m, _ := doc[sec].(map[string]any)
		for k := range m {
			if sec == "general_settings" && k == "master_key" {
				if !strings.Contains(string(out), "name: master") {
					t.Errorf("master_key not mapped")
				}
				continue
			}
			check(sec+"."+k, "router_settings."+k)
		}
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// Bad input is an error, not a crash or an empty configuration.
func TestConvertErrors(t *testing.T) {
	for _, in := range []string{"", "model_list: 3\n", "[1, 2]\n", "a: [\n", "general_settings: {master_key: x}\n"} {
		if _, _, err := Convert("c.yaml", []byte(in)); err == nil {
			t.Errorf("Convert(%q) succeeded", in)
		}
	}
}

// FuzzConvert: no input crashes the converter, and an output is always valid YAML.
func FuzzConvert(f *testing.F) {
	for _, p := range []string{"testdata/openai_anthropic.yaml", "testdata/azure_router.yaml"} {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		out, _, err := Convert("f.yaml", data)
		if err != nil {
			return
		}
		var v any
		if err := yaml.Unmarshal(out, &v); err != nil {
			t.Fatalf("output is not YAML: %v\n%s", err, out)
		}
	})
}

// TestConvertCachePrices: LiteLLM's cache costs and their _above_200k_tokens variants become
// price's cache_read, cache_write, cache_write_1h and a tier above 200,000 input tokens (per
// token x 10^6), with no note (they are carried over); a cost left out stays out.
func TestConvertCachePrices(t *testing.T) {
	in := `model_list:
  - model_name: sonnet
    litellm_params:
      model: anthropic/claude-sonnet-4-5
      api_key: os.environ/ANTHROPIC_API_KEY
    model_info:
      input_cost_per_token: 0.000003
      output_cost_per_token: 0.000015
      cache_read_input_token_cost: 0.0000003
      cache_creation_input_token_cost: 0.00000375
      cache_creation_input_token_cost_above_1hr: 0.000006
      input_cost_per_token_above_200k_tokens: 0.000006
      output_cost_per_token_above_200k_tokens: 0.0000225
      cache_read_input_token_cost_above_200k_tokens: 0.0000006
      cache_creation_input_token_cost_above_200k_tokens: 0.0000075
  - model_name: mini
    litellm_params:
      model: openai/gpt-4o-mini
      input_cost_per_token: 0.00000015
      output_cost_per_token: 0.0000006
      cache_read_input_token_cost: 0.000000075
`
	out, notes, err := Convert("c.yaml", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"price: {input: 3, output: 15, cache_read: 0.3, cache_write: 3.75, cache_write_1h: 6, tiers: [{above_input_tokens: 200000, input: 6, output: 22.5, cache_read: 0.6, cache_write: 7.5}]}",
		"price: {input: 0.15, output: 0.6, cache_read: 0.075}",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, n := range notes {
		if strings.Contains(n.Path, "cost") {
			t.Errorf("a cost is noted as not mapped: %+v", n)
		}
	}
	// Every setting is carried over or noted.
	checkNothingDropped(t, []byte(in), out, notes)
}
