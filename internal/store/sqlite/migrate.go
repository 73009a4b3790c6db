package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
)

// migrationFS holds the schema, one numbered file per step.
//
//go:embed migrations/*.sql
var migrationFS embed.FS

// migration is one schema step: migrations/NNNN_name.sql.
type migration struct {
	version int
	name    string
	sql     string
}

// loadMigrations reads dir in fsys. Files must be named NNNN_name.sql with versions 1, 2, 3...
// without gaps or duplicates.
func loadMigrations(fsys fs.FS, dir string) ([]migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("store: reading migrations: %w", err)
	}
	var ms []migration
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		num, name, ok := strings.Cut(strings.TrimSuffix(e.Name(), ".sql"), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("store: migration %s: want a name like 0001_name.sql", e.Name())
		}
		b, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("store: reading migration %s: %w", e.Name(), err)
		}
		ms = append(ms, migration{version: v, name: name, sql: string(b)})
	}
	slices.SortFunc(ms, func(a, b migration) int { return a.version - b.version })
	for i, m := range ms {
		if m.version != i+1 {
			return nil, fmt.Errorf("store: migrations are not numbered 1, 2, 3...: found %d at position %d", m.version, i+1)
		}
	}
	return ms, nil
}

// migrate applies the steps of ms that db has not recorded in schema_migrations, each in its
// own transaction, in order. Two processes migrating at once serialise on the write lock
// (transactions begin IMMEDIATE), and the second finds the work done. It refuses a database
// whose schema is newer than ms.
func migrate(ctx context.Context, db *sql.DB, ms []migration) error {
	const create = `CREATE TABLE IF NOT EXISTS schema_migrations (
    version    INTEGER PRIMARY KEY,
    name       TEXT NOT NULL,
    applied_at BIGINT NOT NULL
)`
	if _, err := db.ExecContext(ctx, create); err != nil {
		return err
	}
	var have sql.NullInt64
	if err := db.QueryRowContext(ctx, "SELECT MAX(version) FROM schema_migrations").Scan(&have); err != nil {
		return err
	}
	if int(have.Int64) > len(ms) {
		return fmt.Errorf("database schema version %d is newer than this binary's %d", have.Int64, len(ms))
	}
	for _, m := range ms[have.Int64:] {
		if err := apply(ctx, db, m); err != nil {
			return fmt.Errorf("migration %04d_%s: %w", m.version, m.name, err)
		}
	}
	return nil
}

func apply(ctx context.Context, db *sql.DB, m migration) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM schema_migrations WHERE version = ?", m.version).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return nil // another process applied it first
	}
	if _, err := tx.ExecContext(ctx, m.sql); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
		m.version, m.name, time.Now().UnixNano()); err != nil {
		return err
	}
	return tx.Commit()
}
