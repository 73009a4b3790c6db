// Package fakeprovider owns Switchyard's scriptable emulated provider: an http.Handler that speaks
// the OpenAI Chat Completions or the Anthropic Messages wire format closely enough for the official
// SDKs, and that answers each model request according to a scripted Behavior (a normal answer, an
// error status, a reset, a hang, a stream cut or an in-stream error after N deltas, garbage, ...).
//
// It is used in-process by `switchyard demo` and by `switchyard serve` when no provider keys are
// set, behind httptest servers by the integration tests, and standalone through
// `switchyard fake-provider` (ListenAndServe) by users who want to test their failover
// configuration. docs/fake-provider.md is the user-facing reference; its Kind table and usage
// formula must stay in step with this package.
//
// The package implements no R- rule of its own. It is the fault injector the tests of the rules
// rely on: R-FAIL-1..11 (failover before commit, one terminal in-stream error after commit,
// never failing over on context overflow or content policy, a caller that goes away), R-CIRCUIT
// (hangs, resets and 5xx counted on a circuit), R-DIALECT (wire fidelity of both dialects) and
// R-BILL (deterministic usage numbers, see Usage in docs/fake-provider.md).
//
// Wire facts come from /work/shared/design/wire.md §1.4-1.6 and §4.4-4.6: one chunk id per OpenAI
// stream, a role-only first chunk, the usage chunk only when stream_options.include_usage is true;
// `event:` on every Anthropic frame and contiguous content-block indexes; the real error body of
// each dialect with request-id and x-request-id headers.
package fakeprovider
