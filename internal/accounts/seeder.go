package accounts

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/switchyard-gw/switchyard/internal/admission"
)

// Seeder reads the admission store's seeds from the ledger (admission.Seeder, R-BILL-4): a
// layer's spend in a period is the settles the store holds plus this process's settles still
// queued in its ledger writer, and a prepaid balance is the stored balance minus those queued
// settles. Counting the queued settles is what makes a period boundary exact: a request that
// started before the boundary and settles after it finds the new period's spend without a
// seed, so the admission store leaves it to the seed; the seed read before the writer flushed
// it would otherwise count it nowhere (issue 24 item 3). Settles queued in other replicas'
// writers are not seen: the admission store keeps the settles that found no seed in its float
// and names their request ids (exclude), which both reads leave out (docs/limits.md
// "Exactness").
type Seeder struct {
	// Store is the store of accounts; nil (or one that cannot sum its ledger, SpendReader)
	// seeds every spend at zero.
	Store Store
	// Writer is this process's ledger writer; nil: nothing is queued.
	Writer *Writer
	// Workspace returns the workspace of a stored key ("" none; Cache.KeyWorkspace): a
	// workspace's queued settles are those of its keys. nil: none.
	Workspace func(keyID string) string
	// Timeout bounds each read of the store (zero: ctx's deadline only).
	Timeout time.Duration
}

// pending starts a read of the writer's queued settles (see Writer.PendingSettles).
func (s Seeder) pending() (func(func(*LedgerEntry) bool) int64, func()) {
	if s.Writer == nil {
		return func(func(*LedgerEntry) bool) int64 { return 0 }, func() {}
	}
	return s.Writer.PendingSettles()
}

func (s Seeder) ctx(ctx context.Context) (context.Context, context.CancelFunc) {
	if s.Timeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, s.Timeout)
}

// excluded returns whether a queued settle's request id is in exclude (as a set when it is
// long).
func excluded(exclude []string) func(*LedgerEntry) bool {
	switch {
	case len(exclude) == 0:
		return func(*LedgerEntry) bool { return false }
	case len(exclude) <= 8:
		return func(e *LedgerEntry) bool { return e.RequestID != "" && slices.Contains(exclude, e.RequestID) }
	}
	set := make(map[string]struct{}, len(exclude))
	for _, id := range exclude {
		set[id] = struct{}{}
	}
	return func(e *LedgerEntry) bool { _, ok := set[e.RequestID]; return ok && e.RequestID != "" }
}

// SpentMicroUSD implements admission.Seeder: the settles charged to the layer at or after from,
// stored and queued, less those of the request ids in exclude.
func (s Seeder) SpentMicroUSD(ctx context.Context, scope admission.Scope, id string, from time.Time, exclude []string) (int64, error) {
	sr, ok := s.Store.(SpendReader)
	if s.Store == nil || !ok {
		return 0, nil
	}
	f := SettleFilter{From: from, Exclude: exclude}
	skip := excluded(exclude)
	var match func(*LedgerEntry) bool
	switch scope {
	case admission.ScopeKey:
		f.KeyID = id
		match = func(e *LedgerEntry) bool { return e.KeyID == id }
	case admission.ScopeWorkspace:
		f.WorkspaceID = id
		match = func(e *LedgerEntry) bool { return s.Workspace != nil && e.KeyID != "" && s.Workspace(e.KeyID) == id }
	default:
		f.AccountID = id
		match = func(e *LedgerEntry) bool { return e.AccountID == id }
	}
	sum, release := s.pending()
	defer release()
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	stored, err := sr.SettledMicroUSD(ctx, f)
	if err != nil {
		return 0, err
	}
	return stored + sum(func(e *LedgerEntry) bool { return !e.At.Before(from) && match(e) && !skip(e) }), nil
}

// BalanceMicroUSD implements admission.Seeder: the stored balance minus the settles queued, as
// if the settles of the request ids in exclude had not been made (read in one statement when
// the store is a BalanceReader).
func (s Seeder) BalanceMicroUSD(ctx context.Context, accountID string, exclude []string) (int64, error) {
	if s.Store == nil {
		return 0, nil
	}
	skip := excluded(exclude)
	sum, release := s.pending()
	defer release()
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	var bal int64
	if br, ok := s.Store.(BalanceReader); ok {
		b, found, err := br.BalanceExcludingMicroUSD(ctx, accountID, exclude)
		if err != nil {
			return 0, err
		}
		if !found {
			return 0, nil
		}
		bal = b
	} else {
		a, err := s.Store.Account(ctx, accountID)
		if errors.Is(err, ErrNotFound) {
			return 0, nil
		}
		if err != nil {
			return 0, err
		}
		bal = a.BalanceMicroUSD // a store that cannot leave settles out: exclude is ignored
	}
	return bal - sum(func(e *LedgerEntry) bool { return e.AccountID == accountID && !skip(e) }), nil
}

// KeyWorkspace returns the workspace of the stored key id, "" when it has none or is not
// cached (the Seeder's Workspace).
func (c *Cache) KeyWorkspace(id string) string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if h, ok := c.byID[id]; ok {
		if e := c.keys[h]; e != nil && e.info != nil {
			return e.info.WorkspaceID
		}
	}
	return ""
}

var _ admission.Seeder = Seeder{}
