package server

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard-gw/switchyard/internal/circuit"
)

// circuitStateDesc is the gauge switchyard_circuit_state{deployment, model, scope}: one series
// per circuit created so far, 0 closed, 1 open, 2 half-open. scope is "deployment" for a
// deployment's circuit (model "") and "model" for its (deployment, model) hang circuit
// (R-CIRCUIT-1, R-CIRCUIT-5). Callers' own connections (BYOK, "byok:<id>") are left out so the
// label values stay bounded by the configuration.
var circuitStateDesc = prometheus.NewDesc("switchyard_circuit_state",
	"Circuit state by deployment and model (scope deployment: the deployment's circuit, model \"\"; scope model: the (deployment, model) hang circuit): 0 closed, 1 open, 2 half-open.",
	[]string{"deployment", "model", "scope"}, nil)

// circuitCollector reads the circuit set at scrape time; it costs the request path nothing.
type circuitCollector struct{ set *circuit.Set }

// Describe implements prometheus.Collector.
func (c circuitCollector) Describe(ch chan<- *prometheus.Desc) { ch <- circuitStateDesc }

// Collect implements prometheus.Collector.
func (c circuitCollector) Collect(ch chan<- prometheus.Metric) {
	for _, st := range c.set.States() {
		if strings.HasPrefix(st.Deployment, "byok:") {
			continue
		}
		scope := "model"
		if st.Model == "" {
			scope = "deployment"
		}
		ch <- prometheus.MustNewConstMetric(circuitStateDesc, prometheus.GaugeValue, float64(st.State), st.Deployment, st.Model, scope)
	}
}

// pausedDesc is the gauge switchyard_deployment_paused{deployment, provider}: 1 while the
// deployment's provider is paused after an upstream 429 (R-CIRCUIT-4; the routes of every
// deployment of that provider are skipped until the pause ends), else 0. One series per
// configured deployment; callers' own connections are left out.
var pausedDesc = prometheus.NewDesc("switchyard_deployment_paused",
	"1 while the deployment's provider is paused after an upstream 429 (its routes are skipped), else 0.",
	[]string{"deployment", "provider"}, nil)

// pauseCollector reads the pauses at scrape time.
type pauseCollector struct{ s *Server }

// Describe implements prometheus.Collector.
func (c pauseCollector) Describe(ch chan<- *prometheus.Desc) { ch <- pausedDesc }

// Collect implements prometheus.Collector.
func (c pauseCollector) Collect(ch chan<- prometheus.Metric) {
	cat := c.s.cat
	if cur := c.s.live.Load(); cur != nil {
		cat = cur.cat // the configuration serving now (Reload)
	}
	for _, d := range cat.Deployments {
		v := 0.0
		if _, ok := c.s.circuits.Paused(d.PauseScope()); ok {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(pausedDesc, prometheus.GaugeValue, v, d.Name, d.Provider)
	}
}
