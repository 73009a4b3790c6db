package admin

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/switchyard-gw/switchyard/internal/accounts"
	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/failure"
)

// routableJSON is a deployment or route as the admin API shows its routable state.
type routableJSON struct {
	// Disabled is the effective state: true when plans drop it with reason "disabled" (a route
	// is also disabled when its deployment is).
	Disabled bool `json:"disabled"`
	// ConfigDisabled is the configuration's disabled flag.
	ConfigDisabled bool `json:"config_disabled"`
	// Override is the live override (true, false), null when the configuration applies.
	Override *bool `json:"override"`
}

type routeRoutableJSON struct {
	Model string `json:"model"`
	routableJSON
}

type deploymentRoutableJSON struct {
	Name     string `json:"name"`
	Provider string `json:"provider"`
	routableJSON
	Routes []routeRoutableJSON `json:"routes"`
}

func (a *api) deploymentRoutable(d *catalog.Deployment) deploymentRoutableJSON {
	out := deploymentRoutableJSON{Name: d.Name, Provider: d.Provider, Routes: make([]routeRoutableJSON, 0, len(d.Routes))}
	out.ConfigDisabled = d.Disabled
	out.Disabled = d.Disabled
	if v, ok := a.Routable.Override(d.Name, ""); ok {
		out.Override, out.Disabled = &v, v
	}
	for _, rt := range d.Routes {
		r := routeRoutableJSON{Model: rt.Model}
		r.ConfigDisabled, r.Disabled = rt.Disabled, a.Routable.Disabled(rt)
		if v, ok := a.Routable.Override(d.Name, rt.Model); ok {
			r.Override = &v
		}
		out.Routes = append(out.Routes, r)
	}
	return out
}

// deployments answers GET /admin/v1/deployments: every configured deployment with its
// routable state and its routes'.
func (a *api) deployments(w http.ResponseWriter, r *http.Request) {
	out := make([]deploymentRoutableJSON, 0, len(a.Catalog.Deployments))
	for _, d := range a.Catalog.Deployments {
		out = append(out, a.deploymentRoutable(d))
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": out})
}

// getDeployment answers GET /admin/v1/deployments/{name}.
func (a *api) getDeployment(w http.ResponseWriter, r *http.Request) {
	d := a.Catalog.Deployment(r.PathValue("name"))
	if d == nil {
		writeError(w, http.StatusNotFound, &failure.Error{Class: failure.InvalidRequest, Msg: "no such deployment in the configuration"})
		return
	}
	writeJSON(w, http.StatusOK, a.deploymentRoutable(d))
}

// patchRoutable answers PATCH /admin/v1/deployments/{name} and PATCH
// /admin/v1/deployments/{name}/routes/{model...}: {"disabled": true} takes the deployment or
// route out of routing on every replica, false puts it back (whatever the configuration
// says), null removes the override (the configuration's flag applies again). The override is
// stored before the answer and applied here at once; other replicas apply it on the change
// feed (Postgres) or their next reload poll.
func (a *api) patchRoutable(w http.ResponseWriter, r *http.Request) {
	d := a.Catalog.Deployment(r.PathValue("name"))
	if d == nil {
		writeError(w, http.StatusNotFound, &failure.Error{Class: failure.InvalidRequest, Msg: "no such deployment in the configuration"})
		return
	}
	model := r.PathValue("model")
	if strings.Contains(r.Pattern, "/routes/") {
		found := false
		for _, rt := range d.Routes {
			found = found || rt.Model == model
		}
		if !found {
			writeError(w, http.StatusNotFound, &failure.Error{Class: failure.InvalidRequest, Msg: "the deployment has no route for this model"})
			return
		}
	}
	var body struct {
		Disabled json.RawMessage `json:"disabled"`
	}
	if !decode(w, r, &body, []string{"disabled"}) {
		return
	}
	var disabled *bool
	switch string(body.Disabled) {
	case "true":
		disabled = new(bool)
		*disabled = true
	case "false":
		disabled = new(bool)
	case "null":
	case "":
		badRequest(w, "disabled", "disabled is required: true, false, or null to return to the configuration")
		return
	default:
		badRequest(w, "disabled", "disabled has the wrong type: want boolean or null")
		return
	}
	rs, _ := a.Store.(accounts.RoutableStore)
	if rs == nil {
		writeError(w, http.StatusServiceUnavailable, &failure.Error{Class: failure.GatewayError, Msg: "the store keeps no routable state"})
		return
	}
	ctx, cancel := storeCtx(r)
	defer cancel()
	var err error
	if disabled == nil {
		err = rs.ClearRoutable(ctx, d.Name, model)
	} else {
		err = rs.SetRoutable(ctx, accounts.RoutableOverride{Deployment: d.Name, Model: model, Disabled: *disabled, UpdatedAt: time.Now()})
	}
	if err != nil {
		a.fail(w, err, "")
		return
	}
	if err := a.Routable.Reload(ctx); err != nil {
		a.Logf("routable: reloading overrides: %v", err) // stored: the poll brings it
	}
	writeJSON(w, http.StatusOK, a.deploymentRoutable(d))
}

// routeState is the routable state of the route of model ("" when the deployment has none).
func (d deploymentRoutableJSON) routeState(model string) routableJSON {
	for _, r := range d.Routes {
		if r.Model == model {
			return r.routableJSON
		}
	}
	return routableJSON{}
}

// configRoutable is the routable state without overrides: the configuration's flags (Options
// without a Routable).
type configRoutable struct{}

func (configRoutable) Disabled(rt *catalog.Route) bool      { return rt.Deployment.Disabled || rt.Disabled }
func (configRoutable) Override(string, string) (bool, bool) { return false, false }
func (configRoutable) Reload(context.Context) error         { return nil }
