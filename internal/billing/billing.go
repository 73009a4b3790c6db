// Package billing owns one request's money from admission to its end (R-BILL-1, R-BILL-2,
// R-BILL-4; contract.md "Billing"): a [Reservation] holds the request's limits, its budget
// reserves and its prepaid reserve in the admission store (one atomic Acquire) and writes its
// ledger entries (a reserve at admission, then exactly one settle or release). It replaces
// three mechanisms coordinated by hand with one owner whose end runs exactly once on every
// path: [Reservation.Settle] for a committed response, [Reservation.Release] otherwise, and a
// deferred Release for panics (whichever comes first wins; the other does nothing).
//
// The package does not import net/http. The reserve entry is queued at admission, never waited
// for before dispatch, and made durable at the commit gate (Reservation.Secure, before the first
// byte to the caller: a journal append on the embedded store, else the group commit that ran
// while the upstream answered), so that a crash before the settle leaves a trace that the crash
// reconciliation closes (accounts.Reconciler; docs/deploy.md); the settle and release entries
// are queued, never waited for, in the reserve's place when it is still queued (one row).
package billing

import (
	"context"
	"sync"
	"time"

	"github.com/switchyard-gw/switchyard/internal/accounts"
	"github.com/switchyard-gw/switchyard/internal/admission"
	"github.com/switchyard-gw/switchyard/internal/failure"
)

// Ledger is what a reservation needs of the ledger writer (accounts.Writer).
type Ledger interface {
	// Append queues e without waiting; false when it was shed (a full queue).
	Append(e accounts.LedgerEntry) bool
	// Reserve queues the reserve entry e without waiting and returns its ticket; false when it
	// was shed (a half-full queue).
	Reserve(e accounts.LedgerEntry) (accounts.Ticket, bool)
	// Secure makes the reserve of t (entry e) survive a crash of the process: a journal append,
	// or a wait for its group commit (ctx's error when ctx ends first). optional: a request
	// that holds no money, which a lagging writer does not hold up.
	Secure(ctx context.Context, t accounts.Ticket, e *accounts.LedgerEntry, optional bool) error
	// End queues the settle or release e that ends t's reserve, in its place when that is
	// still queued; false when shed.
	End(t accounts.Ticket, e accounts.LedgerEntry) bool
}

// LedgerWait bounds the wait for a reserve entry to be secured at commit (Reservation.Secure).
const LedgerWait = 5 * time.Second

// ErrLedgerUnavailable refuses a request that holds money when its reserve entry cannot be
// queued (the writer's queue is half full: before dispatch) or secured within LedgerWait (the
// store does not answer: at its commit, before any byte reaches the caller), so that no served
// request can be left without a ledger trace.
var ErrLedgerUnavailable = &failure.Error{Class: failure.GatewayError,
	Msg: "the gateway's ledger store is not answering: a request that holds money is not served before its reserve is recorded; retry shortly"}

// Biller makes reservations against one admission store and one ledger.
type Biller struct {
	// Store is the admission store of limits, budgets and prepaid balances; required.
	Store admission.Store
	// Ledger receives the entries; nil writes none (no store of accounts).
	Ledger Ledger
	// Now is the wall clock of ledger entries; nil is time.Now.
	Now func() time.Time
	// Settling, when set, is held for reading by each Settle from its admission store call
	// until its settle entry is queued, so that taking it for writing waits for the settles the
	// store has counted and the ledger not yet received (the Redis store's flush after it lost
	// its data: docs/limits.md "Exactness"). nil: none.
	Settling *sync.RWMutex
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
	hold     admission.Hold // nil: nothing was acquired
	ledger   Ledger         // nil: no ledger
	settling *sync.RWMutex  // Biller.Settling
	now      func() time.Time
	acct     string
	key      string
	rid      string
	model    string
	// queued says the reserve entry was queued (then a release ends it), as ticket; reserve is
	// its amount (0 for a request that holds no money: the trace of its dispatch only).
	queued  bool
	ticket  accounts.Ticket
	reserve int64
	// metered says the request holds money: a reserve that cannot be secured refuses it.
	metered bool
	// secured says Secure ran (once per request).
	secured bool
	// start carries the monotonic reading taken when the reserve was queued; at is its wall
	// time, the reserve entry's At.
	start, at time.Time
	ended     bool
}

// Reserve admits req: it acquires the limits and reserves in one call to the admission store
// (none when nothing limits the request), then queues the ledger's reserve entry without
// waiting for it (issue 24 item 1: no durable write before dispatch; Secure makes it durable at
// the commit): its amount is the reserve when the request holds money (a budget or a prepaid
// balance), else 0. A refusal is the store's *failure.Error (rate_limited,
// insufficient_credit with limit kind budget or credit, or a gateway_error when the store
// cannot be reached), and nothing is taken or written. When the writer's queue sheds the
// reserve entry, a request holding money is refused with ErrLedgerUnavailable (what it acquired
// is returned), while one holding none goes on without a trace.
func (b *Biller) Reserve(ctx context.Context, req Request) (*Reservation, error) {
	r := &Reservation{now: b.Now, acct: req.AccountID, key: req.KeyID, rid: req.RequestID, model: req.Model, settling: b.Settling}
	if r.now == nil {
		r.now = time.Now
	}
	if len(req.Admission.Layers) > 0 || req.Admission.CreditAccount != "" {
		if req.Admission.RequestID == "" {
			req.Admission.RequestID = req.RequestID // the settle entry's: a seed's float names it
		}
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
	r.metered = req.Admission.Metered()
	if r.metered {
		r.reserve = max(req.Admission.ReserveMicroUSD, 0)
	}
	r.start = r.now()
	r.at = r.start.UTC() // UTC strips the monotonic reading; start keeps it
	r.ticket, r.queued = r.ledger.Reserve(r.reserveEntry())
	if !r.queued && r.metered {
		r.Release()
		return nil, ErrLedgerUnavailable
	}
	return r, nil
}

// reserveEntry is the request's reserve entry.
func (r *Reservation) reserveEntry() accounts.LedgerEntry {
	return accounts.LedgerEntry{At: r.at, AccountID: r.acct, KeyID: r.key, RequestID: r.rid, Model: r.model,
		Kind: accounts.KindReserve, AmountMicroUSD: min(r.reserve, accounts.MaxEntryMicroUSD)}
}

// Secure is the request's commit gate (issue 24 item 1): called once before the first byte of
// the response reaches the caller, it makes the reserve entry survive a crash of the process
// (Ledger.Secure: a journal append on the embedded store, else the group commit, which ran
// while the upstream answered), at most LedgerWait. A request that holds money and whose reserve
// cannot be secured gets ErrLedgerUnavailable: it is not committed (the relay answers that
// error, and the request is released, billing nothing). A request that holds none goes on
// (nil). Later calls, and a request without a queued reserve, return nil at once.
func (r *Reservation) Secure(ctx context.Context) error {
	if r == nil || r.secured || !r.queued || r.ended {
		return nil
	}
	r.secured = true
	e := r.reserveEntry()
	wctx, cancel := context.WithTimeout(ctx, LedgerWait)
	err := r.ledger.Secure(wctx, r.ticket, &e, !r.metered)
	cancel()
	if err != nil && r.metered && ctx.Err() == nil {
		return ErrLedgerUnavailable
	}
	return nil
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
	if r.settling != nil && r.hold != nil && r.ledger != nil {
		r.settling.RLock()
		defer r.settling.RUnlock()
	}
	if r.hold != nil {
		r.hold.Settle(s.TotalTokens, s.CostMicroUSD)
	}
	if r.ledger == nil {
		return
	}
	e := accounts.LedgerEntry{At: r.endAt(), AccountID: r.acct, KeyID: r.key, RequestID: r.rid,
		Model: s.Model, Deployment: s.Deployment, Kind: accounts.KindSettle,
		AmountMicroUSD: min(max(s.CostMicroUSD, 0), accounts.MaxEntryMicroUSD),
		Tokens:         boundTokens(s.Tokens), Mark: s.Mark, UsageProvenance: s.Provenance}
	if r.queued {
		r.ledger.End(r.ticket, e)
	} else {
		r.ledger.Append(e)
	}
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
	if r.ledger == nil || !r.queued {
		return
	}
	r.ledger.End(r.ticket, accounts.LedgerEntry{At: r.endAt(), AccountID: r.acct, KeyID: r.key, RequestID: r.rid,
		Model: r.model, Kind: accounts.KindRelease, AmountMicroUSD: min(r.reserve, accounts.MaxEntryMicroUSD)})
}

// Queued reports whether the request's reserve entry was queued: Secure then has work to do
// at its commit.
func (r *Reservation) Queued() bool { return r != nil && r.queued }

// Ended reports whether Settle or Release ran.
func (r *Reservation) Ended() bool { return r == nil || r.ended }

// boundTokens clamps each count of t to [0, accounts.MaxEntryTokens] (the relay's usage already
// saturates there; a journal line beyond it would not be read back).
func boundTokens(t accounts.Tokens) accounts.Tokens {
	for _, v := range [...]*int64{&t.Input, &t.Cached, &t.CacheWrite, &t.Output, &t.Reasoning} {
		*v = min(max(*v, 0), accounts.MaxEntryTokens)
	}
	return t
}

// endAt is the At of the entry that ends the request: never before the reserve's At, even when
// the wall clock steps back in between (the monotonic clock measures the time since).
func (r *Reservation) endAt() time.Time {
	if !r.queued {
		return r.now().UTC()
	}
	return r.at.Add(r.now().Sub(r.start))
}
