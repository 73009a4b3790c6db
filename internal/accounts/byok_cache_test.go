package accounts_test

import (
	"context"
	"testing"
	"time"

	"github.com/switchyard-gw/switchyard/internal/accounts"
)

// hookStore is fakeStore with a hook run by ActiveConnections after it has read: a reload is
// then between its store reading and its install.
type hookStore struct {
	*fakeStore
	afterConns func()
}

func (h *hookStore) ActiveConnections(ctx context.Context) ([]accounts.Connection, error) {
	cs, err := h.fakeStore.ActiveConnections(ctx)
	if f := h.afterConns; f != nil {
		h.afterConns = nil
		f()
	}
	return cs, err
}

func ids(cs []accounts.Connection) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.ID)
	}
	return out
}

// TestCacheBYOKPutsSurviveReload: puts made by the admin API while a reload was reading the
// store (which it read before their writes) are not undone by that reload: a revoked
// connection stays out (R-KEY-5: it stops being used at once), a changed policy stays changed,
// a new connection stays in. A reload that began earlier and finishes after a later one does
// not install its older reading.
func TestCacheBYOKPutsSurviveReload(t *testing.T) {
	fs := &fakeStore{
		policies: []accounts.Policy{{ID: "p1", AccountID: "a", Order: []string{"d1"}, Funding: accounts.FundingHouse}},
		conns:    []accounts.Connection{{ID: "c1", KeyID: "k1"}, {ID: "c2", KeyID: "k1"}},
	}
	st := &hookStore{fakeStore: fs}
	c := accounts.NewCache(st, accounts.CacheOptions{})
	ctx := context.Background()
	if err := c.Reload(ctx); err != nil {
		t.Fatal(err)
	}

	// The admin API writes to the store, then puts, while this reload has read the old rows.
	v2 := &accounts.Policy{ID: "p1", AccountID: "a", Order: []string{"d2"}, Funding: accounts.FundingBYOK}
	c3 := accounts.Connection{ID: "c3", KeyID: "k1"}
	st.afterConns = func() {
		fs.mu.Lock()
		fs.policies = []accounts.Policy{*v2}
		fs.conns = []accounts.Connection{{ID: "c2", KeyID: "k1"}, c3}
		fs.mu.Unlock()
		c.PutConnection(&accounts.Connection{ID: "c1", KeyID: "k1", RevokedAt: time.Unix(1, 0)})
		c.PutPolicy(v2)
		c.PutConnection(&c3)
	}
	if err := c.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if got := ids(c.Connections("k1")); len(got) != 2 || got[0] != "c2" || got[1] != "c3" {
		t.Errorf("after a reload that read before the puts: connections %v, want [c2 c3]", got)
	}
	if p, _ := c.Policy("p1"); p == nil || p.Funding != accounts.FundingBYOK || p.Order[0] != "d2" {
		t.Errorf("after a reload that read before the put: policy %+v, want the changed one", p)
	}

	// Reload A reads, then reload B reads a newer store and installs, then A finishes: B's
	// reading stays.
	st.afterConns = func() {
		fs.mu.Lock()
		fs.conns = []accounts.Connection{{ID: "c4", KeyID: "k1"}}
		fs.policies = nil
		fs.mu.Unlock()
		if err := c.Reload(ctx); err != nil { // B
			t.Error(err)
		}
	}
	if err := c.Reload(ctx); err != nil { // A
		t.Fatal(err)
	}
	if got := ids(c.Connections("k1")); len(got) != 1 || got[0] != "c4" {
		t.Errorf("after an older reload finished last: connections %v, want [c4]", got)
	}
	if _, ok := c.Policy("p1"); ok {
		t.Error("after an older reload finished last: p1, deleted from the store, is back")
	}

	// Without a reload in flight, a put is applied and later reloads follow the store.
	c.PutConnection(&accounts.Connection{ID: "c4", KeyID: "k1", RevokedAt: time.Unix(1, 0)})
	if got := c.Connections("k1"); got != nil {
		t.Errorf("after revoking c4: %v", ids(got))
	}
}

// A policy deleted by the admin API while a reload was reading the store (which still had it)
// stays deleted; a delete without a reload in flight is applied at once.
func TestCacheDeletePolicySurvivesReload(t *testing.T) {
	fs := &fakeStore{policies: []accounts.Policy{{ID: "p1", AccountID: "a"}, {ID: "p2", AccountID: "a"}}}
	st := &hookStore{fakeStore: fs}
	c := accounts.NewCache(st, accounts.CacheOptions{})
	ctx := context.Background()
	if err := c.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	st.afterConns = func() {
		fs.mu.Lock()
		fs.policies = []accounts.Policy{{ID: "p2", AccountID: "a"}}
		fs.mu.Unlock()
		c.DeletePolicy("p1")
	}
	if err := c.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Policy("p1"); ok {
		t.Error("a policy deleted during a reload is back")
	}
	c.DeletePolicy("p2")
	if _, ok := c.Policy("p2"); ok {
		t.Error("p2 still cached after DeletePolicy")
	}
}
