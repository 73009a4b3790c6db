// Package admission owns the caller limits that are checked before a request is dispatched and
// never fail over (R-BILL-1, R-BILL-4; contract.md "x-switchyard-limit-kind"): requests per
// minute, tokens per minute, requests in flight, and a budget per period with its reserve.
//
// The limits live behind [Store], whose [Store.Acquire] checks and takes every limit of every
// layer (the key, its workspace and its account) and the prepaid balance in ONE atomic
// operation, so that a burst of concurrent requests cannot spend past a budget or a balance.
// The [Memory] store does it under one mutex on one node; the [Redis] store, shared by many
// replicas (R-BILL-4, roadmap item 1), in one server-side Lua script with the same inputs:
// [Request] carries the limits themselves, so a store keeps counters only and needs no copy of
// the configuration. Both pass one behaviour suite (package admissiontest).
//
// Rules implemented here:
//
//   - R-BILL-1: a request is admitted only when its reserve (the most it can cost,
//     [CostMicroUSD] of [OutputTokens]) fits what its prepaid account has available, and, for
//     every layer, one more request fits its rpm, its token charge fits its tpm, one more
//     request fits its concurrency, and its reserve fits what is left of its budget in the
//     current period. A [Hold] is then ended exactly once: [Hold.Settle] to the actual cost or
//     [Hold.Release].
//   - R-BILL-2: a hold released without a settle bills nothing: its reserve and its token charge
//     are returned. Only the request counts against rpm.
//   - R-BILL-4: the counters live in the admission store (in memory on one node, in Redis for
//     many), and budget spend and prepaid balances start from the ledger ([Seeder]): a restart
//     grants nothing new, and a seed is set only where none is, so nothing counts twice.
//
// Windows, leases and periods:
//
//   - rpm and tpm count over a sliding [Window] of one minute: a request admitted at t counts
//     until t+1 min, so no rolling minute ever admits more than the limit (a fixed window would
//     admit twice the limit across a minute boundary). A refusal carries a retry-after of the
//     time until the oldest request leaves the window, clamped to 1..60 s.
//   - A request whose token charge alone exceeds tpm is admitted into an empty window only, so
//     that a large max_tokens never locks a key out for good.
//   - Concurrency slots and reserves are leases: in Redis they expire LeaseTTL (30 s) after the
//     last renewal, so a crashed replica's slots and reserves come back. A renewal puts back a
//     live hold's lease that is gone (it expired while renewals failed, or Redis lost its data),
//     and an end counts once and charges its settle with or without its lease (redis_lease.go).
//   - After Redis loses its data every replica re-registers its live holds before a counter is
//     reseeded; while Redis is unreachable (a failure ratio, redis_health.go) a replica holds
//     unmetered requests to its share of each limit and refuses metered ones.
//   - Budgets reset at the start of each UTC day or UTC calendar month (budget_period day,
//     month), or never (total). Outstanding reserves carry across a reset, and a settle charges
//     the period in which it happens.
//
// Costs are integers in micro-USD (1e-6 USD) everywhere in this package, never floats. The
// package does not import net/http; refusals are *failure.Error values (rate_limited with a
// LimitKind of rpm, tpm or concurrency; insufficient_credit with LimitKind budget).
package admission
