package layers

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/switchyard-gw/switchyard/internal/failure"
)

// TestApply: PATCH semantics of contract.md — present replaces, absent unchanged, null clears.
func TestApply(t *testing.T) {
	base := Settings{
		Strategy:           new("latency"),
		PreferredProviders: new([]string{"a"}),
		Models:             []string{"m1"},
		TierScope:          ScopeOfficial,
		Limits:             Limits{RPM: 10, TPM: 1000, BudgetMicroUSD: 5e6, BudgetPeriod: "day"},
	}
	for _, tc := range []struct {
		name  string
		patch string
		want  Settings
	}{
		{"empty patch changes nothing", `{}`, base},
		{"present replaces", `{"strategy":"price","models":["m2","m3"]}`, func() Settings {
			s := base
			s.Strategy, s.Models = new("price"), []string{"m2", "m3"}
			return s
		}()},
		{"null clears", `{"strategy":null,"models":null,"tier_scope":null,"preferred_providers":null}`, func() Settings {
			s := base
			s.Strategy, s.Models, s.TierScope, s.PreferredProviders = nil, nil, "", nil
			return s
		}()},
		{"empty constraint list is no restriction", `{"models":[]}`, func() Settings {
			s := base
			s.Models = nil
			return s
		}()},
		{"empty preference list is set", `{"preferred_providers":[]}`, func() Settings {
			s := base
			s.PreferredProviders = new([]string{})
			return s
		}()},
		{"duplicates dropped", `{"providers":["p","q","p"]}`, func() Settings {
			s := base
			s.Providers = []string{"p", "q"}
			return s
		}()},
		{"limits merge by field", `{"limits":{"rpm":20,"tpm":null,"budget_usd":0.000001}}`, func() Settings {
			s := base
			s.Limits = Limits{RPM: 20, BudgetMicroUSD: 1, BudgetPeriod: "day"}
			return s
		}()},
		{"limits null clears all", `{"limits":null}`, func() Settings {
			s := base
			s.Limits = Limits{}
			return s
		}()},
		{"budget exact decimal", `{"limits":{"budget_usd":1e3}}`, func() Settings {
			s := base
			s.Limits.BudgetMicroUSD = 1000e6
			return s
		}()},
		{"booleans and policy", `{"allow_request_override":false,"policy":"pol_1","billing":"prepaid"}`, func() Settings {
			s := base
			s.AllowRequestOverride, s.Policy, s.Billing = new(false), new("pol_1"), new("prepaid")
			return s
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Apply(base, json.RawMessage(tc.patch))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
	if *base.Strategy != "latency" || base.Models[0] != "m1" {
		t.Error("Apply modified current")
	}
}

// TestApplyErrors: unknown fields and wrong types are invalid_request naming the field.
func TestApplyErrors(t *testing.T) {
	for _, tc := range []struct{ patch, param string }{
		{`[]`, "settings"},
		{`null`, "settings"},
		{`{"colour":"red"}`, "settings.colour"},
		{`{"strategy":5}`, "settings.strategy"},
		{`{"strategy":"cheapest"}`, "settings.strategy"},
		{`{"models":"m1"}`, "settings.models"},
		{`{"models":["m1",null]}`, "settings.models"},
		{`{"models":[""]}`, "settings.models"},
		{`{"providers":[1]}`, "settings.providers"},
		{`{"preferred_providers":{}}`, "settings.preferred_providers"},
		{`{"allow_request_override":"yes"}`, "settings.allow_request_override"},
		{`{"tier_scope":"premium"}`, "settings.tier_scope"},
		{`{"billing":"postpaid"}`, "settings.billing"},
		{`{"limits":5}`, "settings.limits"},
		{`{"limits":{"rps":5}}`, "settings.limits.rps"},
		{`{"limits":{"rpm":1.5}}`, "settings.limits.rpm"},
		{`{"limits":{"rpm":-1}}`, "settings.limits.rpm"},
		{`{"limits":{"budget_usd":"5"}}`, "settings.limits.budget_usd"},
		{`{"limits":{"budget_usd":0.0000001}}`, "settings.limits.budget_usd"},
		{`{"limits":{"budget_usd":-1}}`, "settings.limits.budget_usd"},
		{`{"limits":{"budget_usd":1e10}}`, "settings.limits.budget_usd"},
		{`{"limits":{"budget_period":"week"}}`, "settings.limits.budget_period"},
	} {
		t.Run(tc.patch, func(t *testing.T) {
			cur := Settings{Strategy: new("price")}
			got, err := Apply(cur, json.RawMessage(tc.patch))
			fe := failure.From(err)
			if fe == nil || fe.Class != failure.InvalidRequest || fe.Param != tc.param {
				t.Fatalf("err = %v (param %q), want invalid_request param %q", err, paramOf(fe), tc.param)
			}
			if !reflect.DeepEqual(got, cur) {
				t.Errorf("a failed Apply returned %+v, want current unchanged", got)
			}
		})
	}
}

func paramOf(e *failure.Error) string {
	if e == nil {
		return ""
	}
	return e.Param
}

// TestSettingsJSONRoundTrip: what is stored reads back the same, unset stays unset.
func TestSettingsJSONRoundTrip(t *testing.T) {
	for _, in := range []string{
		`{}`,
		`{"strategy":"latency","preferred_providers":[],"allow_request_override":true,"policy":"","billing":"prepaid"}`,
		`{"models":["a","b"],"providers":["p"],"tier_scope":"value","limits":{"rpm":1,"tpm":2,"concurrency":3,"budget_usd":0.25,"budget_period":"total"}}`,
		`{"limits":{"budget_usd":1000000000}}`,
	} {
		var s Settings
		if err := json.Unmarshal([]byte(in), &s); err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		out, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if string(out) != in {
			t.Errorf("round trip\n got %s\nwant %s", out, in)
		}
	}
}

func TestFormatMicroUSD(t *testing.T) {
	for v, want := range map[int64]string{0: "0", 1: "0.000001", 12_500_000: "12.5", 1_000_000: "1", 1_234_567: "1.234567"} {
		if got := string(formatMicroUSD(v)); got != want {
			t.Errorf("formatMicroUSD(%d) = %s, want %s", v, got, want)
		}
	}
}
