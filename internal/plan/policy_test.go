package plan

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/failure"
)

// byokRoute is a route of a caller's own connection "byok:<id>" of provider, unpriced.
func byokRoute(id, provider string) *catalog.Route {
	d := &catalog.Deployment{Name: "byok:" + id, Provider: provider, Dialect: catalog.OpenAI, BYOK: true}
	return &catalog.Route{Deployment: d, Model: "m", UpstreamModel: "m", Weight: 1}
}

// pauses records the provider keys the health check was asked about.
type pauses map[string]bool

func (p pauses) Open(provider, deployment, model string) bool { return p[provider] }

// R-POLICY, R-ORDER-7: the caller's own connections come before every house route whatever the
// strategy says (they are unpriced, which price would put last); a policy's saved order puts the
// routes it names first, in its order, inside each funding group, ahead of provider.order; the
// rest keep the strategy's order.
func TestPolicyOrder(t *testing.T) {
	m := model(0,
		rt{name: "cheap", price: usd(1, 1)},
		rt{name: "mid", price: usd(2, 2)},
		rt{name: "dear", price: usd(9, 9)},
		rt{name: "other", provider: "acme", price: usd(3, 3)},
	)
	mine, yours := byokRoute("c1", "openai"), byokRoute("c2", "openai")
	cases := []struct {
		name string
		edit func(*Input)
		want string
	}{
		{"no policy", func(*Input) {}, "cheap mid other dear"},
		{"byok first", func(in *Input) { in.BYOK = []*catalog.Route{mine} }, "byok:c1 cheap mid other dear"},
		{"saved order", func(in *Input) { in.SavedOrder = []string{"dear", "mid"} }, "dear mid cheap other"},
		{"saved order by provider", func(in *Input) { in.SavedOrder = []string{"acme"} }, "other cheap mid dear"},
		{"saved order beats provider.order", func(in *Input) {
			in.SavedOrder = []string{"dear"}
			in.Prefs.Order = []string{"mid"}
		}, "dear mid cheap other"},
		{"saved order inside byok and house", func(in *Input) {
			in.BYOK = []*catalog.Route{mine, yours}
			in.SavedOrder = []string{"dear", "byok:c2"}
		}, "byok:c2 byok:c1 dear cheap mid other"},
		{"house off", func(in *Input) {
			in.BYOK = []*catalog.Route{mine}
			in.HouseOff = true
		}, "byok:c1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := input(m)
			tc.edit(&in)
			var p Plan
			Build(&p, in, nil)
			if got := cands(&p); got != tc.want {
				t.Fatalf("order = %q, want %q (dropped %s)", got, tc.want, dropped(&p))
			}
			for i, c := range p.Candidates {
				if c.BYOK != c.Route.Deployment.BYOK {
					t.Fatalf("candidate %d BYOK = %v", i, c.BYOK)
				}
				if i > 0 && c.Band < p.Candidates[i-1].Band {
					t.Fatalf("bands go down at %d: %+v", i, p.Candidates)
				}
			}
			if in.HouseOff {
				if got := dropped(&p); got != "cheap:not funded by the policy mid:not funded by the policy dear:not funded by the policy other:not funded by the policy" {
					t.Fatalf("dropped = %q", got)
				}
			}
		})
	}
}

// R-POLICY: under funding byok with no connection serving the model, the refusal names the
// policy, not "no deployment serves"; a connection whose circuit is open makes it a
// cooling-down refusal instead (some route will be back).
func TestPolicyRefusal(t *testing.T) {
	m := model(0, rt{name: "a", price: usd(1, 1)})
	in := input(m)
	in.HouseOff = true
	var p Plan
	Build(&p, in, nil)
	fe := failure.From(p.Refusal())
	if fe == nil || fe.Class != failure.InvalidRequest || fe.Param != "settings.policy" || !strings.Contains(fe.Msg, "byok") {
		t.Fatalf("refusal = %+v", fe)
	}
	in.BYOK = []*catalog.Route{byokRoute("c1", "openai")}
	Build(&p, in, pauses{"byok:c1": true})
	if fe := failure.From(p.Refusal()); fe == nil || fe.Msg != MsgCoolingDown {
		t.Fatalf("refusal with the connection cooling down = %+v", fe)
	}
}

// A connection's circuits and 429 pauses are its own (catalog.Deployment.PauseScope): a pause of
// provider "openai" (the house's deployments) leaves the caller's openai connection admitted,
// and the reverse.
func TestBYOKPauseScope(t *testing.T) {
	m := model(0, rt{name: "house", provider: "openai", price: usd(1, 1)})
	in := input(m)
	in.BYOK = []*catalog.Route{byokRoute("c1", "openai")}
	var p Plan
	Build(&p, in, pauses{"openai": true})
	if got := cands(&p); got != "byok:c1" {
		t.Fatalf("house paused: candidates %q", got)
	}
	Build(&p, in, pauses{"byok:c1": true})
	if got := cands(&p); got != "house" {
		t.Fatalf("connection paused: candidates %q", got)
	}
}

// R-KEY-2, R-ADMIT-2/3: the key's pinned providers constrain its connections too (a floor set
// above is never bypassed); the tier scope selects the house's supply tiers and does not apply
// to a connection, which has none.
func TestBYOKConstraints(t *testing.T) {
	m := model(0, rt{name: "house", provider: "openai", price: usd(1, 1)})
	m.Routes[0].Deployment.Tier = "official"
	in := input(m)
	in.BYOK = []*catalog.Route{byokRoute("c1", "openai"), byokRoute("c2", "acme")}
	in.Providers = []string{"openai"}
	in.TierScope = "official"
	var p Plan
	Build(&p, in, nil)
	if got, want := cands(&p), "byok:c1 house"; got != want {
		t.Fatalf("candidates %q, want %q (dropped %s)", got, want, dropped(&p))
	}
	if got := dropped(&p); got != "byok:c2:"+ReasonProviders {
		t.Fatalf("dropped %q", got)
	}
}

// POST /v1/route shows the policy, its funding and which candidates are BYOK.
func TestPolicyJSON(t *testing.T) {
	m := model(0, rt{name: "house", price: usd(1, 1)})
	in := input(m)
	in.BYOK = []*catalog.Route{byokRoute("c1", "openai")}
	in.Policy, in.Funding = "pol_1", "byok_with_house_fallback"
	var p Plan
	Build(&p, in, nil)
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Policy, Funding string
		Candidates      []struct {
			Deployment string
			BYOK       bool
		}
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if v.Policy != "pol_1" || v.Funding != "byok_with_house_fallback" || len(v.Candidates) != 2 ||
		!v.Candidates[0].BYOK || v.Candidates[0].Deployment != "byok:c1" || v.Candidates[1].BYOK {
		t.Fatalf("plan JSON %s", b)
	}
}
