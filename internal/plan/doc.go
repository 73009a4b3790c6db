// Package plan builds the ordered list of candidate routes for one request: the pool and its
// order (R-ADMIT, R-ORDER). It is pure: no I/O, no net/http, no clock; health comes in through
// the [Health] interface and measurements through the [Stats] interface, both declared here and
// satisfied by internal/circuit and internal/stats.
//
// [Build] fills a [Plan] in two passes:
//
//   - Admission (admit.go, R-ADMIT-2, -4, -5, -7): each route of the model is checked in the
//     order of R-ADMIT — the pinned provider (R-SUFFIX-1), provider.only and provider.ignore
//     (R-ORDER-6), context fit (R-ADMIT-4), the protocol (R-ADMIT-5), the circuit (R-ADMIT-7) —
//     and a route failing one lands in Plan.Dropped with the reason of the first it fails.
//     R-ADMIT-1 (the key's allowlist) and R-ADMIT-3 (tier scope) are checked by the caller
//     before planning. Dedicated endpoints (R-KEY-6): a request through an endpoint admits its
//     reserved routes first, then (public fallback) the model's public routes; every other
//     reserved route is dropped as ReasonReserved, and public routes of an endpoint without
//     public fallback as ReasonNoPublicFallback. An empty pool is never widened:
//     [Plan.Refusal] names the constraint that emptied it.
//   - Ordering (strategy.go, band.go, affinity.go, policy.go, R-ORDER-1..7): the caller's own
//     connections (Input.BYOK, R-POLICY) before every house route; then an endpoint's reserved
//     routes, in its order, one band each (R-KEY-6); then a routing policy's saved order
//     (Input.SavedOrder, R-ORDER-7), one band per entry; then provider.order groups, then a
//     preferred-provider split, then inside each group the strategy's metric (price.go,
//     metrics.go), tie bands with the tolerances of R-ORDER-3, and inside a band ascending
//     deployment priority then a weighted random order seeded by the session key (R-ORDER-5).
//
// The same Plan drives the attempt loop and answers POST /v1/route (R-ORDER-8); its JSON form
// (json.go) is the body shape of contract.md.
package plan
