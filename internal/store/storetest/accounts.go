package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchyard-gw/switchyard/internal/accounts"
)

// OpenAccounts returns a fresh, empty store for t, closed and removed by a t.Cleanup it
// registers.
type OpenAccounts func(t testing.TB) accounts.Store

// RunAccounts runs the accounts.Store behaviour suite (R-KEY-1, R-BILL-1..4) against fresh
// stores from open, one per subtest.
func RunAccounts(t *testing.T, open OpenAccounts) {
	tests := []struct {
		name string
		test func(t *testing.T, st accounts.Store)
	}{
		{"RoundTrip", testAccountsRoundTrip},
		{"NotFoundAndExists", testAccountsNotFound},
		{"Update", testAccountsUpdate},
		{"ConcurrentUpdates", testAccountsConcurrentUpdates},
		{"Workspaces", testWorkspaces},
		{"Ledger", testLedger},
		{"AccountLedgerSnapshot", testAccountLedgerSnapshot},
		{"CreditBalanceLimit", testCreditBalanceLimit},
		{"LedgerBatchIsOneTransaction", testLedgerAtomic},
		{"SettledSums", testSettledSums},
		{"SeedAcrossPeriodBoundary", testSeedAcrossPeriodBoundary},
		{"SeederExcludes", testSeederExcludes},
		{"ConcurrentSettles", testConcurrentSettles},
		{"LedgerReserveRelease", testLedgerReserveRelease},
		{"LedgerLargeBatch", testLedgerLargeBatch},
		{"LedgerCrashReconcile", testLedgerCrashReconcile},
		{"JournalReplay", testJournalReplay},
		{"ReconcileSparesItself", testReconcileSparesItself},
		{"Policies", testPolicies},
		{"Connections", testConnections},
		{"PolicyUpdate", testPolicyUpdate},
		{"PolicyDelete", testPolicyDelete},
		{"ConnectionRevoke", testConnectionRevoke},
		{"ListPaging", testListPaging},
		{"ListFilters", testListFilters},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.test(t, open(t)) })
	}
}

var bg = context.Background()

// sameJSON fails t unless got and want are the same JSON value (Postgres JSONB reorders keys).
func sameJSON(t *testing.T, what string, got, want json.RawMessage) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: stored %q is not JSON: %v", what, got, err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s = %s, want %s", what, got, want)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// seedCrash seeds st (seed) and credits a1 with micro micro-USD, for the crash tests: it
// returns st's accounts.ReplicaStore.
func seedCrash(t *testing.T, st accounts.Store, micro int64) accounts.ReplicaStore {
	t.Helper()
	rs, ok := st.(accounts.ReplicaStore)
	if !ok {
		t.Fatal("the store does not implement accounts.ReplicaStore")
	}
	seed(t, st)
	_, err := st.Credit(bg, &accounts.LedgerEntry{AccountID: "a1", Kind: accounts.KindCredit, AmountMicroUSD: micro})
	must(t, err)
	return rs
}

// seed stores account a1 (with workspace w1) and a2, and returns a key of a1 in w1.
func seed(t *testing.T, st accounts.Store) *accounts.Key {
	t.Helper()
	at := time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)
	must(t, st.CreateAccount(bg, &accounts.Account{ID: "a1", Name: "Acme", Settings: json.RawMessage(`{"b":1,"a":{"x":[1,2]}}`),
		Billing: accounts.Prepaid, CreatedAt: at}))
	must(t, st.CreateAccount(bg, &accounts.Account{ID: "a2", Name: "Other"}))
	must(t, st.CreateWorkspace(bg, &accounts.Workspace{ID: "w1", AccountID: "a1", Name: "team", CreatedAt: at}))
	_, prefix, hash := accounts.NewSecret()
	k := &accounts.Key{ID: "k1", AccountID: "a1", WorkspaceID: "w1", Name: "ci", Prefix: prefix, SecretHash: hash,
		Settings: json.RawMessage(`{"models":["m"]}`), CreatedAt: at}
	must(t, st.CreateKey(bg, k))
	return k
}

// testAccountsRoundTrip: every field reads back as written; settings absent read back as {};
// the secret hash is stored byte for byte.
func testAccountsRoundTrip(t *testing.T, st accounts.Store) {
	k := seed(t, st)
	a, err := st.Account(bg, "a1")
	must(t, err)
	if a.Name != "Acme" || a.Billing != accounts.Prepaid || a.BalanceMicroUSD != 0 ||
		!a.CreatedAt.Equal(time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)) {
		t.Errorf("account = %+v", a)
	}
	sameJSON(t, "account settings", a.Settings, json.RawMessage(`{"a":{"x":[1,2]},"b":1}`))
	a2, err := st.Account(bg, "a2")
	must(t, err)
	sameJSON(t, "empty settings", a2.Settings, json.RawMessage(`{}`))
	if a2.Billing != accounts.Unmetered || a2.CreatedAt.IsZero() {
		t.Errorf("defaults: %+v", a2)
	}
	w, err := st.Workspace(bg, "w1")
	must(t, err)
	if w.AccountID != "a1" || w.Name != "team" {
		t.Errorf("workspace = %+v", w)
	}
	got, err := st.Key(bg, "k1")
	must(t, err)
	sameJSON(t, "key settings", got.Settings, k.Settings)
	got.Settings, k.Settings = nil, nil
	if !reflect.DeepEqual(got, k) {
		t.Errorf("key\n got %+v\nwant %+v", got, k)
	}
	_, prefix, hash := accounts.NewSecret()
	must(t, st.CreateKey(bg, &accounts.Key{ID: "k2", AccountID: "a2", Prefix: prefix, SecretHash: hash}))
	k2, err := st.Key(bg, "k2")
	must(t, err)
	if k2.WorkspaceID != "" || k2.SecretHash != hash {
		t.Errorf("key without workspace = %+v", k2)
	}
	keys, err := st.ActiveKeys(bg)
	must(t, err)
	accts, err := st.Accounts(bg)
	must(t, err)
	if len(keys) != 2 || len(accts) != 2 {
		t.Errorf("ActiveKeys %d, Accounts %d; want 2, 2", len(keys), len(accts))
	}
}

// testAccountsNotFound: missing parents are ErrNotFound and nothing is stored; taken ids and
// hashes are ErrExists; settings that are not an object are refused.
func testAccountsNotFound(t *testing.T, st accounts.Store) {
	k := seed(t, st)
	_, _, hash := accounts.NewSecret()
	for _, tc := range []struct {
		name string
		err  error
		want error
	}{
		{"account", func() error { _, err := st.Account(bg, "nope"); return err }(), accounts.ErrNotFound},
		{"workspace", func() error { _, err := st.Workspace(bg, "nope"); return err }(), accounts.ErrNotFound},
		{"key", func() error { _, err := st.Key(bg, "nope"); return err }(), accounts.ErrNotFound},
		{"workspace of a missing account", st.CreateWorkspace(bg, &accounts.Workspace{ID: "w9", AccountID: "nope"}), accounts.ErrNotFound},
		{"key of a missing account", st.CreateKey(bg, &accounts.Key{ID: "k9", AccountID: "nope", SecretHash: hash}), accounts.ErrNotFound},
		{"key in another account's workspace", st.CreateKey(bg, &accounts.Key{ID: "k9", AccountID: "a2", WorkspaceID: "w1", SecretHash: hash}), accounts.ErrNotFound},
		{"duplicate account", st.CreateAccount(bg, &accounts.Account{ID: "a1"}), accounts.ErrExists},
		{"duplicate workspace", st.CreateWorkspace(bg, &accounts.Workspace{ID: "w1", AccountID: "a2"}), accounts.ErrExists},
		{"duplicate key id", st.CreateKey(bg, &accounts.Key{ID: "k1", AccountID: "a2", SecretHash: hash}), accounts.ErrExists},
		{"duplicate key hash", st.CreateKey(bg, &accounts.Key{ID: "k8", AccountID: "a2", SecretHash: k.SecretHash}), accounts.ErrExists},
		{"update of a missing key", func() error {
			_, err := st.UpdateKey(bg, "nope", func(*accounts.Key) error { return nil })
			return err
		}(), accounts.ErrNotFound},
	} {
		if !errors.Is(tc.err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, tc.err, tc.want)
		}
	}
	if err := st.CreateAccount(bg, &accounts.Account{ID: "a3", Settings: json.RawMessage(`[1]`)}); err == nil {
		t.Error("settings [1] accepted")
	}
	for _, id := range []string{"k9", "k8"} {
		if _, err := st.Key(bg, id); !errors.Is(err, accounts.ErrNotFound) {
			t.Errorf("refused key %s stored: %v", id, err)
		}
	}
}

// testAccountsUpdate: an update writes what f changed; f's error writes nothing; a revoked
// key leaves ActiveKeys; ids and balance are not changed by an update.
func testAccountsUpdate(t *testing.T, st accounts.Store) {
	seed(t, st)
	a, err := st.UpdateAccount(bg, "a1", func(a *accounts.Account) error {
		a.Settings = json.RawMessage(`{"billing":"unmetered"}`)
		a.Billing, a.Name, a.BalanceMicroUSD, a.ID = accounts.Unmetered, "Acme 2", 999, "zzz"
		return nil
	})
	must(t, err)
	if a.ID != "a1" {
		t.Errorf("update returned id %q", a.ID)
	}
	got, err := st.Account(bg, "a1")
	must(t, err)
	if got.Name != "Acme 2" || got.Billing != accounts.Unmetered || got.BalanceMicroUSD != 0 {
		t.Errorf("after update: %+v", got)
	}
	sameJSON(t, "updated settings", got.Settings, json.RawMessage(`{"billing":"unmetered"}`))
	boom := errors.New("boom")
	if _, err := st.UpdateWorkspace(bg, "w1", func(w *accounts.Workspace) error { w.Name = "x"; return boom }); !errors.Is(err, boom) {
		t.Errorf("f's error: %v", err)
	}
	if w, _ := st.Workspace(bg, "w1"); w.Name != "team" {
		t.Errorf("a failed update wrote %q", w.Name)
	}
	if _, err := st.UpdateKey(bg, "k1", func(k *accounts.Key) error { k.Settings = json.RawMessage(`"x"`); return nil }); err == nil {
		t.Error("settings \"x\" accepted")
	}
	revoked := time.Date(2026, 4, 1, 0, 0, 0, 5, time.UTC)
	_, err = st.UpdateKey(bg, "k1", func(k *accounts.Key) error { k.RevokedAt = revoked; return nil })
	must(t, err)
	k, err := st.Key(bg, "k1")
	must(t, err)
	if !k.RevokedAt.Equal(revoked) {
		t.Errorf("revoked_at = %v", k.RevokedAt)
	}
	keys, err := st.ActiveKeys(bg)
	must(t, err)
	if len(keys) != 0 {
		t.Errorf("ActiveKeys after revocation: %+v", keys)
	}
}

// testWorkspaces: Workspaces lists every workspace of the account named and no other's, with
// every field as stored, including a workspace no key belongs to (the conflict check of R-KEY-3
// must see it); an account with none, or no such account, is an empty non-nil slice.
func testWorkspaces(t *testing.T, st accounts.Store) {
	seed(t, st) // a1 with w1 (holding k1), a2 with none
	at := time.Date(2026, 3, 2, 8, 0, 0, 42, time.UTC)
	must(t, st.CreateWorkspace(bg, &accounts.Workspace{ID: "w2", AccountID: "a1", Name: "keyless",
		Settings: json.RawMessage(`{"tier_scope":"value"}`), CreatedAt: at}))
	must(t, st.CreateAccount(bg, &accounts.Account{ID: "a3"}))
	must(t, st.CreateWorkspace(bg, &accounts.Workspace{ID: "w3", AccountID: "a3", Name: "other"}))

	got, err := st.Workspaces(bg, "a1")
	must(t, err)
	slices.SortFunc(got, func(a, b accounts.Workspace) int { return strings.Compare(a.ID, b.ID) })
	if len(got) != 2 || got[0].ID != "w1" || got[1].ID != "w2" {
		t.Fatalf("Workspaces(a1) = %+v; want w1, w2", got)
	}
	w2 := got[1]
	if w2.AccountID != "a1" || w2.Name != "keyless" || !w2.CreatedAt.Equal(at) {
		t.Errorf("w2 = %+v", w2)
	}
	sameJSON(t, "w2 settings", w2.Settings, json.RawMessage(`{"tier_scope":"value"}`))
	sameJSON(t, "w1 settings", got[0].Settings, json.RawMessage(`{}`))
	for _, acct := range []string{"a2", "nope"} {
		none, err := st.Workspaces(bg, acct)
		if err != nil || none == nil || len(none) != 0 {
			t.Errorf("Workspaces(%s) = %#v, %v; want an empty slice", acct, none, err)
		}
	}
}

// testAccountsConcurrentUpdates: concurrent read-modify-write updates of one row serialise:
// no field set by one is lost to another (the PATCH merge relies on it).
func testAccountsConcurrentUpdates(t *testing.T, st accounts.Store) {
	seed(t, st)
	const n = 8
	var wg sync.WaitGroup
	errc := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			_, err := st.UpdateAccount(bg, "a2", func(a *accounts.Account) error {
				merged, err := accounts.MergeSettings(a.Settings, json.RawMessage(fmt.Sprintf(`{"f%d":%d}`, i, i)))
				a.Settings = merged
				return err
			})
			errc <- err
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		if err != nil {
			t.Error(err)
		}
	}
	a, err := st.Account(bg, "a2")
	must(t, err)
	var m map[string]int
	must(t, json.Unmarshal(a.Settings, &m))
	if len(m) != n {
		t.Errorf("after %d concurrent updates: %s", n, a.Settings)
	}
}

func settle(acct, req string, micro int64) accounts.LedgerEntry {
	return accounts.LedgerEntry{At: time.Date(2026, 3, 1, 12, 0, 0, 7, time.UTC), AccountID: acct, KeyID: "k1",
		RequestID: req, Model: "gpt-4o-mini", Deployment: "oa-primary", Kind: accounts.KindSettle,
		Tokens: accounts.Tokens{Input: 11, Cached: 22, CacheWrite: 33, Output: 44, Reasoning: 5}, AmountMicroUSD: micro,
		Mark: accounts.MarkUpstreamTruncated, UsageProvenance: "estimated"}
}

// testLedger: credits and settles change the balance in their transaction; the balance is
// credits minus settles; a settle written twice (a retried batch) bills once; entries of an
// account that is not stored (a static key's) are kept; the ledger reads newest first.
func testLedger(t *testing.T, st accounts.Store) {
	seed(t, st)
	bal, err := st.Credit(bg, &accounts.LedgerEntry{AccountID: "a1", Kind: accounts.KindCredit, AmountMicroUSD: 5_000_000})
	must(t, err)
	if bal != 5_000_000 {
		t.Errorf("balance after credit = %d", bal)
	}
	if _, err := st.Credit(bg, &accounts.LedgerEntry{AccountID: "nope", Kind: accounts.KindCredit, AmountMicroUSD: 1}); !errors.Is(err, accounts.ErrNotFound) {
		t.Errorf("credit of a missing account: %v", err)
	}
	if _, err := st.Credit(bg, &accounts.LedgerEntry{AccountID: "a1", Kind: accounts.KindCredit, AmountMicroUSD: -1}); err == nil {
		t.Error("negative credit accepted")
	}
	must(t, st.AppendLedger(bg, []accounts.LedgerEntry{settle("a1", "r1", 1234), settle("static", "r2", 77), settle("a1", "r3", 0)}))
	must(t, st.AppendLedger(bg, []accounts.LedgerEntry{settle("a1", "r1", 1234), settle("a1", "r4", 1)})) // r1 again: skipped
	a, err := st.Account(bg, "a1")
	must(t, err)
	if want := int64(5_000_000 - 1234 - 1); a.BalanceMicroUSD != want {
		t.Errorf("balance = %d, want %d", a.BalanceMicroUSD, want)
	}
	es, err := st.Ledger(bg, "a1", 0)
	must(t, err)
	if len(es) != 4 {
		t.Fatalf("ledger has %d entries, want 4: %+v", len(es), es)
	}
	for i, want := range []string{"r4", "r3", "r1", ""} {
		if es[i].RequestID != want {
			t.Errorf("entry %d is %q, want %q (newest first)", i, es[i].RequestID, want)
		}
	}
	if es[3].Kind != accounts.KindCredit || es[3].AmountMicroUSD != 5_000_000 || es[3].At.IsZero() {
		t.Errorf("credit entry %+v", es[3])
	}
	want := settle("a1", "r1", 1234)
	want.ID = es[2].ID
	if !reflect.DeepEqual(es[2], want) {
		t.Errorf("settle entry\n got %+v\nwant %+v", es[2], want)
	}
	if es, _ := st.Ledger(bg, "a1", 2); len(es) != 2 || es[0].RequestID != "r4" {
		t.Errorf("limit 2: %+v", es)
	}
	if es, _ := st.Ledger(bg, "static", 0); len(es) != 1 || es[0].AmountMicroUSD != 77 {
		t.Errorf("static account's ledger: %+v", es)
	}
	if es, err := st.Ledger(bg, "none", 0); err != nil || es == nil || len(es) != 0 {
		t.Errorf("empty ledger: %v, %v (want [], nil)", es, err)
	}
}

// maxBalance is the cap a credit may take a balance to (accountsql.MaxBalanceMicroUSD): 1e12 USD.
const maxBalance int64 = 1_000_000_000_000_000_000

// testCreditBalanceLimit: a credit may take the balance up to exactly 1e18 micro-USD (1e12
// USD); one that would take it above, even by far more than int64 holds, is
// accounts.ErrBalanceLimit (not a database range error) and changes neither the balance nor
// the ledger. An unknown account is still ErrNotFound.
func testCreditBalanceLimit(t *testing.T, st accounts.Store) {
	seed(t, st)
	credit := func(acct string, micro int64) (int64, error) {
		return st.Credit(bg, &accounts.LedgerEntry{At: time.Now().UTC(), AccountID: acct, Kind: accounts.KindCredit, AmountMicroUSD: micro})
	}
	if bal, err := credit("a1", maxBalance-1); err != nil || bal != maxBalance-1 {
		t.Fatalf("credit to just below the cap: %d, %v", bal, err)
	}
	if bal, err := credit("a1", 1); err != nil || bal != maxBalance {
		t.Fatalf("credit to exactly the cap: %d, %v", bal, err)
	}
	for _, micro := range []int64{1, maxBalance, 1<<63 - 1} {
		if _, err := credit("a1", micro); !errors.Is(err, accounts.ErrBalanceLimit) {
			t.Errorf("credit of %d above the cap: %v, want ErrBalanceLimit", micro, err)
		}
	}
	if _, err := credit("a2", maxBalance+1); !errors.Is(err, accounts.ErrBalanceLimit) {
		t.Errorf("one credit above the cap on an empty balance: %v, want ErrBalanceLimit", err)
	}
	if _, err := credit("nope", 1<<63-1); !errors.Is(err, accounts.ErrNotFound) {
		t.Errorf("credit of a missing account: %v, want ErrNotFound", err)
	}
	a, err := st.Account(bg, "a1")
	must(t, err)
	if a.BalanceMicroUSD != maxBalance {
		t.Errorf("balance after refused credits = %d, want %d", a.BalanceMicroUSD, maxBalance)
	}
	if es, err := st.Ledger(bg, "a1", 0); err != nil || len(es) != 2 {
		t.Errorf("ledger after refused credits: %d entries, %v; want the 2 accepted credits", len(es), err)
	}
	if es, err := st.Ledger(bg, "a2", 0); err != nil || len(es) != 0 {
		t.Errorf("ledger of a2: %+v, %v; want none", es, err)
	}
}

// testLedgerAtomic: a batch with a bad entry writes nothing, balance included.
func testLedgerAtomic(t *testing.T, st accounts.Store) {
	seed(t, st)
	bad := settle("a1", "r2", 5)
	bad.Kind = "bogus"
	if err := st.AppendLedger(bg, []accounts.LedgerEntry{settle("a1", "r1", 100), bad}); err == nil {
		t.Fatal("an entry of kind bogus was accepted")
	}
	a, err := st.Account(bg, "a1")
	must(t, err)
	es, err := st.Ledger(bg, "a1", 0)
	must(t, err)
	if a.BalanceMicroUSD != 0 || len(es) != 0 {
		t.Errorf("after a failed batch: balance %d, %d entries", a.BalanceMicroUSD, len(es))
	}
	must(t, st.AppendLedger(bg, nil))
}

// testConcurrentSettles: concurrent batches and credits change the balance exactly.
func testConcurrentSettles(t *testing.T, st accounts.Store) {
	seed(t, st)
	const writers, batches = 4, 10
	var wg sync.WaitGroup
	errc := make(chan error, 2*writers)
	for w := range writers {
		wg.Go(func() {
			for b := range batches {
				if err := st.AppendLedger(bg, []accounts.LedgerEntry{settle("a1", fmt.Sprintf("w%d-%d-a", w, b), 3),
					settle("a1", fmt.Sprintf("w%d-%d-b", w, b), 4)}); err != nil {
					errc <- err
					return
				}
			}
		})
		wg.Go(func() {
			for range batches {
				if _, err := st.Credit(bg, &accounts.LedgerEntry{AccountID: "a1", Kind: accounts.KindCredit, AmountMicroUSD: 10}); err != nil {
					errc <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	a, err := st.Account(bg, "a1")
	must(t, err)
	if want := int64(writers * batches * (10 - 7)); a.BalanceMicroUSD != want {
		t.Errorf("balance = %d, want %d", a.BalanceMicroUSD, want)
	}
}

// testLedgerReserveRelease: reserve and release entries (R-BILL-1) are stored as written and
// change no balance, whether a request settles, releases, or is still in flight (a reserve
// alone); a retried batch (its commit lost) bills its settle once and leaves the balance
// exactly where one write left it, and stores its reserve and release entries once too (one
// entry of each kind per request: store migration 0007); a reserve reads back older than the
// settle or release that ends it.
func testLedgerReserveRelease(t *testing.T, st accounts.Store) {
	seed(t, st)
	_, err := st.Credit(bg, &accounts.LedgerEntry{AccountID: "a1", Kind: accounts.KindCredit, AmountMicroUSD: 10_000})
	must(t, err)
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	entry := func(kind accounts.Kind, req string, micro int64, after time.Duration) accounts.LedgerEntry {
		e := accounts.LedgerEntry{At: at.Add(after), AccountID: "a1", KeyID: "k1", RequestID: req, Model: "gpt-4o-mini",
			Kind: kind, AmountMicroUSD: micro}
		if kind == accounts.KindSettle {
			e.Deployment, e.Tokens = "oa-primary", accounts.Tokens{Input: 7, Output: 3}
		}
		return e
	}
	batch := []accounts.LedgerEntry{
		entry(accounts.KindReserve, "served", 900, 0),
		entry(accounts.KindReserve, "failed", 800, 1),
		entry(accounts.KindSettle, "served", 307, 2),
		entry(accounts.KindRelease, "failed", 800, 3),
		entry(accounts.KindReserve, "in-flight", 700, 4),
	}
	balance := func() int64 {
		t.Helper()
		a, err := st.Account(bg, "a1")
		must(t, err)
		return a.BalanceMicroUSD
	}
	must(t, st.AppendLedger(bg, batch))
	if got, want := balance(), int64(10_000-307); got != want {
		t.Errorf("balance after reserve, settle, release = %d, want %d (only the settle changes it)", got, want)
	}
	es, err := st.Ledger(bg, "a1", 0)
	must(t, err)
	if len(es) != len(batch)+1 {
		t.Fatalf("ledger has %d entries, want %d: %+v", len(es), len(batch)+1, es)
	}
	for i := range batch { // newest first: es[0] is batch[4], es[4] batch[0]
		want := batch[i]
		got := es[len(batch)-1-i]
		want.ID = got.ID
		if !reflect.DeepEqual(got, want) {
			t.Errorf("entry %d\n got %+v\nwant %+v", i, got, want)
		}
	}

	must(t, st.AppendLedger(bg, batch)) // the same batch again: a retry after a lost commit
	if got, want := balance(), int64(10_000-307); got != want {
		t.Errorf("balance after a retried batch = %d, want %d", got, want)
	}
	es, err = st.Ledger(bg, "a1", 0)
	must(t, err)
	count := map[string]int{}
	for _, e := range es {
		count[string(e.Kind)+" "+e.RequestID]++
	}
	if count["settle served"] != 1 {
		t.Errorf("a retried batch stored %d settles of one request, want 1", count["settle served"])
	}
	for _, k := range []string{"reserve served", "reserve failed", "release failed", "reserve in-flight"} {
		if n := count[k]; n != 1 {
			t.Errorf("%s stored %d times after two writes of one batch, want 1", k, n)
		}
	}
	if a2, err := st.Account(bg, "a2"); err != nil || a2.BalanceMicroUSD != 0 {
		t.Errorf("another account changed: %+v, %v", a2, err)
	}
}

// testLedgerLargeBatch: a batch far larger than one statement's worth of rows is still one
// transaction that bills each settle once, across accounts, a settle repeated in a later part of
// the batch included, and keeps the order of writing.
func testLedgerLargeBatch(t *testing.T, st accounts.Store) {
	seed(t, st)
	const n = 1500
	var batch []accounts.LedgerEntry
	var want1, want2 int64
	for i := range n {
		acct := "a1"
		if i%3 == 0 {
			acct = "a2"
		}
		e := settle(acct, fmt.Sprintf("r%d", i), int64(i%7))
		if i%2 == 1 {
			e.Kind = accounts.KindReserve
		} else if acct == "a1" {
			want1 += e.AmountMicroUSD
		} else {
			want2 += e.AmountMicroUSD
		}
		batch = append(batch, e)
	}
	batch = append(batch, settle("a1", "r2", 1000), settle("a2", "r1200", 99)) // settled above: skipped
	must(t, st.AppendLedger(bg, batch))
	for acct, want := range map[string]int64{"a1": -want1, "a2": -want2} {
		a, err := st.Account(bg, acct)
		must(t, err)
		if a.BalanceMicroUSD != want {
			t.Errorf("%s balance = %d, want %d", acct, a.BalanceMicroUSD, want)
		}
	}
	es, err := st.Ledger(bg, "a1", 0)
	must(t, err)
	if len(es) != n-n/3 {
		t.Fatalf("a1 has %d entries, want %d", len(es), n-n/3)
	}
	if es[0].RequestID != "r1499" || es[len(es)-1].RequestID != "r1" {
		t.Errorf("a1 newest %s, oldest %s; want r1499, r1", es[0].RequestID, es[len(es)-1].RequestID)
	}
}

// testSettledSums: SettledMicroUSD sums the settles of one key, workspace or account from a
// time on (the admission store's seeds, R-BILL-4); reserves, releases and credits do not count.
func testSettledSums(t *testing.T, st accounts.Store) {
	sr, ok := st.(accounts.SpendReader)
	if !ok {
		t.Skip("the store does not read spend back")
	}
	seed(t, st)
	day := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	e := func(kind accounts.Kind, key, req string, at time.Time, micro int64) accounts.LedgerEntry {
		return accounts.LedgerEntry{At: at, AccountID: "a1", KeyID: key, RequestID: req, Kind: kind, AmountMicroUSD: micro}
	}
	must(t, st.AppendLedger(bg, []accounts.LedgerEntry{
		e(accounts.KindSettle, "k1", "r1", day.Add(-time.Second), 100),
		e(accounts.KindSettle, "k1", "r2", day, 20),
		e(accounts.KindSettle, "static", "r3", day.Add(time.Hour), 3),
		e(accounts.KindReserve, "k1", "r4", day.Add(time.Hour), 5000),
		e(accounts.KindRelease, "k1", "r4", day.Add(time.Hour), 5000),
	}))
	for _, tc := range []struct {
		f    accounts.SettleFilter
		want int64
	}{
		{accounts.SettleFilter{KeyID: "k1"}, 120},
		{accounts.SettleFilter{KeyID: "k1", From: day}, 20},
		{accounts.SettleFilter{WorkspaceID: "w1", From: day}, 20},
		{accounts.SettleFilter{AccountID: "a1"}, 123},
		{accounts.SettleFilter{AccountID: "a1", From: day}, 23},
		{accounts.SettleFilter{KeyID: "nobody"}, 0},
		// a seed whose admission store counts some settles itself (its float) leaves them out
		{accounts.SettleFilter{KeyID: "k1", Exclude: []string{"r2"}}, 100},
		{accounts.SettleFilter{AccountID: "a1", Exclude: []string{"r1", "r3", "r4", "nope"}}, 20},
		{accounts.SettleFilter{WorkspaceID: "w1", From: day, Exclude: []string{"r2"}}, 0},
	} {
		got, err := sr.SettledMicroUSD(bg, tc.f)
		must(t, err)
		if got != tc.want {
			t.Errorf("SettledMicroUSD(%+v) = %d, want %d", tc.f, got, tc.want)
		}
	}
	if _, err := sr.SettledMicroUSD(bg, accounts.SettleFilter{}); err == nil {
		t.Error("an empty filter was accepted")
	}
	br, ok := st.(accounts.BalanceReader)
	if !ok {
		return
	}
	a, err := st.Account(bg, "a1")
	must(t, err)
	for _, tc := range []struct {
		exclude []string
		want    int64
	}{
		{nil, a.BalanceMicroUSD},
		{[]string{"r1", "r3", "nope"}, a.BalanceMicroUSD + 103},
		{[]string{"r4"}, a.BalanceMicroUSD}, // a reserve and a release change no balance
	} {
		got, found, err := br.BalanceExcludingMicroUSD(bg, "a1", tc.exclude)
		must(t, err)
		if !found || got != tc.want {
			t.Errorf("BalanceExcludingMicroUSD(a1, %v) = %d, %v; want %d", tc.exclude, got, found, tc.want)
		}
	}
	if _, found, err := br.BalanceExcludingMicroUSD(bg, "nobody", []string{"r1"}); found || err != nil {
		t.Errorf("an unknown account: found %v, err %v", found, err)
	}
}

// testLedgerCrashReconcile: the reserves a dead replica left open (no settle or release) are
// listed once its heartbeat is older than the timeout, and only then: a live replica's, a
// fresh one's and an ended one's are not. The Reconciler closes them (a settle at the audited
// cost for a request the audit has committed, a release marked unsettled-crash for one it does
// not have), each once however often it runs, and a late settle of a crash-released request
// still bills it once.
func testLedgerCrashReconcile(t *testing.T, st accounts.Store) {
	rs := seedCrash(t, st, 10_000)
	now := time.Now()
	must(t, rs.Heartbeat(bg, "rep_live", now.Add(-time.Hour), now))
	must(t, rs.Heartbeat(bg, "rep_dead", now.Add(-time.Hour), now.Add(-time.Minute)))
	reserve := func(req, replica string, age time.Duration) accounts.LedgerEntry {
		return accounts.LedgerEntry{At: now.Add(-age), AccountID: "a1", KeyID: "k1", RequestID: req, Model: "gpt-4o-mini",
			Kind: accounts.KindReserve, AmountMicroUSD: 900, Replica: replica}
	}
	must(t, st.AppendLedger(bg, []accounts.LedgerEntry{
		reserve("dead-served", "rep_dead", 50*time.Second),
		reserve("live", "rep_live", 49*time.Second),
		reserve("unknown-replica", "rep_never_seen", 48*time.Second),
		reserve("dead-ended", "rep_dead", 47*time.Second),
		{At: now, AccountID: "a1", RequestID: "dead-ended", Kind: accounts.KindRelease, AmountMicroUSD: 900},
		reserve("dead-fresh", "rep_dead", 0),
	}))
	open, err := rs.OpenReserves(bg, now.Add(-10*time.Second), "rep_me", 100)
	must(t, err)
	var ids []string
	for _, e := range open {
		ids = append(ids, e.RequestID)
	}
	if want := []string{"dead-served", "unknown-replica"}; !reflect.DeepEqual(ids, want) {
		t.Fatalf("open reserves of replicas gone = %v, want %v", ids, want)
	}
	if e := open[0]; e.AmountMicroUSD != 900 || e.AccountID != "a1" || e.KeyID != "k1" || e.Replica != "rep_dead" || e.Model != "gpt-4o-mini" {
		t.Errorf("open reserve %+v", e)
	}

	var marks []string
	audit := func(_ context.Context, rid string) (accounts.LedgerEntry, bool, bool, error) {
		if rid == "dead-served" {
			return accounts.LedgerEntry{Model: "gpt-4o-mini", Deployment: "oa", AmountMicroUSD: 123, Tokens: accounts.Tokens{Input: 5, Output: 2},
				UsageProvenance: "observed"}, true, true, nil
		}
		return accounts.LedgerEntry{}, false, false, nil
	}
	r := accounts.NewReconciler(st, rs, "rep_me", accounts.ReconcilerOptions{ReplicaTimeout: 10 * time.Second, Audit: audit,
		Count: func(m string) { marks = append(marks, m) }})
	n, err := r.Reconcile(bg, now)
	must(t, err)
	if n != 2 || !reflect.DeepEqual(marks, []string{accounts.MarkAuditSettled, accounts.MarkUnsettledCrash}) {
		t.Errorf("reconciled %d entries with marks %v, want 2: audit-settled, unsettled-crash", n, marks)
	}
	for range 2 { // again, and a second reconciler at once: nothing more
		n, err = accounts.NewReconciler(st, rs, "rep_other", accounts.ReconcilerOptions{Audit: audit}).Reconcile(bg, now)
		must(t, err)
		if n != 0 {
			t.Errorf("a second reconciliation wrote %d entries, want 0", n)
		}
	}
	// A reconciler that read the open reserves before the first one closed them (two replicas
	// at once): its ends are skipped by the store, and it counts none of them (the metric
	// switchyard_ledger_reconciled_total counts each close once).
	var raced []string
	n, err = accounts.NewReconciler(st, staleOpen{ReplicaStore: rs, open: open}, "rep_racer", accounts.ReconcilerOptions{
		Audit: audit, Count: func(m string) { raced = append(raced, m) }}).Reconcile(bg, now)
	must(t, err)
	if n != 0 || len(raced) != 0 {
		t.Errorf("a reconciler racing the first wrote %d entries and counted %v, want none", n, raced)
	}
	// Two reconcilers that both read the reserve before either wrote: the unique indexes keep
	// one settle and one release.
	must(t, st.AppendLedger(bg, []accounts.LedgerEntry{
		{At: now, AccountID: "a1", KeyID: "k1", RequestID: "dead-served", Kind: accounts.KindSettle, AmountMicroUSD: 123, Mark: accounts.MarkAuditSettled},
		{At: now, AccountID: "a1", KeyID: "k1", RequestID: "unknown-replica", Kind: accounts.KindRelease, AmountMicroUSD: 900, Mark: accounts.MarkUnsettledCrash},
	}))
	a, err := st.Account(bg, "a1")
	must(t, err)
	if a.BalanceMicroUSD != 10_000-123 {
		t.Errorf("balance %d, want %d (the audited cost, billed once)", a.BalanceMicroUSD, 10_000-123)
	}
	// The dead replica was only partitioned: its late settle of the crash-released request bills.
	must(t, st.AppendLedger(bg, []accounts.LedgerEntry{{At: now, AccountID: "a1", KeyID: "k1", RequestID: "unknown-replica",
		Kind: accounts.KindSettle, AmountMicroUSD: 77}}))
	a, err = st.Account(bg, "a1")
	must(t, err)
	if a.BalanceMicroUSD != 10_000-123-77 {
		t.Errorf("balance after a late settle %d, want %d", a.BalanceMicroUSD, 10_000-123-77)
	}
	es, err := st.Ledger(bg, "a1", 0)
	must(t, err)
	count := map[string]int{}
	for _, e := range es {
		count[string(e.Kind)+" "+e.RequestID+" "+e.Mark]++
	}
	for k, want := range map[string]int{"settle dead-served audit-settled": 1, "release unknown-replica unsettled-crash": 1,
		"settle unknown-replica ": 1, "release live ": 0} {
		if count[k] != want {
			t.Errorf("%q stored %d times, want %d (ledger %v)", k, count[k], want, count)
		}
	}
	// The live replica's reserve is listed once its heartbeat stops for the timeout.
	open, err = rs.OpenReserves(bg, now.Add(time.Minute), "rep_me", 100)
	must(t, err)
	ids = ids[:0]
	for _, e := range open {
		ids = append(ids, e.RequestID)
	}
	if want := []string{"live", "dead-fresh"}; !reflect.DeepEqual(ids, want) {
		t.Errorf("open reserves a minute later = %v, want %v", ids, want)
	}
	must(t, rs.ForgetReplicas(bg, now.Add(time.Hour))) // both still hold open reserves: kept
	open, err = rs.OpenReserves(bg, now.Add(-10*time.Second), "rep_me", 100)
	must(t, err)
	if len(open) != 0 {
		t.Errorf("after ForgetReplicas, open reserves of gone replicas %+v, want none", open)
	}
}

// testJournalReplay (issue 24 item 1, R-BILL-1): a process killed with settles queued leaves
// them in its ledger journal, and the replay bills each once, at its cost: a settle whose batch
// committed before the kill is not billed again, one that never reached the store is, one whose
// reserve the crash reconciliation already released (a journal replayed late) still bills what
// was served, and a reserve without a settle stays open for the reconciliation. A second replay
// changes nothing.
func testJournalReplay(t *testing.T, st accounts.Store) {
	rs := seedCrash(t, st, 100_000)
	var err error
	dir := t.TempDir()
	j, err := accounts.OpenJournal(dir, "rep_killed")
	must(t, err)
	ks := &killableStore{Store: st}
	w := accounts.NewWriter(ks, accounts.WriterOptions{FlushInterval: time.Hour, Replica: "rep_killed", Journal: j,
		DrainTimeout: 50 * time.Millisecond})
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	ran := make(chan error, 1)
	go func() { ran <- w.Run(ctx) }()
	at := time.Now().Add(-time.Minute).UTC().Truncate(time.Microsecond)
	admit := func(rid string) (accounts.Ticket, accounts.LedgerEntry) {
		e := accounts.LedgerEntry{At: at, AccountID: "a1", KeyID: "k1", RequestID: rid, Model: "gpt-4o-mini", AmountMicroUSD: 900}
		tk, ok := w.Reserve(e)
		if !ok {
			t.Fatal("reserve shed")
		}
		must(t, w.Secure(bg, tk, &e, false))
		return tk, e
	}
	settle := func(rid string, cost int64) accounts.LedgerEntry {
		return accounts.LedgerEntry{At: at.Add(time.Second), AccountID: "a1", KeyID: "k1", RequestID: rid, Model: "gpt-4o-mini",
			Deployment: "oa", Kind: accounts.KindSettle, AmountMicroUSD: cost, Tokens: accounts.Tokens{Input: 10, Cached: 8, Output: 2},
			UsageProvenance: "observed"}
	}
	// committed: settled, and its batch written (Flush) before the kill.
	tk, _ := admit("committed")
	w.End(tk, settle("committed", 100))
	must(t, w.Flush(bg))
	// late: its reserve reached the store, and the reconciliation released it before the
	// journal was replayed.
	tk, _ = admit("late")
	must(t, w.Flush(bg))
	must(t, st.AppendLedger(bg, []accounts.LedgerEntry{{At: at.Add(time.Second), AccountID: "a1", KeyID: "k1", RequestID: "late",
		Model: "gpt-4o-mini", Kind: accounts.KindRelease, AmountMicroUSD: 900, Mark: accounts.MarkUnsettledCrash}}))
	w.End(tk, settle("late", 3))
	// queued: settled after the last flush; its settle is only in the queue and the journal.
	tk, _ = admit("queued")
	w.End(tk, settle("queued", 20))
	// open: secured, never settled.
	admit("open")
	// kill -9: the queue is lost (the store answers the writer no more), the journal stays.
	ks.killed.Store(true)
	cancel()
	if err := <-ran; err == nil {
		t.Fatal("the writer drained to a killed store")
	}

	// The same journal replayed twice (a copy of its files: a replay removes what it read).
	dir2 := t.TempDir()
	files, err := os.ReadDir(dir)
	must(t, err)
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(dir, f.Name()))
		must(t, err)
		must(t, os.WriteFile(filepath.Join(dir2, f.Name()), b, 0o600))
	}
	// Replayed again, nothing is written (the open reserve is given to the store, which has it).
	for i, want := range []int{3, 0} {
		n, err := accounts.ReplayJournals(bg, []string{dir, dir2}[i], "rep_other", st)
		must(t, err)
		if n != want {
			t.Errorf("replay %d wrote %d entries, want %d", i, n, want)
		}
		a, err := st.Account(bg, "a1")
		must(t, err)
		if want := int64(100_000 - 100 - 20 - 3); a.BalanceMicroUSD != want {
			t.Fatalf("balance after the replay %d, want %d (each settle billed once)", a.BalanceMicroUSD, want)
		}
	}
	es, err := st.Ledger(bg, "a1", 0)
	must(t, err)
	count := map[string]int{}
	for _, e := range es {
		count[string(e.Kind)+" "+e.RequestID]++
		if e.RequestID == "queued" && e.Kind == accounts.KindSettle && (e.Deployment != "oa" || e.Tokens.Cached != 8 || e.UsageProvenance != "observed") {
			t.Errorf("replayed settle %+v lost a field", e)
		}
	}
	for k, want := range map[string]int{"settle committed": 1, "settle queued": 1, "reserve queued": 0, "settle late": 1,
		"release late": 1, "reserve open": 1} {
		if count[k] != want {
			t.Errorf("%q stored %d times, want %d (ledger %v)", k, count[k], want, count)
		}
	}
	open, err := rs.OpenReserves(bg, time.Now(), "rep_me", 100)
	must(t, err)
	if len(open) != 1 || open[0].RequestID != "open" || open[0].Replica != "rep_killed" {
		t.Errorf("open reserves %+v, want only the unsettled one, of rep_killed", open)
	}

	// Two settles whose sum wraps an int64 (entries no gateway writes: each is over
	// accounts.MaxEntryMicroUSD; a crafted journal once stored them as a 2^64 credit) fail
	// their batch, and change nothing.
	before, err := st.Account(bg, "a1")
	must(t, err)
	if err := st.AppendLedger(bg, []accounts.LedgerEntry{
		{At: at, AccountID: "a1", KeyID: "k1", RequestID: "ovf1", Kind: accounts.KindSettle, AmountMicroUSD: math.MaxInt64},
		{At: at, AccountID: "a1", KeyID: "k1", RequestID: "ovf2", Kind: accounts.KindSettle, AmountMicroUSD: math.MaxInt64 - 999_999_999},
	}); err == nil {
		t.Error("two settles summing past an int64 were stored")
	}
	after, err := st.Account(bg, "a1")
	must(t, err)
	if after.BalanceMicroUSD != before.BalanceMicroUSD {
		t.Errorf("balance %d after a refused batch, want %d", after.BalanceMicroUSD, before.BalanceMicroUSD)
	}
}

// killableStore is a store whose AppendLedger fails once killed is set: a writer draining to
// it loses its queue, as a killed process does.
type killableStore struct {
	accounts.Store
	killed atomic.Bool
}

func (k *killableStore) AppendLedger(ctx context.Context, es []accounts.LedgerEntry) error {
	if k.killed.Load() {
		return errors.New("killed")
	}
	return k.Store.AppendLedger(ctx, es)
}

// staleOpen is a replica store whose OpenReserves answers open (fewer than a reconciliation
// batch: one pass reads it): what a reconciler that read the reserves before another closed
// them sees.
type staleOpen struct {
	accounts.ReplicaStore
	open []accounts.LedgerEntry
}

func (s staleOpen) OpenReserves(context.Context, time.Time, string, int) ([]accounts.LedgerEntry, error) {
	return s.open, nil
}
