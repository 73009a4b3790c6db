package server

import (
	"context"
	"net/http"
	"time"

	"github.com/switchyard-gw/switchyard/internal/accounts"
	"github.com/switchyard-gw/switchyard/internal/admin"
	"github.com/switchyard-gw/switchyard/internal/admission"
	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/config"
	"github.com/switchyard-gw/switchyard/internal/secret"
)

// storeTimeout bounds the store work of one admin request, and the initial load.
const storeTimeout = 10 * time.Second

// initAccounts sets up the admin token and, with a store of accounts, the key cache (loaded
// now) and the ledger writer; with a store but no admin.token it logs one line saying the
// admin API is off.
func (s *Server) initAccounts(cfg *config.Config, o Options, prev *Server) error {
	if o.Accounts == nil {
		return nil
	}
	if prev != nil { // a reload: the same store, cache and ledger writer; the key from cfg
		s.accts, s.ledger, s.cache = prev.accts, prev.ledger, prev.cache
		s.replica, s.reconciler = prev.replica, prev.reconciler
		box, err := secret.New(cfg.Store.SecretKey)
		s.box = box
		return err
	}
	if cfg.Admin.Token == "" {
		// a store of accounts is useless without the admin API that fills it: say why it is off
		s.logf("admin API off: admin.token is empty; /admin/v1/ answers 404")
	}
	s.accts = o.Accounts
	box, err := secret.New(cfg.Store.SecretKey)
	if err != nil {
		return err
	}
	s.box = box
	s.replica = accounts.NewID("rep")
	wo := accounts.WriterOptions{Logf: s.logf, Replica: s.replica}
	journalDir := o.LedgerJournal
	if js, ok := o.Accounts.(journaled); ok && journalDir == "" {
		journalDir = js.LedgerJournalDir()
	}
	if journalDir == "off" {
		journalDir = ""
	}
	if journalDir != "" {
		// Reserves are secured at commit in a local journal, and the journals of processes that
		// died are written to the ledger now, before the reconciler starts (it closes them; it
		// also replays those of replicas sharing the directory that die later: docs/deploy.md
		// "The ledger journal").
		ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
		n, err := accounts.ReplayJournals(ctx, journalDir, s.replica, o.Accounts)
		cancel()
		if err != nil {
			// What could not be replayed stays in its file, and the reconciler's replay at
			// each heartbeat tries it again: the gateway starts.
			s.logf("ledger: replaying the journals of processes that died: %v; retried every heartbeat", err)
		}
		if n > 0 {
			s.logf("ledger: %d entries (reserves and settles) replayed from the journals of a process that did not drain its ledger writer; the reconciliation closes the reserves left open", n)
		}
		if wo.Journal, err = accounts.OpenJournal(journalDir, s.replica); err != nil {
			return err
		}
	}
	s.ledger = accounts.NewWriter(o.Accounts, wo)
	if rs, ok := o.Accounts.(accounts.ReplicaStore); ok {
		ro := accounts.ReconcilerOptions{
			Audit: s.auditEnd, Logf: s.logf, Count: func(mark string) { s.metrics.reconciled.WithLabelValues(mark).Inc() }}
		if journalDir != "" {
			ro.Replay = func(ctx context.Context) (int, error) {
				return accounts.ReplayJournals(ctx, journalDir, s.replica, o.Accounts)
			}
		}
		s.reconciler = accounts.NewReconciler(o.Accounts, rs, s.replica, ro)
	}
	s.cache = accounts.NewCache(o.Accounts, accounts.CacheOptions{
		ReloadInterval: cfg.Store.ReloadInterval.D(), Pending: s.ledger.Pending, HoldPending: s.ledger.HoldPending, Logf: s.logf,
		AccountLayers: func(id string) []admission.Layer {
			if live := s.live.Load(); live != nil {
				return live.acctLayers[id]
			}
			return s.acctLayers[id] // the first load, in New, before the snapshot is published
		},
		OnChange: s.onChange,
		Balances: s.syncBalance, BalanceMarks: s.balanceMarks})
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := s.reloadRoutable(ctx); err != nil {
		return err
	}
	return s.cache.Reload(ctx)
}

// journaled is a store whose ledger reserves are secured in a local journal (the embedded
// store: sqlite.DB.LedgerJournalDir); "" keeps none.
type journaled interface{ LedgerJournalDir() string }

// syncBalance hands a reloaded prepaid balance to an in-memory admission store, so that a
// replica without a shared store sees credits made through another within one reload; the
// Redis store keeps the one balance every replica charges and needs none. mark is the
// account's from balanceMarks, taken before the balance was read.
func (s *Server) syncBalance(accountID string, balanceMicroUSD, mark int64) {
	if m, ok := s.admit.(*admission.Memory); ok {
		m.SyncBalance(accountID, balanceMicroUSD, mark)
	}
}

// balanceMarks takes the in-memory admission store's marks for a reload (Cache's BalanceMarks)
// while no settle is between its admission store call and its ledger entry (s.settling), so
// that every settle charged before a mark is in the ledger writer's queue or the store when the
// reload reads them.
func (s *Server) balanceMarks() func(string) int64 {
	m, ok := s.admit.(*admission.Memory)
	if !ok {
		return func(string) int64 { return 0 }
	}
	if s.settling != nil {
		s.settling.Lock()
		defer s.settling.Unlock()
	}
	marks := m.BalanceMarks()
	return func(id string) int64 { return marks[id] }
}

// ReloadKeys reloads the stored keys and accounts from the store now, as Run does every
// store.reload_interval (default 5 s): keys created or revoked through another replica take
// effect here. Without a store of accounts it does nothing. It returns the store's error.
func (s *Server) ReloadKeys(ctx context.Context) error {
	if s.cache == nil {
		return nil
	}
	return s.cache.Reload(ctx)
}

// adminHandler is the admin API (package admin) of this snapshot, mounted at /admin/: its
// token, the store of accounts with this process's cache, ledger writer and admission store,
// the catalog and the live routable state.
func (s *Server) adminHandler() http.Handler {
	o := admin.Options{
		Token:          s.cfg.Admin.Token,
		Catalog:        s.cat,
		Routable:       routableAdmin{s},
		Stats:          s.stats,
		Circuits:       s.circuits,
		Audit:          s.rec,
		Strategy:       s.strategy,
		DropConnection: s.dropBYOK,
		NotFound:       http.HandlerFunc(s.serveNotFound),
		Logf:           s.logf,
	}
	if s.accts != nil {
		o.Store, o.Cache, o.Ledger, o.Credits, o.Box = s.accts, s.cache, s.ledger, s.admit, s.box
	}
	return admin.New(o)
}

// routableAdmin is the live routable state as the admin API reads and reloads it.
type routableAdmin struct{ s *Server }

func (ra routableAdmin) Disabled(rt *catalog.Route) bool { return ra.s.routable.Disabled(rt) }

func (ra routableAdmin) Override(deployment, model string) (disabled, ok bool) {
	return ra.s.routable.override(routableKey{deployment, model})
}

func (ra routableAdmin) Reload(ctx context.Context) error { return ra.s.reloadRoutable(ctx) }
