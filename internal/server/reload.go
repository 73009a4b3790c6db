package server

import (
	"context"

	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/config"
)

// Reload makes cfg and its catalog the configuration of new requests, atomically: the
// catalog, deployments and their upstream clients, static keys, prices, limits, routing
// settings, the admin token and the body limit all come from one snapshot, which ServeHTTP
// loads once at the start of a request. A request or stream in flight finishes on the
// snapshot it started with (its plan, clients and keys), so a reload drops nothing.
//
// What the gateway learned is kept: the circuits and latency statistics of every deployment
// whose configuration is unchanged (a deployment that changed or was removed gets fresh
// circuits), provider pauses, the admission store's counters, the metrics, and the store of
// accounts with its key cache and ledger writer. BYOK connections' deployments are rebuilt
// on their next use against the new catalog. The upstream connection pools of the previous
// snapshot close as their attempts finish.
//
// Settings read only at start keep their first value until a restart: server.listen,
// server.max_header_bytes (the http.Server's), store.url, admission.url, routing.circuit
// (failures, cooldown) and, for the listener,
// server.shutdown_grace is read by the caller. cfg must be valid (config.Load) and cat built
// from it (catalog.New); an error leaves the current configuration serving. Each call counts
// one switchyard_config_reloads_total, result "applied" or (on an error) "refused".
func (s *Server) Reload(cfg *config.Config, cat *catalog.Catalog) error {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	cur := s.live.Load()
	next, err := newSnapshot(cfg, cat, cur.opts, cur)
	if err != nil {
		s.metrics.reloads.WithLabelValues(reloadRefused).Inc()
		return err
	}
	s.metrics.reloads.WithLabelValues(reloadApplied).Inc()
	s.byok.mu.Lock()
	s.live.Store(next)
	s.byok.deps.Range(func(id, v any) bool {
		s.byok.deps.Delete(id)
		v.(*byokDeployment).client.Close()
		return true
	})
	s.byok.mu.Unlock()
	for _, name := range changedDeployments(cur.cfg, cfg) {
		s.circuits.Forget(name)
	}
	for _, c := range cur.clients {
		c.Close() // idle connections now; the ones in use close when their attempts end
	}
	if next.cache != nil {
		// Stored keys carry their configured account's limits: load them again now rather
		// than at the next store.reload_interval.
		ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
		defer cancel()
		if err := next.cache.Reload(ctx); err != nil {
			s.logf("reload: stored keys not reloaded now (the next periodic reload will): %v", err)
		}
	}
	return nil
}

// The results of switchyard_config_reloads_total.
const (
	reloadApplied = "applied"
	reloadRefused = "refused"
)

// ReloadRefused counts a reload refused before it reached Reload: the configuration file did
// not load or did not pass the checks (switchyard_config_reloads_total{result="refused"}). The
// caller logs why; the current configuration keeps serving.
func (s *Server) ReloadRefused() { s.metrics.reloads.WithLabelValues(reloadRefused).Inc() }

// Config returns the configuration new requests are served with (the last one given to New
// or Reload).
func (s *Server) Config() *config.Config { return s.live.Load().cfg }

// changedDeployments lists the deployments of prev that next removes or points elsewhere: a
// different provider, dialect, base_url or api_key (what a circuit measures). A change of
// routes, prices, weights or priority keeps the deployment's circuits.
func changedDeployments(prev, next *config.Config) []string {
	keep := make(map[string]*config.Deployment, len(next.Deployments))
	for i := range next.Deployments {
		keep[next.Deployments[i].Name] = &next.Deployments[i]
	}
	var out []string
	for i := range prev.Deployments {
		d := &prev.Deployments[i]
		n := keep[d.Name]
		if n == nil || n.Provider != d.Provider || n.Dialect != d.Dialect || n.BaseURL != d.BaseURL || n.APIKey != d.APIKey {
			out = append(out, d.Name)
		}
	}
	return out
}
