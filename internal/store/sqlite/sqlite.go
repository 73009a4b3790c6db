package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/switchyard-gw/switchyard/internal/store/accountsql"
	"github.com/switchyard-gw/switchyard/internal/store/migrate"
)

// Scheme is the URL scheme of the embedded store.
const Scheme = "sqlite://"

// maxOpenConns bounds the connection pool of a file database. SQLite serialises writers;
// WAL lets readers run beside the one writer.
const maxOpenConns = 8

// dsnParams are applied by the driver to every new connection. busy_timeout (5 s) is how long
// a statement waits for another connection's lock before failing with SQLITE_BUSY; it comes
// first so the others wait for locks too; writes begin IMMEDIATE so that two writers queue on the lock
// instead of failing to upgrade a read lock; synchronous=NORMAL is durable across process
// crashes in WAL mode (a power loss may lose the last commits). temp_store=MEMORY keeps
// statement journals and temporary tables in memory: a multi-row INSERT of the audit writer
// journals every page it changes (for a statement rollback), and on a file that spilled
// beyond 64 KiB and doubled the writes per batch; nothing in a temporary file is needed
// after a crash.
const dsnParams = "?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)" +
	"&_pragma=foreign_keys(1)&_pragma=temp_store(2)&_txlock=immediate"

// DB is an open SQLite store. Its methods are safe for concurrent use. The embedded
// accountsql.Store gives it the accounts.Store methods.
type DB struct {
	*accountsql.Store
	db   *sql.DB
	path string // file path, or ":memory:"

	auditMu    sync.Mutex
	auditStmts *auditStmts // prepared on the first WriteRecords; closed by Close

	// writeMu serializes this process's audit write transactions: two batches queue here
	// instead of on SQLite's write lock, where a loaded machine can outwait busy_timeout and
	// fail one with SQLITE_BUSY (issue 15). Readers (WAL) never take it.
	writeMu sync.Mutex
}

// Open opens the SQLite database named by url, creating the file if needed, and migrates it
// to the current schema. url is sqlite://relative/path.db (relative to the working
// directory), sqlite:///abs/path.db, or sqlite://:memory: (a private in-memory database, for
// tests). The directory must exist; a new file is created with mode 0600. It returns an error for any other URL, for a file that
// cannot be opened, put in WAL mode or migrated, and for a schema newer than this binary.
func Open(ctx context.Context, url string) (*DB, error) {
	path, err := parseURL(url)
	if err != nil {
		return nil, err
	}
	memory := path == ":memory:"
	if !memory {
		if fi, err := os.Stat(filepath.Dir(path)); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("store: sqlite database %s: directory %s does not exist", path, filepath.Dir(path))
		}
		// A new database is readable by its owner only; SQLite gives the -wal and -shm files
		// the same permissions.
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err == nil {
			f.Close()
		} else if !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("store: creating sqlite database %s: %w", path, err)
		}
	}
	sdb, err := sql.Open("sqlite", path+dsnParams)
	if err != nil {
		return nil, fmt.Errorf("store: opening sqlite database %s: %w", path, err)
	}
	if memory {
		// Every connection to :memory: is a new, empty database: keep exactly one, forever.
		sdb.SetMaxOpenConns(1)
		sdb.SetMaxIdleConns(1)
		sdb.SetConnMaxLifetime(0)
		sdb.SetConnMaxIdleTime(0)
	} else {
		sdb.SetMaxOpenConns(maxOpenConns)
		sdb.SetMaxIdleConns(maxOpenConns)
	}
	db := &DB{Store: accountsql.New(sdb, false), db: sdb, path: path}
	if err := db.init(ctx, memory); err != nil {
		sdb.Close()
		return nil, err
	}
	return db, nil
}

func (db *DB) init(ctx context.Context, memory bool) error {
	var mode string
	if err := db.db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return fmt.Errorf("store: opening sqlite database %s: %w", db.path, err)
	}
	if !memory && !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("store: sqlite database %s: journal_mode is %q, want wal (is it on a network file system?)", db.path, mode)
	}
	ms, err := migrate.Load(migrationFS, "migrations")
	if err != nil {
		return err
	}
	if err := migrate.Apply(ctx, db.db, ms, migrate.Options{}); err != nil {
		return fmt.Errorf("store: migrating sqlite database %s: %w", db.path, err)
	}
	return nil
}

// parseURL returns the file path (or ":memory:") that a sqlite:// URL names.
func parseURL(url string) (string, error) {
	rest, ok := strings.CutPrefix(url, Scheme)
	if !ok {
		return "", fmt.Errorf("store: %q is not a sqlite URL (want sqlite://path.db)", url)
	}
	switch {
	case rest == "":
		return "", fmt.Errorf("store: %q names no database file (want sqlite://path.db)", url)
	case strings.ContainsAny(rest, "?#"):
		return "", fmt.Errorf("store: %q: sqlite URLs take no query or fragment", url)
	case rest == ":memory:":
		return rest, nil
	case strings.HasPrefix(rest, "file:"):
		return "", fmt.Errorf("store: %q: give a path, not a file: URI", url)
	case strings.HasSuffix(rest, "/"):
		return "", fmt.Errorf("store: %q names a directory, not a database file", url)
	}
	return filepath.Clean(filepath.FromSlash(rest)), nil
}

// Path returns the database file path as given in the URL (relative paths stay relative to
// the working directory), or ":memory:".
func (db *DB) Path() string { return db.path }

// Ping reports whether the database answers a query that reads the file, for /readyz.
func (db *DB) Ping(ctx context.Context) error {
	var v int
	err := db.db.QueryRowContext(ctx, "SELECT 1 FROM schema_migrations LIMIT 1").Scan(&v)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("store: sqlite ping: %w", err)
	}
	return nil
}

// Close closes the database, waiting for queries in progress. It must be called once, after
// the last use.
func (db *DB) Close() error {
	db.auditMu.Lock()
	if db.auditStmts != nil {
		db.auditStmts.close()
		db.auditStmts = nil
	}
	db.auditMu.Unlock()
	if err := db.db.Close(); err != nil {
		return fmt.Errorf("store: closing sqlite database %s: %w", db.path, err)
	}
	return nil
}
