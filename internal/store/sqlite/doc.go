// Package sqlite is the embedded store: one SQLite database file (modernc.org/sqlite, pure Go,
// database/sql driver "sqlite") in WAL mode, with a busy timeout and schema migrations embedded
// in the binary (migrations/NNNN_name.sql, applied in order and recorded in the
// schema_migrations table).
//
// It implements audit.Store (R-AUDIT-2): tables requests and attempts, one transaction per
// batch. Later issues add the ledger and keys here, and a store/postgres subpackage with the
// same methods; the SQL is kept portable where that is cheap.
package sqlite
