// Package sqlite is the embedded store: one SQLite database file (modernc.org/sqlite, pure Go,
// database/sql driver "sqlite") in WAL mode, with a busy timeout and schema migrations embedded
// in the binary (migrations/NNNN_name.sql, applied in order by the shared runner of package
// store/migrate and recorded in the schema_migrations table).
//
// It implements audit.Store (R-AUDIT-2): tables requests and attempts, one transaction per
// batch, its rows written with multi-row INSERTs prepared once per database. Package
// store/postgres implements the same methods on the same schema (its own migration files, same
// numbers and meaning); the behaviour suite of store/storetest runs against both. It implements accounts.Store (accounts, workspaces, hashed keys, the ledger;
// migration 0002) through the SQL shared with Postgres in package store/accountsql.
package sqlite
