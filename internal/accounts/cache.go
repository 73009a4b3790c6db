package accounts

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/switchyard-gw/switchyard/internal/admission"
	"github.com/switchyard-gw/switchyard/internal/layers"
)

// DefaultReloadInterval is how often [Cache.Run] reloads keys and accounts from the store when
// no interval is given: the longest another replica keeps accepting a key revoked elsewhere.
const DefaultReloadInterval = 5 * time.Second

// KeyInfo is what the request path needs of an active stored key. Values are never modified
// once in the cache (an update replaces them), so a *KeyInfo may be kept after the lookup.
type KeyInfo struct {
	ID, AccountID, WorkspaceID, Name string
	Settings                         json.RawMessage
	// Effective is the merge of the key's account, workspace and own settings
	// (layers.Effective), recomputed whenever one of the three is put or reloaded.
	Effective layers.Merged
	// EffectiveErr is non-nil when the stored settings cannot be merged: a settings object the
	// layers package refuses, a conflict, or a workspace the cache does not hold. A key in that
	// state is refused at request time (fail closed).
	EffectiveErr error
	// Layers are the limits the key is held to (key, workspace, account, then the extra layers
	// of CacheOptions.AccountLayers); nil when none limits anything.
	Layers []admission.Layer
}

// account is the cache's view of an account: its billing mode and balance. Prepaid reserves
// are not here: the admission store holds them against its shared balance (internal/billing).
type account struct {
	settings json.RawMessage
	billing  Billing
	balance  int64 // micro-USD: the store's balance minus the settles not yet written
}

type keyEntry struct {
	info *KeyInfo
	gen  uint64 // the reload generation that last saw or put it
}

// Cache holds the active stored keys by SHA-256 and the accounts' billing and balance in
// memory (R-KEY-1; contract.md "Billing"): the request path never waits for the store. Its
// methods are safe for concurrent use. Create it with NewCache, fill it with Reload, and keep
// it fresh with Run.
type Cache struct {
	st       Store
	extra    func(accountID string) []admission.Layer
	interval time.Duration
	pending  func(accountID string) int64
	hold     func() (release func())
	balances func(accountID string, balanceMicroUSD, mark int64)
	marks    func() func(accountID string) int64
	logf     func(string, ...any)
	onChange func(context.Context, Change)

	mu      sync.RWMutex
	keys    map[[sha256.Size]byte]*keyEntry
	byID    map[string][sha256.Size]byte
	revoked map[string]bool // ids revoked in this process: a reload never brings them back
	accts   map[string]*account
	wss     map[string]*workspace
	gen     uint64
	// byok holds the policies and active connections (byok_cache.go).
	byok byokState
}

// CacheOptions configure a Cache. The zero value gives the defaults.
type CacheOptions struct {
	// ReloadInterval is how often Run reloads; zero or negative is DefaultReloadInterval.
	ReloadInterval time.Duration
	// Pending returns the settle costs of an account queued and not yet in the store (the
	// Writer's Pending), subtracted from the stored balance on reload; nil is none.
	Pending func(accountID string) int64
	// HoldPending, when set, keeps Pending's settles counted until the returned release is
	// called (the Writer's HoldPending): a reload holds from before its read of the stored
	// balances until after its read of Pending, so that a settle committed meanwhile is never
	// missed by both (R-BILL-1); nil holds nothing.
	HoldPending func() (release func())
	// Logf logs failed reloads (the store's error only); nil discards.
	Logf func(format string, args ...any)
	// Balances receives each account's balance (the stored balance minus the settles still
	// queued) after every reload, outside the cache's lock, with the account's mark from
	// BalanceMarks: the in-memory admission store of a replica without a shared store takes
	// credits made elsewhere from it (admission.Memory.SyncBalance); nil discards.
	Balances func(accountID string, balanceMicroUSD, mark int64)
	// BalanceMarks, when set, is called by every reload under HoldPending, before the stored
	// balances are read, and returns each account's mark (admission.Memory.BalanceMarks: what
	// was charged so far), handed back to Balances with the balance read after it; nil marks 0.
	BalanceMarks func() (mark func(accountID string) int64)
	// AccountLayers returns limits layers that apply to every stored key of an account besides
	// its stored settings' limits (the configured accounts' limits); nil adds none. It is
	// called with the cache's lock held and must not call the cache.
	AccountLayers func(accountID string) []admission.Layer
	// OnChange, when set, is called by Follow with every change of the feed (resyncs
	// included) before the cache applies them, for state held outside the cache (the
	// server's routable overrides, ChangeRoutable). It runs on Follow's applying goroutine.
	OnChange func(ctx context.Context, ch Change)
}

// NewCache returns an empty cache over st, which must not be nil.
func NewCache(st Store, o CacheOptions) *Cache {
	if st == nil {
		panic("accounts: NewCache with a nil Store")
	}
	if o.ReloadInterval <= 0 {
		o.ReloadInterval = DefaultReloadInterval
	}
	if o.Pending == nil {
		o.Pending = func(string) int64 { return 0 }
	}
	if o.HoldPending == nil {
		o.HoldPending = func() func() { return func() {} }
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if o.Balances == nil {
		o.Balances = func(string, int64, int64) {}
	}
	if o.BalanceMarks == nil {
		o.BalanceMarks = func() func(string) int64 { return func(string) int64 { return 0 } }
	}
	if o.AccountLayers == nil {
		o.AccountLayers = func(string) []admission.Layer { return nil }
	}
	return &Cache{
		st: st, extra: o.AccountLayers, interval: o.ReloadInterval, pending: o.Pending, hold: o.HoldPending, logf: o.Logf,
		onChange: o.OnChange, balances: o.Balances, marks: o.BalanceMarks,
		keys:    make(map[[sha256.Size]byte]*keyEntry),
		byID:    make(map[string][sha256.Size]byte),
		revoked: make(map[string]bool),
		accts:   make(map[string]*account),
		wss:     make(map[string]*workspace),
	}
}

// Lookup returns the active key whose secret hashes to hash. It does not allocate.
func (c *Cache) Lookup(hash [sha256.Size]byte) (*KeyInfo, bool) {
	var info *KeyInfo
	c.mu.RLock()
	if e := c.keys[hash]; e != nil {
		info = e.info // read under the lock: rederiveLocked replaces it under the write lock
	}
	c.mu.RUnlock()
	return info, info != nil
}

// PutKey adds or replaces k in the cache, or removes it when it is revoked. The admin API
// calls it after each write of a key.
func (c *Cache) PutKey(k *Key) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !k.RevokedAt.IsZero() {
		c.evictLocked(k.ID)
		return
	}
	c.putLocked(k, c.gen)
}

func (c *Cache) putLocked(k *Key, gen uint64) {
	if old, ok := c.byID[k.ID]; ok && old != k.SecretHash {
		delete(c.keys, old)
	}
	c.byID[k.ID] = k.SecretHash
	info := &KeyInfo{ID: k.ID, AccountID: k.AccountID, WorkspaceID: k.WorkspaceID, Name: k.Name, Settings: k.Settings}
	c.deriveLocked(info)
	c.keys[k.SecretHash] = &keyEntry{gen: gen, info: info}
}

// Evict removes the key with id at once and for good in this process: a later reload does not
// bring it back even when it read the store before the revocation was written.
func (c *Cache) Evict(id string) {
	c.mu.Lock()
	c.evictLocked(id)
	c.mu.Unlock()
}

func (c *Cache) evictLocked(id string) {
	c.revoked[id] = true
	if h, ok := c.byID[id]; ok {
		delete(c.keys, h)
		delete(c.byID, id)
	}
}

// PutAccount records a's billing mode and settings (the effective settings of its keys are
// recomputed); a new account's balance is taken from a, a known one's is kept (only credits and
// settles change it: credits through AddBalance, settles in the admission store).
func (c *Cache) PutAccount(a *Account) {
	c.mu.Lock()
	if e := c.accts[a.ID]; e != nil {
		e.billing, e.settings = a.Billing, a.Settings
	} else {
		c.accts[a.ID] = &account{billing: a.Billing, balance: a.BalanceMicroUSD, settings: a.Settings}
	}
	c.rederiveLocked(func(k *KeyInfo) bool { return k.AccountID == a.ID })
	c.mu.Unlock()
}

// AddBalance adds deltaMicroUSD to a known account's balance (a credit); unknown accounts are
// ignored.
func (c *Cache) AddBalance(accountID string, deltaMicroUSD int64) {
	c.mu.Lock()
	if e := c.accts[accountID]; e != nil {
		e.balance = admission.AddSat(e.balance, deltaMicroUSD)
	}
	c.mu.Unlock()
}

// SetStoredBalance sets a known account's cached balance from its stored balance just read or
// written (storedMicroUSD; a credit's result), less the settles still queued, as Reload does;
// unknown accounts are ignored. Unlike AddBalance it is idempotent, so a credit applied here by
// the admin API and again by the change feed (RefreshAccount) counts once.
func (c *Cache) SetStoredBalance(accountID string, storedMicroUSD int64) {
	pending := c.pending(accountID)
	c.mu.Lock()
	if e := c.accts[accountID]; e != nil {
		e.balance = storedMicroUSD - pending
	}
	c.mu.Unlock()
}

// Balance returns the cached balance of an account in micro-USD (as of the last reload or
// credit; settles are charged in the admission store, admission.Store.Balance) and whether it
// is known. reserved is always 0: prepaid reserves are held by the admission store.
func (c *Cache) Balance(accountID string) (balance, reserved int64, ok bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	e := c.accts[accountID]
	if e == nil {
		return 0, 0, false
	}
	return e.balance, 0, true
}

// Prepaid reports whether accountID is a known prepaid account, under a read lock: the
// request path asks it before computing a reserve.
func (c *Cache) Prepaid(accountID string) bool {
	c.mu.RLock()
	a := c.accts[accountID]
	ok := a != nil && a.billing == Prepaid
	c.mu.RUnlock()
	return ok
}

// Reload replaces the cache's keys and accounts with the store's: keys revoked elsewhere stop
// working, keys created elsewhere start, and each account's billing, balance (the stored
// balance minus the settles still queued) and settings are refreshed, with the settings of
// every workspace an active key belongs to; every key's effective settings are recomputed. Keys put or evicted in this process
// while the reload reads are kept as put or evicted. It returns the store's error, leaving the
// cache unchanged.
func (c *Cache) Reload(ctx context.Context) error {
	c.mu.Lock()
	c.gen++
	gen := c.gen
	c.mu.Unlock()
	keys, err := c.st.ActiveKeys(ctx)
	if err != nil {
		return fmt.Errorf("accounts: reloading keys: %w", err)
	}
	accts, pending, mark, err := c.balancesHeld(ctx)
	if err != nil {
		return fmt.Errorf("accounts: reloading accounts: %w", err)
	}
	wss, err := c.loadWorkspaces(ctx, keys)
	if err != nil {
		return err
	}
	byok, err := c.loadBYOK(ctx)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.byok = byok
	for i := range accts { // before the keys, whose effective settings read them
		a := &accts[i]
		e := c.accts[a.ID]
		if e == nil {
			e = new(account)
			c.accts[a.ID] = e
		}
		e.billing, e.balance, e.settings = a.Billing, a.BalanceMicroUSD-pending[i], a.Settings
	}
	for i := range wss {
		c.wss[wss[i].ID] = &workspace{accountID: wss[i].AccountID, settings: wss[i].Settings}
	}
	for i := range keys {
		if !c.revoked[keys[i].ID] {
			c.putLocked(&keys[i], gen)
		}
	}
	for id, h := range c.byID {
		if e := c.keys[h]; e != nil && e.gen < gen { // neither in the store nor put since
			delete(c.keys, h)
			delete(c.byID, id)
		}
	}
	c.mu.Unlock()
	for i := range accts {
		c.balances(accts[i].ID, accts[i].BalanceMicroUSD-pending[i], mark(accts[i].ID))
	}
	return nil
}

// balancesHeld reads the stored accounts and then each one's pending settles under one
// HoldPending (released on every path, a panic included), so that a settle committed between
// the two reads is counted at least once (R-BILL-1); the marks (BalanceMarks) are taken first,
// so that a settle charged after them is counted by Balances' receiver even if both reads miss it.
func (c *Cache) balancesHeld(ctx context.Context) ([]Account, []int64, func(string) int64, error) {
	release := c.hold()
	defer release()
	mark := c.marks()
	accts, err := c.st.Accounts(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	pending := make([]int64, len(accts))
	for i := range accts {
		pending[i] = c.pending(accts[i].ID)
	}
	return accts, pending, mark, nil
}

// Run reloads the cache every reload interval until ctx is done, then returns nil. A failed
// reload is logged and the cache kept as it was.
func (c *Cache) Run(ctx context.Context) error {
	t := time.NewTicker(c.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if err := c.Reload(ctx); err != nil && ctx.Err() == nil {
				c.logf("%v", err)
			}
		}
	}
}
