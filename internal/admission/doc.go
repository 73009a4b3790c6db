// Package admission owns the caller limits that are checked before a request is dispatched and
// never fail over (R-BILL-1, R-BILL-4; contract.md "x-switchyard-limit-kind"): requests per
// minute, tokens per minute, requests in flight, and a budget per period with its reserve.
//
// The limits live behind [Store], whose [Store.Acquire] checks and takes every limit of every
// layer (today: the key and its account) in ONE atomic operation, so that a burst of concurrent
// requests cannot spend past a budget. The [Memory] store does it under one mutex on one node; a
// shared store (Redis, a later issue, roadmap item 1) does it in one server-side script with
// the same inputs: [Request] carries the limits themselves, so a store keeps counters only and
// needs no copy of the configuration.
//
// Rules implemented here:
//
//   - R-BILL-1: a request is admitted only when, for every layer, one more request fits its
//     rpm, its token charge fits its tpm, one more request fits its concurrency, and its
//     reserve (the most it can cost, [CostMicroUSD] of [OutputTokens]) fits what is left of
//     its budget in the current period. A [Hold] is then settled to the actual cost
//     ([Hold.Settle]) or released ([Hold.Release]).
//   - R-BILL-2: a hold released without a settle bills nothing: its reserve and its token charge
//     are returned. Only the request counts against rpm.
//   - R-BILL-4: the counters live in the admission store (in memory on one node).
//
// Windows and periods:
//
//   - rpm and tpm count in fixed one-minute windows aligned to the clock's minute (UTC); a
//     refusal carries a retry-after of the seconds until the window ends, clamped to 1..60.
//     Fixed windows may admit up to twice a limit across a minute boundary; they are what a
//     shared store can keep with one counter per window.
//   - A request whose token charge alone exceeds tpm is admitted into an empty window only, so
//     that a large max_tokens never locks a key out for good.
//   - Budgets reset at the start of each UTC day or UTC calendar month (budget_period day,
//     month), or never (total). Outstanding reserves carry across a reset, and a settle charges
//     the period in which it happens.
//
// Costs are integers in micro-USD (1e-6 USD) everywhere in this package, never floats. The
// package does not import net/http; refusals are *failure.Error values (rate_limited with a
// LimitKind of rpm, tpm or concurrency; insufficient_credit with LimitKind budget).
package admission
