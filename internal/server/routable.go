package server

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/switchyard-gw/switchyard/internal/accounts"
	"github.com/switchyard-gw/switchyard/internal/catalog"
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
