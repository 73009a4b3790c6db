// Package stats owns the routing statistics of requirements.md R-ORDER-4 and the uptime of
// R-CIRCUIT-8: for each (deployment, model) route, and for each deployment across its models,
// a 24-hour window of
//
//   - latency: mean time to first token of successful requests, in milliseconds;
//   - throughput: output tokens per second of successful requests, after the first token;
//   - reliability: successes / (successes + provider-caused failures); client-caused errors
//     (failure.Class.CallerFault), cancellations and refusals made by the gateway itself are not
//     counted at all (R-ORDER-4);
//   - uptime: the same ratio without upstream 429s, which are caller-driven (R-CIRCUIT-4), shown
//     only once the window holds [UptimeMinimum] (100) counted requests (R-CIRCUIT-8).
//
// Failures counted are those that count on a circuit (failure.Class.CountsOnCircuit: the
// failover classes and truncation after commit), the same rule as R-CIRCUIT-3.
//
// Memory is bounded: a route keeps 24 hourly buckets of sums and counts (a ring; the window is
// the current hour and the 23 before it), and a [Collector] holds at most Options.MaxRoutes
// routes. Updates stay off the request path: [Collector.Record] is a non-blocking send to a
// bounded queue (a full queue drops and counts), drained by the one goroutine of
// [Collector.Run]. Reads ([Collector.Route], [Collector.Uptime]) take no lock in the common
// case: they load a snapshot that Run publishes, recomputing it only when the hour has turned.
// The clock is injected (Options.Now). Collector satisfies plan.Stats.
package stats
