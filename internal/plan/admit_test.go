package plan

import (
	"fmt"
	"strings"
	"testing"

	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/failure"
)

// rt is a test route: deployment name, provider, dialect, priority, weight, price (nil: unpriced)
// and context window (0: the model's).
type rt struct {
	name, provider string
	dialect        catalog.Dialect
	prio           int
	weight         float64
	price          *catalog.Price
	window         int
}

func model(window int, rs ...rt) *catalog.Model {
	m := &catalog.Model{ID: "m", ContextWindowTokens: window}
	for _, r := range rs {
		if r.dialect == "" {
			r.dialect = catalog.OpenAI
		}
		if r.provider == "" {
			r.provider = r.name
		}
		if r.weight == 0 {
			r.weight = 1
		}
		d := &catalog.Deployment{Name: r.name, Provider: r.provider, Dialect: r.dialect, Priority: r.prio}
		m.Routes = append(m.Routes, &catalog.Route{Deployment: d, Model: "m", UpstreamModel: "up-" + r.name,
			Price: r.price, Weight: r.weight, ContextWindowTokens: r.window})
	}
	return m
}

func usd(in, out float64) *catalog.Price {
	return &catalog.Price{InputPerMTokUSD: in, OutputPerMTokUSD: out}
}

func input(m *catalog.Model) Input {
	return Input{Resolution: catalog.Resolution{Requested: m.ID, Model: m}, Surface: catalog.OpenAI, SessionKey: "s"}
}

func dropped(p *Plan) string {
	var b strings.Builder
	for _, d := range p.Dropped {
		fmt.Fprintf(&b, "%s:%s ", d.Deployment, d.Reason)
	}
	return strings.TrimSpace(b.String())
}

func cands(p *Plan) string {
	var b strings.Builder
	for _, c := range p.Candidates {
		b.WriteString(c.Route.Deployment.Name + " ")
	}
	return strings.TrimSpace(b.String())
}

// R-ADMIT-2, -4, -5, -7, R-SUFFIX-1, R-ORDER-6: each filter drops the routes it must, with its
// reason; a route failing several filters carries the first one's reason, in R-ADMIT order.
func TestAdmission(t *testing.T) {
	// a and a2 are provider "acme"; b is provider "beta"; c speaks Anthropic (no embeddings)
	// and has a small window of its own.
	m := model(1000,
		rt{name: "a", provider: "acme", price: usd(1, 1)},
		rt{name: "a2", provider: "acme", price: usd(2, 2)},
		rt{name: "b", provider: "beta", price: usd(3, 3)},
		rt{name: "c", dialect: catalog.Anthropic, price: usd(4, 4), window: 100},
	)
	for _, tc := range []struct {
		name    string
		edit    func(*Input)
		open    openSet
		cands   string
		dropped string
	}{
		{name: "none", edit: func(*Input) {}, cands: "a a2 b c"},
		{name: "pin provider", edit: func(in *Input) { in.Prefs.Pin = "acme" }, cands: "a a2",
			dropped: "b:" + ReasonPin + " c:" + ReasonPin},
		{name: "pin deployment name", edit: func(in *Input) { in.Prefs.Pin = "a2" }, cands: "a2",
			dropped: "a:" + ReasonPin + " b:" + ReasonPin + " c:" + ReasonPin},
		{name: "only", edit: func(in *Input) { in.Prefs.Only = []string{"beta", "c"} }, cands: "b c",
			dropped: "a:" + ReasonOnly + " a2:" + ReasonOnly},
		{name: "ignore", edit: func(in *Input) { in.Prefs.Ignore = []string{"acme"} }, cands: "b c",
			dropped: "a:" + ReasonIgnore + " a2:" + ReasonIgnore},
		{name: "only and ignore", edit: func(in *Input) { in.Prefs.Only = []string{"acme", "b"}; in.Prefs.Ignore = []string{"a"} },
			cands: "a2 b", dropped: "a:" + ReasonIgnore + " c:" + ReasonOnly},
		{name: "context: route window", edit: func(in *Input) { in.InputTokens = 100 }, cands: "a a2 b",
			dropped: "c:" + ReasonContext},
		{name: "context: short of the window admits", edit: func(in *Input) { in.InputTokens = 99 }, cands: "a a2 b c"},
		{name: "context: model window", edit: func(in *Input) { in.InputTokens = 1000 }, cands: "",
			dropped: "a:" + ReasonContext + " a2:" + ReasonContext + " b:" + ReasonContext + " c:" + ReasonContext},
		{name: "protocol", edit: func(in *Input) { in.Protocol = catalog.ProtocolEmbeddings }, cands: "a a2 b",
			dropped: "c:" + ReasonProtocol},
		{name: "circuit", edit: func(*Input) {}, open: openSet{"a": true, "b": true}, cands: "a2 c",
			dropped: "a:" + ReasonCircuitOpen + " b:" + ReasonCircuitOpen},
		{name: "first reason wins", edit: func(in *Input) {
			in.Prefs.Pin = "beta"
			in.InputTokens = 500
			in.Protocol = catalog.ProtocolEmbeddings
		}, open: openSet{"a": true, "b": true}, cands: "",
			dropped: "a:" + ReasonPin + " a2:" + ReasonPin + " b:" + ReasonCircuitOpen + " c:" + ReasonPin},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := input(m)
			tc.edit(&in)
			var p Plan
			Build(&p, in, tc.open)
			if got := cands(&p); got != tc.cands {
				t.Errorf("candidates %q, want %q", got, tc.cands)
			}
			if got := dropped(&p); got != tc.dropped {
				t.Errorf("dropped %q, want %q", got, tc.dropped)
			}
		})
	}
}

// R-ADMIT: an empty pool is an error naming the filter that emptied it (never a widening):
// context fit -> 400 context_overflow; pin, only, ignore -> 400 invalid_request naming them;
// only circuits -> 503 cooling down (R-CIRCUIT-6).
func TestRefusalNamesConstraint(t *testing.T) {
	m := model(1000, rt{name: "a", provider: "acme"}, rt{name: "b", provider: "beta", window: 100})
	for _, tc := range []struct {
		name  string
		edit  func(*Input)
		open  openSet
		class failure.Class
		param string
		msg   string
	}{
		{name: "pin", edit: func(in *Input) { in.Prefs.Pin = "zeta" }, class: failure.InvalidRequest, param: "model", msg: `provider "zeta"`},
		{name: "only", edit: func(in *Input) { in.Prefs.Only = []string{"zeta"} }, class: failure.InvalidRequest, param: "provider.only"},
		{name: "ignore", edit: func(in *Input) { in.Prefs.Ignore = []string{"acme", "beta"} }, class: failure.InvalidRequest, param: "provider.ignore"},
		{name: "context", edit: func(in *Input) { in.InputTokens = 5000 }, class: failure.ContextOverflow, msg: "5000 input tokens"},
		{name: "pin then context", edit: func(in *Input) { in.Prefs.Pin = "beta"; in.InputTokens = 200 }, class: failure.ContextOverflow},
		{name: "context then circuit", edit: func(in *Input) { in.InputTokens = 200 }, open: openSet{"a": true}, class: failure.GatewayError, msg: MsgCoolingDown},
		{name: "circuits", edit: func(*Input) {}, open: openSet{"a": true, "b": true}, class: failure.GatewayError, msg: MsgCoolingDown},
		{name: "protocol", edit: func(in *Input) { in.Protocol = catalog.ProtocolCountTokens }, class: failure.InvalidRequest, msg: "serves this endpoint"},
		{name: "unknown strategy", edit: func(in *Input) { in.Prefs.Sort = "cheapest" }, class: failure.InvalidRequest, msg: `"cheapest"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := input(m)
			tc.edit(&in)
			var p Plan
			Build(&p, in, tc.open)
			if len(p.Candidates) != 0 {
				t.Fatalf("pool not empty: %s", cands(&p))
			}
			fe := failure.From(p.Refusal())
			if fe == nil || fe.Class != tc.class || (tc.param != "" && fe.Param != tc.param) || !strings.Contains(fe.Msg, tc.msg) {
				t.Fatalf("refusal %+v, want class %s param %q msg ~%q", fe, tc.class, tc.param, tc.msg)
			}
		})
	}
}

// routableFunc adapts a function to Routable.
type routableFunc func(*catalog.Route) bool

func (f routableFunc) Disabled(rt *catalog.Route) bool { return f(rt) }

// TestAdmitDisabled: issue 11 item 3: a deployment or a route an operator took out of routing
// (config disabled, or the live state given as Input.Routable) is dropped as "disabled" before
// any other filter and never becomes a candidate; a pool emptied only by it is a 503
// gateway_error without retry-after; with a circuit also open, the cooling-down 503 wins (some
// route will be back by itself).
func TestAdmitDisabled(t *testing.T) {
	m := model(1000, rt{name: "a", price: usd(1, 1)}, rt{name: "b", price: usd(2, 2)})
	m.Routes[0].Deployment.Disabled = true

	var p Plan
	in := input(m)
	in.Prefs.Pin = "b" // a fails the pin too; disabled is its reason
	Build(&p, in, nil)
	if got := dropped(&p); got != "a:disabled" || cands(&p) != "b" {
		t.Fatalf("dropped %q, candidates %q; want a:disabled and b", got, cands(&p))
	}

	m.Routes[1].Disabled = true
	Build(&p, input(m), nil)
	if got := dropped(&p); got != "a:disabled b:disabled" || len(p.Candidates) != 0 {
		t.Fatalf("dropped %q, candidates %q", got, cands(&p))
	}
	fe := failure.From(p.Refusal())
	if fe == nil || fe.Class != failure.GatewayError || fe.Class.Status() != 503 || fe.RetryAfter != 0 || !strings.Contains(fe.Msg, "disabled") {
		t.Fatalf("Refusal = %+v, want a 503 gateway_error naming the disabled state", fe)
	}

	// The live state replaces the catalog's flags: a enabled, b still disabled.
	in = input(m)
	in.Routable = routableFunc(func(r *catalog.Route) bool { return r.Deployment.Name == "b" })
	Build(&p, in, nil)
	if got := dropped(&p); got != "b:disabled" || cands(&p) != "a" {
		t.Fatalf("live state: dropped %q, candidates %q", got, cands(&p))
	}

	// One route disabled, the other cooling down: the cooling-down refusal.
	in.Routable = nil
	m.Routes[1].Disabled = false
	Build(&p, in, openSet{"b": true})
	if fe := failure.From(p.Refusal()); fe == nil || fe.Msg != MsgCoolingDown {
		t.Fatalf("disabled + open circuit: Refusal = %+v, want cooling down", fe)
	}
}
