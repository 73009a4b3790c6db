// Package store opens the gateway's persistent store from the store.url of the configuration
// (contract.md): sqlite://path.db for the embedded SQLite store (subpackage sqlite). The
// shared Postgres store (postgres://, subpackage postgres) is not implemented yet and is
// refused with a clear error.
//
// It owns the choice of backend only; the tables, migrations and queries live in the
// subpackages, and each consumer declares the interface it needs (audit.Store for R-AUDIT).
package store
