package postgres

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/switchyard-gw/switchyard/internal/accounts"
	"github.com/switchyard-gw/switchyard/internal/store/accountsql"
	"github.com/switchyard-gw/switchyard/internal/store/migrate"
)

// migrationFS holds the schema, one numbered file per step, with the same numbers and meaning
// as the SQLite store's.
//
//go:embed migrations/*.sql
var migrationFS embed.FS

// Pool bounds. The audit writer uses one connection at a time; readers (GET /v1/generation,
// /readyz) take the others.
const (
	maxOpenConns    = 8
	connMaxIdleTime = 5 * time.Minute
)

// migrationLock serialises gateways migrating the same database at once: a transaction-scoped
// advisory lock on a fixed key, taken first in every migration transaction.
const migrationLock = "SELECT pg_advisory_xact_lock(7310317914960390265)" // "eswitchy" as an int64

// errBadURL is returned for a postgres URL that does not parse. The URL is not echoed: it may
// carry a password.
var errBadURL = errors.New("store: the postgres url cannot be parsed (it is not shown: it may hold a password); " +
	"want postgres://user:password@host:port/database?sslmode=...")

// DB is an open Postgres store. Its methods are safe for concurrent use. The embedded
// accountsql.Store gives it the accounts.Store methods.
type DB struct {
	*accountsql.Store
	db     *sql.DB
	cfg    *pgx.ConnConfig // for the change feed's own connection (Listen)
	schema string          // current_schema(): the scope of the change feed's notices
}

// CheckURL reports whether url is a postgres:// or postgresql:// URL that pgx can parse,
// without connecting. Parsing may read the password file (~/.pgpass) or service file named by
// the URL or the PG* environment. The error never contains url.
func CheckURL(url string) error {
	_, err := parseURL(url)
	return err
}

func parseURL(url string) (*pgx.ConnConfig, error) {
	scheme, _, ok := strings.Cut(url, "://")
	if !ok || (scheme != "postgres" && scheme != "postgresql") {
		return nil, errors.New("store: not a postgres URL (want postgres://user:password@host:port/database)")
	}
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, errBadURL
	}
	if !strings.Contains(url, "default_query_exec_mode=") {
		// Statements are described once per connection and cached, but planned at every
		// execution with the actual parameters (the unnamed prepared statement). A plan cached
		// while the tables were small (a generic plan after five executions) would keep
		// sequential scans as they grow: the attempts delete of a batch went from 0.5 ms to
		// 60 ms within 10,000 records.
		cfg.DefaultQueryExecMode = pgx.QueryExecModeCacheDescribe
	}
	if _, ok := cfg.RuntimeParams["application_name"]; !ok {
		cfg.RuntimeParams["application_name"] = "switchyard"
	}
	return cfg, nil
}

// Open connects to the Postgres database named by url (postgres://user:password@host:port/db
// or postgresql://..., with libpq parameters in the query such as sslmode, connect_timeout
// or search_path) and migrates it to the current schema, in the first schema of the
// connection's search_path. It returns an error, which never contains url, for a URL that
// does not parse, when the server cannot be reached or refuses the login, when a migration
// fails, and for a schema newer than this binary. ctx bounds the connection and migrations.
func Open(ctx context.Context, url string) (*DB, error) {
	cfg, err := parseURL(url)
	if err != nil {
		return nil, err
	}
	sdb := stdlib.OpenDB(*cfg)
	sdb.SetMaxOpenConns(maxOpenConns)
	sdb.SetMaxIdleConns(maxOpenConns)
	sdb.SetConnMaxIdleTime(connMaxIdleTime)
	ms, err := migrate.Load(migrationFS, "migrations")
	if err != nil {
		sdb.Close()
		return nil, err
	}
	if err := migrate.Apply(ctx, sdb, ms, migrate.Options{DollarPlaceholders: true, Lock: migrationLock}); err != nil {
		sdb.Close()
		return nil, fmt.Errorf("store: migrating postgres database: %w", err)
	}
	var schema string
	if err := sdb.QueryRowContext(ctx, "SELECT current_schema()").Scan(&schema); err != nil {
		sdb.Close()
		return nil, fmt.Errorf("store: reading the postgres schema: %w", err)
	}
	st := accountsql.New(sdb, true)
	st.EnableChangeFeed(schema)
	return &DB{Store: st, db: sdb, cfg: cfg, schema: schema}, nil
}

// Listen implements accounts.ChangeFeed with LISTEN on accountsql.ChangeChannel over a
// connection of its own: it calls f with accounts.ChangeResync once listening, then with each
// change that any process commits to this store's schema (notices of other schemas of the
// database are skipped, unreadable ones taken as a resync), until ctx is done (nil) or the
// connection fails (the error, which never contains the URL).
func (db *DB) Listen(ctx context.Context, f func(accounts.Change)) error {
	conn, err := pgx.ConnectConfig(ctx, db.cfg)
	if err != nil {
		return fmt.Errorf("store: change feed: connecting: %w", err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = conn.Close(cctx)
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+accountsql.ChangeChannel); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("store: change feed: LISTEN: %w", err)
	}
	f(accounts.Change{Kind: accounts.ChangeResync})
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("store: change feed: %w", err)
		}
		scope, payload, ok := strings.Cut(n.Payload, "|")
		if ok && scope != db.schema {
			continue
		}
		ch, valid := accounts.ParseChange(payload)
		if !ok || !valid {
			ch = accounts.Change{Kind: accounts.ChangeResync}
		}
		f(ch)
	}
}

// Ping reports whether the database answers a query on the store's schema, for /readyz.
func (db *DB) Ping(ctx context.Context) error {
	var v int
	err := db.db.QueryRowContext(ctx, "SELECT 1 FROM schema_migrations LIMIT 1").Scan(&v)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("store: postgres ping: %w", err)
	}
	return nil
}

// Close closes the connections, waiting for queries in progress. It must be called once,
// after the last use.
func (db *DB) Close() error {
	if err := db.db.Close(); err != nil {
		return fmt.Errorf("store: closing postgres store: %w", err)
	}
	return nil
}
