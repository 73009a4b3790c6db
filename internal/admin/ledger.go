package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/switchyard-gw/switchyard/internal/accounts"
)

// credit adds to an account's balance: a credit entry and the balance change in one
// store transaction, written before the answer (synchronous, unlike settles).
func (a *api) credit(w http.ResponseWriter, r *http.Request) {
	var b struct {
		AmountUSD json.RawMessage `json:"amount_usd"`
	}
	if !decode(w, r, &b, []string{"amount_usd"}, "amount_usd") {
		return
	}
	micro, err := parseUSD(string(b.AmountUSD))
	if err != nil {
		badRequest(w, "amount_usd", "%v", err)
		return
	}
	id := r.PathValue("id")
	ctx, cancel := storeCtx(r)
	defer cancel()
	a.flushLedger(ctx)
	balance, err := a.Store.Credit(ctx, &accounts.LedgerEntry{At: time.Now().UTC(), AccountID: id, Kind: accounts.KindCredit, AmountMicroUSD: micro})
	if err != nil {
		a.fail(w, err, "no account with that id")
		return
	}
	a.Cache.SetStoredBalance(id, balance) // absolute: the change feed's refresh of it does not count it twice
	if err := a.Credits.Credit(ctx, id, micro); err != nil {
		// The credit is stored; the shared balance misses it until it is reseeded.
		a.Logf("admission store: crediting account %s: %v", id, err)
	}
	writeJSON(w, http.StatusOK, map[string]any{"balance_usd": usdNumber(balance)})
}

type ledgerTokens struct {
	Input      int64 `json:"input"`
	Cached     int64 `json:"cached"`
	CacheWrite int64 `json:"cache_write"`
	Output     int64 `json:"output"`
	Reasoning  int64 `json:"reasoning"`
}

type ledgerEntryJSON struct {
	RequestID  string        `json:"request_id"`
	KeyID      string        `json:"key_id"`
	Model      string        `json:"model"`
	Deployment string        `json:"deployment"`
	Tokens     ledgerTokens  `json:"tokens"`
	CostUSD    json.Number   `json:"cost_usd"`
	CostMicro  int64         `json:"cost_micro_usd"`
	Kind       accounts.Kind `json:"kind"`
	// Mark is upstream-truncated or client-cancelled for a settle whose response did not
	// complete (R-BILL-2); Usage is a settle's usage provenance, observed or estimated. Both
	// are omitted when empty.
	Mark  string    `json:"mark,omitempty"`
	Usage string    `json:"usage,omitempty"`
	At    time.Time `json:"at"`
}

// ledger answers the account's ledger, newest first: ?limit= entries (default 1000, at
// most 10000).
func (a *api) ledger(w http.ResponseWriter, r *http.Request) {
	limit := 1000
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 || n > 10000 {
			badRequest(w, "limit", "limit must be 1..10000")
			return
		}
		limit = n
	}
	id := r.PathValue("id")
	ctx, cancel := storeCtx(r)
	defer cancel()
	a.flushLedger(ctx)
	// An account that is not stored (a static key's, from the configuration) has a ledger but
	// no balance: balance_usd is null.
	var balance any
	acct, es, err := a.accountLedger(ctx, id, limit)
	if acct != nil {
		balance = usdNumber(acct.BalanceMicroUSD)
	}
	if err == nil && acct == nil && len(es) == 0 {
		err = accounts.ErrNotFound
	}
	if err != nil {
		a.fail(w, err, "no account with that id")
		return
	}
	out := make([]ledgerEntryJSON, len(es))
	for i := range es {
		e := &es[i]
		t := e.Tokens
		out[i] = ledgerEntryJSON{RequestID: e.RequestID, KeyID: e.KeyID, Model: e.Model, Deployment: e.Deployment,
			Tokens:  ledgerTokens{t.Input, t.Cached, t.CacheWrite, t.Output, t.Reasoning},
			CostUSD: usdNumber(e.AmountMicroUSD), CostMicro: e.AmountMicroUSD, Kind: e.Kind, Mark: e.Mark, Usage: e.UsageProvenance, At: e.At}
	}
	writeJSON(w, http.StatusOK, map[string]any{"balance_usd": balance, "entries": out})
}

// ledgerSnapshot is a store that reads an account and its ledger in one read snapshot
// (accountsql.Store.AccountLedger): the balance answered is the one after exactly the entries
// answered.
type ledgerSnapshot interface {
	AccountLedger(ctx context.Context, accountID string, limit int) (*accounts.Account, []accounts.LedgerEntry, error)
}

// accountLedger reads the account (nil when it is not stored) and its newest limit entries,
// in one snapshot when the store offers one; otherwise in two reads, which a settle written
// between them can make disagree.
func (a *api) accountLedger(ctx context.Context, id string, limit int) (*accounts.Account, []accounts.LedgerEntry, error) {
	if ls, ok := a.Store.(ledgerSnapshot); ok {
		return ls.AccountLedger(ctx, id, limit)
	}
	acct, err := a.Store.Account(ctx, id)
	if errors.Is(err, accounts.ErrNotFound) {
		acct, err = nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	es, err := a.Store.Ledger(ctx, id, limit)
	return acct, es, err
}

// usdNumber formats micro-USD as an exact JSON number of USD ("4.999766", "-0.5", "12").
func usdNumber(micro int64) json.Number {
	sign := ""
	u := uint64(micro)
	if micro < 0 {
		sign, u = "-", uint64(-micro)
	}
	s := fmt.Sprintf("%s%d.%06d", sign, u/1e6, u%1e6)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return json.Number(s)
}

// maxCreditUSD bounds one credit: amount_usd must be below it (the store caps the balance at
// 1e12 USD too, accounts.ErrBalanceLimit).
const maxCreditUSD = 1e12

// parseUSD reads a positive USD amount below maxCreditUSD with at most 6 significant decimals
// into exact micro-USD, without going through a float. Zeros after the 6th decimal are
// accepted (1.0000000 is 1); a non-zero digit there (0.0000001) is refused.
func parseUSD(s string) (int64, error) {
	if s == "" || s[0] < '0' || s[0] > '9' || strings.ContainsAny(s, "eE") {
		return 0, errors.New("amount_usd must be a positive decimal number such as 10 or 2.50")
	}
	whole, frac, _ := strings.Cut(s, ".")
	if len(frac) > 6 {
		if strings.TrimRight(frac[6:], "0") != "" {
			return 0, errors.New("amount_usd has at most 6 decimals (micro-USD)")
		}
		frac = frac[:6]
	}
	frac += strings.Repeat("0", 6-len(frac))
	w, err1 := strconv.ParseInt(whole, 10, 64)
	f, err2 := strconv.ParseInt(frac, 10, 64)
	if err1 != nil || err2 != nil || w >= maxCreditUSD {
		return 0, errors.New("amount_usd must be a positive decimal number below 1e12 (1000000000000)")
	}
	if v := w*1e6 + f; v > 0 {
		return v, nil
	}
	return 0, errors.New("amount_usd must be positive")
}
