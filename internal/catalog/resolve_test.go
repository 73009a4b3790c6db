package catalog

import (
	"errors"
	"strings"
	"testing"

	"github.com/switchyard-gw/switchyard/internal/config"
	"github.com/switchyard-gw/switchyard/internal/failure"
)

func TestResolve(t *testing.T) {
	c := mustNew(t, testConfig())
	tests := []struct {
		name, id string
		model    string // "" when unknown
		suffix   string
		alias    bool
		upstream []string // UpstreamModel for each of the model's routes
	}{
		{name: "exact", id: "gpt-4o-mini", model: "gpt-4o-mini", upstream: []string{"gpt-4o-mini"}},
		{name: "exact, upstream virtualized", id: "claude-sonnet-4-5", model: "claude-sonnet-4-5", upstream: []string{"claude-sonnet-4-5", "anthropic/claude-sonnet-4.5"}},
		{name: "alias is sent as its target (R-MODEL-4)", id: "rp-sonnet-4-5", model: "claude-sonnet-4-5", alias: true, upstream: []string{"claude-sonnet-4-5", "anthropic/claude-sonnet-4.5"}},
		{name: "snapshot YYYYMMDD keeps the caller's id (R-MODEL-3)", id: "claude-haiku-4-5-20251001", model: "claude-haiku-4-5", suffix: "-20251001", upstream: []string{"claude-haiku-4-5-20251001"}},
		{name: "snapshot YYYY-MM-DD", id: "gpt-4o-mini-2024-07-18", model: "gpt-4o-mini", suffix: "-2024-07-18", upstream: []string{"gpt-4o-mini-2024-07-18"}},
		{name: "snapshot of an alias", id: "rp-sonnet-4-5-20250929", model: "claude-sonnet-4-5", suffix: "-20250929", alias: true, upstream: []string{"claude-sonnet-4-5-20250929", "claude-sonnet-4-5-20250929"}},
		{name: "leap day", id: "gpt-4o-mini-2024-02-29", model: "gpt-4o-mini", suffix: "-2024-02-29", upstream: []string{"gpt-4o-mini-2024-02-29"}},
		{name: "exact id ending in a date wins", id: "gpt-4o-2024-08-06", model: "gpt-4o-2024-08-06", upstream: []string{"gpt-4o-2024-08-06"}},
		{name: "id with / and :", id: "meta/llama3.1:70b", model: "meta/llama3.1:70b", upstream: []string{"llama3.1:70b"}},
		{name: "id with :0", id: "anthropic.claude-3-haiku-20240307-v1:0", model: "anthropic.claude-3-haiku-20240307-v1:0", upstream: []string{"anthropic.claude-3-haiku-20240307-v1:0"}},
		{name: "snapshot of an id with / and : keeps the caller's id", id: "meta/llama3.1:70b-20250101", model: "meta/llama3.1:70b", suffix: "-20250101", upstream: []string{"meta/llama3.1:70b-20250101"}},
		{name: "unknown", id: "gpt-5-nano"},
		{name: "near miss", id: "gpt-4o-minii"},
		{name: "prefix", id: "gpt-4o"},
		{name: "case differs", id: "GPT-4o-mini"},
		{name: "leading space", id: " gpt-4o-mini"},
		{name: "invalid month and day", id: "gpt-4o-mini-20251399"},
		{name: "invalid month", id: "gpt-4o-mini-2025-13-01"},
		{name: "February 30", id: "gpt-4o-mini-20250230"},
		{name: "February 29, not a leap year", id: "gpt-4o-mini-2025-02-29"},
		{name: "day zero", id: "gpt-4o-mini-2025-01-00"},
		{name: "seven digits", id: "gpt-4o-mini-2025101"},
		{name: "mixed form", id: "gpt-4o-mini-2025-1001"},
		{name: "snapshot of a snapshot", id: "claude-haiku-4-5-20251001-20251001"},
		{name: "snapshot of an unknown id", id: "gpt-5-20250101"},
		{name: "bare date", id: "-20250101"},
		{name: "provider suffix is not split yet (R-SUFFIX)", id: "gpt-4o-mini:value"},
		{name: "strategy suffix is not split yet", id: "gpt-4o-mini:@price"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := c.Resolve(tt.id)
			if tt.model == "" {
				fe := failure.From(err)
				if fe == nil || fe.Class != failure.ModelUnavailable || fe.Param != "model" || fe.Class.Status() != 404 {
					t.Fatalf("Resolve(%q) = %+v, %v; want a 404 model_unavailable", tt.id, res, err)
				}
				if res.Model != nil {
					t.Errorf("Resolve(%q) returned a model with its error", tt.id)
				}
				return
			}
			if err != nil {
				t.Fatalf("Resolve(%q): %v", tt.id, err)
			}
			if res.Model == nil || res.Model.ID != tt.model || res.SnapshotSuffix != tt.suffix || res.Alias != tt.alias || res.Requested != tt.id {
				t.Fatalf("Resolve(%q) = {%q %v %q %v}, want model %q suffix %q alias %v",
					tt.id, res.Requested, res.Model, res.SnapshotSuffix, res.Alias, tt.model, tt.suffix, tt.alias)
			}
			if len(res.Model.Routes) != len(tt.upstream) {
				t.Fatalf("%d routes, want %d", len(res.Model.Routes), len(tt.upstream))
			}
			for i, rt := range res.Model.Routes {
				if got := res.UpstreamModel(rt); got != tt.upstream[i] {
					t.Errorf("UpstreamModel(route %d) = %q, want %q", i, got, tt.upstream[i])
				}
			}
		})
	}
}

// TestUpstreamSnapshots: issue 11 item 2, R-MODEL-3: a dated snapshot maps onto a route's
// upstream id only where the route says how (upstream_snapshots, then
// upstream_snapshot_pattern); otherwise the provider gets the caller's dated id, never
// "<upstream_model>-<date>".
func TestUpstreamSnapshots(t *testing.T) {
	c := mustNew(t, &config.Config{
		Models: []config.Model{{ID: "claude-sonnet-4-5", Aliases: []string{"sonnet"}}},
		Deployments: []config.Deployment{
			{Name: "anthropic", Dialect: "anthropic", BaseURL: "https://api.anthropic.com",
				Routes: []config.Route{{Model: "claude-sonnet-4-5"}}},
			{Name: "bedrock", Dialect: "anthropic", BaseURL: "https://bedrock.example",
				Routes: []config.Route{{Model: "claude-sonnet-4-5", UpstreamModel: "anthropic.claude-sonnet-4-5-v1:0"}}},
			{Name: "bedrock-map", Dialect: "anthropic", BaseURL: "https://bedrock.example",
				Routes: []config.Route{{Model: "claude-sonnet-4-5", UpstreamModel: "anthropic.claude-sonnet-4-5-v1:0",
					UpstreamSnapshots:       map[string]string{"2025-09-29": "anthropic.claude-sonnet-4-5-20250929-v1:0"},
					UpstreamSnapshotPattern: "anthropic.claude-sonnet-4-5-{date}-v2:0"}}},
			{Name: "vertex", Dialect: "anthropic", BaseURL: "https://vertex.example",
				Routes: []config.Route{{Model: "claude-sonnet-4-5", UpstreamModel: "claude-sonnet-4-5@latest",
					UpstreamSnapshotPattern: "claude-sonnet-4-5@{date}"}}},
		},
	})
	tests := []struct {
		id   string
		want []string // per route: anthropic, bedrock, bedrock-map, vertex
	}{
		{"claude-sonnet-4-5", []string{"claude-sonnet-4-5", "anthropic.claude-sonnet-4-5-v1:0", "anthropic.claude-sonnet-4-5-v1:0", "claude-sonnet-4-5@latest"}},
		{"claude-sonnet-4-5-20250929", []string{"claude-sonnet-4-5-20250929", "claude-sonnet-4-5-20250929", "anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5@20250929"}},
		{"claude-sonnet-4-5-2025-09-29", []string{"claude-sonnet-4-5-2025-09-29", "claude-sonnet-4-5-2025-09-29", "anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5@2025-09-29"}},
		{"claude-sonnet-4-5-20260101", []string{"claude-sonnet-4-5-20260101", "claude-sonnet-4-5-20260101", "anthropic.claude-sonnet-4-5-20260101-v2:0", "claude-sonnet-4-5@20260101"}},
		{"sonnet-20250929", []string{"claude-sonnet-4-5-20250929", "claude-sonnet-4-5-20250929", "anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5@20250929"}},
	}
	for _, tt := range tests {
		res, err := c.Resolve(tt.id)
		if err != nil {
			t.Fatalf("Resolve(%q): %v", tt.id, err)
		}
		for i, rt := range res.Model.Routes {
			if got := res.UpstreamModel(rt); got != tt.want[i] {
				t.Errorf("%s on %s: upstream %q, want %q", tt.id, rt.Deployment.Name, got, tt.want[i])
			}
		}
	}
	res, _ := c.Resolve("claude-sonnet-4-5-2025-09-29")
	rt := res.Model.Routes[2]
	if n := testing.AllocsPerRun(100, func() { _ = res.UpstreamModel(rt) }); n != 0 {
		t.Errorf("a mapped snapshot allocates %.0f times, want 0", n)
	}
}

func TestResolveUnknownMessage(t *testing.T) {
	c := mustNew(t, testConfig())
	tests := []struct{ id, msg string }{
		{"gpt-5-nano", `model "gpt-5-nano" is not served here; GET /v1/models lists the available models`},
		{"bad\nid\x00", `model "bad\nid\x00" is not served here; GET /v1/models lists the available models`},
		{strings.Repeat("é", 200), `model "` + strings.Repeat("é", 128) + `..." is not served here; GET /v1/models lists the available models`},
	}
	for _, tt := range tests {
		_, err := c.Resolve(tt.id)
		var fe *failure.Error
		if !errors.As(err, &fe) || fe.Msg != tt.msg {
			t.Errorf("Resolve(%q) error = %v, want message %s", tt.id, err, tt.msg)
		}
	}
	_, err := c.Resolve("")
	if fe := failure.From(err); fe == nil || fe.Class != failure.InvalidRequest || fe.Param != "model" {
		t.Errorf(`Resolve("") = %v, want invalid_request on param model`, err)
	}
}

func TestResolveNoAllocs(t *testing.T) {
	c := mustNew(t, testConfig())
	for _, id := range []string{"gpt-4o-mini", "rp-sonnet-4-5", "claude-haiku-4-5-20251001", "gpt-4o-mini-2024-07-18"} {
		if n := testing.AllocsPerRun(100, func() { _, _ = c.Resolve(id) }); n != 0 {
			t.Errorf("Resolve(%q) allocates %.0f times, want 0", id, n)
		}
	}
}

func BenchmarkResolve(b *testing.B) {
	c := mustNew(b, testConfig())
	for _, bm := range []struct{ name, id string }{
		{"exact", "gpt-4o-mini"},
		{"alias", "rp-sonnet-4-5"},
		{"snapshot", "claude-haiku-4-5-20251001"},
		{"unknown", "gpt-5-nano"},
	} {
		b.Run(bm.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = c.Resolve(bm.id)
			}
		})
	}
}
