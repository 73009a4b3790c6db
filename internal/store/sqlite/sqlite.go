package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/switchyard-gw/switchyard/internal/store/accountsql"
	"github.com/switchyard-gw/switchyard/internal/store/migrate"
)

// Scheme is the URL scheme of the embedded store.
const Scheme = "sqlite://"

// maxReadConns bounds the pool of reading connections of a file database; WAL lets readers
// run beside the one writer.
const maxReadConns = 8

// dsnParams are applied by the driver to every new connection, after busy_timeout (dsn):
// how long a statement waits for another connection's lock before failing with SQLITE_BUSY.
// In this process only one connection ever writes (writerParams), so the wait is only for
// another process writing the same file (a second gateway, the sqlite3 shell). synchronous=NORMAL is durable across process crashes in WAL
// mode (a power loss may lose the last commits). temp_store=MEMORY keeps statement journals
// and temporary tables in memory: a multi-row INSERT of the audit writer journals every page
// it changes (for a statement rollback), and on a file that spilled beyond 64 KiB and doubled
// the writes per batch; nothing in a temporary file is needed after a crash.
// journal_size_limit (walBound) truncates the WAL file to that size whenever it restarts from
// its beginning, so that a burst does not leave it at its peak size.
const dsnParams = "&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)" +
	"&_pragma=foreign_keys(1)&_pragma=temp_store(2)&_pragma=journal_size_limit(16777216)"

// walBound is the WAL size, bytes (atomic so that a test may lower it while a checkpointer
// runs), past which the checkpointer runs a TRUNCATE checkpoint
// (issue 27 item 3): 16 MiB, also the journal_size_limit of every connection (dsnParams). The
// WAL then stays below walBound plus what the process writes in one checkpointEvery (a few MB
// at 1000 metered requests/s), unless a read transaction stays open for seconds.
var walBound atomic.Int64

// defaultWALBound is walBound's value: 16 MiB.
const defaultWALBound = 16 << 20

func init() { walBound.Store(defaultWALBound) }

// truncateTimeout bounds one TRUNCATE checkpoint; it waits for the readers of older snapshots.
const truncateTimeout = 2 * time.Second

// busyTimeout is the busy_timeout of every connection, milliseconds.
const busyTimeout = 5000

// writerParams are added for the writer connection: its transactions begin IMMEDIATE (they
// take the write lock first, so a transaction that reads then writes never fails to upgrade
// its lock), and it never checkpoints the WAL itself (wal_autocheckpoint=0): the checkpointer
// does, beside it, so a commit never waits for a checkpoint.
const writerParams = "&_txlock=immediate&_pragma=wal_autocheckpoint(0)"

// writerBusyTimeout is the writer connection's busy_timeout, milliseconds; a test sets 0 to
// show that no write of the process ever waits for SQLite's lock.
var writerBusyTimeout = busyTimeout

// dsn is the driver's name of the database at path with busy_timeout busyMS and params.
func dsn(path string, busyMS int, params string) string {
	return path + "?_pragma=busy_timeout(" + strconv.Itoa(busyMS) + ")" + params
}

// checkpointEvery is how often the checkpointer copies the WAL back into the database file
// (a PASSIVE checkpoint: it waits for no reader or writer; frames a reader still needs are
// copied at a later turn).
const checkpointEvery = time.Second

// DB is an open SQLite store. Its methods are safe for concurrent use. The embedded
// accountsql.Store gives it the accounts.Store methods.
//
// Every write of the process (audit batches, ledger entries, admin changes, heartbeats,
// migrations) goes through one connection, db: writers queue for it in database/sql, bounded
// by their context, instead of on SQLite's write lock, where a loaded machine outwaits
// busy_timeout and fails one with SQLITE_BUSY (issue 15). Reads use rdb, a pool of
// connections that never wait for a write (WAL). A :memory: database has one connection for
// both.
type DB struct {
	*accountsql.Store
	db   *sql.DB // the writer: one connection
	rdb  *sql.DB // the readers; db for :memory:
	path string  // file path, or ":memory:"

	auditMu    sync.Mutex
	auditStmts *auditStmts // prepared on the first WriteRecords; closed by Close
	writers    sync.Pool   // *batchWriter: the buffers of WriteRecords

	stopCheckpoints context.CancelFunc // nil for :memory:
	checkpointsDone chan struct{}
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
	wdb, err := sql.Open("sqlite", dsn(path, writerBusyTimeout, dsnParams+writerParams))
	if err != nil {
		return nil, fmt.Errorf("store: opening sqlite database %s: %w", path, err)
	}
	// One connection, kept forever: the only writer (and, for :memory:, where every
	// connection is a new empty database, the only connection).
	wdb.SetMaxOpenConns(1)
	wdb.SetMaxIdleConns(1)
	wdb.SetConnMaxLifetime(0)
	wdb.SetConnMaxIdleTime(0)
	rdb := wdb
	if !memory {
		if rdb, err = sql.Open("sqlite", dsn(path, busyTimeout, dsnParams)); err != nil {
			wdb.Close()
			return nil, fmt.Errorf("store: opening sqlite database %s: %w", path, err)
		}
		rdb.SetMaxOpenConns(maxReadConns)
		rdb.SetMaxIdleConns(maxReadConns)
	}
	db := &DB{Store: accountsql.New(wdb, false).WithReader(rdb), db: wdb, rdb: rdb, path: path}
	if err := db.init(ctx, memory); err != nil {
		db.closePools()
		return nil, err
	}
	if !memory {
		cctx, cancel := context.WithCancel(context.Background())
		db.stopCheckpoints, db.checkpointsDone = cancel, make(chan struct{})
		go db.checkpoints(cctx)
	}
	return db, nil
}

// checkpoints runs a PASSIVE checkpoint on a reading connection every checkpointEvery until
// ctx is done. A failed checkpoint is tried again at the next turn; its frames stay in the
// WAL meanwhile, readable.
func (db *DB) checkpoints(ctx context.Context) {
	defer close(db.checkpointsDone)
	t := time.NewTicker(checkpointEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		_ = db.checkpoint(ctx)
	}
}

// checkpoint copies what it can of the WAL into the database file without waiting for a
// reader or the writer (PASSIVE). When the WAL is larger than walBound (readers kept the
// passive checkpoints from reaching its end, so it never restarted), it then runs a TRUNCATE
// checkpoint on the writer connection: queued behind the writes in progress like any write
// (never contending for SQLite's lock with this process's writes), it waits for the readers
// of older snapshots (at most truncateTimeout), copies every frame and empties the WAL file.
// No request waits for it: on the embedded store the request path never writes (the ledger's
// crash trace is its journal; accounts.FileJournal), only the background writers and the
// admin API do.
func (db *DB) checkpoint(ctx context.Context) error {
	var busy, log, copied int
	if err := db.rdb.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &log, &copied); err != nil {
		return err
	}
	if fi, err := os.Stat(db.path + "-wal"); err != nil || fi.Size() <= walBound.Load() {
		return nil
	}
	tctx, cancel := context.WithTimeout(ctx, truncateTimeout)
	defer cancel()
	return db.db.QueryRowContext(tctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &log, &copied)
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

// LedgerJournalDir is the directory of the ledger writer's crash journals, next to the
// database file ("<path>-ledger"; accounts.FileJournal), or "" for :memory:, which does not
// outlive the process anyway.
func (db *DB) LedgerJournalDir() string {
	if db.path == ":memory:" {
		return ""
	}
	return db.path + "-ledger"
}

// Ping reports whether the database answers a query that reads the file, for /readyz.
func (db *DB) Ping(ctx context.Context) error {
	var v int
	err := db.rdb.QueryRowContext(ctx, "SELECT 1 FROM schema_migrations LIMIT 1").Scan(&v)
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
	if db.stopCheckpoints != nil {
		db.stopCheckpoints()
		<-db.checkpointsDone
	}
	if err := db.closePools(); err != nil {
		return fmt.Errorf("store: closing sqlite database %s: %w", db.path, err)
	}
	return nil
}

// closePools closes the readers, then the writer (the last connection to close checkpoints
// the WAL and removes it).
func (db *DB) closePools() error {
	var err error
	if db.rdb != db.db {
		err = db.rdb.Close()
	}
	return errors.Join(err, db.db.Close())
}
