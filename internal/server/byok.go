package server

import (
	"sync"

	"github.com/switchyard-gw/switchyard/internal/accounts"
	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/failure"
	"github.com/switchyard-gw/switchyard/internal/plan"
	"github.com/switchyard-gw/switchyard/internal/upstream"
)

// byokSet holds the deployments of callers' own provider connections (BYOK, R-KEY-5): per
// connection one catalog.Deployment "byok:<id>" (Deployment.BYOK set), its routes by catalog
// model id, and an upstream client registered with the relay. Each is built on the first
// request that routes to it and kept (a stored connection never changes) until the connection
// is revoked through this process (dropBYOK). The request path reads it without locks.
type byokSet struct {
	mu   sync.Mutex // serializes building
	deps sync.Map   // connection id -> *byokDeployment
}

// byokDeployment is one connection as the router and the relay see it.
type byokDeployment struct {
	dep    *catalog.Deployment
	routes map[string]*catalog.Route // by catalog model id
	client *upstream.Client
}

// byokDeployment returns the deployment of connection conn, building it (and its client) on
// first use.
func (s *Server) byokDeployment(conn *accounts.Connection) *byokDeployment {
	if v, ok := s.byok.deps.Load(conn.ID); ok {
		return v.(*byokDeployment)
	}
	s.byok.mu.Lock()
	defer s.byok.mu.Unlock()
	if v, ok := s.byok.deps.Load(conn.ID); ok {
		return v.(*byokDeployment)
	}
	// Built against the current configuration's catalog and registered with its relay too, so
	// that a deployment built by a request still running on an earlier snapshot serves the
	// requests of the current one (Reload clears the set under the same lock).
	cur := s
	if s.live != nil {
		cur = s.live.Load()
	}
	d := &catalog.Deployment{Name: conn.Deployment(), Provider: conn.Provider, Dialect: catalog.Dialect(conn.Dialect),
		BaseURL: conn.BaseURL, BYOK: true, Platform: catalog.PlatformOpenAI}
	if d.Dialect == catalog.Anthropic {
		d.Platform = catalog.PlatformAnthropic // a caller's own connection is the dialect's own API
	}
	bd := &byokDeployment{dep: d, routes: make(map[string]*catalog.Route, len(conn.Models))}
	key, err := cur.box.Open(conn.APIKey) // sealed in the store when store.secret_key is set
	if err != nil {
		// Unusable until the right store.secret_key is configured: it serves no model (logged
		// once per process; the error names no credential).
		s.logf("BYOK connection %s of key %s is not used: %v", conn.ID, conn.KeyID, err)
		bd.client = upstream.New(d, cur.deadlines)
		s.byok.deps.Store(conn.ID, bd)
		return bd
	}
	d.APIKey = key
	for _, id := range conn.Models {
		m := cur.cat.Model(id)
		if m == nil {
			continue // a model removed from the catalog since the connection was stored
		}
		rt := &catalog.Route{Deployment: d, Model: m.ID, UpstreamModel: byokUpstreamModel(m, d), Weight: 1}
		d.Routes = append(d.Routes, rt)
		bd.routes[m.ID] = rt
	}
	bd.client = upstream.New(d, cur.deadlines)
	s.relay.AddClient(bd.client)
	if cur != s {
		cur.relay.AddClient(bd.client)
	}
	s.byok.deps.Store(conn.ID, bd)
	return bd
}

// byokUpstreamModel is the model id a connection sends for catalog model m: the upstream id of
// the first house route of m at the same provider, else of the first route of the same
// dialect, else m's id. A lab's own API knows its models by the ids the house's deployment of
// that lab uses.
func byokUpstreamModel(m *catalog.Model, d *catalog.Deployment) string {
	var sameDialect string
	for _, rt := range m.Routes {
		switch {
		case rt.Deployment.Provider == d.Provider:
			return rt.UpstreamModel
		case sameDialect == "" && rt.Deployment.Dialect == d.Dialect:
			sameDialect = rt.UpstreamModel
		}
	}
	if sameDialect != "" {
		return sameDialect
	}
	return m.ID
}

// dropBYOK forgets the deployment of the connection with id connID, revoked, and closes its
// client's idle upstream connections. The cache no longer returns the connection, so no plan
// routes to it again; an attempt already dispatched to it finishes (its connection closes
// when the transport's idle timeout passes). The relay keeps the client registered under the
// deployment name, unused.
func (s *Server) dropBYOK(connID string) {
	s.byok.mu.Lock()
	defer s.byok.mu.Unlock()
	if v, ok := s.byok.deps.LoadAndDelete(connID); ok {
		bd := v.(*byokDeployment)
		s.relay.RemoveClient(bd.dep.Name)
		if s.live != nil {
			s.live.Load().relay.RemoveClient(bd.dep.Name)
		}
		bd.client.Close()
	}
}

// closeBYOK releases the connections' upstream connection pools.
func (s *Server) closeBYOK() {
	s.byok.deps.Range(func(_, v any) bool {
		v.(*byokDeployment).client.Close()
		return true
	})
}

// billable reports whether some candidate of the request's plans is a house route, which the
// gateway bills; a plan of BYOK routes only is paid by the caller to its own provider.
func billable(cs *callState) bool { return anyCandidate(cs, false) }

// anyCandidate reports whether some candidate of the request's plans (the model's and its
// fallbacks') is a BYOK route (byok true) or a house route (byok false).
func anyCandidate(cs *callState, byok bool) bool {
	has := func(p *plan.Plan) bool {
		for i := range p.Candidates {
			if p.Candidates[i].BYOK == byok {
				return true
			}
		}
		return false
	}
	if has(&cs.plan) {
		return true
	}
	for i := range cs.fallbacks {
		if has(cs.fallbacks[i].Plan) {
			return true
		}
	}
	return false
}

// dropHouse handles a credit refusal err of a request whose plans mix the caller's own
// connections and house routes (byok_with_house_fallback): when err is insufficient credit and
// some candidate is BYOK, the house candidates leave every plan (dropped as
// plan.ReasonCredit) and dropHouse reports true; the request then runs on its connections
// alone, reserving nothing. Otherwise it changes nothing and reports false.
func dropHouse(cs *callState, err error) bool {
	if fe := failure.From(err); fe == nil || fe.Class != failure.InsufficientCredit || !anyCandidate(cs, true) {
		return false
	}
	keepBYOK(&cs.plan)
	for i := range cs.fallbacks {
		keepBYOK(cs.fallbacks[i].Plan)
	}
	return true
}

// keepBYOK removes p's house candidates, recording each as dropped for insufficient credit.
func keepBYOK(p *plan.Plan) {
	kept := p.Candidates[:0]
	for _, c := range p.Candidates {
		if c.BYOK {
			kept = append(kept, c)
			continue
		}
		p.Dropped = append(p.Dropped, plan.Dropped{Deployment: c.Route.Deployment.Name, Model: c.Route.Model, Reason: plan.ReasonCredit})
	}
	clear(p.Candidates[len(kept):]) // drop the route pointers
	p.Candidates = kept
}
