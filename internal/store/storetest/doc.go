// Package storetest is the behaviour suite every store backend must pass (store/sqlite,
// store/postgres), so that the backends are interchangeable behind store.url: [Run] checks the
// audit.Store contract of R-AUDIT-2 (round trip of every field, nulls and empty arrays, replace
// semantics, not found, one transaction per batch, concurrent writers and readers), and
// [BenchmarkWriteRecords] measures batched writes the same way on each backend.
//
// [PostgresURL] gives each test a fresh Postgres schema on the server named by
// SWITCHYARD_TEST_POSTGRES_URL, and skips the test when that variable is unset. The package is
// imported by tests only.
package storetest
