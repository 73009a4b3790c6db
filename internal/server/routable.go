package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/switchyard-gw/switchyard/internal/accounts"
	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/failure"
)

// routableKey names an override: a deployment (model "") or one of its routes.
type routableKey struct{ deployment, model string }

// routableState is the operators' live routable state (issue 11 item 3): the overrides stored
// in the accounts store (accounts.RoutableStore), read by every replica on the reload poll and
// at once on the change feed (ChangeRoutable). It implements plan.Routable: an override
// replaces the configuration's disabled flag of its deployment or route. The request path
// reads one atomic pointer and, only when some override exists, one or two map lookups.
type routableState struct {
	m atomic.Pointer[map[routableKey]bool] // nil: no override
}

// Disabled implements plan.Routable: a route is out of routing when its deployment is (the
// deployment's override, else config disabled) or the route itself is (the route's override,
// else its config disabled). Callers' own connections (BYOK) are never disabled here.
func (st *routableState) Disabled(rt *catalog.Route) bool {
	d := rt.Deployment
	if d.BYOK {
		return false
	}
	dep, route := d.Disabled, rt.Disabled
	if p := st.m.Load(); p != nil {
		m := *p
		if v, ok := m[routableKey{d.Name, ""}]; ok {
			dep = v
		}
		if v, ok := m[routableKey{d.Name, rt.Model}]; ok {
			route = v
		}
	}
	return dep || route
}

// override returns the override of k and whether there is one.
func (st *routableState) override(k routableKey) (disabled, ok bool) {
	if p := st.m.Load(); p != nil {
		disabled, ok = (*p)[k]
	}
	return
}

// set replaces the state with os.
func (st *routableState) set(os []accounts.RoutableOverride) {
	if len(os) == 0 {
		st.m.Store(nil)
		return
	}
	m := make(map[routableKey]bool, len(os))
	for _, o := range os {
		m[routableKey{o.Deployment, o.Model}] = o.Disabled
	}
	st.m.Store(&m)
}

// routableStore is the accounts store's routable part, when it has one.
func (s *Server) routableStore() accounts.RoutableStore {
	rs, _ := s.accts.(accounts.RoutableStore)
	return rs
}

// reloadRoutable reads every override from the store into the live state.
func (s *Server) reloadRoutable(ctx context.Context) error {
	rs := s.routableStore()
	if rs == nil {
		return nil
	}
	os, err := rs.RoutableOverrides(ctx)
	if err != nil {
		return err
	}
	s.routable.set(os)
	return nil
}

// runRoutable reloads the overrides every interval until ctx is done (the poll; the change
// feed reloads them at once through the cache's OnChange). A failed reload is logged and the
// state kept.
func (s *Server) runRoutable(ctx context.Context, interval time.Duration) error {
	if interval <= 0 {
		interval = accounts.DefaultReloadInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if err := s.reloadRoutable(ctx); err != nil && ctx.Err() == nil {
				s.logf("routable: reloading overrides: %v", err)
			}
		}
	}
}

// onChange is the accounts cache's OnChange: a routable change, or a resync of the feed,
// reloads the overrides.
func (s *Server) onChange(ctx context.Context, ch accounts.Change) {
	if ch.Kind != accounts.ChangeRoutable && ch.Kind != accounts.ChangeResync {
		return
	}
	if err := s.reloadRoutable(ctx); err != nil && ctx.Err() == nil {
		s.logf("routable: reloading overrides: %v", err)
	}
}

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

func (s *Server) deploymentRoutable(d *catalog.Deployment) deploymentRoutableJSON {
	out := deploymentRoutableJSON{Name: d.Name, Provider: d.Provider, Routes: make([]routeRoutableJSON, 0, len(d.Routes))}
	out.ConfigDisabled = d.Disabled
	out.Disabled = d.Disabled
	if v, ok := s.routable.override(routableKey{d.Name, ""}); ok {
		out.Override, out.Disabled = &v, v
	}
	for _, rt := range d.Routes {
		r := routeRoutableJSON{Model: rt.Model}
		r.ConfigDisabled, r.Disabled = rt.Disabled, s.routable.Disabled(rt)
		if v, ok := s.routable.override(routableKey{d.Name, rt.Model}); ok {
			r.Override = &v
		}
		out.Routes = append(out.Routes, r)
	}
	return out
}

// adminDeployments answers GET /admin/v1/deployments: every configured deployment with its
// routable state and its routes'.
func (s *Server) adminDeployments(w http.ResponseWriter, r *http.Request) {
	out := make([]deploymentRoutableJSON, 0, len(s.cat.Deployments))
	for _, d := range s.cat.Deployments {
		out = append(out, s.deploymentRoutable(d))
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": out})
}

// adminGetDeployment answers GET /admin/v1/deployments/{name}.
func (s *Server) adminGetDeployment(w http.ResponseWriter, r *http.Request) {
	d := s.cat.Deployment(r.PathValue("name"))
	if d == nil {
		adminError(w, http.StatusNotFound, &failure.Error{Class: failure.InvalidRequest, Msg: "no such deployment in the configuration"})
		return
	}
	writeJSON(w, http.StatusOK, s.deploymentRoutable(d))
}

// adminPatchRoutable answers PATCH /admin/v1/deployments/{name} and PATCH
// /admin/v1/deployments/{name}/routes/{model...}: {"disabled": true} takes the deployment or
// route out of routing on every replica, false puts it back (whatever the configuration
// says), null removes the override (the configuration's flag applies again). The override is
// stored before the answer and applied here at once; other replicas apply it on the change
// feed (Postgres) or their next reload poll.
func (s *Server) adminPatchRoutable(w http.ResponseWriter, r *http.Request) {
	d := s.cat.Deployment(r.PathValue("name"))
	if d == nil {
		adminError(w, http.StatusNotFound, &failure.Error{Class: failure.InvalidRequest, Msg: "no such deployment in the configuration"})
		return
	}
	model := r.PathValue("model")
	if strings.Contains(r.Pattern, "/routes/") {
		found := false
		for _, rt := range d.Routes {
			found = found || rt.Model == model
		}
		if !found {
			adminError(w, http.StatusNotFound, &failure.Error{Class: failure.InvalidRequest, Msg: "the deployment has no route for this model"})
			return
		}
	}
	var body struct {
		Disabled json.RawMessage `json:"disabled"`
	}
	if !decodeBody(w, r, &body, []string{"disabled"}) {
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
	rs := s.routableStore()
	if rs == nil {
		adminError(w, http.StatusServiceUnavailable, &failure.Error{Class: failure.GatewayError, Msg: "the store keeps no routable state"})
		return
	}
	ctx, cancel := adminCtx(r)
	defer cancel()
	var err error
	if disabled == nil {
		err = rs.ClearRoutable(ctx, d.Name, model)
	} else {
		err = rs.SetRoutable(ctx, accounts.RoutableOverride{Deployment: d.Name, Model: model, Disabled: *disabled, UpdatedAt: time.Now()})
	}
	if err != nil {
		s.storeError(w, err, "")
		return
	}
	if err := s.reloadRoutable(ctx); err != nil {
		s.logf("routable: reloading overrides: %v", err) // stored: the poll brings it
	}
	writeJSON(w, http.StatusOK, s.deploymentRoutable(d))
}
