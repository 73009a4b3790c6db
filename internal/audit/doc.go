// Package audit owns the per-request audit record of requirements.md R-AUDIT: what was asked
// for, and every physical upstream attempt made to serve it (R-AUDIT-2, R-AUDIT-3), including
// the parameters dropped in translation (R-DIALECT-2).
//
// A [Record] holds metadata only, never prompt or completion content. The [Recorder] takes
// records from the request path without blocking (a bounded queue; a full queue drops and
// counts), writes them to a [Store] in batches on one goroutine owned by [Recorder.Run], and
// answers [Recorder.Lookup] for GET /v1/generation, finding records that are still queued as
// well as those already written.
//
// The [Store] interface is declared here, at the consumer; internal/store/sqlite implements it.
// This package imports no store.
package audit
