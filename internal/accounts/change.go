package accounts

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"
)

// ChangeKind names what a change-feed notification is about.
type ChangeKind string

// The kinds of [Change].
const (
	// ChangeAccount: an account was created or its settings, billing or balance (a credit)
	// changed.
	ChangeAccount ChangeKind = "account"
	// ChangeWorkspace: a workspace was created or its settings changed.
	ChangeWorkspace ChangeKind = "workspace"
	// ChangeKey: a key was created, changed or revoked.
	ChangeKey ChangeKind = "key"
	// ChangePolicy: a routing policy was created, changed or deleted.
	ChangePolicy ChangeKind = "policy"
	// ChangeConnection: a BYOK connection was created or revoked.
	ChangeConnection ChangeKind = "connection"
	// ChangeRoutable: an operator's routable override of a deployment or route was set or
	// cleared (RoutableStore); ID is the deployment. The cache does not hold it: CacheOptions.OnChange
	// hands it on.
	ChangeRoutable ChangeKind = "routable"
	// ChangeResync: the feed (re)connected, so changes may have been missed: reload everything.
	ChangeResync ChangeKind = "resync"
)

// Change is one notification of the change feed: the kind and id of the row written by some
// process (this one included) to the shared store, after its transaction committed.
type Change struct {
	Kind ChangeKind
	ID   string
}

// String is the wire form of c: "kind:id", e.g. "key:key_abc".
func (c Change) String() string { return string(c.Kind) + ":" + c.ID }

// ParseChange reads the wire form of a Change ("kind:id"); it reports false for anything else,
// an unknown kind included.
func ParseChange(s string) (Change, bool) {
	k, id, ok := strings.Cut(s, ":")
	if !ok {
		return Change{}, false
	}
	switch ChangeKind(k) {
	case ChangeAccount, ChangeWorkspace, ChangeKey, ChangePolicy, ChangeConnection, ChangeRoutable:
		if id == "" {
			return Change{}, false
		}
	case ChangeResync:
	default:
		return Change{}, false
	}
	return Change{Kind: ChangeKind(k), ID: id}, true
}

// ChangeFeed delivers the changes that any process commits to a shared store (the Postgres
// store: LISTEN/NOTIFY). The SQLite store has none: it serves one process, whose admin API
// updates its cache directly.
type ChangeFeed interface {
	// Listen connects, calls f with a ChangeResync once it listens (changes committed before
	// then may have been missed), then with every change committed, in commit order, until
	// ctx is done (it returns nil then) or the connection fails (it returns the error). f must
	// not block for long.
	Listen(ctx context.Context, f func(Change)) error
}

// Feed retry pacing: the pause after a failed Listen doubles from feedRetryMin up to feedRetryMax.
const (
	feedRetryMin = 250 * time.Millisecond
	feedRetryMax = 5 * time.Second
)

// maxTargeted is the most changes applied one by one in one pass; more at once are applied
// by one full Reload.
const maxTargeted = 64

// Follow keeps the cache in step with feed until ctx is done, then returns nil: each change
// reloads just the row it names (a revoked key is evicted at once), a ChangeResync (the feed
// connected or reconnected) reloads everything, and a burst of more than 64 changes at once is
// one full Reload. Changes are applied by one goroutine, coalesced while it works, so a slow
// store delays them but never blocks the feed. A failed feed is logged (at most once per
// 30 s) and reconnected with a growing pause; the poll of Run stays the fallback meanwhile.
// This process's own writes come back through the feed too, which reloads them once more.
func (c *Cache) Follow(ctx context.Context, feed ChangeFeed) error {
	var (
		mu     sync.Mutex
		queued = make(map[Change]struct{})
		wake   = make(chan struct{}, 1)
	)
	push := func(ch Change) {
		mu.Lock()
		queued[ch] = struct{}{}
		mu.Unlock()
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	applied := make(chan struct{})
	go func() {
		defer close(applied)
		for {
			select {
			case <-ctx.Done():
				return
			case <-wake:
			}
			mu.Lock()
			batch := queued
			queued = make(map[Change]struct{})
			mu.Unlock()
			c.applyChanges(ctx, batch)
		}
	}()
	defer func() { <-applied }()

	pause := feedRetryMin
	var lastLog time.Time
	for ctx.Err() == nil {
		began := time.Now()
		err := feed.Listen(ctx, push)
		if ctx.Err() != nil {
			return nil
		}
		if err == nil {
			err = errors.New("the feed ended")
		}
		if time.Since(began) > feedRetryMax { // it was up for a while: start the backoff over
			pause = feedRetryMin
		}
		if now := time.Now(); now.Sub(lastLog) >= 30*time.Second {
			c.logf("accounts: change feed lost, reconnecting (the %v poll covers the gap): %v", c.interval, err)
			lastLog = now
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
		pause = min(2*pause, feedRetryMax)
	}
	return nil
}

// applyChanges applies one coalesced batch of changes; a store error is logged and left to the
// next change or poll.
func (c *Cache) applyChanges(ctx context.Context, batch map[Change]struct{}) {
	if c.onChange != nil {
		for ch := range batch {
			c.onChange(ctx, ch)
		}
	}
	if _, all := batch[Change{Kind: ChangeResync}]; all || len(batch) > maxTargeted {
		if err := c.Reload(ctx); err != nil && ctx.Err() == nil {
			c.logf("%v", err)
		}
		return
	}
	byok := false
	for ch := range batch {
		if ch.Kind == ChangeConnection {
			byok = true // connections are reloaded all at once (they are few, and keyed by key)
			continue
		}
		if err := c.applyChange(ctx, ch); err != nil && ctx.Err() == nil {
			c.logf("accounts: applying change %s: %v", ch, err)
		}
	}
	if byok {
		if _, err := c.loadBYOK(ctx); err != nil && ctx.Err() == nil {
			c.logf("%v", err)
		}
	}
}

// applyChange reloads the one row ch names into the cache.
func (c *Cache) applyChange(ctx context.Context, ch Change) error {
	switch ch.Kind {
	case ChangeKey:
		k, err := c.st.Key(ctx, ch.ID)
		if errors.Is(err, ErrNotFound) {
			c.Evict(ch.ID)
			return nil
		}
		if err != nil {
			return err
		}
		c.PutKey(k)
	case ChangeAccount:
		release := c.hold() // the stored balance, then Pending (RefreshAccount): HoldPending
		defer release()
		a, err := c.st.Account(ctx, ch.ID)
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		c.RefreshAccount(a)
	case ChangeWorkspace:
		w, err := c.st.Workspace(ctx, ch.ID)
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		c.PutWorkspace(w)
	case ChangePolicy:
		p, err := c.st.Policy(ctx, ch.ID)
		if errors.Is(err, ErrNotFound) {
			c.DeletePolicy(ch.ID)
			return nil
		}
		if err != nil {
			return err
		}
		c.PutPolicy(p)
	}
	return nil
}

// RefreshAccount replaces a cached account's billing, settings and balance with a's, read from
// the store now (the balance less the settles still queued, as Reload does), adding it when
// new; the effective settings of its keys are recomputed. The change feed calls it for a
// settings change or a credit made through another replica.
func (c *Cache) RefreshAccount(a *Account) {
	pending := c.pending(a.ID)
	c.mu.Lock()
	e := c.accts[a.ID]
	if e == nil {
		e = new(account)
		c.accts[a.ID] = e
	}
	e.billing, e.balance, e.settings = a.Billing, a.BalanceMicroUSD-pending, a.Settings
	c.rederiveLocked(func(k *KeyInfo) bool { return k.AccountID == a.ID })
	c.mu.Unlock()
}
