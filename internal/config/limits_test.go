package config

import (
	"path/filepath"
	"testing"
)

// TestLimitsProblems: every bad limit of keys[] and accounts[] is reported at its file:line
// (R-BILL-1), and nothing else is.
func TestLimitsProblems(t *testing.T) {
	path := filepath.Join("testdata", "limits.yaml")
	data := mustRead(t, path)
	_, err := parse(path, data, env(nil))
	if err == nil {
		t.Fatal("parse succeeded")
	}
	want := wants(t, data)
	seen := make(map[string]bool)
	for _, p := range problems(t, err) {
		ok := false
		for i, re := range want[p.Line] {
			if re.MatchString(p.Error()) {
				ok = true
				seen[re.String()+string(rune(i))] = true
			}
		}
		if !ok {
			t.Errorf("unexpected problem: %s", p)
		}
	}
	for l, res := range want {
		for i, re := range res {
			if !seen[re.String()+string(rune(i))] {
				t.Errorf("%s:%d: no problem matched %q", path, l, re)
			}
		}
	}
}

// TestLimitsParse: the limits are read as written; zero is no limit; budget_period defaults to
// month.
func TestLimitsParse(t *testing.T) {
	src := `
auth: {required: false}
keys:
  - name: a
    limits: {rpm: 60, tpm: 1000, concurrency: 2, budget_usd: 1.25, budget_period: total}
  - name: b
    account: acme
accounts:
  - id: acme
    limits: {budget_usd: 5}
`
	c, err := Parse("t.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.Keys[0].Limits, (Limits{RPM: 60, TPM: 1000, Concurrency: 2, BudgetUSD: 1.25, BudgetPeriod: "total"}); got != want {
		t.Errorf("keys[0].limits = %+v, want %+v", got, want)
	}
	if c.Keys[1].Limits != (Limits{}) {
		t.Errorf("keys[1].limits = %+v, want zero", c.Keys[1].Limits)
	}
	if len(c.Accounts) != 1 || c.Accounts[0].ID != "acme" || c.Accounts[0].Limits.BudgetUSD != 5 || c.Accounts[0].Limits.Period() != "month" {
		t.Errorf("accounts = %+v", c.Accounts)
	}
}
