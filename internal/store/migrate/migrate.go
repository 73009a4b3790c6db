package migrate

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Migration is one schema step, read from the file NNNN_name.sql.
type Migration struct {
	Version int    // NNNN: 1, 2, 3... without gaps
	Name    string // the file name after the first "_", without ".sql"
	SQL     string // the file's text, executed as one multi-statement Exec
}

// Load reads the migrations in dir of fsys, sorted by version. Files not ending in .sql are
// ignored. It returns an error when a .sql file is not named NNNN_name.sql with NNNN > 0, when
// the versions are not exactly 1, 2, 3... (a gap or a duplicate), or when a file cannot be read.
func Load(fsys fs.FS, dir string) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("store: reading migrations: %w", err)
	}
	var ms []Migration
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
		ms = append(ms, Migration{Version: v, Name: name, SQL: string(b)})
	}
	slices.SortFunc(ms, func(a, b Migration) int { return a.Version - b.Version })
	for i, m := range ms {
		if m.Version != i+1 {
			return nil, fmt.Errorf("store: migrations are not numbered 1, 2, 3...: found %d at position %d", m.Version, i+1)
		}
	}
	return ms, nil
}

// Options describe the database's SQL as far as the runner's own statements need it. The zero
// value suits SQLite.
type Options struct {
	// DollarPlaceholders selects $1, $2... (Postgres) instead of ? (SQLite) as the parameter
	// placeholders of the runner's statements.
	DollarPlaceholders bool
	// Lock, when not "", is executed first in each of the runner's transactions to serialise
	// processes migrating the same database at once (Postgres: pg_advisory_xact_lock). With ""
	// the database must serialise the transactions itself (SQLite: transactions begin
	// IMMEDIATE).
	Lock string
}

// Apply brings db to the schema of ms: it creates schema_migrations if needed, then applies
// each step of ms that db has not recorded, in order, each in its own transaction together with
// its row in schema_migrations. Two processes migrating at once serialise (see
// [Options.Lock]); the second finds the work done. It returns an error, and leaves the steps
// already applied in place, when a step fails, and refuses a database whose recorded version is
// newer than len(ms).
func Apply(ctx context.Context, db *sql.DB, ms []Migration, o Options) error {
	const create = `CREATE TABLE IF NOT EXISTS schema_migrations (
    version    INTEGER PRIMARY KEY,
    name       TEXT NOT NULL,
    applied_at BIGINT NOT NULL
)`
	if err := inTx(ctx, db, o, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, create)
		return err
	}); err != nil {
		return err
	}
	var have sql.NullInt64
	if err := db.QueryRowContext(ctx, "SELECT MAX(version) FROM schema_migrations").Scan(&have); err != nil {
		return err
	}
	if int(have.Int64) > len(ms) {
		return fmt.Errorf("database schema version %d is newer than this binary's %d", have.Int64, len(ms))
	}
	count := "SELECT COUNT(*) FROM schema_migrations WHERE version = ?"
	insert := "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)"
	if o.DollarPlaceholders {
		count = "SELECT COUNT(*) FROM schema_migrations WHERE version = $1"
		insert = "INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)"
	}
	for _, m := range ms[have.Int64:] {
		err := inTx(ctx, db, o, func(tx *sql.Tx) error {
			var n int
			if err := tx.QueryRowContext(ctx, count, m.Version).Scan(&n); err != nil {
				return err
			}
			if n > 0 {
				return nil // another process applied it first
			}
			if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, insert, m.Version, m.Name, time.Now().UnixNano())
			return err
		})
		if err != nil {
			return fmt.Errorf("migration %04d_%s: %w", m.Version, m.Name, err)
		}
	}
	return nil
}

// inTx runs f in a transaction that first takes o.Lock, and commits it if f succeeds.
func inTx(ctx context.Context, db *sql.DB, o Options, f func(*sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if o.Lock != "" {
		if _, err := tx.ExecContext(ctx, o.Lock); err != nil {
			return err
		}
	}
	if err := f(tx); err != nil {
		return err
	}
	return tx.Commit()
}
