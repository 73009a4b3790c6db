package server

import (
	"encoding/json"
	"net/http"

	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/circuit"
	"github.com/switchyard-gw/switchyard/internal/failure"
	"github.com/switchyard-gw/switchyard/internal/relay"
)

// modelEndpoint is one deployment serving a model, as GET /v1/models/{id} shows it.
type modelEndpoint struct {
	Deployment    string `json:"deployment"`
	Provider      string `json:"provider"`
	Dialect       string `json:"dialect"`
	UpstreamModel string `json:"upstream_model"`
	// Circuit is the worst of the deployment's circuit and its (deployment, model) circuit:
	// closed, open or half-open.
	Circuit string `json:"circuit"`
	// DeploymentCircuit is the deployment's own circuit (counted failures that are not hangs,
	// R-CIRCUIT-1) and ModelCircuit its (deployment, model) circuit (hangs only, R-CIRCUIT-5):
	// closed, open or half-open each.
	DeploymentCircuit string `json:"deployment_circuit"`
	ModelCircuit      string `json:"model_circuit"`
	// Uptime is the success ratio over the last 24 hours with the counting rules of the circuits
	// (upstream 429s and caller faults excluded); null until 100 requests were counted
	// (R-CIRCUIT-8).
	Uptime *float64 `json:"uptime"`
	// Pricing is the route's price (null: unpriced) and PriceSource where it comes from
	// (config, catalog or none); ContextLength the route's context window (0: unknown).
	Pricing       *ModelPricing `json:"pricing"`
	PriceSource   string        `json:"price_source"`
	ContextLength int           `json:"context_length,omitempty"`
}

// serveModel answers GET /v1/models/{id}: the model in the caller's SDK shape plus, under
// "endpoints", each public deployment that serves it with its circuit state and uptime.
// Reserved deployments are not shown and a dedicated endpoint id is a 404, as in the list
// (R-KEY-6).
func (s *Server) serveModel(w http.ResponseWriter, r *http.Request) {
	codec := relay.CodecFor(surfaceOf(r))
	rid := requestID(w)
	if _, err := s.authenticate(r); err != nil {
		relay.WriteError(w, codec, rid, failure.From(err), 0, nil)
		return
	}
	res, err := s.cat.Resolve(r.PathValue("id"))
	if err == nil && res.Endpoint != nil {
		err = catalog.UnknownModel(res.Requested)
	}
	if err != nil || firstPublic(res.Model) == nil {
		if err == nil {
			err = &failure.Error{Class: failure.ModelUnavailable, Param: "model", Msg: "no deployment serves this model"}
		}
		relay.WriteError(w, codec, rid, failure.From(err), 0, nil)
		return
	}
	states := map[[2]string]circuit.State{}
	for _, st := range s.circuits.States() {
		states[[2]string{st.Deployment, st.Model}] = st.State
	}
	m := res.Model
	eps := make([]modelEndpoint, 0, len(m.Routes))
	for _, rt := range m.Routes {
		d := rt.Deployment
		if d.Reserved {
			continue
		}
		ds, ms := states[[2]string{d.Name, ""}], states[[2]string{d.Name, rt.Model}]
		ep := modelEndpoint{Deployment: d.Name, Provider: d.Provider, Dialect: string(d.Dialect),
			UpstreamModel: res.UpstreamModel(rt), Circuit: max(ds, ms).String(),
			DeploymentCircuit: ds.String(), ModelCircuit: ms.String(),
			Pricing: pricingOf(rt.Price), PriceSource: rt.PriceSource(), ContextLength: rt.ContextWindowTokens}
		if ep.ContextLength == 0 {
			ep.ContextLength = m.ContextWindowTokens
		}
		if u, ok := s.stats.Uptime(d.Name, rt.Model); ok {
			ep.Uptime = &u
		}
		eps = append(eps, ep)
	}
	var body any
	if r.Header.Get("Anthropic-Version") != "" {
		body = struct {
			Type        string          `json:"type"`
			ID          string          `json:"id"`
			DisplayName string          `json:"display_name"`
			CreatedAt   string          `json:"created_at"`
			Endpoints   []modelEndpoint `json:"endpoints"`
		}{"model", m.ID, m.ID, "1970-01-01T00:00:00Z", eps}
	} else {
		body = struct {
			ID        string          `json:"id"`
			Object    string          `json:"object"`
			Created   int64           `json:"created"`
			OwnedBy   string          `json:"owned_by"`
			Endpoints []modelEndpoint `json:"endpoints"`
		}{m.ID, "model", 0, firstPublic(m).Deployment.Provider, eps}
	}
	b, _ := json.Marshal(body)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}
