package sqlite

import "embed"

// migrationFS holds the schema, one numbered file per step (migrations/NNNN_name.sql),
// applied by the shared runner of package store/migrate. Writes begin IMMEDIATE (dsnParams),
// so two processes migrating at once serialise on SQLite's write lock.
//
//go:embed migrations/*.sql
var migrationFS embed.FS
