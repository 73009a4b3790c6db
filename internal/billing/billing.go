// Package billing owns one request's money from admission to its end (R-BILL-1, R-BILL-2,
// R-BILL-4; contract.md "Billing"): a [Reservation] holds the request's limits, its budget
// reserves and its prepaid reserve in the admission store (one atomic Acquire) and writes its
// ledger entries (a reserve at admission, then exactly one settle or release). It replaces
// three mechanisms coordinated by hand with one owner whose end runs exactly once on every
// path: [Reservation.Settle] for a committed response, [Reservation.Release] otherwise, and a
// deferred Release for panics (whichever comes first wins; the other does nothing).
//
// The package does not import net/http; entries are queued on the ledger writer
// (accounts.Writer), never written on the request path.
package billing

import (
	"context"
	"time"

	"github.com/switchyard-gw/switchyard/internal/accounts"
	"github.com/switchyard-gw/switchyard/internal/admission"
)

// Ledger is what a reservation needs of the ledger writer (accounts.Writer).
type Ledger interface {
	// Append queues e without waiting; false when it was shed (a full queue).
	Append(e accounts.LedgerEntry) bool
}

// Biller makes reservations against one admission store and one ledger.
type Biller struct {
	// Store is the admission store of limits, budgets and prepaid balances; required.
	Store admission.Store
	// Ledger receives the entries; nil writes none (no store of accounts).
	Ledger Ledger
	// Now is the wall clock of ledger entries; nil is time.Now.
	Now func() time.Time
}

// Request is what one request reserves.
type Request struct {
	// Admission is passed to the admission store: layers, tpm charge, reserve and the prepaid
	// account (CreditAccount). With no layer and no CreditAccount the store is not called.
	Admission admission.Request
	// AccountID, KeyID, RequestID and Model name the ledger entries (Model: the requested
	// catalog model id; the deployment is not known yet). AccountID "" writes no ledger (an
	// anonymous caller).
	AccountID, KeyID, RequestID, Model string
}

// Settlement is what a committed response cost (the committed attempt).
type Settlement struct {
	// TotalTokens is the tpm correction: prompt (cached and cache-write included) plus output.
	TotalTokens int64
	// CostMicroUSD is the cost billed, in micro-USD.
	CostMicroUSD int64
	// Tokens, Model, Deployment, Mark and UsageProvenance go to the ledger's settle entry.
	Tokens                              accounts.Tokens
	Model, Deployment, Mark, Provenance string
}

// Reservation is one admitted request's claim on limits and money. Exactly one of Settle or
// Release ends it; later calls do nothing. Its methods are meant for the one request goroutine
// that owns it (a deferred Release included).
type Reservation struct {
	hold   admission.Hold // nil: nothing was acquired
	ledger Ledger         // nil: no ledger
	now    func() time.Time
	acct   string
	key    string
	rid    string
	model  string
	// reserve is the reserve entry's amount; 0 when none was queued (nothing held, or the
	// writer shed it), and then no release is written either.
	reserve int64
	// start carries the monotonic reading taken when the reserve was queued; at is its wall
	// time, the reserve entry's At.
	start, at time.Time
	ended     bool
}

// Reserve admits req: it acquires the limits and reserves in one call to the admission store
// (none when nothing limits the request) and, when the request holds money (a budget or a
// prepaid balance) with a positive reserve, queues the ledger's reserve entry. A refusal is the
// store's *failure.Error (rate_limited, insufficient_credit with limit kind budget or credit,
// or a gateway_error when the store cannot be reached), and nothing is taken or written.
func (b *Biller) Reserve(ctx context.Context, req Request) (*Reservation, error) {
	r := &Reservation{now: b.Now, acct: req.AccountID, key: req.KeyID, rid: req.RequestID, model: req.Model}
	if r.now == nil {
		r.now = time.Now
	}
	if len(req.Admission.Layers) > 0 || req.Admission.CreditAccount != "" {
		h, err := b.Store.Acquire(ctx, req.Admission)
		if err != nil {
			return nil, err
		}
		r.hold = h
	}
	if b.Ledger == nil || req.AccountID == "" {
		return r, nil
	}
	r.ledger = b.Ledger
	if amount := req.Admission.ReserveMicroUSD; amount > 0 && req.Admission.Metered() {
		r.start = r.now()
		r.at = r.start.UTC() // UTC strips the monotonic reading; start keeps it
		if r.ledger.Append(accounts.LedgerEntry{At: r.at, AccountID: r.acct, KeyID: r.key, RequestID: r.rid, Model: r.model,
			Kind: accounts.KindReserve, AmountMicroUSD: amount}) {
			r.reserve = amount
		}
	}
	return r, nil
}

// Settle ends a committed request (R-BILL-1): the admission store replaces its token charge and
// reserve with the actual usage and cost (charged to every budget and the prepaid balance), and
// then the settle entry is queued for the ledger, in that order (a seed read from the ledger
// never misses a settle the store skipped, nor counts one it applied). After Settle or Release
// it does nothing.
func (r *Reservation) Settle(s Settlement) {
	if r == nil || r.ended {
		return
	}
	r.ended = true
	if r.hold != nil {
		r.hold.Settle(s.TotalTokens, s.CostMicroUSD)
	}
	if r.ledger == nil {
		return
	}
	r.ledger.Append(accounts.LedgerEntry{At: r.endAt(), AccountID: r.acct, KeyID: r.key, RequestID: r.rid,
		Model: s.Model, Deployment: s.Deployment, Kind: accounts.KindSettle, AmountMicroUSD: max(s.CostMicroUSD, 0),
		Tokens: s.Tokens, Mark: s.Mark, UsageProvenance: s.Provenance})
}

// Release ends a request that did not commit, or whose handler panicked (R-BILL-2): its slot,
// reserve and token charge are returned, and when a reserve entry was queued a release entry of
// the same amount ends it, billing nothing. After Settle or Release it does nothing.
func (r *Reservation) Release() {
	if r == nil || r.ended {
		return
	}
	r.ended = true
	if r.hold != nil {
		r.hold.Release()
	}
	if r.ledger == nil || r.reserve == 0 {
		return
	}
	r.ledger.Append(accounts.LedgerEntry{At: r.endAt(), AccountID: r.acct, KeyID: r.key, RequestID: r.rid,
		Model: r.model, Kind: accounts.KindRelease, AmountMicroUSD: r.reserve})
}

// Ended reports whether Settle or Release ran.
func (r *Reservation) Ended() bool { return r == nil || r.ended }

// endAt is the At of the entry that ends the request: never before the reserve's At, even when
// the wall clock steps back in between (the monotonic clock measures the time since).
func (r *Reservation) endAt() time.Time {
	if r.reserve == 0 {
		return r.now().UTC()
	}
	return r.at.Add(r.now().Sub(r.start))
}
