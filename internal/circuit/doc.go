// Package circuit owns the circuit breakers of a gateway: one per deployment, one per
// (deployment, model) for hangs, and the per-provider admission pause that follows an upstream
// 429. It implements requirements.md R-CIRCUIT:
//
//   - R-CIRCUIT-1: a [Breaker] opens after Settings.Failures (default 2) counted failures in a
//     row and stays open for Settings.Cooldown (default 30s); [Set.Open] tells routing to drop
//     the route while it cools down.
//   - R-CIRCUIT-2: after the cooldown the breaker is half-open and [Breaker.Allow] hands exactly
//     one caller the probe; everyone else is refused until the probe reports. A successful probe
//     closes the circuit, a failed one reopens it with a new cooldown.
//   - R-CIRCUIT-3 and R-FAIL-11: [Ticket.Done] asks failure.Class.CountsOnCircuit; caller
//     faults and client cancellations are [Neutral] and never count (a Neutral probe only frees
//     the probe slot).
//   - R-CIRCUIT-4: an upstream_rate_limited failure counts on the deployment circuit and pauses
//     every deployment of that provider for the retry-after, clamped to 1..60s. [Set.OnPause]
//     hears each such pause and [Set.PauseUntil] applies another replica's, so that replicas on
//     a shared admission store skip a provider that asked any of them to wait; circuits
//     themselves stay per replica.
//   - R-CIRCUIT-5: a hang (failure.Error.Hang) counts on the (deployment, model) circuit and on
//     the deployment circuit (seed 000). A run of failures made only of one model's hangs opens
//     that model's circuit only, so the deployment's other models keep serving (seed 000: "its
//     other models keep answering"; issue 11 item 1); any mixed run (a hang then a 5xx, hangs of
//     two models) opens the deployment circuit (issue 25 item 2).
//   - R-CIRCUIT-6: [Set.Open] is what routing asks to decide that every route is cooling down;
//     the 503 itself is written elsewhere.
//   - R-CIRCUIT-7: thresholds and durations come from [Settings] (config routing.circuit).
//
// State is computed lazily from timestamps under a mutex, in the manner of sony/gobreaker's
// currentState: there are no timers and no goroutines. Each breaker carries a generation that
// changes on every transition (and when a probe slot is released), so an outcome reported with a
// [Token] from an earlier generation never moves the current state.
//
// The package does not import net/http; the clock is injected through Settings.Now.
package circuit
