package plan

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/failure"
)

// endpointModel: model m served by public p1 (dearer) and p2 (cheaper) and by reserved r1
// (cheapest), r2 (dearest) and r3 (not listed by the endpoint). The endpoint lists r2 then r1.
func endpointModel(fallback bool) (*catalog.Model, *catalog.Endpoint) {
	m := model(0,
		rt{name: "p1", price: usd(5, 5)},
		rt{name: "r1", price: usd(1, 1)},
		rt{name: "p2", price: usd(3, 3)},
		rt{name: "r2", price: usd(9, 9)},
		rt{name: "r3", price: usd(1, 1)},
	)
	byName := map[string]*catalog.Route{}
	for _, r := range m.Routes {
		byName[r.Deployment.Name] = r
		if strings.HasPrefix(r.Deployment.Name, "r") {
			r.Deployment.Reserved = true
		}
	}
	e := &catalog.Endpoint{ID: "acme/m", Model: m, Reserved: []*catalog.Route{byName["r2"], byName["r1"]}, PublicFallback: fallback}
	return m, e
}

func endpointInput(m *catalog.Model, e *catalog.Endpoint) Input {
	in := input(m)
	if e != nil {
		in.Resolution = catalog.Resolution{Requested: e.ID, Model: m, Endpoint: e}
	}
	return in
}

// TestEndpointOrder: R-KEY-6: an endpoint's reserved routes come first, in the endpoint's order
// (not by price), one band each, then the public routes by the strategy; a reserved route the
// endpoint does not list is dropped as reserved, and public requests never see reserved routes.
func TestEndpointOrder(t *testing.T) {
	for _, tc := range []struct {
		name         string
		endpoint     bool
		fallback     bool
		prefs        Preferences
		open         openSet
		cands, drops string
		bands        []int
		reserved     int // how many leading candidates are marked Reserved
		planEndpoint string
	}{
		{name: "public request", cands: "p2 p1", drops: "r1:reserved r2:reserved r3:reserved", bands: []int{0, 1}},
		{name: "endpoint with fallback", endpoint: true, fallback: true, cands: "r2 r1 p2 p1", drops: "r3:reserved",
			bands: []int{0, 1, 2, 3}, reserved: 2, planEndpoint: "acme/m"},
		{name: "endpoint without fallback", endpoint: true, cands: "r2 r1",
			drops: "p1:" + ReasonNoPublicFallback + " p2:" + ReasonNoPublicFallback + " r3:reserved", bands: []int{0, 1}, reserved: 2, planEndpoint: "acme/m"},
		{name: "same admission filters", endpoint: true, fallback: true, prefs: Preferences{Ignore: []string{"r2", "p1"}},
			cands: "r1 p2", drops: "r2:" + ReasonIgnore + " p1:" + ReasonIgnore + " r3:reserved", bands: []int{0, 1}, reserved: 1, planEndpoint: "acme/m"},
		{name: "provider.order does not put public first", endpoint: true, fallback: true, prefs: Preferences{Order: []string{"p1"}},
			cands: "r2 r1 p1 p2", drops: "r3:reserved", bands: []int{0, 1, 2, 3}, reserved: 2, planEndpoint: "acme/m"},
		{name: "circuit on a reserved route", endpoint: true, fallback: true, open: openSet{"r2": true},
			cands: "r1 p2 p1", drops: "r2:" + ReasonCircuitOpen + " r3:reserved", bands: []int{0, 1, 2}, reserved: 1, planEndpoint: "acme/m"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, e := endpointModel(tc.fallback)
			if !tc.endpoint {
				e = nil
			}
			in := endpointInput(m, e)
			in.Prefs = tc.prefs
			var p Plan
			Build(&p, in, tc.open)
			if got := cands(&p); got != tc.cands {
				t.Errorf("candidates %q, want %q", got, tc.cands)
			}
			if got := dropped(&p); got != tc.drops {
				t.Errorf("dropped %q, want %q", got, tc.drops)
			}
			for i, c := range p.Candidates {
				if i < len(tc.bands) && c.Band != tc.bands[i] {
					t.Errorf("candidate %d (%s) band %d, want %d", i, c.Route.Deployment.Name, c.Band, tc.bands[i])
				}
				if c.Reserved != (i < tc.reserved) {
					t.Errorf("candidate %d (%s) Reserved = %v", i, c.Route.Deployment.Name, c.Reserved)
				}
			}
			if p.Endpoint != tc.planEndpoint {
				t.Errorf("Endpoint = %q, want %q", p.Endpoint, tc.planEndpoint)
			}
		})
	}
}

// TestEndpointRefusal: a pool emptied because the request may use no route is the
// "no deployment serves" 400, never a widening to reserved or public routes; a pool emptied by
// a filter still names that filter.
func TestEndpointRefusal(t *testing.T) {
	// A model served only by reserved deployments: public requests have nothing.
	m, _ := endpointModel(false)
	var routes []*catalog.Route
	for _, r := range m.Routes {
		if r.Deployment.Reserved {
			routes = append(routes, r)
		}
	}
	m.Routes = routes
	var p Plan
	Build(&p, input(m), nil)
	fe := failure.From(p.Refusal())
	if len(p.Candidates) != 0 || fe == nil || fe.Class != failure.InvalidRequest || !strings.Contains(fe.Msg, "no deployment serves") {
		t.Errorf("public request to a reserved-only model: %s, refusal %+v", cands(&p), fe)
	}
	// An endpoint without fallback whose reserved routes are cooling down: 503, not a widening.
	m, e := endpointModel(false)
	Build(&p, endpointInput(m, e), openSet{"r1": true, "r2": true})
	fe = failure.From(p.Refusal())
	if len(p.Candidates) != 0 || fe == nil || fe.Class != failure.GatewayError {
		t.Errorf("endpoint with reserved routes open: %s, refusal %+v", cands(&p), fe)
	}
}

// TestEndpointJSON: the plan names the endpoint and marks reserved candidates.
func TestEndpointJSON(t *testing.T) {
	m, e := endpointModel(true)
	var p Plan
	Build(&p, endpointInput(m, e), nil)
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Endpoint   string `json:"endpoint"`
		Candidates []struct {
			Deployment string `json:"deployment"`
			Reserved   bool   `json:"reserved"`
		} `json:"candidates"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if v.Endpoint != "acme/m" || len(v.Candidates) != 4 || !v.Candidates[0].Reserved || !v.Candidates[1].Reserved || v.Candidates[2].Reserved {
		t.Errorf("plan JSON %s", b)
	}
}

// BenchmarkBuildEndpoint: building an endpoint's plan stays allocation-free once the Plan has
// grown.
func BenchmarkBuildEndpoint(b *testing.B) {
	m, e := endpointModel(true)
	in := endpointInput(m, e)
	var p Plan
	Build(&p, in, nil)
	b.ReportAllocs()
	for b.Loop() {
		Build(&p, in, nil)
	}
}
