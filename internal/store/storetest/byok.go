package storetest

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/switchyard-gw/switchyard/internal/accounts"
)

// testPolicies (R-POLICY): a policy reads back as written, order kept; nil order reads back as
// []; unknown account ErrNotFound, duplicate id ErrExists, bad funding refused.
func testPolicies(t *testing.T, st accounts.Store) {
	seed(t, st)
	at := time.Date(2026, 3, 2, 0, 0, 0, 5, time.UTC)
	p := &accounts.Policy{ID: "p1", AccountID: "a1", Name: "byok first", Order: []string{"byok:c1", "dep-b", "dep-a"},
		Funding: accounts.FundingBYOKWithHouseFallback, AttemptLimit: 2, CreatedAt: at}
	must(t, st.CreatePolicy(bg, p))
	got, err := st.Policy(bg, "p1")
	must(t, err)
	if !reflect.DeepEqual(got, p) {
		t.Errorf("Policy = %+v, want %+v", got, p)
	}
	must(t, st.CreatePolicy(bg, &accounts.Policy{ID: "p2", AccountID: "a2"}))
	got, err = st.Policy(bg, "p2")
	must(t, err)
	if got.Order == nil || len(got.Order) != 0 || got.Funding != accounts.FundingHouse || got.CreatedAt.IsZero() {
		t.Errorf("defaults: %+v", got)
	}
	all, err := st.Policies(bg)
	must(t, err)
	if len(all) != 2 {
		t.Errorf("Policies = %d rows, want 2", len(all))
	}
	if err := st.CreatePolicy(bg, &accounts.Policy{ID: "p1", AccountID: "a1"}); !errors.Is(err, accounts.ErrExists) {
		t.Errorf("duplicate id: %v, want ErrExists", err)
	}
	if err := st.CreatePolicy(bg, &accounts.Policy{ID: "p3", AccountID: "nope"}); !errors.Is(err, accounts.ErrNotFound) {
		t.Errorf("unknown account: %v, want ErrNotFound", err)
	}
	if err := st.CreatePolicy(bg, &accounts.Policy{ID: "p4", AccountID: "a1", Funding: "free"}); err == nil {
		t.Error("funding free accepted")
	}
	if _, err := st.Policy(bg, "nope"); !errors.Is(err, accounts.ErrNotFound) {
		t.Errorf("Policy(nope): %v, want ErrNotFound", err)
	}
}

// testConnections (R-KEY-5): a connection reads back as written, API key included (the request
// path needs it); revoked ones are not active; unknown key ErrNotFound, duplicate ErrExists.
func testConnections(t *testing.T, st accounts.Store) {
	seed(t, st)
	at := time.Date(2026, 3, 2, 0, 0, 0, 7, time.UTC)
	c := &accounts.Connection{ID: "c1", KeyID: "k1", Provider: "openai", Dialect: "openai", BaseURL: "https://api.example/v1",
		APIKey: "sk-own-secret", Models: []string{"m1", "m2"}, CreatedAt: at}
	must(t, st.CreateConnection(bg, c))
	must(t, st.CreateConnection(bg, &accounts.Connection{ID: "c2", KeyID: "k1", Provider: "x", Dialect: "anthropic",
		BaseURL: "https://b.example", APIKey: "k", RevokedAt: at}))
	must(t, st.CreateConnection(bg, &accounts.Connection{ID: "c3", KeyID: "k1", Provider: "y", Dialect: "openai",
		BaseURL: "https://c.example/v1", APIKey: "k"}))
	active, err := st.ActiveConnections(bg)
	must(t, err)
	byID := map[string]accounts.Connection{}
	for _, a := range active {
		byID[a.ID] = a
	}
	if len(byID) != 2 || byID["c2"].ID != "" {
		t.Fatalf("ActiveConnections = %+v, want c1 and c3", active)
	}
	if got := byID["c1"]; !reflect.DeepEqual(&got, c) {
		t.Errorf("c1 = %+v, want %+v", got, c)
	}
	if m := byID["c3"].Models; m == nil || len(m) != 0 {
		t.Errorf("c3 models = %#v, want []", m)
	}
	if err := st.CreateConnection(bg, &accounts.Connection{ID: "c1", KeyID: "k1", Provider: "p", Dialect: "openai", BaseURL: "u", APIKey: "k"}); !errors.Is(err, accounts.ErrExists) {
		t.Errorf("duplicate id: %v, want ErrExists", err)
	}
	if err := st.CreateConnection(bg, &accounts.Connection{ID: "c9", KeyID: "nope", Provider: "p", Dialect: "openai", BaseURL: "u", APIKey: "k"}); !errors.Is(err, accounts.ErrNotFound) {
		t.Errorf("unknown key: %v, want ErrNotFound", err)
	}
}

// testPolicyUpdate (R-POLICY, R-ORDER-7): UpdatePolicy writes back name, order, funding and
// attempt limit in place and keeps id, account and creation time; f's error writes nothing;
// a bad funding is refused and writes nothing; "" funding is house; nil order reads back as [];
// unknown id ErrNotFound; concurrent updates serialise (none lost). AccountPolicies lists an
// account's policies oldest first, [] for an account without any or unknown.
func testPolicyUpdate(t *testing.T, st accounts.Store) {
	seed(t, st)
	at := time.Date(2026, 3, 2, 0, 0, 0, 9, time.UTC)
	p := &accounts.Policy{ID: "p1", AccountID: "a1", Name: "first", Order: []string{"dep-a"}, Funding: accounts.FundingHouse, CreatedAt: at}
	must(t, st.CreatePolicy(bg, p))
	got, err := st.UpdatePolicy(bg, "p1", func(p *accounts.Policy) error {
		p.Name, p.Order, p.Funding, p.AttemptLimit = "second", []string{"byok:c1", "dep-b"}, accounts.FundingBYOK, 3
		p.ID, p.AccountID, p.CreatedAt = "other", "a2", time.Unix(1, 0) // not written
		return nil
	})
	must(t, err)
	want := &accounts.Policy{ID: "p1", AccountID: "a1", Name: "second", Order: []string{"byok:c1", "dep-b"},
		Funding: accounts.FundingBYOK, AttemptLimit: 3, CreatedAt: at}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("UpdatePolicy = %+v, want %+v", got, want)
	}
	if stored, err := st.Policy(bg, "p1"); err != nil || !reflect.DeepEqual(stored, want) {
		t.Errorf("after update: %+v, %v; want %+v", stored, err, want)
	}
	if _, err := st.Policy(bg, "other"); !errors.Is(err, accounts.ErrNotFound) {
		t.Errorf("the id was changed: Policy(other) = %v", err)
	}

	boom := errors.New("boom")
	if _, err := st.UpdatePolicy(bg, "p1", func(p *accounts.Policy) error { p.Name = "lost"; return boom }); !errors.Is(err, boom) {
		t.Errorf("f's error: %v, want boom", err)
	}
	if _, err := st.UpdatePolicy(bg, "p1", func(p *accounts.Policy) error { p.Name, p.Funding = "lost", "free"; return nil }); err == nil {
		t.Error("funding free accepted")
	}
	if stored, _ := st.Policy(bg, "p1"); !reflect.DeepEqual(stored, want) {
		t.Errorf("after refused updates: %+v, want %+v", stored, want)
	}
	got, err = st.UpdatePolicy(bg, "p1", func(p *accounts.Policy) error { p.Order, p.Funding = nil, ""; return nil })
	must(t, err)
	if stored, _ := st.Policy(bg, "p1"); got.Funding != accounts.FundingHouse || stored.Funding != accounts.FundingHouse ||
		stored.Order == nil || len(stored.Order) != 0 || got.Order == nil {
		t.Errorf("nil order and \"\" funding: returned %+v, stored %+v", got, stored)
	}
	if _, err := st.UpdatePolicy(bg, "nope", func(*accounts.Policy) error { return nil }); !errors.Is(err, accounts.ErrNotFound) {
		t.Errorf("UpdatePolicy(nope): %v, want ErrNotFound", err)
	}

	const n = 8
	var wg sync.WaitGroup
	errc := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			_, err := st.UpdatePolicy(bg, "p1", func(p *accounts.Policy) error {
				p.Order = append(p.Order, fmt.Sprintf("dep-%d", i))
				return nil
			})
			errc <- err
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		must(t, err)
	}
	if stored, _ := st.Policy(bg, "p1"); len(stored.Order) != n {
		t.Errorf("after %d concurrent appends: order %v", n, stored.Order)
	}

	must(t, st.CreatePolicy(bg, &accounts.Policy{ID: "p0", AccountID: "a1", CreatedAt: at.Add(-time.Hour)}))
	must(t, st.CreatePolicy(bg, &accounts.Policy{ID: "p2", AccountID: "a1", CreatedAt: at.Add(time.Hour)}))
	must(t, st.CreatePolicy(bg, &accounts.Policy{ID: "q1", AccountID: "a2", CreatedAt: at}))
	mine, err := st.AccountPolicies(bg, "a1")
	must(t, err)
	var ids []string
	for _, p := range mine {
		ids = append(ids, p.ID)
	}
	if !reflect.DeepEqual(ids, []string{"p0", "p1", "p2"}) {
		t.Errorf("AccountPolicies(a1) = %v, want [p0 p1 p2]", ids)
	}
	if ps, err := st.AccountPolicies(bg, "nope"); err != nil || ps == nil || len(ps) != 0 {
		t.Errorf("AccountPolicies(nope) = %#v, %v; want []", ps, err)
	}
}

// testConnectionRevoke (R-KEY-5): RevokeConnection takes the connection out of
// ActiveConnections; revoking it again, through another key, or an unknown id is ErrNotFound
// and changes nothing.
func testConnectionRevoke(t *testing.T, st accounts.Store) {
	seed(t, st)
	_, prefix, hash := accounts.NewSecret()
	must(t, st.CreateKey(bg, &accounts.Key{ID: "k2", AccountID: "a2", Name: "other", Prefix: prefix, SecretHash: hash}))
	for _, c := range []*accounts.Connection{
		{ID: "c1", KeyID: "k1", Provider: "openai", Dialect: "openai", BaseURL: "https://a.example/v1", APIKey: "k"},
		{ID: "c2", KeyID: "k1", Provider: "x", Dialect: "anthropic", BaseURL: "https://b.example", APIKey: "k"},
		{ID: "c3", KeyID: "k2", Provider: "y", Dialect: "openai", BaseURL: "https://c.example/v1", APIKey: "k"},
	} {
		must(t, st.CreateConnection(bg, c))
	}
	at := time.Date(2026, 3, 3, 0, 0, 0, 0, time.UTC)
	must(t, st.RevokeConnection(bg, "k1", "c1", at))
	for _, tc := range []struct{ key, conn, why string }{
		{"k1", "c1", "revoked already"},
		{"k1", "c3", "another key's connection"},
		{"k2", "c2", "another key's connection"},
		{"k1", "nope", "unknown connection"},
		{"nope", "c2", "unknown key"},
	} {
		if err := st.RevokeConnection(bg, tc.key, tc.conn, at); !errors.Is(err, accounts.ErrNotFound) {
			t.Errorf("RevokeConnection(%s, %s) (%s): %v, want ErrNotFound", tc.key, tc.conn, tc.why, err)
		}
	}
	active, err := st.ActiveConnections(bg)
	must(t, err)
	var ids []string
	for _, c := range active {
		ids = append(ids, c.ID)
	}
	slices.Sort(ids)
	if !reflect.DeepEqual(ids, []string{"c2", "c3"}) {
		t.Errorf("ActiveConnections after revoking c1 = %v, want [c2 c3]", ids)
	}
}

// testPolicyDelete: a deleted policy is gone from Policy, Policies and AccountPolicies; deleting
// it again, or an unknown id, is ErrNotFound; other policies are untouched.
func testPolicyDelete(t *testing.T, st accounts.Store) {
	seed(t, st)
	at := time.Date(2026, 3, 3, 0, 0, 0, 0, time.UTC)
	must(t, st.CreatePolicy(bg, &accounts.Policy{ID: "p1", AccountID: "a1", Name: "one", CreatedAt: at}))
	must(t, st.CreatePolicy(bg, &accounts.Policy{ID: "p2", AccountID: "a1", Name: "two", CreatedAt: at.Add(time.Second)}))
	must(t, st.DeletePolicy(bg, "p1"))
	if _, err := st.Policy(bg, "p1"); !errors.Is(err, accounts.ErrNotFound) {
		t.Errorf("deleted policy read back: %v", err)
	}
	for _, id := range []string{"p1", "nope"} {
		if err := st.DeletePolicy(bg, id); !errors.Is(err, accounts.ErrNotFound) {
			t.Errorf("DeletePolicy(%q) = %v, want ErrNotFound", id, err)
		}
	}
	ps, err := st.AccountPolicies(bg, "a1")
	must(t, err)
	if len(ps) != 1 || ps[0].ID != "p2" {
		t.Errorf("policies left %+v, want p2 only", ps)
	}
	all, err := st.Policies(bg)
	must(t, err)
	if len(all) != 1 || all[0].ID != "p2" {
		t.Errorf("all policies %+v, want p2 only", all)
	}
}
