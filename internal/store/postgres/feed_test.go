package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/switchyard-gw/switchyard/internal/accounts"
	"github.com/switchyard-gw/switchyard/internal/store/storetest"
)

// TestChangeFeedReachesAnotherStore: writes through one store handle reach the cache of another
// (a second replica, here a second connection pool on the same schema) through LISTEN/NOTIFY,
// long before its 1-hour poll: a revoked key is evicted, a credit and a settings change are
// seen, a policy deleted is gone. The notices are part of the writes' transactions: a rolled
// back update announces nothing.
func TestChangeFeedReachesAnotherStore(t *testing.T) {
	url := storetest.PostgresURL(t)
	writer, reader := open(t, url), open(t, url)
	ctx := context.Background()
	acct := &accounts.Account{ID: "acct_feed", Name: "feed"}
	if err := writer.CreateAccount(ctx, acct); err != nil {
		t.Fatal(err)
	}
	_, prefix, hash := accounts.NewSecret()
	key := &accounts.Key{ID: "key_feed", AccountID: acct.ID, Prefix: prefix, SecretHash: hash}
	if err := writer.CreateKey(ctx, key); err != nil {
		t.Fatal(err)
	}
	cache := accounts.NewCache(reader, accounts.CacheOptions{ReloadInterval: time.Hour})
	if err := cache.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	fctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = cache.Follow(fctx, reader) }()
	defer func() { stop(); <-done }()

	// Changes committed before the feed listens are covered by its first resync reload, so
	// there is no race with the goroutine's start.
	_, p2, h2 := accounts.NewSecret()
	if err := writer.CreateKey(ctx, &accounts.Key{ID: "key_new", AccountID: acct.ID, Prefix: p2, SecretHash: h2}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a key created elsewhere", func() bool { _, ok := cache.Lookup(h2); return ok })

	if _, ok := cache.Lookup(hash); !ok {
		t.Fatal("the first key is not cached")
	}
	if _, err := writer.UpdateKey(ctx, key.ID, func(k *accounts.Key) error { k.RevokedAt = time.Now(); return nil }); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the revoked key to be evicted", func() bool { _, ok := cache.Lookup(hash); return !ok })

	if _, err := writer.Credit(ctx, &accounts.LedgerEntry{AccountID: acct.ID, Kind: accounts.KindCredit, AmountMicroUSD: 1234}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the credit", func() bool { b, _, _ := cache.Balance(acct.ID); return b == 1234 })

	if _, err := writer.UpdateAccount(ctx, acct.ID, func(a *accounts.Account) error {
		a.Settings, a.Billing = []byte(`{"billing":"prepaid"}`), accounts.Prepaid
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the account's billing change", func() bool { return cache.Prepaid(acct.ID) })

	// A failed update (f's error: rolled back) announces nothing, and a later one still arrives.
	if _, err := writer.UpdateAccount(ctx, acct.ID, func(a *accounts.Account) error { return context.Canceled }); err == nil {
		t.Fatal("the failing update succeeded")
	}
	pol := &accounts.Policy{ID: "pol_feed", AccountID: acct.ID, Name: "p"}
	if err := writer.CreatePolicy(ctx, pol); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a policy created elsewhere", func() bool { _, ok := cache.Policy(pol.ID); return ok })
	if err := writer.DeletePolicy(ctx, pol.ID); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a policy deleted elsewhere", func() bool { _, ok := cache.Policy(pol.ID); return !ok })
}

// TestChangeFeedScopedToSchema: a notice of another schema of the same database is not
// delivered; a notice that does not parse is delivered as a resync.
func TestChangeFeedScopedToSchema(t *testing.T) {
	db := open(t, storetest.PostgresURL(t))
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan accounts.Change, 16)
	done := make(chan error, 1)
	go func() { done <- db.Listen(ctx, func(c accounts.Change) { got <- c }) }()
	if c := <-got; c.Kind != accounts.ChangeResync {
		t.Fatalf("first change %v, want a resync", c)
	}
	for _, payload := range []string{"other_schema|key:key_x", db.schema + "|key:key_mine", db.schema + "|bogus"} {
		if _, err := db.db.ExecContext(ctx, `SELECT pg_notify($1, $2)`, "switchyard_changes", payload); err != nil {
			t.Fatal(err)
		}
	}
	if c := <-got; c != (accounts.Change{Kind: accounts.ChangeKey, ID: "key_mine"}) {
		t.Fatalf("got %v, want key:key_mine (the other schema's notice skipped)", c)
	}
	if c := <-got; c.Kind != accounts.ChangeResync {
		t.Fatalf("got %v for an unreadable notice, want a resync", c)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Listen after cancel: %v", err)
	}
}

// waitFor polls cond until it holds, failing t after 10 s (a bound for a loaded CI machine,
// not a latency claim: the multi-process test in internal/replicatest measures that).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
