package accounts_test

import (
	"context"
	"testing"
	"time"

	"github.com/switchyard-gw/switchyard/internal/accounts"
)

// TestParseFunding: the three funding modes of R-POLICY; "" is house; anything else refused.
func TestParseFunding(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want accounts.Funding
		ok   bool
	}{
		{"", accounts.FundingHouse, true},
		{"house", accounts.FundingHouse, true},
		{"byok", accounts.FundingBYOK, true},
		{"byok_with_house_fallback", accounts.FundingBYOKWithHouseFallback, true},
		{"BYOK", "", false},
		{"free", "", false},
	} {
		got, err := accounts.ParseFunding(tt.in)
		if got != tt.want || (err == nil) != tt.ok {
			t.Errorf("ParseFunding(%q) = %q, %v; want %q, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

// TestCacheBYOK: Reload loads policies and active connections by key (R-KEY-5); PutConnection
// adds and a revoked put removes; the deployment name is byok:<id>; a slice handed out earlier
// is not changed by a later put.
func TestCacheBYOK(t *testing.T) {
	st := &fakeStore{
		policies: []accounts.Policy{{ID: "p1", AccountID: "a", Order: []string{"byok:c1", "d2"}, Funding: accounts.FundingBYOK, AttemptLimit: 2}},
		conns:    []accounts.Connection{{ID: "c1", KeyID: "k1", Provider: "own", Dialect: "openai", APIKey: "x"}},
	}
	c := accounts.NewCache(st, accounts.CacheOptions{})
	if err := c.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	p, ok := c.Policy("p1")
	if !ok || p.Funding != accounts.FundingBYOK || p.AttemptLimit != 2 || len(p.Order) != 2 {
		t.Fatalf("Policy(p1) = %+v, %v", p, ok)
	}
	if _, ok := c.Policy("nope"); ok {
		t.Error("Policy(nope) found")
	}
	before := c.Connections("k1")
	if len(before) != 1 || before[0].Deployment() != "byok:c1" {
		t.Fatalf("Connections(k1) = %+v", before)
	}
	c.PutConnection(&accounts.Connection{ID: "c2", KeyID: "k1", Provider: "own2", Dialect: "anthropic"})
	if got := c.Connections("k1"); len(got) != 2 {
		t.Errorf("after put: %d connections, want 2", len(got))
	}
	if len(before) != 1 {
		t.Error("a slice handed out was changed by PutConnection")
	}
	c.PutConnection(&accounts.Connection{ID: "c1", KeyID: "k1", RevokedAt: time.Unix(1, 0)})
	if got := c.Connections("k1"); len(got) != 1 || got[0].ID != "c2" {
		t.Errorf("after revoking c1: %+v", got)
	}
	c.PutPolicy(&accounts.Policy{ID: "p2", Funding: accounts.FundingHouse})
	if _, ok := c.Policy("p2"); !ok {
		t.Error("PutPolicy not visible")
	}
	if c.Connections("k2") != nil {
		t.Error("a key without connections has some")
	}
}
