// Package store opens the gateway's persistent store from the store.url of the configuration
// (contract.md): sqlite://path.db for the embedded SQLite store (subpackage sqlite, the
// default), postgres:// or postgresql:// for the shared Postgres store of a scaled-out
// deployment (subpackage postgres). Both have the same migrations (same steps and meaning, each
// in its own SQL, applied by subpackage migrate) and the same behaviour, checked by the shared
// suite of subpackage storetest.
//
// It owns the choice of backend only; the tables, migrations and queries live in the
// subpackages, and each consumer declares the interface it needs (audit.Store for R-AUDIT,
// accounts.Store for keys, accounts and the ledger of R-KEY-1 and R-BILL).
package store
