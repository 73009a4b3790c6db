package storetest

import (
	"errors"
	"reflect"
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
