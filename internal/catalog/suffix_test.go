package catalog

import (
	"errors"
	"testing"

	"github.com/switchyard-gw/switchyard/internal/failure"
)

// TestResolveSuffixed covers R-SUFFIX-1..3 and R-MODEL-5: the whole id first, then one
// trailing suffix; a pin must name a provider serving the model; two suffixes are a 400.
func TestResolveSuffixed(t *testing.T) {
	c := mustNew(t, testConfig())
	tests := []struct {
		name, id      string
		model         string // "" when an error is expected
		pin, strategy string
		class         failure.Class
		snapshot      string
	}{
		{name: "no suffix", id: "gpt-4o-mini", model: "gpt-4o-mini"},
		{name: "colon id resolves whole (R-MODEL-5)", id: "meta/llama3.1:70b", model: "meta/llama3.1:70b"},
		{name: "colon id :0 resolves whole", id: "anthropic.claude-3-haiku-20240307-v1:0", model: "anthropic.claude-3-haiku-20240307-v1:0"},
		{name: "pin by provider (R-SUFFIX-1)", id: "claude-sonnet-4-5:valuecloud", model: "claude-sonnet-4-5", pin: "valuecloud"},
		{name: "pin by deployment name", id: "claude-sonnet-4-5:value", model: "claude-sonnet-4-5", pin: "value"},
		{name: "pin on a colon id", id: "meta/llama3.1:70b:valuecloud", model: "meta/llama3.1:70b", pin: "valuecloud"},
		{name: "pin on an alias", id: "rp-sonnet-4-5:anthropic", model: "claude-sonnet-4-5", pin: "anthropic"},
		{name: "pin on a snapshot", id: "claude-haiku-4-5-20251001:anthropic", model: "claude-haiku-4-5", pin: "anthropic", snapshot: "-20251001"},
		{name: "strategy (R-SUFFIX-2)", id: "gpt-4o-mini:@latency", model: "gpt-4o-mini", strategy: "latency"},
		{name: "pin to a provider not serving the model", id: "gpt-4o-mini:anthropic", class: failure.InvalidRequest},
		{name: "pin to an unknown provider", id: "gpt-4o-mini:nobody", class: failure.InvalidRequest},
		{name: "unknown strategy", id: "gpt-4o-mini:@cheapest", class: failure.InvalidRequest},
		{name: "empty strategy", id: "gpt-4o-mini:@", class: failure.InvalidRequest},
		{name: "both suffixes (R-SUFFIX-3)", id: "claude-sonnet-4-5:value:@price", class: failure.InvalidRequest},
		{name: "both suffixes, reverse order", id: "claude-sonnet-4-5:@price:value", class: failure.InvalidRequest},
		{name: "unknown model with a suffix", id: "gpt-5:openai", class: failure.ModelUnavailable},
		{name: "trailing colon", id: "gpt-4o-mini:", class: failure.ModelUnavailable},
		{name: "unknown model, two suffixes", id: "nope:a:@price", class: failure.ModelUnavailable},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, sx, err := c.ResolveSuffixed(tc.id)
			if tc.model == "" {
				var fe *failure.Error
				if !errors.As(err, &fe) || fe.Class != tc.class || fe.Param != "model" {
					t.Fatalf("ResolveSuffixed(%q) error = %v, want class %s on param model", tc.id, err, tc.class)
				}
				return
			}
			if err != nil {
				t.Fatalf("ResolveSuffixed(%q): %v", tc.id, err)
			}
			if res.Model.ID != tc.model || sx.Pin != tc.pin || sx.Strategy != tc.strategy || res.SnapshotSuffix != tc.snapshot {
				t.Errorf("ResolveSuffixed(%q) = model %q pin %q strategy %q snapshot %q, want %q %q %q %q",
					tc.id, res.Model.ID, sx.Pin, sx.Strategy, res.SnapshotSuffix, tc.model, tc.pin, tc.strategy, tc.snapshot)
			}
			if res.Requested != tc.id {
				t.Errorf("Requested = %q, want the caller's string %q (echoed, suffix included)", res.Requested, tc.id)
			}
		})
	}
}
