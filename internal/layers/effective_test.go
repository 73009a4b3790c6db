package layers

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/switchyard-gw/switchyard/internal/failure"
)

func settings(t *testing.T, js string) Settings {
	t.Helper()
	s, err := Apply(Settings{}, json.RawMessage(js))
	if err != nil {
		t.Fatalf("Apply(%s): %v", js, err)
	}
	return s
}

// TestTierScopeTable: R-KEY-3's table; scopes are not a total order.
func TestTierScopeTable(t *testing.T) {
	for _, tc := range []struct {
		a, b TierScope
		want TierScope
		ok   bool
	}{
		{ScopeAll, ScopeAll, ScopeAll, true},
		{ScopeAll, ScopeOfficial, ScopeOfficial, true},
		{ScopeOfficial, ScopeAll, ScopeOfficial, true},
		{ScopeAll, ScopeValue, ScopeValue, true},
		{ScopeValue, ScopeAll, ScopeValue, true},
		{ScopeOfficial, ScopeOfficial, ScopeOfficial, true},
		{ScopeValue, ScopeValue, ScopeValue, true},
		{ScopeOfficial, ScopeValue, "", false},
		{ScopeValue, ScopeOfficial, "", false},
		{"", ScopeValue, ScopeValue, true},
		{"", "", ScopeAll, true},
		{"bogus", ScopeAll, "", false},
	} {
		got, ok := tc.a.Intersect(tc.b)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%q ∩ %q = %q, %v; want %q, %v", tc.a, tc.b, got, ok, tc.want, tc.ok)
		}
	}
}

// TestTierScopeAdmits: R-ADMIT-3, "all" admits tiers beyond official and value.
func TestTierScopeAdmits(t *testing.T) {
	for _, tc := range []struct {
		scope TierScope
		tier  string
		want  bool
	}{
		{ScopeAll, "official", true}, {ScopeAll, "value", true}, {ScopeAll, "spot", true}, {"", "spot", true},
		{ScopeOfficial, "official", true}, {ScopeOfficial, "value", false}, {ScopeOfficial, "spot", false},
		{ScopeValue, "value", true}, {ScopeValue, "official", false},
	} {
		if got := tc.scope.Admits(tc.tier); got != tc.want {
			t.Errorf("%q.Admits(%q) = %v, want %v", tc.scope, tc.tier, got, tc.want)
		}
	}
}

// TestEffective: R-KEY-2 (preference replaces, constraint intersects) and R-KEY-4 (fixed_by).
func TestEffective(t *testing.T) {
	def := Layer{Name: Default, Settings: settings(t, `{"strategy":"price"}`)}
	for _, tc := range []struct {
		name   string
		layers []Layer
		check  func(t *testing.T, e Merged)
	}{
		{"defaults only", []Layer{def}, func(t *testing.T, e Merged) {
			if e.Strategy != (Pref[string]{"price", Default}) || e.Billing != (Pref[string]{"unmetered", Default}) {
				t.Errorf("strategy %+v billing %+v", e.Strategy, e.Billing)
			}
			if e.AllowRequestOverride != (Pref[bool]{false, Default}) {
				t.Errorf("allow_request_override %+v", e.AllowRequestOverride)
			}
			if !e.Models.FixedBy.Empty() || e.Models.Value != nil || e.TierScope.Value != ScopeAll || !e.TierScope.FixedBy.Empty() {
				t.Errorf("constraints not unconstrained: %+v %+v", e.Models, e.TierScope)
			}
		}},
		{"most specific setter wins", []Layer{
			def,
			{Name: Account, Settings: settings(t, `{"strategy":"latency","preferred_providers":["a","b"]}`)},
			{Name: Workspace, Settings: settings(t, `{"strategy":"throughput"}`)},
			{Name: Key, Settings: settings(t, `{"preferred_providers":[]}`)},
		}, func(t *testing.T, e Merged) {
			if e.Strategy != (Pref[string]{"throughput", Workspace}) {
				t.Errorf("strategy %+v", e.Strategy)
			}
			// An empty list set on the key replaces the account's preference whole.
			if len(e.PreferredProviders.Value) != 0 || e.PreferredProviders.FixedBy != Key {
				t.Errorf("preferred_providers %+v", e.PreferredProviders)
			}
		}},
		{"constraints intersect", []Layer{
			{Name: Account, Settings: settings(t, `{"models":["m1","m2","m3"],"tier_scope":"all"}`)},
			{Name: Workspace, Settings: settings(t, `{"models":["m2","m3","m9"],"providers":["p"]}`)},
			{Name: Key, Settings: settings(t, `{"models":[],"tier_scope":"value"}`)},
		}, func(t *testing.T, e Merged) {
			if !slices.Equal(e.Models.Value, []string{"m2", "m3"}) || !slices.Equal(e.Models.FixedBy.Names(), []Name{Account, Workspace}) {
				t.Errorf("models %+v", e.Models)
			}
			if !slices.Equal(e.Providers.Value, []string{"p"}) || e.Providers.FixedBy != LayerSet(0).With(Workspace) {
				t.Errorf("providers %+v", e.Providers)
			}
			// "all" restricts nothing, so only the key constrained the tier.
			if e.TierScope.Value != ScopeValue || e.TierScope.FixedBy != LayerSet(0).With(Key) {
				t.Errorf("tier %+v", e.TierScope)
			}
		}},
		{"limits carried per layer", []Layer{
			{Name: Account, Settings: settings(t, `{"limits":{"rpm":600,"budget_usd":1000}}`)},
			{Name: Key, Settings: settings(t, `{"limits":{"rpm":60}}`)},
		}, func(t *testing.T, e Merged) {
			if e.Limits[Account] != (Limits{RPM: 600, BudgetMicroUSD: 1000e6}) || e.Limits[Key] != (Limits{RPM: 60}) {
				t.Errorf("limits %+v", e.Limits)
			}
		}},
		{"request overrides when allowed", []Layer{
			{Name: Key, Settings: settings(t, `{"allow_request_override":true,"strategy":"price"}`)},
			{Name: Request, Settings: settings(t, `{"strategy":"latency","providers":["p"]}`)},
		}, func(t *testing.T, e Merged) {
			if e.Strategy != (Pref[string]{"latency", Request}) || e.Providers.FixedBy != LayerSet(0).With(Request) {
				t.Errorf("strategy %+v providers %+v", e.Strategy, e.Providers)
			}
		}},
		{"request may always narrow", []Layer{
			{Name: Key, Settings: settings(t, `{"providers":["p","q"]}`)},
			{Name: Request, Settings: settings(t, `{"providers":["q"],"tier_scope":"official"}`)},
		}, func(t *testing.T, e Merged) {
			if !slices.Equal(e.Providers.Value, []string{"q"}) || e.TierScope.Value != ScopeOfficial {
				t.Errorf("providers %+v tier %+v", e.Providers, e.TierScope)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := Effective(tc.layers...)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, e)
		})
	}
}

func TestEffectiveErrors(t *testing.T) {
	for _, tc := range []struct {
		name     string
		layers   []Layer
		param    string   // invalid_request with this Param
		conflict []string // or a conflict on these fields
	}{
		{"out of order", []Layer{{Name: Key}, {Name: Account}}, "", nil},
		{"repeated", []Layer{{Name: Key}, {Name: Key}}, "", nil},
		{"request overrides without permission", []Layer{
			{Name: Key}, {Name: Request, Settings: Settings{Strategy: new("latency")}},
		}, "strategy", nil},
		{"request override revoked lower down", []Layer{
			{Name: Account, Settings: Settings{AllowRequestOverride: new(true)}},
			{Name: Key, Settings: Settings{AllowRequestOverride: new(false)}},
			{Name: Request, Settings: Settings{PreferredProviders: new([]string{"p"})}},
		}, "preferred_providers", nil},
		{"request sets allow_request_override", []Layer{
			{Name: Key, Settings: Settings{AllowRequestOverride: new(true)}},
			{Name: Request, Settings: Settings{AllowRequestOverride: new(true)}},
		}, "settings.allow_request_override", nil},
		{"billing on a key", []Layer{{Name: Key, Settings: Settings{Billing: new("prepaid")}}}, "settings.billing", nil},
		{"limits on a request", []Layer{{Name: Request, Settings: Settings{Limits: Limits{RPM: 1}}}}, "settings.limits", nil},
		{"disjoint models and tiers", []Layer{
			{Name: Account, Settings: Settings{Models: []string{"a"}, TierScope: ScopeOfficial}},
			{Name: Key, Settings: Settings{Models: []string{"b"}, TierScope: ScopeValue}},
		}, "", []string{"models", "tier_scope"}},
		{"request pins outside the key's providers", []Layer{
			{Name: Key, Settings: Settings{Providers: []string{"p"}}},
			{Name: Request, Settings: Settings{Providers: []string{"q"}}},
		}, "", []string{"providers"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Effective(tc.layers...)
			if err == nil {
				t.Fatal("no error")
			}
			var ce *ConflictError
			if tc.conflict != nil {
				if !errors.As(err, &ce) || !slices.Equal(ce.Fields(), tc.conflict) {
					t.Fatalf("err = %v, want conflict on %v", err, tc.conflict)
				}
				return
			}
			fe := failure.From(err)
			if fe == nil || fe.Class != failure.InvalidRequest || fe.Param != tc.param {
				t.Fatalf("err = %#v, want invalid_request param %q", err, tc.param)
			}
		})
	}
}

// TestEffectiveJSON: the body of GET /admin/v1/keys/{id}/effective (contract.md).
func TestEffectiveJSON(t *testing.T) {
	e, err := Effective(
		Layer{Name: Default, Settings: settings(t, `{"strategy":"price"}`)},
		Layer{Name: Account, Settings: settings(t, `{"models":["m1","m2"],"tier_scope":"official","limits":{"budget_usd":12.5,"budget_period":"day"}}`)},
		Layer{Name: Key, Settings: settings(t, `{"strategy":"latency","models":["m2"],"limits":{"rpm":60}}`)},
	)
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"settings":{` +
		`"strategy":{"value":"latency","fixed_by":"key"},` +
		`"preferred_providers":{"value":[],"fixed_by":"default"},` +
		`"allow_request_override":{"value":false,"fixed_by":"default"},` +
		`"policy":{"value":"","fixed_by":"default"},` +
		`"billing":{"value":"unmetered","fixed_by":"default"},` +
		`"models":{"value":["m2"],"fixed_by":["account","key"]},` +
		`"providers":{"value":[],"fixed_by":[]},` +
		`"tier_scope":{"value":"official","fixed_by":["account"]},` +
		`"limits":{"value":{"account":{"budget_usd":12.5,"budget_period":"day"},"key":{"rpm":60}},"fixed_by":["account","key"]}}}`
	if string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if !json.Valid(got) {
		t.Error("invalid JSON")
	}
}

// BenchmarkEffective: the request-path merge of stored layers and a request layer.
func BenchmarkEffective(b *testing.B) {
	ls := []Layer{
		{Name: Default, Settings: Settings{Strategy: new("price")}},
		{Name: Account, Settings: Settings{Models: []string{"a", "b", "c"}, TierScope: ScopeAll, Limits: Limits{RPM: 600}}},
		{Name: Workspace, Settings: Settings{Strategy: new("latency")}},
		{Name: Key, Settings: Settings{Providers: []string{"p", "q"}, AllowRequestOverride: new(true), Limits: Limits{RPM: 60}}},
		{Name: Request, Settings: Settings{TierScope: ScopeOfficial}},
	}
	b.Run("one setter per constraint", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Effective(ls...); err != nil {
				b.Fatal(err)
			}
		}
	})
	ls2 := slices.Clone(ls)
	ls2[4].Settings.Providers = []string{"q"}
	b.Run("request narrows providers", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Effective(ls2...); err != nil {
				b.Fatal(err)
			}
		}
	})
}
