package accounts_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/switchyard-gw/switchyard/internal/accounts"
)

func TestParseChange(t *testing.T) {
	for _, c := range []accounts.Change{{Kind: accounts.ChangeKey, ID: "key_1"}, {Kind: accounts.ChangeAccount, ID: "acct_1:x"},
		{Kind: accounts.ChangeResync}} {
		got, ok := accounts.ParseChange(c.String())
		if !ok || got != c {
			t.Errorf("ParseChange(%q) = %v, %v", c.String(), got, ok)
		}
	}
	for _, s := range []string{"", "key", "key:", "nope:1", "account:"} {
		if c, ok := accounts.ParseChange(s); ok {
			t.Errorf("ParseChange(%q) = %v, want not ok", s, c)
		}
	}
}

// keyStore adds Key to fakeStore: it reads the key by id from keys, revoked included.
type keyStore struct {
	*fakeStore
	revoked map[string]bool
}

func (k *keyStore) Key(_ context.Context, id string) (*accounts.Key, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, key := range k.keys {
		if key.ID == id {
			if k.revoked[id] {
				key.RevokedAt = time.Unix(1, 0)
			}
			return &key, nil
		}
	}
	return nil, accounts.ErrNotFound
}

// scriptedFeed fails its first Listen, then delivers what is sent on changes.
type scriptedFeed struct {
	mu      sync.Mutex
	calls   int
	changes chan accounts.Change
}

func (f *scriptedFeed) Listen(ctx context.Context, fn func(accounts.Change)) error {
	f.mu.Lock()
	f.calls++
	first := f.calls == 1
	f.mu.Unlock()
	if first {
		return errors.New("connection refused")
	}
	fn(accounts.Change{Kind: accounts.ChangeResync})
	for {
		select {
		case <-ctx.Done():
			return nil
		case c := <-f.changes:
			fn(c)
		}
	}
}

// TestFollow: a feed that fails is reconnected (and the failure logged); its resync reloads
// everything; a key change naming a revoked key evicts it without waiting for the poll, and
// one naming a key the store does not have evicts that id.
func TestFollow(t *testing.T) {
	st := &keyStore{fakeStore: &fakeStore{keys: []accounts.Key{key("k1", "s1")}}, revoked: map[string]bool{}}
	var logged sync.WaitGroup
	logged.Add(1)
	var once sync.Once
	c := accounts.NewCache(st, accounts.CacheOptions{ReloadInterval: time.Hour,
		Logf: func(string, ...any) { once.Do(logged.Done) }})
	feed := &scriptedFeed{changes: make(chan accounts.Change)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = c.Follow(ctx, feed) }()
	defer func() { cancel(); <-done }()
	logged.Wait()

	// The resync after the reconnection loads k1 (the cache was never reloaded before).
	waitUntil(t, func() bool { _, ok := c.Lookup(accounts.HashSecret("s1")); return ok })
	st.mu.Lock()
	st.revoked["k1"] = true
	st.mu.Unlock()
	feed.changes <- accounts.Change{Kind: accounts.ChangeKey, ID: "k1"}
	waitUntil(t, func() bool { _, ok := c.Lookup(accounts.HashSecret("s1")); return !ok })
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10 s")
		}
		time.Sleep(2 * time.Millisecond)
	}
}
