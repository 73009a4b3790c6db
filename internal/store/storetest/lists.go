package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/switchyard-gw/switchyard/internal/accounts"
)

// lister is the store's accounts.ListStore; it fails t when the store has none.
func lister(t *testing.T, st accounts.Store) accounts.ListStore {
	t.Helper()
	ls, ok := st.(accounts.ListStore)
	if !ok {
		t.Fatalf("%T does not implement accounts.ListStore", st)
	}
	return ls
}

// pageAll pages through a list limit rows at a time, each page after the last row of the one
// before, calling between(i) after page i (to create rows meanwhile), and returns the ids in
// order. pos gives a row's Position.
func pageAll[T any](t *testing.T, limit int, next func(accounts.Page) ([]T, error), pos func(*T) accounts.Position, between func(int)) []string {
	t.Helper()
	var ids []string
	p := accounts.Page{Limit: limit}
	for i := 0; ; i++ {
		rows, err := next(p)
		must(t, err)
		if len(rows) > limit {
			t.Fatalf("page %d: %d rows, limit %d", i, len(rows), limit)
		}
		for j := range rows {
			ids = append(ids, pos(&rows[j]).ID)
		}
		if len(rows) < limit {
			return ids
		}
		p.After = pos(&rows[len(rows)-1])
		if between != nil {
			between(i)
		}
		if i > 1000 {
			t.Fatal("paging does not end")
		}
	}
}

// testListPaging (docs/admin-api.md "Lists"): accounts list newest first by created_at then id
// (ties broken by id, descending, across a page boundary too); paging by the last row's
// position returns every row exactly once while newer rows are created between pages, and none
// of those; an empty store lists [].
func testListPaging(t *testing.T, st accounts.Store) {
	ls := lister(t, st)
	rows, err := ls.ListAccounts(bg, accounts.Page{Limit: 10})
	must(t, err)
	if rows == nil || len(rows) != 0 {
		t.Fatalf("empty store: %#v, want []", rows)
	}
	base := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	var want []string // newest first
	for i := range 23 {
		// groups of three share a creation time: ids break the tie
		at := base.Add(time.Duration(i/3) * time.Second)
		id := fmt.Sprintf("acct_%02d", i)
		must(t, st.CreateAccount(bg, &accounts.Account{ID: id, Name: id, CreatedAt: at}))
		want = append(want, id)
	}
	slices.SortFunc(want, func(a, b string) int { // (created_at, id) descending
		var ia, ib int
		fmt.Sscanf(a, "acct_%d", &ia)
		fmt.Sscanf(b, "acct_%d", &ib)
		if ia/3 != ib/3 {
			return ib/3 - ia/3
		}
		return ib - ia
	})
	pos := func(a *accounts.Account) accounts.Position {
		return accounts.Position{CreatedAt: a.CreatedAt, ID: a.ID}
	}
	for _, limit := range []int{1, 2, 3, 4, 5, 23, 24, 500} {
		got := pageAll(t, limit, func(p accounts.Page) ([]accounts.Account, error) { return ls.ListAccounts(bg, p) }, pos, nil)
		if !slices.Equal(got, want) {
			t.Fatalf("limit %d: %v, want %v", limit, got, want)
		}
	}
	// rows created while paging are newer than every position handed out: never on a later page
	n := 0
	got := pageAll(t, 4, func(p accounts.Page) ([]accounts.Account, error) { return ls.ListAccounts(bg, p) }, pos, func(int) {
		n++
		id := fmt.Sprintf("acct_new_%02d", n)
		must(t, st.CreateAccount(bg, &accounts.Account{ID: id, Name: id, CreatedAt: base.Add(time.Hour + time.Duration(n)*time.Second)}))
	})
	if !slices.Equal(got, want) {
		t.Fatalf("paging while creating: %v, want %v", got, want)
	}
	got = pageAll(t, 500, func(p accounts.Page) ([]accounts.Account, error) { return ls.ListAccounts(bg, p) }, pos, nil)
	if len(got) != len(want)+n || got[0] != fmt.Sprintf("acct_new_%02d", n) {
		t.Fatalf("after creating %d: %v", n, got)
	}
}

// testListFilters: workspaces and policies by account, keys by account, workspace and
// revocation, connections by key and revocation; each newest first; an unknown id lists [].
func testListFilters(t *testing.T, st accounts.Store) {
	ls := lister(t, st)
	base := time.Date(2026, 5, 2, 0, 0, 0, 0, time.UTC)
	at := func(i int) time.Time { return base.Add(time.Duration(i) * time.Minute) }
	must(t, st.CreateAccount(bg, &accounts.Account{ID: "a1", CreatedAt: at(0)}))
	must(t, st.CreateAccount(bg, &accounts.Account{ID: "a2", CreatedAt: at(1)}))
	must(t, st.CreateWorkspace(bg, &accounts.Workspace{ID: "w1", AccountID: "a1", CreatedAt: at(2)}))
	must(t, st.CreateWorkspace(bg, &accounts.Workspace{ID: "w2", AccountID: "a1", CreatedAt: at(3)}))
	must(t, st.CreateWorkspace(bg, &accounts.Workspace{ID: "w3", AccountID: "a2", CreatedAt: at(4)}))
	key := func(id, acct, ws string, i int, revoked bool) {
		_, prefix, hash := accounts.NewSecret()
		k := &accounts.Key{ID: id, AccountID: acct, WorkspaceID: ws, Prefix: prefix, SecretHash: hash, CreatedAt: at(i)}
		if revoked {
			k.RevokedAt = at(i + 100)
		}
		must(t, st.CreateKey(bg, k))
	}
	key("k1", "a1", "", 5, false)
	key("k2", "a1", "w1", 6, true)
	key("k3", "a1", "w1", 7, false)
	key("k4", "a2", "w3", 8, false)
	for i, p := range []struct{ id, acct string }{{"p1", "a1"}, {"p2", "a2"}, {"p3", "a1"}} {
		must(t, st.CreatePolicy(bg, &accounts.Policy{ID: p.id, AccountID: p.acct, Order: []string{}, Funding: accounts.FundingHouse, CreatedAt: at(10 + i)}))
	}
	for i, c := range []struct {
		id, key string
		revoked bool
	}{{"c1", "k1", false}, {"c2", "k1", true}, {"c3", "k3", false}} {
		conn := &accounts.Connection{ID: c.id, KeyID: c.key, Provider: "openai", Dialect: "openai", BaseURL: "https://x/v1", APIKey: "sk-x", CreatedAt: at(20 + i)}
		if c.revoked {
			conn.RevokedAt = at(30)
		}
		must(t, st.CreateConnection(bg, conn))
	}
	p := accounts.Page{Limit: 100}
	ids := func(what string, n int, id func(int) string, err error, want ...string) {
		t.Helper()
		must(t, err)
		got := []string{}
		for i := range n {
			got = append(got, id(i))
		}
		if want == nil {
			want = []string{}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", what, got, want)
		}
	}
	as, err := ls.ListAccounts(bg, p)
	ids("accounts", len(as), func(i int) string { return as[i].ID }, err, "a2", "a1")
	for _, tc := range []struct {
		acct string
		want []string
	}{{"", []string{"w3", "w2", "w1"}}, {"a1", []string{"w2", "w1"}}, {"a2", []string{"w3"}}, {"nope", nil}} {
		ws, err := ls.ListWorkspaces(bg, tc.acct, p)
		ids("workspaces of "+tc.acct, len(ws), func(i int) string { return ws[i].ID }, err, tc.want...)
	}
	for _, tc := range []struct {
		f    accounts.KeyFilter
		want []string
	}{
		{accounts.KeyFilter{}, []string{"k4", "k3", "k1"}},
		{accounts.KeyFilter{Revoked: accounts.RevokedInclude}, []string{"k4", "k3", "k2", "k1"}},
		{accounts.KeyFilter{Revoked: accounts.RevokedOnly}, []string{"k2"}},
		{accounts.KeyFilter{AccountID: "a1"}, []string{"k3", "k1"}},
		{accounts.KeyFilter{AccountID: "a1", WorkspaceID: "w1", Revoked: accounts.RevokedInclude}, []string{"k3", "k2"}},
		{accounts.KeyFilter{WorkspaceID: "w3"}, []string{"k4"}},
		{accounts.KeyFilter{AccountID: "a2", WorkspaceID: "w1"}, nil},
		{accounts.KeyFilter{AccountID: "nope"}, nil},
	} {
		ks, err := ls.ListKeys(bg, tc.f, p)
		ids(fmt.Sprintf("keys %+v", tc.f), len(ks), func(i int) string { return ks[i].ID }, err, tc.want...)
		for _, k := range ks {
			if k.SecretHash == ([32]byte{}) || k.Prefix == "" {
				t.Errorf("key %s read back without its hash or prefix", k.ID)
			}
		}
	}
	for _, tc := range []struct {
		acct string
		want []string
	}{{"", []string{"p3", "p2", "p1"}}, {"a1", []string{"p3", "p1"}}, {"nope", nil}} {
		ps, err := ls.ListPolicies(bg, tc.acct, p)
		ids("policies of "+tc.acct, len(ps), func(i int) string { return ps[i].ID }, err, tc.want...)
	}
	for _, tc := range []struct {
		key     string
		revoked accounts.Revoked
		want    []string
	}{
		{"", accounts.RevokedExclude, []string{"c3", "c1"}},
		{"", accounts.RevokedInclude, []string{"c3", "c2", "c1"}},
		{"k1", accounts.RevokedInclude, []string{"c2", "c1"}},
		{"k1", accounts.RevokedOnly, []string{"c2"}},
		{"k3", accounts.RevokedExclude, []string{"c3"}},
		{"nope", accounts.RevokedInclude, nil},
	} {
		cs, err := ls.ListConnections(bg, tc.key, tc.revoked, p)
		ids(fmt.Sprintf("connections of %q %d", tc.key, tc.revoked), len(cs), func(i int) string { return cs[i].ID }, err, tc.want...)
	}
	// a page of a filtered list starts after its position like the unfiltered one
	ks, err := ls.ListKeys(bg, accounts.KeyFilter{AccountID: "a1", Revoked: accounts.RevokedInclude},
		accounts.Page{Limit: 1, After: accounts.Position{CreatedAt: at(7), ID: "k3"}})
	ids("keys of a1 after k3", len(ks), func(i int) string { return ks[i].ID }, err, "k2")
}
