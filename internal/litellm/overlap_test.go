package litellm

import (
	"strings"
	"testing"

	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/config"
)

// convertValid converts in, requires the output to load and build a catalog with
// ${OPENAI_API_KEY} and ${AZURE_API_KEY} set, and returns the output, its catalog and the notes
// by path.
func convertValid(t *testing.T, in string) (string, *catalog.Catalog, map[string][]string) {
	t.Helper()
	out, notes, err := Convert("c.yaml", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("OPENAI_API_KEY", "sk-test")
	t.Setenv("AZURE_API_KEY", "az-test")
	cfg, err := config.Parse("switchyard.yaml", out)
	if err != nil {
		t.Fatalf("output does not load: %v\n%s", err, out)
	}
	cat, err := catalog.New(cfg)
	if err != nil {
		t.Fatalf("catalog: %v\n%s", err, out)
	}
	checkNothingDropped(t, []byte(in), out, notes)
	byPath := map[string][]string{}
	for _, n := range notes {
		byPath[n.Path] = append(byPath[n.Path], n.Msg)
	}
	return string(out), cat, byPath
}

// TestConvertImageModels: issue 25 item 5. Image generation models are imported, not skipped:
// a bare dall-e-3 is OpenAI's (as LiteLLM infers it), model_info.mode image_generation is a
// Switchyard surface (POST /v1/images/generations serves any OpenAI-dialect route), and
// output_cost_per_image becomes price.image (USD per image). Per-pixel costs are noted with
// what to set instead; an image model on an Anthropic-dialect provider is skipped with a note.
func TestConvertImageModels(t *testing.T) {
	in := `model_list:
  - model_name: dall-e-3
    litellm_params:
      model: dall-e-3
      api_key: os.environ/OPENAI_API_KEY
    model_info:
      mode: image_generation
      output_cost_per_image: 0.04
  - model_name: gpt-image-1
    litellm_params:
      model: openai/gpt-image-1
    model_info:
      mode: image_generation
      input_cost_per_token: 0.000005
      output_cost_per_token: 0.00004
  - model_name: azure-dalle
    litellm_params:
      model: azure/dall-e-3
      api_base: https://res.openai.azure.com
      api_key: os.environ/AZURE_API_KEY
    model_info:
      mode: image_generation
      input_cost_per_pixel: 0.0000000401
  - model_name: dall-e-2
    litellm_params:
      model: dall-e-2
    model_info:
      mode: image_edit
  - model_name: claude-pics
    litellm_params:
      model: anthropic/claude-sonnet-4-5
    model_info:
      mode: image_generation
`
	out, cat, notes := convertValid(t, in)
	for _, want := range []string{
		"- model: dall-e-3\n        price: {input: 0, output: 0, image: 0.04}",
		"- model: gpt-image-1\n        price: {input: 5, output: 40}",
		"- model: azure-dalle\n        upstream_model: dall-e-3",
		"- model: dall-e-2\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, m := range []string{"dall-e-3", "gpt-image-1", "azure-dalle", "dall-e-2"} {
		ok := false
		for _, d := range cat.Deployments {
			for _, r := range d.Routes {
				ok = ok || (r.Model == m && d.Supports(catalog.ProtocolImages))
			}
		}
		if !ok {
			t.Errorf("model %s has no route that serves POST /v1/images/generations", m)
		}
	}
	for p, msgs := range notes {
		if strings.HasPrefix(p, "model_list[") && strings.Contains(strings.Join(msgs, " "), "skipped") && !strings.HasPrefix(p, "model_list[4]") {
			t.Errorf("%s: %q (an image model skipped)", p, msgs)
		}
	}
	if msgs := notes["model_list[2].model_info.input_cost_per_pixel"]; len(msgs) != 1 || !strings.Contains(msgs[0], "price.image") {
		t.Errorf("per-pixel cost: notes %q, want one naming price.image", msgs)
	}
	if msgs := notes["model_list[4].model_info.mode"]; len(msgs) != 1 || !strings.Contains(msgs[0], "OpenAI-dialect") || !strings.Contains(msgs[0], "skipped") {
		t.Errorf("image model on anthropic/: notes %q, want it skipped as not OpenAI-dialect", msgs)
	}
	if strings.Contains(out, "claude-pics") {
		t.Errorf("the anthropic/ image entry was imported:\n%s", out)
	}
}

// TestConvertSettingAppliedOnce: issue 25 item 5. A setting of the output that two settings
// of the LiteLLM file set (litellm_settings and router_settings; timeout and request_timeout;
// a cost in litellm_params and model_info; max_output_tokens and max_tokens; the same alias
// twice; two entries of one model with different limits) is applied once: the winner's value
// is in the output and only the winner reads as applied; the other is noted "not applied",
// naming the winner.
func TestConvertSettingAppliedOnce(t *testing.T) {
	in := `model_list:
  - model_name: m
    litellm_params:
      model: openai/gpt-4o-mini
      input_cost_per_token: 0.0000002
    model_info:
      input_cost_per_token: 0.0000009
      output_cost_per_token: 0.0000006
      max_input_tokens: 128000
      max_output_tokens: 16384
      max_tokens: 4096
  - model_name: m
    litellm_params:
      model: openai/gpt-4o-mini
      api_base: https://other.example.com/v1
    model_info:
      max_input_tokens: 64000
      max_output_tokens: 16384
  - model_name: n
    litellm_params:
      model: openai/gpt-4o
router_settings:
  num_retries: 2
  allowed_fails: 3
  cooldown_time: 30
  timeout: 30
  routing_strategy: latency-based-routing
  model_group_alias: {fast: m}
litellm_settings:
  num_retries: 5
  allowed_fails: 1
  cooldown_time: 5
  request_timeout: 10
  routing_strategy: usage-based-routing
  model_group_alias: {fast: n}
`
	out, _, notes := convertValid(t, in)
	for _, want := range []string{
		"strategy: latency\n", "attempt_limit: 3\n", "headers: 30s\n", "failures: 4\n", "cooldown: 30s\n",
		"- id: m\n    aliases: [fast]\n    context_window: 128000\n    max_output_tokens: 16384\n",
		"price: {input: 0.2, output: 0.6}",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "aliases:") != 1 {
		t.Errorf("alias fast given to more than one model:\n%s", out)
	}
	for loser, winner := range map[string]string{
		"litellm_settings.num_retries":                  "router_settings.num_retries",
		"litellm_settings.allowed_fails":                "router_settings.allowed_fails",
		"litellm_settings.cooldown_time":                "router_settings.cooldown_time",
		"litellm_settings.request_timeout":              "router_settings.timeout",
		"litellm_settings.routing_strategy":             "router_settings.routing_strategy",
		"litellm_settings.model_group_alias.fast":       "router_settings.model_group_alias.fast",
		"model_list[0].model_info.input_cost_per_token": "model_list[0].litellm_params.input_cost_per_token",
		"model_list[0].model_info.max_tokens":           "model_list[0].model_info.max_output_tokens",
		"model_list[1].model_info.max_input_tokens":     "model_list[0].model_info.max_input_tokens",
	} {
		msgs := notes[loser]
		if len(msgs) != 1 || !strings.HasPrefix(msgs[0], "not applied: "+winner+" ") {
			t.Errorf("%s: notes %q, want one: not applied, %s wins", loser, msgs, winner)
		}
		for _, m := range notes[winner] {
			if strings.Contains(m, "not applied") {
				t.Errorf("%s, the one applied, is noted %q", winner, m)
			}
		}
	}
	// The same value twice (max_output_tokens of both entries of m) is no conflict.
	if msgs := notes["model_list[1].model_info.max_output_tokens"]; len(msgs) != 0 {
		t.Errorf("an equal limit in the second entry is noted: %q", msgs)
	}
	for p, msgs := range notes {
		applied := 0
		for _, m := range msgs {
			if strings.Contains(m, "mapped to") {
				applied++
			}
		}
		if applied > 0 && strings.HasPrefix(p, "litellm_settings.") {
			t.Errorf("%s reads as applied (%q) though router_settings set the same", p, msgs)
		}
	}
}
