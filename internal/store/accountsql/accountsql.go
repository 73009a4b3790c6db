// Package accountsql implements accounts.Store (R-KEY-1, R-BILL-1..4) once, in SQL that both
// store backends accept, on the tables of their migration 0002_accounts: the SQLite and the
// Postgres stores embed a [Store] built over their connection pool. The differences between
// the two are confined to [New]'s postgres flag: $n placeholders, SELECT ... FOR UPDATE, and
// JSONB settings (read back through CAST(... AS TEXT), which SQLite accepts too).
package accountsql

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/switchyard-gw/switchyard/internal/accounts"
)

var _ accounts.Store = (*Store)(nil)

// Store is accounts.Store over one database. Its methods are safe for concurrent use.
type Store struct {
	db        *sql.DB // writes: every transaction and every statement that changes a row
	rdb       *sql.DB // reads outside a transaction; db unless WithReader set another pool
	pg        bool
	forUpdate string // " FOR UPDATE" on Postgres; SQLite's write transactions lock the database
	// feedScope is the schema whose changes this store announces on [ChangeChannel]; "" (SQLite,
	// or a Postgres store before EnableChangeFeed) announces nothing.
	feedScope string
	// ledgerSt holds the ledger writer's prepared statements (ledgerStatements), nil until its
	// first batch.
	stmtMu   sync.Mutex
	ledgerSt *ledgerStmts
}

// ChangeChannel is the Postgres NOTIFY channel of the change feed. Each payload is
// "<schema>|<change>", the change in accounts.Change's wire form ("key:key_abc"): channels are
// per database, so several gateways in schemas of one database tell their changes apart.
const ChangeChannel = "switchyard_changes"

// EnableChangeFeed makes every write of the Postgres store announce what it changed on
// [ChangeChannel] (pg_notify, inside the write's transaction: delivered at its commit, never
// for a rollback), scoped to schema (the store's, current_schema()). It must be called before
// the store is used; it does nothing on SQLite.
func (s *Store) EnableChangeFeed(schema string) {
	if s.pg {
		s.feedScope = schema
	}
}

// notify announces ch in tx (Postgres with the feed enabled; else nothing).
func (s *Store) notify(ctx context.Context, tx *sql.Tx, kind accounts.ChangeKind, id string) error {
	if s.feedScope == "" {
		return nil
	}
	_, err := tx.ExecContext(ctx, `SELECT pg_notify($1, $2)`, ChangeChannel,
		s.feedScope+"|"+accounts.Change{Kind: kind, ID: id}.String())
	return err
}

// New returns the accounts store over db, whose schema must include migration 0002_accounts.
// postgres selects Postgres SQL ($n placeholders, row locks); false is SQLite.
func New(db *sql.DB, postgres bool) *Store {
	s := &Store{db: db, rdb: db, pg: postgres}
	if postgres {
		s.forUpdate = " FOR UPDATE"
	}
	return s
}

// WithReader makes the store run its reads outside a transaction (lookups, lists, the ledger
// and sums) on r, and only its writes on the pool given to New. The SQLite store gives New its
// single writer connection and r its pool of readers, so that a read never waits for a write
// in progress (WAL). It must be called before the store is used; it returns s.
func (s *Store) WithReader(r *sql.DB) *Store {
	s.rdb = r
	return s
}

// q rewrites the ? placeholders of query as $1, $2... on Postgres. No query here has a ? in a
// string literal.
func (s *Store) q(query string) string {
	if !s.pg {
		return query
	}
	var b strings.Builder
	n := 0
	for i := 0; i < len(query); i++ {
		if query[i] == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(query[i])
	}
	return b.String()
}

func (s *Store) inTx(ctx context.Context, f func(*sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := f(tx); err != nil {
		return err
	}
	return tx.Commit()
}

// exists reports whether query (SELECT 1 ... WHERE ...) finds a row.
func (s *Store) exists(ctx context.Context, tx *sql.Tx, query string, args ...any) (bool, error) {
	var one int
	err := tx.QueryRowContext(ctx, s.q(query), args...).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

func settingsText(raw json.RawMessage) (string, error) {
	if err := accounts.ValidSettings(raw); err != nil {
		return "", err
	}
	if len(strings.TrimSpace(string(raw))) == 0 {
		return "{}", nil
	}
	return string(raw), nil
}

func nanos(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixNano()
}

func fromNanos(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return time.Unix(0, n.Int64).UTC()
}

func wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("store: %s: %w", what, err)
}

const (
	accountCols   = `id, name, CAST(settings AS TEXT), billing, balance_micro_usd, created_at`
	workspaceCols = `id, account_id, name, CAST(settings AS TEXT), created_at`
	keyCols       = `id, account_id, workspace_id, name, prefix, secret_hash, CAST(settings AS TEXT), revoked_at, created_at`
)

type scanner interface{ Scan(dest ...any) error }

func scanAccount(r scanner) (*accounts.Account, error) {
	var a accounts.Account
	var settings, billing string
	var created sql.NullInt64
	if err := r.Scan(&a.ID, &a.Name, &settings, &billing, &a.BalanceMicroUSD, &created); err != nil {
		return nil, err
	}
	a.Settings, a.Billing, a.CreatedAt = json.RawMessage(settings), accounts.Billing(billing), fromNanos(created)
	return &a, nil
}

func scanWorkspace(r scanner) (*accounts.Workspace, error) {
	var w accounts.Workspace
	var settings string
	var created sql.NullInt64
	if err := r.Scan(&w.ID, &w.AccountID, &w.Name, &settings, &created); err != nil {
		return nil, err
	}
	w.Settings, w.CreatedAt = json.RawMessage(settings), fromNanos(created)
	return &w, nil
}

func scanKey(r scanner) (*accounts.Key, error) {
	var k accounts.Key
	var ws sql.NullString
	var hash []byte
	var settings string
	var revoked, created sql.NullInt64
	if err := r.Scan(&k.ID, &k.AccountID, &ws, &k.Name, &k.Prefix, &hash, &settings, &revoked, &created); err != nil {
		return nil, err
	}
	if len(hash) != len(k.SecretHash) {
		return nil, fmt.Errorf("key %s: stored hash has %d bytes", k.ID, len(hash))
	}
	copy(k.SecretHash[:], hash)
	k.WorkspaceID, k.Settings = ws.String, json.RawMessage(settings)
	k.RevokedAt, k.CreatedAt = fromNanos(revoked), fromNanos(created)
	return &k, nil
}

// one reads a single row, mapping no row to accounts.ErrNotFound.
func one[T any](row *sql.Row, scan func(scanner) (*T, error)) (*T, error) {
	v, err := scan(row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, accounts.ErrNotFound
	}
	return v, err
}
