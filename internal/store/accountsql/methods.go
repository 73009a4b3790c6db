package accountsql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strings"
	"time"

	"github.com/switchyard-gw/switchyard/internal/accounts"
)

// CreateAccount implements accounts.Store.
func (s *Store) CreateAccount(ctx context.Context, a *accounts.Account) error {
	settings, err := settingsText(a.Settings)
	if err != nil {
		return wrap("creating account", err)
	}
	billing := a.Billing
	if billing == "" {
		billing = accounts.Unmetered
	}
	return wrap("creating account", s.inTx(ctx, func(tx *sql.Tx) error {
		if ok, err := s.exists(ctx, tx, `SELECT 1 FROM accounts WHERE id = ?`, a.ID); err != nil || ok {
			return existsErr(ok, err)
		}
		_, err := tx.ExecContext(ctx, s.q(`INSERT INTO accounts (id, name, settings, billing, balance_micro_usd, created_at)
            VALUES (?, ?, ?, ?, ?, ?)`), a.ID, a.Name, settings, string(billing), a.BalanceMicroUSD, createdAt(a.CreatedAt))
		if err != nil {
			return err
		}
		return s.notify(ctx, tx, accounts.ChangeAccount, a.ID)
	}))
}

// CreateWorkspace implements accounts.Store.
func (s *Store) CreateWorkspace(ctx context.Context, w *accounts.Workspace) error {
	settings, err := settingsText(w.Settings)
	if err != nil {
		return wrap("creating workspace", err)
	}
	return wrap("creating workspace", s.inTx(ctx, func(tx *sql.Tx) error {
		if ok, err := s.exists(ctx, tx, `SELECT 1 FROM accounts WHERE id = ?`+s.forShare(), w.AccountID); err != nil || !ok {
			return notFoundErr(ok, err, "account")
		}
		if ok, err := s.exists(ctx, tx, `SELECT 1 FROM workspaces WHERE id = ?`, w.ID); err != nil || ok {
			return existsErr(ok, err)
		}
		_, err := tx.ExecContext(ctx, s.q(`INSERT INTO workspaces (id, account_id, name, settings, created_at)
            VALUES (?, ?, ?, ?, ?)`), w.ID, w.AccountID, w.Name, settings, createdAt(w.CreatedAt))
		if err != nil {
			return err
		}
		return s.notify(ctx, tx, accounts.ChangeWorkspace, w.ID)
	}))
}

// CreateKey implements accounts.Store.
func (s *Store) CreateKey(ctx context.Context, k *accounts.Key) error {
	settings, err := settingsText(k.Settings)
	if err != nil {
		return wrap("creating key", err)
	}
	var ws any
	if k.WorkspaceID != "" {
		ws = k.WorkspaceID
	}
	return wrap("creating key", s.inTx(ctx, func(tx *sql.Tx) error {
		if ok, err := s.exists(ctx, tx, `SELECT 1 FROM accounts WHERE id = ?`+s.forShare(), k.AccountID); err != nil || !ok {
			return notFoundErr(ok, err, "account")
		}
		if k.WorkspaceID != "" {
			ok, err := s.exists(ctx, tx, `SELECT 1 FROM workspaces WHERE id = ? AND account_id = ?`+s.forShare(), k.WorkspaceID, k.AccountID)
			if err != nil || !ok {
				return notFoundErr(ok, err, "workspace of that account")
			}
		}
		if ok, err := s.exists(ctx, tx, `SELECT 1 FROM keys WHERE id = ? OR secret_hash = ?`, k.ID, k.SecretHash[:]); err != nil || ok {
			return existsErr(ok, err)
		}
		_, err := tx.ExecContext(ctx, s.q(`INSERT INTO keys (id, account_id, workspace_id, name, prefix, secret_hash, settings, revoked_at, created_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`), k.ID, k.AccountID, ws, k.Name, k.Prefix, k.SecretHash[:], settings,
			nanos(k.RevokedAt), createdAt(k.CreatedAt))
		if err != nil {
			return err
		}
		return s.notify(ctx, tx, accounts.ChangeKey, k.ID)
	}))
}

// forShare locks a parent row against a concurrent change on Postgres.
func (s *Store) forShare() string {
	if s.pg {
		return " FOR SHARE"
	}
	return ""
}

func createdAt(t time.Time) int64 {
	if t.IsZero() {
		t = time.Now()
	}
	return t.UnixNano()
}

func existsErr(found bool, err error) error {
	if err != nil {
		return err
	}
	if found {
		return accounts.ErrExists
	}
	return nil
}

func notFoundErr(found bool, err error, what string) error {
	if err != nil {
		return err
	}
	if !found {
		return fmt.Errorf("no such %s: %w", what, accounts.ErrNotFound)
	}
	return nil
}

// Account implements accounts.Store.
func (s *Store) Account(ctx context.Context, id string) (*accounts.Account, error) {
	a, err := one(s.rdb.QueryRowContext(ctx, s.q(`SELECT `+accountCols+` FROM accounts WHERE id = ?`), id), scanAccount)
	return a, wrap("reading account", err)
}

// Workspace implements accounts.Store.
func (s *Store) Workspace(ctx context.Context, id string) (*accounts.Workspace, error) {
	w, err := one(s.rdb.QueryRowContext(ctx, s.q(`SELECT `+workspaceCols+` FROM workspaces WHERE id = ?`), id), scanWorkspace)
	return w, wrap("reading workspace", err)
}

// Key implements accounts.Store.
func (s *Store) Key(ctx context.Context, id string) (*accounts.Key, error) {
	k, err := one(s.rdb.QueryRowContext(ctx, s.q(`SELECT `+keyCols+` FROM keys WHERE id = ?`), id), scanKey)
	return k, wrap("reading key", err)
}

// UpdateAccount implements accounts.Store.
func (s *Store) UpdateAccount(ctx context.Context, id string, f func(*accounts.Account) error) (*accounts.Account, error) {
	var out *accounts.Account
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		a, err := one(tx.QueryRowContext(ctx, s.q(`SELECT `+accountCols+` FROM accounts WHERE id = ?`+s.forUpdate), id), scanAccount)
		if err != nil {
			return err
		}
		if err := f(a); err != nil {
			return err
		}
		settings, err := settingsText(a.Settings)
		if err != nil {
			return err
		}
		if _, err := accounts.ParseBilling(string(a.Billing)); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.q(`UPDATE accounts SET name = ?, settings = ?, billing = ? WHERE id = ?`),
			a.Name, settings, string(a.Billing), id); err != nil {
			return err
		}
		a.ID, a.Settings, out = id, []byte(settings), a
		return s.notify(ctx, tx, accounts.ChangeAccount, id)
	})
	if err != nil {
		return nil, wrap("updating account", err)
	}
	return out, nil
}

// UpdateWorkspace implements accounts.Store.
func (s *Store) UpdateWorkspace(ctx context.Context, id string, f func(*accounts.Workspace) error) (*accounts.Workspace, error) {
	var out *accounts.Workspace
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		w, err := one(tx.QueryRowContext(ctx, s.q(`SELECT `+workspaceCols+` FROM workspaces WHERE id = ?`+s.forUpdate), id), scanWorkspace)
		if err != nil {
			return err
		}
		if err := f(w); err != nil {
			return err
		}
		settings, err := settingsText(w.Settings)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.q(`UPDATE workspaces SET name = ?, settings = ? WHERE id = ?`), w.Name, settings, id); err != nil {
			return err
		}
		w.ID, w.Settings, out = id, []byte(settings), w
		return s.notify(ctx, tx, accounts.ChangeWorkspace, id)
	})
	if err != nil {
		return nil, wrap("updating workspace", err)
	}
	return out, nil
}

// UpdateKey implements accounts.Store.
func (s *Store) UpdateKey(ctx context.Context, id string, f func(*accounts.Key) error) (*accounts.Key, error) {
	var out *accounts.Key
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		k, err := one(tx.QueryRowContext(ctx, s.q(`SELECT `+keyCols+` FROM keys WHERE id = ?`+s.forUpdate), id), scanKey)
		if err != nil {
			return err
		}
		if err := f(k); err != nil {
			return err
		}
		settings, err := settingsText(k.Settings)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.q(`UPDATE keys SET name = ?, settings = ?, revoked_at = ? WHERE id = ?`),
			k.Name, settings, nanos(k.RevokedAt), id); err != nil {
			return err
		}
		k.ID, k.Settings, out = id, []byte(settings), k
		return s.notify(ctx, tx, accounts.ChangeKey, id)
	})
	if err != nil {
		return nil, wrap("updating key", err)
	}
	return out, nil
}

// Workspaces implements accounts.Store. The lookup by account_id uses the index of the
// workspaces table's UNIQUE (account_id, id) constraint (migration 0002).
func (s *Store) Workspaces(ctx context.Context, accountID string) ([]accounts.Workspace, error) {
	rows, err := s.rdb.QueryContext(ctx, s.q(`SELECT `+workspaceCols+` FROM workspaces WHERE account_id = ?`), accountID)
	if err != nil {
		return nil, wrap("reading workspaces", err)
	}
	defer rows.Close()
	out := []accounts.Workspace{}
	for rows.Next() {
		w, err := scanWorkspace(rows)
		if err != nil {
			return nil, wrap("reading workspaces", err)
		}
		out = append(out, *w)
	}
	if err := rows.Err(); err != nil {
		return nil, wrap("reading workspaces", err)
	}
	return out, nil
}

// ActiveKeys implements accounts.Store.
func (s *Store) ActiveKeys(ctx context.Context) ([]accounts.Key, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT `+keyCols+` FROM keys WHERE revoked_at IS NULL`)
	if err != nil {
		return nil, wrap("reading keys", err)
	}
	defer rows.Close()
	var out []accounts.Key
	for rows.Next() {
		k, err := scanKey(rows)
		if err != nil {
			return nil, wrap("reading keys", err)
		}
		out = append(out, *k)
	}
	return out, wrap("reading keys", rows.Err())
}

// Accounts implements accounts.Store.
func (s *Store) Accounts(ctx context.Context) ([]accounts.Account, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT `+accountCols+` FROM accounts`)
	if err != nil {
		return nil, wrap("reading accounts", err)
	}
	defer rows.Close()
	var out []accounts.Account
	for rows.Next() {
		a, err := scanAccount(rows)
		if err != nil {
			return nil, wrap("reading accounts", err)
		}
		out = append(out, *a)
	}
	return out, wrap("reading accounts", rows.Err())
}

const insertEntry = `INSERT INTO ledger (at, account_id, key_id, request_id, model, deployment, kind,
    input_tokens, cached_tokens, cache_write_tokens, output_tokens, reasoning_tokens, amount_micro_usd, mark, usage_provenance, replica)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`

func (s *Store) insert(ctx context.Context, tx *sql.Tx, e *accounts.LedgerEntry) (bool, error) {
	t := &e.Tokens
	res, err := tx.ExecContext(ctx, s.q(insertEntry), createdAt(e.At), e.AccountID, e.KeyID, e.RequestID, e.Model,
		e.Deployment, string(e.Kind), t.Input, t.Cached, t.CacheWrite, t.Output, t.Reasoning, e.AmountMicroUSD, e.Mark, e.UsageProvenance, e.Replica)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// MaxBalanceMicroUSD is the highest balance a credit may leave on an account: 1e18 micro-USD
// (1e12 USD), below the int64 (and Postgres bigint) bound of about 9.2e18 so that settles and
// sums never overflow.
const MaxBalanceMicroUSD int64 = 1e18

// Credit implements accounts.Store. A credit that would take the balance above
// [MaxBalanceMicroUSD] is refused with accounts.ErrBalanceLimit and changes nothing: the
// UPDATE adds only when balance <= MaxBalanceMicroUSD - amount, so the database never computes
// an out-of-range sum.
func (s *Store) Credit(ctx context.Context, e *accounts.LedgerEntry) (int64, error) {
	if e.Kind != accounts.KindCredit || e.AmountMicroUSD <= 0 {
		return 0, errors.New("store: a credit must be of kind credit with a positive amount")
	}
	var balance int64
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, s.q(`UPDATE accounts SET balance_micro_usd = balance_micro_usd + ?
            WHERE id = ? AND balance_micro_usd <= ? RETURNING balance_micro_usd`),
			e.AmountMicroUSD, e.AccountID, MaxBalanceMicroUSD-e.AmountMicroUSD).Scan(&balance)
		if errors.Is(err, sql.ErrNoRows) {
			found, ferr := s.exists(ctx, tx, `SELECT 1 FROM accounts WHERE id = ?`, e.AccountID)
			switch {
			case ferr != nil:
				return ferr
			case found:
				return accounts.ErrBalanceLimit
			}
			return accounts.ErrNotFound
		}
		if err != nil {
			return err
		}
		if _, err = s.insert(ctx, tx, e); err != nil {
			return err
		}
		return s.notify(ctx, tx, accounts.ChangeAccount, e.AccountID)
	})
	return balance, wrap("crediting account", err)
}

// ledgerChunk is the most rows one INSERT of AppendLedger writes: 16 parameters a row stays far
// below the bound-parameter limits of SQLite (32766) and Postgres (65535). A power of two.
const ledgerChunk = 512

// AppendLedger implements accounts.Store. Each chunk of entries is one multi-row INSERT that
// skips an entry already stored (ON CONFLICT DO NOTHING on the unique indexes
// ledger_settle_request, ledger_reserve_request and ledger_release_request) and returns the rows
// it inserted; the reserves inserted are added to ledger_open and the requests settled or
// released removed from it; then each account's balance is reduced once by the sum of its
// settles inserted, accounts in id order (so that concurrent batches lock them in one order).
// Reserve and release entries change no balance. A batch is a few statements whatever its size:
// the round trips, not the rows, are what a batch costs. Every statement is prepared once and
// reused (ledgerStatements): a chunk is a power of two of rows (1, 2, 4, ... ledgerChunk), so a
// batch of n entries runs at most log2(n)+1 shapes, each parsed by the database once per
// connection instead of once per batch (issue 15: parsing was half of the ledger writer's CPU
// with keyed requests, whose batches are a few entries each).
func (s *Store) AppendLedger(ctx context.Context, entries []accounts.LedgerEntry) error {
	return s.appendLedger(ctx, entries, nil)
}

// AppendLedgerReport implements accounts.LedgerReporter: AppendLedger, and for each entry
// whether it was written (false: the store had it, and skipped it).
func (s *Store) AppendLedgerReport(ctx context.Context, entries []accounts.LedgerEntry) ([]bool, error) {
	written := make([]bool, len(entries))
	if err := s.appendLedger(ctx, entries, written); err != nil {
		return make([]bool, len(entries)), err
	}
	return written, nil
}

// appendLedger is AppendLedger; a non-nil written (one per entry) is set for the entries
// written. When the transaction fails nothing is written, whatever it says.
func (s *Store) appendLedger(ctx context.Context, entries []accounts.LedgerEntry, written []bool) error {
	if len(entries) == 0 {
		return nil
	}
	ls, err := s.ledgerStatements(ctx)
	if err != nil {
		return wrap("writing the ledger", err)
	}
	return wrap("writing the ledger", s.inTx(ctx, func(tx *sql.Tx) error {
		settled := make(map[string]int64)
		for off, rest := 0, entries; len(rest) > 0; {
			n := 1 << level(min(len(rest), ledgerChunk))
			var w []bool
			if written != nil {
				w = written[off : off+n]
			}
			if err := s.insertChunk(ctx, tx, ls, rest[:n], settled, w); err != nil {
				return err
			}
			if err := s.trackOpen(ctx, tx, ls, rest[:n]); err != nil {
				return err
			}
			rest, off = rest[n:], off+n
		}
		ids := make([]string, 0, len(settled))
		for id, micro := range settled {
			if micro != 0 {
				ids = append(ids, id)
			}
		}
		slices.Sort(ids)
		if len(ids) == 0 {
			return nil
		}
		st := tx.StmtContext(ctx, ls.update)
		for _, id := range ids {
			if _, err := st.ExecContext(ctx, settled[id], id); err != nil {
				return err
			}
		}
		return nil
	}))
}

// level is k such that 1<<k is the largest power of two <= n, for n >= 1: the chunk shape
// (ledgerStmts) of n rows.
func level(n int) int { return bits.Len(uint(n)) - 1 }

// ledgerLevels is the number of chunk shapes: 1, 2, 4, ... ledgerChunk rows.
var ledgerLevels = bits.Len(ledgerChunk)

// ledgerStmts are the ledger writer's statements, prepared once on the writer pool: for k in
// [0, ledgerLevels), insert[k] inserts 1<<k entries, open[k] adds 1<<k reserves to ledger_open
// and end[k] removes 1<<k requests from it; update reduces one account's balance.
type ledgerStmts struct {
	insert, open, end []*sql.Stmt
	update            *sql.Stmt
}

// ledgerStatements returns the ledger writer's statements, preparing them on first use. It
// must be called outside a transaction: the SQLite store's writer pool is one connection,
// which a transaction holds. Inside one, tx.StmtContext reuses a statement already prepared on
// the transaction's connection (database/sql prepares it there when it is not).
func (s *Store) ledgerStatements(ctx context.Context) (*ledgerStmts, error) {
	s.stmtMu.Lock()
	defer s.stmtMu.Unlock()
	if s.ledgerSt != nil {
		return s.ledgerSt, nil
	}
	openHead := `INSERT INTO ledger_open (request_id, replica, at) SELECT v.request_id, v.replica, v.at FROM (VALUES `
	openTail := `) AS v (request_id, replica, at) WHERE ` + endedV("v.request_id") + ` ON CONFLICT DO NOTHING`
	if !s.pg {
		openHead = `INSERT INTO ledger_open (request_id, replica, at) SELECT v.column1, v.column2, v.column3 FROM (VALUES `
		openTail = `) AS v WHERE ` + endedV("v.column1") + ` ON CONFLICT DO NOTHING`
	}
	const openRow = "(CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS BIGINT))"
	ls := &ledgerStmts{}
	prepare := func(query string) (*sql.Stmt, error) {
		st, err := s.db.PrepareContext(ctx, s.q(query))
		if err != nil {
			ls.close()
		}
		return st, err
	}
	for k := range ledgerLevels {
		for _, q := range []struct {
			dst             *[]*sql.Stmt
			head, row, tail string
		}{
			{&ls.insert, insertRows, insertRow, insertReturning},
			{&ls.open, openHead, openRow, openTail},
			{&ls.end, `DELETE FROM ledger_open WHERE request_id IN (`, "?", `)`},
		} {
			st, err := prepare(repeatRows(q.head, q.row, 1<<k, q.tail))
			if err != nil {
				return nil, err
			}
			*q.dst = append(*q.dst, st)
		}
	}
	var err error
	if ls.update, err = prepare(`UPDATE accounts SET balance_micro_usd = balance_micro_usd - ? WHERE id = ?`); err != nil {
		return nil, err
	}
	s.ledgerSt = ls
	return ls, nil
}

// close closes the statements prepared so far.
func (ls *ledgerStmts) close() {
	for _, sts := range [][]*sql.Stmt{ls.insert, ls.open, ls.end, {ls.update}} {
		for _, st := range sts {
			if st != nil {
				st.Close()
			}
		}
	}
}

// repeatRows is head followed by n copies of row separated by commas, then tail.
func repeatRows(head, row string, n int, tail string) string {
	var b strings.Builder
	b.Grow(len(head) + n*(len(row)+1) + len(tail))
	b.WriteString(head)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(row)
	}
	b.WriteString(tail)
	return b.String()
}

// insertChunk inserts es (a power of two of entries) in one statement and adds the amount of
// each settle it inserted to settled, by account; a non-nil written (one per entry of es) is
// set for those it inserted.
func (s *Store) insertChunk(ctx context.Context, tx *sql.Tx, ls *ledgerStmts, es []accounts.LedgerEntry, settled map[string]int64, written []bool) error {
	args := make([]any, 0, 16*len(es))
	for i := range es {
		e := &es[i]
		t := &e.Tokens
		args = append(args, createdAt(e.At), e.AccountID, e.KeyID, e.RequestID, e.Model, e.Deployment, string(e.Kind),
			t.Input, t.Cached, t.CacheWrite, t.Output, t.Reasoning, e.AmountMicroUSD, e.Mark, e.UsageProvenance, e.Replica)
	}
	rows, err := tx.StmtContext(ctx, ls.insert[level(len(es))]).QueryContext(ctx, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	var request sql.RawBytes // compared only, valid until the next row: no copy per row
	for rows.Next() {
		var kind, account string
		var micro int64
		if err := rows.Scan(&kind, &account, &micro, &request); err != nil {
			return err
		}
		if accounts.Kind(kind) == accounts.KindSettle {
			// The request path bounds each amount (accounts.MaxEntryMicroUSD); a sum that would
			// still overflow (entries no gateway wrote) fails the batch instead of wrapping
			// into a credit.
			if micro < 0 || micro > math.MaxInt64-settled[account] {
				return fmt.Errorf("settles of account %q out of range", account)
			}
			settled[account] += micro
		}
		if written != nil {
			// The row inserted is the first entry of its kind and request (a later one in
			// the chunk conflicted with it).
			for i := range es {
				if !written[i] && string(es[i].Kind) == kind && es[i].RequestID == string(request) && es[i].AccountID == account {
					written[i] = true
					break
				}
			}
		}
	}
	return rows.Err()
}

// trackOpen keeps ledger_open in step with the chunk es just inserted: its reserves are added
// (a reserve retried after its request ended is not reopened), then the requests it
// settles or releases are removed. Each is one prepared statement per power of two of rows.
func (s *Store) trackOpen(ctx context.Context, tx *sql.Tx, ls *ledgerStmts, es []accounts.LedgerEntry) error {
	var openArgs, endArgs []any
	for i := range es {
		e := &es[i]
		if e.RequestID == "" {
			continue
		}
		switch e.Kind {
		case accounts.KindReserve:
			openArgs = append(openArgs, e.RequestID, e.Replica, createdAt(e.At))
		case accounts.KindSettle, accounts.KindRelease:
			endArgs = append(endArgs, e.RequestID)
		}
	}
	// A reserve whose end is already stored (a retried batch) is not reopened (ledgerStatements).
	for len(openArgs) > 0 {
		k := level(len(openArgs) / 3)
		if _, err := tx.StmtContext(ctx, ls.open[k]).ExecContext(ctx, openArgs[:3<<k]...); err != nil {
			return err
		}
		openArgs = openArgs[3<<k:]
	}
	for len(endArgs) > 0 {
		k := level(len(endArgs))
		if _, err := tx.StmtContext(ctx, ls.end[k]).ExecContext(ctx, endArgs[:1<<k]...); err != nil {
			return err
		}
		endArgs = endArgs[1<<k:]
	}
	return nil
}

// endedV is the condition "no settle and no release of request id col is stored", written
// so that each half is a lookup in its partial unique index (ledger_settle_request,
// ledger_release_request: their WHERE terms repeated) instead of a scan of the whole ledger,
// which `kind IN ('settle', 'release')` was on SQLite for every reserve of every batch.
func endedV(col string) string {
	return `NOT EXISTS (SELECT 1 FROM ledger l WHERE l.request_id = ` + col + ` AND l.kind = 'settle')` +
		` AND NOT EXISTS (SELECT 1 FROM ledger l WHERE l.request_id = ` + col + ` AND l.kind = 'release' AND l.request_id <> '')`
}

// Heartbeat implements accounts.ReplicaStore.
func (s *Store) Heartbeat(ctx context.Context, id string, started, now time.Time) error {
	_, err := s.db.ExecContext(ctx, s.q(`INSERT INTO replicas (id, started_at, seen_at) VALUES (?, ?, ?)
        ON CONFLICT (id) DO UPDATE SET seen_at = excluded.seen_at`), id, createdAt(started), createdAt(now))
	return wrap("writing the replica heartbeat", err)
}

// OpenReserves implements accounts.ReplicaStore, from ledger_open (the reserves not ended: a
// small table) joined to the reserve entries; self's own are left out.
func (s *Store) OpenReserves(ctx context.Context, staleBefore time.Time, self string, limit int) ([]accounts.LedgerEntry, error) {
	rows, err := s.rdb.QueryContext(ctx, s.q(`SELECT l.at, l.account_id, l.key_id, l.request_id, l.model, l.amount_micro_usd, l.replica
        FROM ledger_open o JOIN ledger l ON l.request_id = o.request_id AND l.kind = 'reserve'
        LEFT JOIN replicas p ON p.id = o.replica
        WHERE o.at < ? AND o.replica <> ? AND (p.id IS NULL OR p.seen_at < ?)
        ORDER BY o.at LIMIT ?`), staleBefore.UnixNano(), self, staleBefore.UnixNano(), limit)
	if err != nil {
		return nil, wrap("reading open reserves", err)
	}
	defer rows.Close()
	var out []accounts.LedgerEntry
	for rows.Next() {
		var e accounts.LedgerEntry
		var at sql.NullInt64
		if err := rows.Scan(&at, &e.AccountID, &e.KeyID, &e.RequestID, &e.Model, &e.AmountMicroUSD, &e.Replica); err != nil {
			return nil, wrap("reading open reserves", err)
		}
		e.At, e.Kind = fromNanos(at), accounts.KindReserve
		out = append(out, e)
	}
	return out, wrap("reading open reserves", rows.Err())
}

// EndedRequests implements accounts.EndReader: one indexed lookup per id (ledger_settle_request,
// ledger_release_request), 500 ids a statement.
func (s *Store) EndedRequests(ctx context.Context, ids []string) (map[string]accounts.Kind, error) {
	out := make(map[string]accounts.Kind)
	for rest := ids; len(rest) > 0; {
		n := min(len(rest), 500)
		args := make([]any, n)
		for i, id := range rest[:n] {
			args[i] = id
		}
		q := repeatRows(`SELECT request_id, kind FROM ledger WHERE kind IN ('settle', 'release') AND request_id IN (`, "?", n, `)`)
		rows, err := s.rdb.QueryContext(ctx, s.q(q), args...)
		if err != nil {
			return nil, wrap("reading ended requests", err)
		}
		for rows.Next() {
			var id, kind string
			if err := rows.Scan(&id, &kind); err != nil {
				rows.Close()
				return nil, wrap("reading ended requests", err)
			}
			if out[id] != accounts.KindSettle {
				out[id] = accounts.Kind(kind)
			}
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, wrap("reading ended requests", err)
		}
		rest = rest[n:]
	}
	return out, nil
}

// ForgetReplicas implements accounts.ReplicaStore.
func (s *Store) ForgetReplicas(ctx context.Context, before time.Time) error {
	_, err := s.db.ExecContext(ctx, s.q(`DELETE FROM replicas WHERE seen_at < ?
        AND NOT EXISTS (SELECT 1 FROM ledger_open o WHERE o.replica = replicas.id)`), before.UnixNano())
	return wrap("forgetting replicas", err)
}

const (
	insertRows = `INSERT INTO ledger (at, account_id, key_id, request_id, model, deployment, kind,
    input_tokens, cached_tokens, cache_write_tokens, output_tokens, reasoning_tokens, amount_micro_usd, mark, usage_provenance, replica) VALUES `
	insertRow       = `(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	insertReturning = ` ON CONFLICT DO NOTHING RETURNING kind, account_id, amount_micro_usd, request_id`
)

// Ledger implements accounts.Store.
func (s *Store) Ledger(ctx context.Context, accountID string, limit int) ([]accounts.LedgerEntry, error) {
	return s.ledger(ctx, s.rdb, accountID, limit)
}

// AccountLedger reads an account (nil when it is not stored: a configured account's ledger has
// no balance) and its ledger as Ledger does, in one read-only transaction, so that the balance
// is the one after exactly the entries read: a settle or credit (its entry and its balance
// change, one write transaction) is in both or in neither. Postgres reads at REPEATABLE READ
// (one snapshot for both statements); SQLite's deferred transaction holds one WAL read
// snapshot from its first statement to its end.
func (s *Store) AccountLedger(ctx context.Context, accountID string, limit int) (*accounts.Account, []accounts.LedgerEntry, error) {
	opts := &sql.TxOptions{ReadOnly: true}
	if s.pg {
		opts.Isolation = sql.LevelRepeatableRead
	}
	tx, err := s.rdb.BeginTx(ctx, opts)
	if err != nil {
		return nil, nil, wrap("reading the ledger", err)
	}
	defer tx.Rollback()
	a, err := one(tx.QueryRowContext(ctx, s.q(`SELECT `+accountCols+` FROM accounts WHERE id = ?`), accountID), scanAccount)
	if errors.Is(err, accounts.ErrNotFound) {
		a, err = nil, nil
	}
	if err != nil {
		return nil, nil, wrap("reading account", err)
	}
	es, err := s.ledger(ctx, tx, accountID, limit)
	if err != nil {
		return nil, nil, err
	}
	return a, es, wrap("reading the ledger", tx.Commit())
}

// queryer is a pool or a transaction.
type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func (s *Store) ledger(ctx context.Context, db queryer, accountID string, limit int) ([]accounts.LedgerEntry, error) {
	query := `SELECT id, at, account_id, key_id, request_id, model, deployment, kind,
        input_tokens, cached_tokens, cache_write_tokens, output_tokens, reasoning_tokens, amount_micro_usd, mark, usage_provenance
        FROM ledger WHERE account_id = ? ORDER BY id DESC`
	args := []any{accountID}
	if limit > 0 {
		query += ` LIMIT ?`
		args = append(args, limit)
	}
	rows, err := db.QueryContext(ctx, s.q(query), args...)
	if err != nil {
		return nil, wrap("reading the ledger", err)
	}
	defer rows.Close()
	out := []accounts.LedgerEntry{}
	for rows.Next() {
		var e accounts.LedgerEntry
		var at sql.NullInt64
		var kind string
		t := &e.Tokens
		if err := rows.Scan(&e.ID, &at, &e.AccountID, &e.KeyID, &e.RequestID, &e.Model, &e.Deployment, &kind,
			&t.Input, &t.Cached, &t.CacheWrite, &t.Output, &t.Reasoning, &e.AmountMicroUSD, &e.Mark, &e.UsageProvenance); err != nil {
			return nil, wrap("reading the ledger", err)
		}
		e.At, e.Kind = fromNanos(at), accounts.Kind(kind)
		out = append(out, e)
	}
	return out, wrap("reading the ledger", rows.Err())
}

// SettledMicroUSD implements accounts.SpendReader: one indexed sum over the ledger (a seed,
// read once per counter and period, never on each request).
func (s *Store) SettledMicroUSD(ctx context.Context, f accounts.SettleFilter) (int64, error) {
	var where, arg string
	switch {
	case f.KeyID != "":
		where, arg = "key_id = ?", f.KeyID
	case f.WorkspaceID != "":
		where, arg = "key_id IN (SELECT id FROM keys WHERE workspace_id = ?)", f.WorkspaceID
	case f.AccountID != "":
		where, arg = "account_id = ?", f.AccountID
	default:
		return 0, errors.New("accountsql: SettledMicroUSD needs a key, workspace or account")
	}
	var from int64
	if !f.From.IsZero() {
		from = f.From.UnixNano()
	}
	args := make([]any, 0, 2+len(f.Exclude))
	args = append(args, from, arg)
	query := `SELECT COALESCE(SUM(amount_micro_usd), 0) FROM ledger WHERE kind = 'settle' AND at >= ? AND ` + where
	if len(f.Exclude) > 0 {
		query += ` AND request_id NOT IN (` + placeholders(len(f.Exclude)) + `)`
		for _, id := range f.Exclude {
			args = append(args, id)
		}
	}
	var sum int64
	err := s.rdb.QueryRowContext(ctx, s.q(query), args...).Scan(&sum)
	return sum, wrap("reading the ledger's spend", err)
}

// BalanceExcludingMicroUSD implements accounts.BalanceReader: one statement (one snapshot), the
// excluded settles found through the ledger's unique index on a settle's request id.
func (s *Store) BalanceExcludingMicroUSD(ctx context.Context, accountID string, exclude []string) (int64, bool, error) {
	args := make([]any, 0, 2+len(exclude))
	query := `SELECT balance_micro_usd FROM accounts WHERE id = ?`
	if len(exclude) > 0 {
		query = `SELECT a.balance_micro_usd + COALESCE((SELECT SUM(l.amount_micro_usd) FROM ledger l WHERE l.kind = 'settle' AND l.account_id = a.id AND l.request_id IN (` +
			placeholders(len(exclude)) + `)), 0) FROM accounts a WHERE a.id = ?`
		for _, id := range exclude {
			args = append(args, id)
		}
	}
	args = append(args, accountID)
	var bal int64
	err := s.rdb.QueryRowContext(ctx, s.q(query), args...).Scan(&bal)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	return bal, err == nil, wrap("reading the balance", err)
}

// placeholders returns n comma-separated "?".
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?,", n), ",")
}

var (
	_ accounts.SpendReader   = (*Store)(nil)
	_ accounts.BalanceReader = (*Store)(nil)
)
