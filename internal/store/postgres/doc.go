// Package postgres is the shared store for gateways scaled out over several processes: a
// Postgres database reached through github.com/jackc/pgx/v5 behind database/sql (driver
// "pgx", package pgx/v5/stdlib), with schema migrations embedded in the binary
// (migrations/NNNN_name.sql, the same steps and meaning as the SQLite store's, in Postgres
// types) applied by the shared runner of package store/migrate under an advisory lock.
//
// It implements audit.Store (R-AUDIT-2) with the same semantics as store/sqlite, checked by
// the shared suite of store/storetest: tables requests and attempts, one transaction per batch
// of a constant number of statements (array parameters and unnest, not one statement per
// row), a record whose request id exists replacing it and its attempts. Errors never echo the
// store URL: it may carry a password. It also implements accounts.Store (accounts,
// workspaces, hashed keys and the ledger; migration 0002) through the SQL shared with SQLite
// in package store/accountsql, with row locks (SELECT ... FOR UPDATE) for read-modify-write
// updates.
package postgres
