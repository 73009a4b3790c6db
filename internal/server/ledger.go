package server

import (
	"time"

	"github.com/switchyard-gw/switchyard/internal/accounts"
	"github.com/switchyard-gw/switchyard/internal/admission"
	"github.com/switchyard-gw/switchyard/internal/audit"
)

// requestLedger writes one model call's ledger entries (R-BILL-1, R-BILL-2; docs/admin-api.md
// "Ledger"): a reserve entry when the request is admitted holding money (a prepaid balance or a
// budget), then exactly one entry that ends it: settle (committed: the committed attempt's
// cost) or release (not committed: the reserve returned whole). A request that holds no money
// gets only its settle, as before. Entries are queued on the ledger writer (accounts.Writer),
// never written on the request path. The zero value writes nothing. A requestLedger belongs to
// one request goroutine.
type requestLedger struct {
	w                                *accounts.Writer // nil: this request has no ledger
	account, keyID, requestID, model string           // model: the requested catalog model id
	// reserve is the reserve entry's amount in micro-USD; 0 when none was queued (nothing
	// held, or the writer shed it), and then no release is written either.
	reserve int64
	// start carries the monotonic reading taken when the reserve was queued; at is its wall
	// time in UTC, the reserve entry's At.
	start, at time.Time
	ended     bool // the settle or release is queued
}

// openLedger returns the ledger of an admitted request of who's account and, when held is
// true and reserveMicroUSD positive, queues its reserve entry: the most the request can cost,
// for model (the requested catalog model id; the deployment is not known yet). held says the
// request holds money: a prepaid balance, or a layer with a budget; a request under rate limits
// only reserves nothing. Servers without a ledger writer and anonymous callers get the zero
// value.
func (s *Server) openLedger(rid string, who caller, model string, reserveMicroUSD int64, held bool) requestLedger {
	if s.ledger == nil || who.account == "" {
		return requestLedger{}
	}
	l := requestLedger{w: s.ledger, account: who.account, keyID: who.keyID, requestID: rid, model: model}
	if !held || reserveMicroUSD <= 0 {
		return l
	}
	l.start = time.Now()
	l.at = l.start.UTC() // UTC strips the monotonic reading; start keeps it
	if l.w.Append(accounts.LedgerEntry{At: l.at, AccountID: l.account, KeyID: l.keyID, RequestID: rid, Model: model,
		Kind: accounts.KindReserve, AmountMicroUSD: reserveMicroUSD}) {
		l.reserve = reserveMicroUSD
	}
	return l
}

// holdsMoney reports whether a request of prepaid (a prepaid account's balance is held) or held
// to layers reserves money: prepaid, or some layer has a budget.
func holdsMoney(prepaid bool, layers []admission.Layer) bool {
	if prepaid {
		return true
	}
	for i := range layers {
		if layers[i].Limits.BudgetMicroUSD > 0 {
			return true
		}
	}
	return false
}

// endAt is the At of the entry that ends the request: never before the reserve's At, even when
// the wall clock steps back in between (the monotonic clock measures the time since).
func (l *requestLedger) endAt() time.Time {
	if l.reserve == 0 {
		return time.Now().UTC()
	}
	return l.at.Add(time.Since(l.start))
}

// settle queues the settle entry of the committed attempt a at costMicroUSD, which ends the
// reserve. It does nothing after settle or release, or for the zero value.
func (l *requestLedger) settle(a *audit.Attempt, costMicroUSD int64) {
	if l.w == nil || l.ended {
		return
	}
	l.ended = true
	t := &a.Tokens
	l.w.Append(accounts.LedgerEntry{At: l.endAt(), AccountID: l.account, KeyID: l.keyID, RequestID: l.requestID,
		Model: a.Model, Deployment: a.Deployment, Kind: accounts.KindSettle, AmountMicroUSD: costMicroUSD,
		Tokens: accounts.Tokens{Input: t.Input, Cached: t.Cached, CacheWrite: t.CacheWrite, Output: t.Output, Reasoning: t.Reasoning},
		Mark:   settleMark(a.Outcome), UsageProvenance: a.UsageProvenance})
}

// settleMark is the ledger mark of a committed attempt's outcome (R-BILL-2): a stream the
// provider cut after commit is upstream-truncated, one the caller abandoned client-cancelled.
func settleMark(outcome string) string {
	switch outcome {
	case audit.OutcomeTruncated:
		return accounts.MarkUpstreamTruncated
	case audit.OutcomeCancelled:
		return accounts.MarkClientCancelled
	}
	return ""
}

// release ends a request that did not commit (every attempt failed, cancelled before commit,
// or a panic in the relay): when a reserve entry was queued, a release entry of the same
// amount returns it, billing nothing (R-BILL-2). It does nothing after settle or release, when
// no reserve was queued, or for the zero value.
func (l *requestLedger) release() {
	if l.w == nil || l.ended {
		return
	}
	l.ended = true
	if l.reserve == 0 {
		return
	}
	l.w.Append(accounts.LedgerEntry{At: l.endAt(), AccountID: l.account, KeyID: l.keyID, RequestID: l.requestID,
		Model: l.model, Kind: accounts.KindRelease, AmountMicroUSD: l.reserve})
}
