// Package migrate is the schema migration runner shared by the store backends (store/sqlite,
// store/postgres): it loads numbered SQL files (NNNN_name.sql) from an embedded directory and
// applies, in order and each in its own transaction, those a database has not yet recorded in
// its schema_migrations table. A database whose schema is newer than the binary is refused.
//
// It owns the runner only; each backend owns its migration files, written in its own SQL
// dialect with the same numbering and meaning.
package migrate
