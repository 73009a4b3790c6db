package accounts_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/switchyard-gw/switchyard/internal/accounts"
	"github.com/switchyard-gw/switchyard/internal/admission"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestNewSecret: R-KEY-1: "sk-sy-" + 32 base62 characters, a prefix of the 8 after "sk-sy-",
// the SHA-256 of the whole; never twice the same.
func TestNewSecret(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		s, p, h := accounts.NewSecret()
		if len(s) != 38 || !strings.HasPrefix(s, "sk-sy-") || p != s[6:14] || h != sha256.Sum256([]byte(s)) {
			t.Fatalf("secret %q prefix %q", s, p)
		}
		for _, c := range s[6:] {
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
				t.Fatalf("secret %q: %q is not base62", s, c)
			}
		}
		if seen[s] {
			t.Fatal("secret repeated")
		}
		seen[s] = true
	}
	if id := accounts.NewID("acct"); !strings.HasPrefix(id, "acct_") || len(id) != 25 {
		t.Errorf("NewID = %q", id)
	}
}

// TestMergeSettings: contract.md PATCH: present replaces, absent unchanged, null clears;
// shallow; non-objects refused.
func TestMergeSettings(t *testing.T) {
	for _, tc := range []struct{ old, patch, want string }{
		{`{"a":1,"b":2}`, `{"b":3}`, `{"a":1,"b":3}`},
		{`{"a":1,"b":2}`, `{"b":null}`, `{"a":1}`},
		{`{"a":{"x":1,"y":2}}`, `{"a":{"x":5}}`, `{"a":{"x":5}}`},
		{``, `{"a":1}`, `{"a":1}`},
		{`{"a":1}`, `{}`, `{"a":1}`},
		{`{"a":1}`, `{"z":null}`, `{"a":1}`},
	} {
		got, err := accounts.MergeSettings(json.RawMessage(tc.old), json.RawMessage(tc.patch))
		if err != nil || string(got) != tc.want {
			t.Errorf("Merge(%s, %s) = %s, %v; want %s", tc.old, tc.patch, got, err, tc.want)
		}
	}
	for _, bad := range []string{`[1]`, `"x"`, `1`, `{`, `null`} {
		if _, err := accounts.MergeSettings(json.RawMessage(`{}`), json.RawMessage(bad)); err == nil {
			t.Errorf("patch %s accepted", bad)
		}
	}
}

func TestSettingsBilling(t *testing.T) {
	for _, tc := range []struct {
		settings string
		want     accounts.Billing
		ok       bool
	}{
		{``, accounts.Unmetered, true}, {`{}`, accounts.Unmetered, true},
		{`{"billing":"prepaid"}`, accounts.Prepaid, true}, {`{"billing":"unmetered"}`, accounts.Unmetered, true},
		{`{"billing":"postpaid"}`, "", false}, {`{"billing":1}`, "", false},
	} {
		got, err := accounts.SettingsBilling(json.RawMessage(tc.settings))
		if got != tc.want || (err == nil) != tc.ok {
			t.Errorf("SettingsBilling(%s) = %q, %v", tc.settings, got, err)
		}
	}
}

// fakeStore serves ActiveKeys, Accounts and AppendLedger from memory; failN makes the next N
// AppendLedger calls fail.
type fakeStore struct {
	accounts.Store // other methods: not used here
	mu             sync.Mutex
	keys           []accounts.Key
	accts          []accounts.Account
	written        []accounts.LedgerEntry
	batches        int
	failN          int
	onRead         func() // called by ActiveKeys after it read, without the lock
	policies       []accounts.Policy
	conns          []accounts.Connection
}

func (f *fakeStore) ActiveKeys(context.Context) ([]accounts.Key, error) {
	f.mu.Lock()
	keys := append([]accounts.Key(nil), f.keys...)
	onRead := f.onRead
	f.mu.Unlock()
	if onRead != nil {
		onRead()
	}
	return keys, nil
}

func (f *fakeStore) Accounts(context.Context) ([]accounts.Account, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]accounts.Account(nil), f.accts...), nil
}

func (f *fakeStore) AppendLedger(ctx context.Context, es []accounts.LedgerEntry) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failN > 0 {
		f.failN--
		return errors.New("store down")
	}
	f.batches++
	f.written = append(f.written, es...)
	return nil
}

func key(id, secret string) accounts.Key {
	return accounts.Key{ID: id, AccountID: "a1", Name: id, SecretHash: accounts.HashSecret(secret)}
}

// TestCacheReload: keys created elsewhere appear and keys revoked elsewhere disappear at the
// next reload; a key evicted here never comes back, even when the store still lists it (a
// reload that read before the revocation was written); a key put here survives a reload that
// read the store before it was created.
func TestCacheReload(t *testing.T) {
	st := &fakeStore{keys: []accounts.Key{key("k1", "s1"), key("k2", "s2")}}
	c := accounts.NewCache(st, accounts.CacheOptions{})
	ctx := context.Background()
	if err := c.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if k, ok := c.Lookup(accounts.HashSecret("s1")); !ok || k.ID != "k1" || k.AccountID != "a1" {
		t.Fatalf("Lookup s1 = %+v, %v", k, ok)
	}
	c.Evict("k1")
	if _, ok := c.Lookup(accounts.HashSecret("s1")); ok {
		t.Error("evicted key still found")
	}
	k3 := key("k3", "s3")
	st.mu.Lock()
	st.keys = []accounts.Key{key("k1", "s1"), key("k4", "s4")} // k2 revoked elsewhere, k4 created elsewhere
	// k3 is created here while the reload reads: the store as read does not list it.
	st.onRead = func() { c.PutKey(&k3) }
	st.mu.Unlock()
	if err := c.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	for secret, want := range map[string]bool{"s1": false, "s2": false, "s3": true, "s4": true} {
		if _, ok := c.Lookup(accounts.HashSecret(secret)); ok != want {
			t.Errorf("after reload, %s found = %v, want %v", secret, ok, want)
		}
	}
	st.mu.Lock()
	st.onRead = nil
	st.mu.Unlock()
	if err := c.Reload(ctx); err != nil { // k3 is still not in the store: a full reload drops it
		t.Fatal(err)
	}
	if _, ok := c.Lookup(accounts.HashSecret("s3")); ok {
		t.Error("a key neither in the store nor put since the reload began survived it")
	}
	revoked := key("k4", "s4")
	revoked.RevokedAt = time.Now()
	c.PutKey(&revoked)
	if _, ok := c.Lookup(accounts.HashSecret("s4")); ok {
		t.Error("a key put revoked is still found")
	}
}

// TestKeyLayers: R-BILL-1: a stored key is held to its own, its workspace's and its account's
// limits, each under its own admission scope and id, so a workspace's refusal names the
// workspace; layers without limits are left out.
func TestKeyLayers(t *testing.T) {
	c := accounts.NewCache(&fakeStore{}, accounts.CacheOptions{})
	c.PutAccount(&accounts.Account{ID: "a1", Settings: json.RawMessage(`{"limits":{"rpm":30}}`)})
	c.PutWorkspace(&accounts.Workspace{ID: "ws_1", AccountID: "a1", Settings: json.RawMessage(`{"limits":{"rpm":20}}`)})
	k := key("k1", "s1")
	k.WorkspaceID, k.Settings = "ws_1", json.RawMessage(`{"limits":{"rpm":10}}`)
	c.PutKey(&k)
	bare := key("k2", "s2") // no workspace, no limits of its own
	c.PutKey(&bare)
	for _, tc := range []struct {
		secret string
		want   []admission.Layer
	}{
		{"s1", []admission.Layer{
			{Scope: admission.ScopeKey, ID: "k1", Limits: admission.Limits{RPM: 10}},
			{Scope: admission.ScopeWorkspace, ID: "ws_1", Limits: admission.Limits{RPM: 20}},
			{Scope: admission.ScopeAccount, ID: "a1", Limits: admission.Limits{RPM: 30}},
		}},
		{"s2", []admission.Layer{{Scope: admission.ScopeAccount, ID: "a1", Limits: admission.Limits{RPM: 30}}}},
	} {
		info, ok := c.Lookup(accounts.HashSecret(tc.secret))
		if !ok || info.EffectiveErr != nil {
			t.Fatalf("Lookup %s = %+v, %v", tc.secret, info, ok)
		}
		if !slices.Equal(info.Layers, tc.want) {
			t.Errorf("%s layers = %+v, want %+v", tc.secret, info.Layers, tc.want)
		}
	}
}

// TestWriterRetriesAndFlushes: entries are written in batches; a failed batch is retried
// until written, none lost or doubled; Pending counts the settles not yet written; Flush
// waits for them.
func TestWriterRetriesAndFlushes(t *testing.T) {
	st := &fakeStore{failN: 3}
	w := accounts.NewWriter(st, accounts.WriterOptions{BatchSize: 4, FlushInterval: time.Millisecond})
	for i := range 10 {
		w.Append(accounts.LedgerEntry{AccountID: "a1", RequestID: string(rune('a' + i)), Kind: accounts.KindSettle, AmountMicroUSD: 5})
	}
	if p := w.Pending("a1"); p != 50 {
		t.Errorf("Pending = %d, want 50", p)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	fctx, fcancel := context.WithTimeout(ctx, 10*time.Second)
	defer fcancel()
	if err := w.Flush(fctx); err != nil {
		t.Fatal(err)
	}
	st.mu.Lock()
	n, batches := len(st.written), st.batches
	st.mu.Unlock()
	if n != 10 || batches != 3 || w.Pending("a1") != 0 || w.Dropped() != 0 {
		t.Errorf("written %d in %d batches, pending %d, dropped %d", n, batches, w.Pending("a1"), w.Dropped())
	}
	for i, e := range st.written {
		if e.RequestID != string(rune('a'+i)) {
			t.Errorf("entry %d is %q: order lost", i, e.RequestID)
		}
	}
	w.Append(accounts.LedgerEntry{AccountID: "a1", RequestID: "last", Kind: accounts.KindSettle})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if st.written[len(st.written)-1].RequestID != "last" {
		t.Error("Run returned without draining the queue")
	}
}

// TestWriterFullQueueDrops: an entry offered to a full queue is refused and counted, and
// Append never blocks.
func TestWriterFullQueueDrops(t *testing.T) {
	w := accounts.NewWriter(&fakeStore{}, accounts.WriterOptions{QueueSize: 2})
	for i := range 3 {
		if ok := w.Append(accounts.LedgerEntry{Kind: accounts.KindSettle}); ok != (i < 2) {
			t.Errorf("Append %d = %v", i, ok)
		}
	}
	if w.Dropped() != 1 {
		t.Errorf("Dropped = %d", w.Dropped())
	}
}

// TestWriterDrainTimeout: when the store never answers at shutdown, Run gives up after the
// drain timeout and reports the entries lost.
func TestWriterDrainTimeout(t *testing.T) {
	st := &fakeStore{failN: 1 << 30}
	w := accounts.NewWriter(st, accounts.WriterOptions{FlushInterval: time.Millisecond, DrainTimeout: 20 * time.Millisecond})
	w.Append(accounts.LedgerEntry{Kind: accounts.KindSettle, AccountID: "a", AmountMicroUSD: 1})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := w.Run(ctx); err == nil || !strings.Contains(err.Error(), "1 ledger entries not written") {
		t.Errorf("Run = %v", err)
	}
	if w.Dropped() != 1 || w.Pending("a") != 0 {
		t.Errorf("dropped %d pending %d", w.Dropped(), w.Pending("a"))
	}
}

func (f *fakeStore) Policies(context.Context) ([]accounts.Policy, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]accounts.Policy(nil), f.policies...), nil
}

func (f *fakeStore) ActiveConnections(context.Context) ([]accounts.Connection, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]accounts.Connection(nil), f.conns...), nil
}

// TestWriterHoldPending: while a reader holds Pending (a reload between its read of the stored
// balance and its read of Pending), a settle whose batch commits stays counted, so that the
// reload subtracts it at least once (R-BILL-1: a reloaded prepaid balance is never high by the
// settles written during the read); at the release it is no longer pending. A second release
// changes nothing.
func TestWriterHoldPending(t *testing.T) {
	st := &fakeStore{}
	w := accounts.NewWriter(st, accounts.WriterOptions{FlushInterval: time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	defer func() { cancel(); <-done }()
	fctx, fcancel := context.WithTimeout(ctx, 10*time.Second)
	defer fcancel()

	release := w.HoldPending()
	w.Append(accounts.LedgerEntry{AccountID: "a1", RequestID: "r1", Kind: accounts.KindSettle, AmountMicroUSD: 7})
	if err := w.Flush(fctx); err != nil {
		t.Fatal(err)
	}
	st.mu.Lock()
	n := len(st.written)
	st.mu.Unlock()
	if n != 1 {
		t.Fatalf("written %d, want 1", n)
	}
	if p := w.Pending("a1"); p != 7 {
		t.Fatalf("Pending during the hold = %d, want 7 (a settle written during the hold stays counted)", p)
	}
	inner := w.HoldPending() // holds nest: the last release ends them
	release()
	release()
	if p := w.Pending("a1"); p != 7 {
		t.Fatalf("Pending with a hold left = %d, want 7", p)
	}
	inner()
	if p := w.Pending("a1"); p != 0 {
		t.Fatalf("Pending after the release = %d, want 0", p)
	}
	w.Append(accounts.LedgerEntry{AccountID: "a1", RequestID: "r2", Kind: accounts.KindSettle, AmountMicroUSD: 3})
	if err := w.Flush(fctx); err != nil {
		t.Fatal(err)
	}
	if p := w.Pending("a1"); p != 0 {
		t.Fatalf("Pending without a hold after a write = %d, want 0", p)
	}
}
