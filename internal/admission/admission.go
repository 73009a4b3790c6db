package admission

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/switchyard-gw/switchyard/internal/failure"
)

// Limit kinds, the values of failure.Error.LimitKind and of `x-switchyard-limit-kind`
// (contract.md).
const (
	KindRPM         = "rpm"
	KindTPM         = "tpm"
	KindConcurrency = "concurrency"
	KindBudget      = "budget"
	// KindCredit is a prepaid account's balance (contract.md: limit kind credit).
	KindCredit = "credit"
)

// Window is the length of the rpm and tpm sliding window: a request admitted at t counts until
// t+Window, so no rolling Window ever holds more than the limit (doc.go).
const Window = time.Minute

// DefaultOutputTokens is the output basis of the reserve and of the tpm charge when neither the
// request (max_tokens) nor the model (max_output_tokens) sets one (contract.md "Billing").
const DefaultOutputTokens = 4096

// Scope is the kind of layer a set of limits belongs to.
type Scope uint8

// The scopes. The zero Scope is invalid.
const (
	ScopeKey       Scope = iota + 1 // an API key, by name (a static key) or id (a stored key)
	ScopeAccount                    // an account, by id
	ScopeWorkspace                  // a workspace of a stored account, by id
)

// String names the scope as refusal messages show it ("this workspace allows ..."): "key",
// "account" or "workspace"; "layer" for an invalid Scope.
func (s Scope) String() string {
	switch s {
	case ScopeKey:
		return "key"
	case ScopeAccount:
		return "account"
	case ScopeWorkspace:
		return "workspace"
	}
	return "layer"
}

// Period is how often a budget resets.
type Period uint8

// The budget periods. The zero value is PeriodMonth, the configuration's default.
const (
	PeriodMonth Period = iota // UTC calendar month
	PeriodDay                 // UTC day
	PeriodTotal               // never resets
)

// ParsePeriod reads a budget_period: "day", "month" or "total"; "" is month. Any other string
// is an error.
func ParsePeriod(s string) (Period, error) {
	switch s {
	case "", "month":
		return PeriodMonth, nil
	case "day":
		return PeriodDay, nil
	case "total":
		return PeriodTotal, nil
	}
	return 0, fmt.Errorf("admission: unknown budget period %q (want day, month or total)", s)
}

// String is the configuration name of the period.
func (p Period) String() string {
	switch p {
	case PeriodDay:
		return "day"
	case PeriodTotal:
		return "total"
	}
	return "month"
}

// index is the number of the period that contains t: days or months since the Unix epoch,
// always 0 for PeriodTotal.
func (p Period) index(t time.Time) int64 {
	switch p {
	case PeriodDay:
		return floorDiv(t.Unix(), 86400)
	case PeriodTotal:
		return 0
	}
	t = t.UTC()
	return int64(t.Year())*12 + int64(t.Month()) - 1
}

// Start is the first instant of the period that contains t, in UTC; the zero time for
// PeriodTotal (it has a single period since the beginning).
func (p Period) Start(t time.Time) time.Time {
	t = t.UTC()
	switch p {
	case PeriodDay:
		return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	case PeriodTotal:
		return time.Time{}
	}
	return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
}

// Limits are one layer's limits. A zero field is no limit; the zero Limits limits nothing.
type Limits struct {
	// RPM is the requests admitted per one-minute window.
	RPM int64
	// TPM is the tokens charged per one-minute window (estimated input plus maximum output at
	// admission, corrected to the actual usage at settle).
	TPM int64
	// Concurrency is the requests in flight at once (admitted and not yet released).
	Concurrency int64
	// BudgetMicroUSD is the spend allowed per BudgetPeriod, in micro-USD.
	BudgetMicroUSD int64
	// BudgetPeriod is when the budget resets; the zero value is PeriodMonth.
	BudgetPeriod Period
}

// IsZero reports whether l limits nothing.
func (l Limits) IsZero() bool {
	return l.RPM == 0 && l.TPM == 0 && l.Concurrency == 0 && l.BudgetMicroUSD == 0
}

// Layer is one layer's identity and limits.
type Layer struct {
	Scope Scope
	// ID is the key's name or id, the workspace's id or the account's id; with Scope it names
	// the counters (the same ID under two scopes is two sets of counters).
	ID     string
	Limits Limits
}

// Request is what one request asks of the admission store.
type Request struct {
	// Layers are checked and taken together, all or none. A layer whose Limits are zero is
	// skipped. Stores may refuse more than MaxLayers layers.
	Layers []Layer
	// Tokens is the tpm charge: the estimated input tokens plus the output basis
	// ([OutputTokens]). Negative is taken as 0.
	Tokens int64
	// ReserveMicroUSD is the most the request can cost ([CostMicroUSD]), reserved against each
	// layer's budget and against the prepaid balance of CreditAccount. Negative is taken as 0.
	ReserveMicroUSD int64
	// CreditAccount is the prepaid account whose shared balance the reserve is taken from
	// ("" none): admitted only when balance minus the reserves in flight covers the reserve;
	// it is checked before the layers, so a credit refusal is reported first.
	CreditAccount string
	// RequestID is the request id of the ledger's settle entry for this request ("" none): a
	// settle that finds its spend or balance without a seed (Redis lost its data, or a new
	// period began) is kept under it in the counter's float, and the seed then reads the ledger
	// without it ([Seeder]'s exclude), so that it is counted exactly once (docs/limits.md
	// "Exactness"). Billing sets it; ids must be unique among the ledger's settles.
	RequestID string
}

// Metered reports whether req holds money: a prepaid balance or a layer with a budget. A store
// that cannot be reached refuses metered requests (fail closed) and may admit the others on
// local counters (fail open; docs/limits.md "Degraded mode").
func (req *Request) Metered() bool {
	if req.CreditAccount != "" {
		return true
	}
	for i := range req.Layers {
		if req.Layers[i].Limits.BudgetMicroUSD > 0 {
			return true
		}
	}
	return false
}

// mergeLayers returns ls with the layers of one scope and id merged into one, each limit the
// tighter of the two (a non-zero limit over none, the smaller over the larger; the budget
// period of the tighter budget), so that a request counts once on one set of counters even when
// two sources limit the same layer (a stored account's settings and the configured accounts[]).
// It allocates only when ls has such duplicates.
func mergeLayers(ls []Layer) []Layer {
	dup := false
	for i := range ls {
		for j := i + 1; j < len(ls); j++ {
			dup = dup || (ls[i].Scope == ls[j].Scope && ls[i].ID == ls[j].ID)
		}
	}
	if !dup {
		return ls
	}
	out := make([]Layer, 0, len(ls))
	for _, l := range ls {
		k := -1
		for i := range out {
			if out[i].Scope == l.Scope && out[i].ID == l.ID {
				k = i
			}
		}
		if k < 0 {
			out = append(out, l)
			continue
		}
		a, b := &out[k].Limits, &l.Limits
		a.RPM, a.TPM, a.Concurrency = tighter(a.RPM, b.RPM), tighter(a.TPM, b.TPM), tighter(a.Concurrency, b.Concurrency)
		if t := tighter(a.BudgetMicroUSD, b.BudgetMicroUSD); t != a.BudgetMicroUSD {
			a.BudgetMicroUSD, a.BudgetPeriod = t, b.BudgetPeriod
		}
	}
	return out
}

// tighter is the tighter of two limits, 0 being none.
func tighter(a, b int64) int64 {
	switch {
	case a == 0:
		return b
	case b == 0:
		return a
	}
	return min(a, b)
}

// MaxLayers is the most layers one Request may carry (account, workspace, key, and one spare).
const MaxLayers = 4

// Hold is an admitted request's claim on the limits. Exactly one of Settle (a committed
// response, billed) or Release (nothing billed, R-BILL-2) ends it; whichever comes first wins
// and the other does nothing. Both are safe for concurrent use. A shared store ends a hold in
// one round trip.
type Hold interface {
	// Settle ends the request billed: its concurrency slot is freed, its token charge is
	// replaced with actualTokens (prompt plus output) and its reserve with actualCostMicroUSD,
	// which is charged to each layer's budget in the current period and taken from the prepaid
	// balance, even when it exceeds the reserve. Negative values are taken as 0.
	Settle(actualTokens, actualCostMicroUSD int64)
	// Release ends the request unbilled: its concurrency slot is freed and its reserve and its
	// token charge are returned. The request still counts against rpm.
	Release()
}

// Seeder reads from the ledger what spend and balance counters start from (R-BILL-4; spend is
// durable across restarts). A store asks it once per counter, when the counter has no seed:
// the first metered request of a layer in a period, of a prepaid account, or after the shared
// store lost its data. A seed is set only where none is (never added), so seeding twice
// counts nothing twice.
//
// exclude lists request ids whose settles the read must leave out (they are counted by the
// store's float instead: settles that found the counter without a seed); nil or empty leaves
// out none. A settle's request id is its [Request.RequestID].
type Seeder interface {
	// SpentMicroUSD returns the sum of the settles charged to the layer (scope, id) at or after
	// from (the zero time: all of them), in micro-USD, less those of the request ids in exclude.
	SpentMicroUSD(ctx context.Context, scope Scope, id string, from time.Time, exclude []string) (int64, error)
	// BalanceMicroUSD returns a prepaid account's balance, credits minus settles, in micro-USD,
	// as if the settles of the request ids in exclude had not been made.
	BalanceMicroUSD(ctx context.Context, accountID string, exclude []string) (int64, error)
}

// Usage is a snapshot of one layer's counters.
type Usage struct {
	// Requests and Tokens are the counts of the current one-minute window.
	Requests, Tokens int64
	// InFlight is the requests admitted and not yet released.
	InFlight int64
	// SpentMicroUSD is what settles charged in the current budget period.
	SpentMicroUSD int64
	// ReservedMicroUSD is the sum of the reserves of holds not yet settled or released.
	ReservedMicroUSD int64
}

// Balance is a snapshot of a prepaid account's shared balance.
type Balance struct {
	// Seeded is false while the balance has not been read from the ledger yet (nothing else
	// is meaningful then).
	Seeded bool
	// BalanceMicroUSD is the balance: the seed plus credits minus settles since.
	BalanceMicroUSD int64
	// ReservedMicroUSD is the sum of the reserves of holds not yet settled or released.
	ReservedMicroUSD int64
}

// Store checks and takes limits. Implementations are safe for concurrent use.
type Store interface {
	// Acquire checks every limit of every layer of req and, when all fit, takes them in one
	// atomic step: one request and req.Tokens on each window, one slot of concurrency, and
	// req.ReserveMicroUSD on each budget. When one does not fit nothing is taken and the error
	// is a *failure.Error: rate_limited (429) with LimitKind rpm, tpm or concurrency and a
	// RetryAfter of 1..60 s, or insufficient_credit (402) with LimitKind budget. A store that
	// cannot be reached answers a gateway_error; a done ctx, cancelled.
	Acquire(ctx context.Context, req Request) (Hold, error)
	// Usage returns the counters of layer l (by scope and id; the spend is that of the current
	// period of l.Limits.BudgetPeriod) now; a layer never seen has zero Usage.
	Usage(ctx context.Context, l Layer) (Usage, error)
	// Balance returns a prepaid account's shared balance.
	Balance(ctx context.Context, accountID string) (Balance, error)
	// Credit adds deltaMicroUSD to a prepaid account's balance after the store of accounts
	// has committed the credit (the admin API). A balance not seeded yet is left alone: its
	// seed, read later, includes the credit.
	Credit(ctx context.Context, accountID string, deltaMicroUSD int64) error
}

// OutputTokens is the output basis of the reserve and the tpm charge: maxTokens when the
// request sets it (> 0), else the model's maxOutputTokens (> 0), else DefaultOutputTokens.
func OutputTokens(maxTokens, maxOutputTokens int64) int64 {
	switch {
	case maxTokens > 0:
		return maxTokens
	case maxOutputTokens > 0:
		return maxOutputTokens
	}
	return DefaultOutputTokens
}

// CostMicroUSD is the cost in micro-USD of inputTokens and outputTokens at prices in USD per
// million tokens (1 USD per million tokens is exactly 1 micro-USD per token), rounded up to a
// whole micro-USD; used for the reserve (contract.md "Billing": input estimate x input price +
// output basis x output price). Negative or non-finite prices count as 0; the result saturates
// at math.MaxInt64.
func CostMicroUSD(inputTokens, outputTokens int64, inPerMTokUSD, outPerMTokUSD float64) int64 {
	c := float64(max(inputTokens, 0))*finite(inPerMTokUSD) + float64(max(outputTokens, 0))*finite(outPerMTokUSD)
	// A float product such as 1000 x 0.15 lands a hair above the integer; that hair is not a
	// micro-dollar.
	return saturate(math.Ceil(c - 1e-6))
}

// MicroUSD converts an amount in USD to micro-USD, rounded to the nearest micro-USD; negative or
// non-finite amounts are 0, and the result saturates at math.MaxInt64.
func MicroUSD(usd float64) int64 { return saturate(math.Round(finite(usd) * 1e6)) }

func finite(f float64) float64 {
	if f > 0 && !math.IsInf(f, 0) {
		return f
	}
	return 0 // negative, NaN, +Inf
}

func saturate(f float64) int64 {
	switch {
	case f <= 0 || math.IsNaN(f):
		return 0
	case f >= math.MaxInt64:
		return math.MaxInt64
	}
	return int64(f)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// rateLimited is the 429 of a window or concurrency limit, with its retry-after clamped to
// 1..60 s.
func rateLimited(l *Layer, kind string, limit int64, retry time.Duration) *failure.Error {
	var what string
	switch kind {
	case KindRPM:
		what = "requests per minute"
	case KindTPM:
		what = "tokens per minute"
	default:
		what = "requests in flight"
	}
	return &failure.Error{
		Class:      failure.RateLimited,
		LimitKind:  kind,
		RetryAfter: min(max(retry, time.Second), time.Minute),
		Msg:        fmt.Sprintf("rate limit reached: this %s allows %d %s", l.Scope, limit, what),
	}
}

// overCredit is the 402 of a prepaid balance the reserve does not fit in (limit kind credit).
func overCredit(reserve, available int64) *failure.Error {
	return &failure.Error{Class: failure.InsufficientCredit, LimitKind: KindCredit,
		Msg: fmt.Sprintf("insufficient credit: this prepaid account has %s available, and this request may cost up to %s",
			usd(max(available, 0)), usd(reserve))}
}

// overBudget is the 402 of a budget the reserve does not fit in.
func overBudget(l *Layer, reserve, remaining int64) *failure.Error {
	period := "per " + l.Limits.BudgetPeriod.String()
	if l.Limits.BudgetPeriod == PeriodTotal {
		period = "in total"
	}
	return &failure.Error{
		Class:     failure.InsufficientCredit,
		LimitKind: KindBudget,
		Msg: fmt.Sprintf("insufficient budget: this %s's budget of %s %s has %s left, and this request may cost up to %s",
			l.Scope, usd(l.Limits.BudgetMicroUSD), period, usd(max(remaining, 0)), usd(reserve)),
	}
}

// usd formats micro-USD as dollars with six decimals ("$0.012000").
func usd(micro int64) string { return fmt.Sprintf("$%d.%06d", micro/1e6, micro%1e6) }
