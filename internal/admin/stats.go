package admin

import (
	"net/http"
	"time"

	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/circuit"
	"github.com/switchyard-gw/switchyard/internal/stats"
)

// RouteStats are the gateway's 24-hour windows of its routes (*stats.Collector): the figures
// routing reads and GET /v1/models/{id} shows, per (deployment, model), or per deployment
// with model "".
type RouteStats interface {
	Summary(deployment, model string) (stats.Summary, bool)
}

// Circuits are the gateway's circuits and provider pauses (*circuit.Set).
type Circuits interface {
	States() []circuit.StateInfo
	Paused(scope string) (until time.Time, ok bool)
}

// quantilesJSON is a distribution in milliseconds; null without samples.
type quantilesJSON struct {
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P99  float64 `json:"p99"`
}

type priceJSON struct {
	Input  float64 `json:"input"`
	Output float64 `json:"output"`
}

// windowJSON is what one route (or one deployment across its models) measured.
type windowJSON struct {
	Requests     int64          `json:"requests"`
	Uptime       *float64       `json:"uptime"`
	SuccessRatio *float64       `json:"success_ratio"`
	TTFT         *quantilesJSON `json:"ttft_ms"`
	Latency      *quantilesJSON `json:"latency_ms"`
	Throughput   *float64       `json:"throughput_tokens_per_s"`
}

// routeStatsJSON is one (deployment, model) route of the statistics.
type routeStatsJSON struct {
	Deployment    string `json:"deployment"`
	Provider      string `json:"provider"`
	Dialect       string `json:"dialect"`
	Model         string `json:"model"`
	UpstreamModel string `json:"upstream_model"`
	windowJSON
	Circuit               string     `json:"circuit"`
	DeploymentCircuit     string     `json:"deployment_circuit"`
	ModelCircuit          string     `json:"model_circuit"`
	CircuitOpenUntil      *time.Time `json:"circuit_open_until"`
	ModelCircuitOpenUntil *time.Time `json:"model_circuit_open_until"`
	PausedUntil           *time.Time `json:"paused_until"`
	routableJSON
	// Price is what the route bills at (the model's price, else the route's: R-BILL-3), and
	// RoutePrice the route's own listed price (what the price strategy ranks).
	Price      *priceJSON `json:"price"`
	RoutePrice *priceJSON `json:"route_price"`
}

type modelStatsJSON struct {
	Model       string           `json:"model"`
	Deployments []routeStatsJSON `json:"deployments"`
}

type deploymentStatsJSON struct {
	Deployment string `json:"deployment"`
	Provider   string `json:"provider"`
	Dialect    string `json:"dialect"`
	windowJSON
	DeploymentCircuit string     `json:"deployment_circuit"`
	CircuitOpenUntil  *time.Time `json:"circuit_open_until"`
	PausedUntil       *time.Time `json:"paused_until"`
	routableJSON
	Models []routeStatsJSON `json:"models"`
}

// statsView is one read of the circuits, for one answer.
type statsView struct {
	a      *api
	states map[[2]string]circuit.StateInfo
}

func (a *api) statsView() *statsView {
	v := &statsView{a: a, states: map[[2]string]circuit.StateInfo{}}
	if a.Circuits != nil {
		for _, st := range a.Circuits.States() {
			v.states[[2]string{st.Deployment, st.Model}] = st
		}
	}
	return v
}

// window reads the statistics of (deployment, model).
func (v *statsView) window(deployment, model string) windowJSON {
	var w windowJSON
	if v.a.Stats == nil {
		return w
	}
	s, ok := v.a.Stats.Summary(deployment, model)
	if !ok {
		return w
	}
	w.Requests = s.Counted
	if s.HasUptime {
		w.Uptime = &s.Uptime
	}
	if s.Route.Samples > 0 {
		w.SuccessRatio = &s.Route.SuccessRatio
	}
	if s.TTFT.N > 0 {
		w.TTFT = &quantilesJSON{s.TTFT.Mean, s.TTFT.P50, s.TTFT.P99}
	}
	if s.Latency.N > 0 {
		w.Latency = &quantilesJSON{s.Latency.Mean, s.Latency.P50, s.Latency.P99}
	}
	if s.Route.ThroughputSamples > 0 && s.Route.TokensPerSec > 0 {
		w.Throughput = &s.Route.TokensPerSec
	}
	return w
}

// circuitOf returns the state of the circuit of (deployment, model) and the end of its cooldown
// (nil unless open); a circuit never used is closed.
func (v *statsView) circuitOf(deployment, model string) (circuit.State, *time.Time) {
	st, ok := v.states[[2]string{deployment, model}]
	if !ok || st.OpenUntil.IsZero() {
		return st.State, nil
	}
	until := st.OpenUntil.UTC()
	return st.State, &until
}

func (v *statsView) paused(d *catalog.Deployment) *time.Time {
	if v.a.Circuits == nil {
		return nil
	}
	if until, ok := v.a.Circuits.Paused(d.PauseScope()); ok {
		until = until.UTC()
		return &until
	}
	return nil
}

func price(p *catalog.Price) *priceJSON {
	if p == nil {
		return nil
	}
	return &priceJSON{p.InputPerMTokUSD, p.OutputPerMTokUSD}
}

// route is the statistics of route rt.
func (v *statsView) route(rt *catalog.Route) routeStatsJSON {
	d := rt.Deployment
	ds, dUntil := v.circuitOf(d.Name, "")
	ms, mUntil := v.circuitOf(d.Name, rt.Model)
	out := routeStatsJSON{Deployment: d.Name, Provider: d.Provider, Dialect: string(d.Dialect), Model: rt.Model,
		UpstreamModel: rt.UpstreamModel, windowJSON: v.window(d.Name, rt.Model),
		Circuit: max(ds, ms).String(), DeploymentCircuit: ds.String(), ModelCircuit: ms.String(),
		CircuitOpenUntil: dUntil, ModelCircuitOpenUntil: mUntil, PausedUntil: v.paused(d),
		RoutePrice: price(rt.Price)}
	if out.UpstreamModel == "" {
		out.UpstreamModel = rt.Model
	}
	out.Price = out.RoutePrice
	if m := v.a.Catalog.Model(rt.Model); m != nil && m.Price != nil {
		out.Price = price(m.Price)
	}
	out.routableJSON = v.a.deploymentRoutable(d).routeState(rt.Model)
	return out
}

// statsModels serves GET /admin/v1/stats/models: every catalog model with each deployment
// that serves it, in catalog order (docs/admin-api.md "Route statistics").
func (a *api) statsModels(w http.ResponseWriter, r *http.Request) {
	v := a.statsView()
	out := listPage{Data: make([]any, 0, len(a.Catalog.Models))}
	for _, m := range a.Catalog.Models {
		ms := modelStatsJSON{Model: m.ID, Deployments: make([]routeStatsJSON, 0, len(m.Routes))}
		for _, rt := range m.Routes {
			ms.Deployments = append(ms.Deployments, v.route(rt))
		}
		out.Data = append(out.Data, ms)
	}
	writeJSON(w, http.StatusOK, out)
}

// statsDeployments serves GET /admin/v1/stats/deployments: every configured deployment with
// its own figures across its models, then each model it serves, in catalog order.
func (a *api) statsDeployments(w http.ResponseWriter, r *http.Request) {
	v := a.statsView()
	out := listPage{Data: make([]any, 0, len(a.Catalog.Deployments))}
	for _, d := range a.Catalog.Deployments {
		ds, until := v.circuitOf(d.Name, "")
		dj := deploymentStatsJSON{Deployment: d.Name, Provider: d.Provider, Dialect: string(d.Dialect),
			windowJSON: v.window(d.Name, ""), DeploymentCircuit: ds.String(), CircuitOpenUntil: until,
			PausedUntil: v.paused(d), routableJSON: a.deploymentRoutable(d).routableJSON,
			Models: make([]routeStatsJSON, 0, len(d.Routes))}
		for _, rt := range d.Routes {
			dj.Models = append(dj.Models, v.route(rt))
		}
		out.Data = append(out.Data, dj)
	}
	writeJSON(w, http.StatusOK, out)
}
