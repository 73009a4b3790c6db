package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/bits"
	"strings"
	"time"

	"github.com/switchyard-gw/switchyard/internal/audit"
	"github.com/switchyard-gw/switchyard/internal/store/auditjson"
	"github.com/switchyard-gw/switchyard/internal/store/auditsql"
)

var (
	_ audit.Store  = (*DB)(nil)
	_ audit.Lister = (*DB)(nil)
)

const (
	// requestColumns are written by every batch; attempts_json is the compact form of the
	// attempts (auditjson, migration 0010).
	requestColumns = `request_id, account, model, surface, status, error_code, stream, created_at, duration_ms,
     admission_events, attempts_json, key_id, cost_usd, input_tokens, output_tokens, deployment, ttft_ms,
     caller_request_id`
	requestParams = 18 // placeholders per requests row
	// upsertSuffix replaces a stored record of the same id, attempts included: a later row of
	// one statement replaces an earlier one with its id, so the last record of an id wins.
	upsertSuffix = ` ON CONFLICT (request_id) DO UPDATE SET account = excluded.account, model = excluded.model,
    surface = excluded.surface, status = excluded.status, error_code = excluded.error_code,
    stream = excluded.stream, created_at = excluded.created_at, duration_ms = excluded.duration_ms,
    admission_events = excluded.admission_events, attempts_json = excluded.attempts_json,
    key_id = excluded.key_id, cost_usd = excluded.cost_usd, input_tokens = excluded.input_tokens,
    output_tokens = excluded.output_tokens, deployment = excluded.deployment, ttft_ms = excluded.ttft_ms,
    caller_request_id = excluded.caller_request_id`

	// selectReplaced reads the stored rows a batch replaces (ids: a JSON array), whose counts
	// the batch takes out of the rollup (auditsql.Rollup).
	selectReplaced = `SELECT ` + auditsql.RowColumns + ` FROM requests WHERE request_id IN (SELECT value FROM json_each(?))`

	selectRequest = `SELECT account, model, surface, status, error_code, stream, created_at, duration_ms,
    admission_events, attempts_json, key_id, caller_request_id FROM requests WHERE request_id = ?`
	// selectAttemptsV1 reads the attempts of a record written before migration 0010.
	selectAttemptsV1 = `SELECT attempt, deployment, provider, model, upstream_model, outcome, error_code,
     input_tokens, cached_tokens, cache_write_tokens, output_tokens, reasoning_tokens,
     usage_provenance, reserved_max_usd, cost_usd, billing_source, price, dispatched_at,
     headers_ms, first_token_ms, dropped_params, upstream_status, band, score, strategy, region
    FROM attempts_v1 WHERE request_id = ? ORDER BY attempt`
)

// A batch is written with multi-row upserts of 1, 2, 4, ... 256 rows (rowLevels statements,
// prepared once and reused by every batch): n rows take one statement per set bit of n below
// 256, plus one per 256 rows. 256 rows bind 2816 parameters, far below SQLite's limit
// (32766). Such a statement journals the pages it changes, in memory (temp_store in
// dsnParams).
const (
	rowLevels    = 9 // statements for 1<<0 ... 1<<8 rows
	maxChunkRows = 1 << (rowLevels - 1)
)

// auditStmts are the prepared multi-row upserts: [k] writes 1<<k rows.
type auditStmts [rowLevels]*sql.Stmt

// multiRowInsert returns an INSERT of rows rows of params placeholders each.
func multiRowInsert(table, columns string, params, rows int, suffix string) string {
	var b strings.Builder
	b.Grow(len(columns) + 64 + rows*(params*2+3) + len(suffix))
	b.WriteString("INSERT INTO ")
	b.WriteString(table)
	b.WriteString(" (")
	b.WriteString(columns)
	b.WriteString(") VALUES ")
	for i := range rows {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("(?")
		b.WriteString(strings.Repeat(",?", params-1))
		b.WriteByte(')')
	}
	b.WriteString(suffix)
	return b.String()
}

// auditStatements returns the prepared upserts, preparing them on first use (an error is not
// kept: the next call tries again). It must not be called inside a transaction: preparing
// needs the writer connection.
func (db *DB) auditStatements(ctx context.Context) (*auditStmts, error) {
	db.auditMu.Lock()
	defer db.auditMu.Unlock()
	if db.auditStmts != nil {
		return db.auditStmts, nil
	}
	s := new(auditStmts)
	for k := range rowLevels {
		var err error
		if s[k], err = db.db.PrepareContext(ctx, multiRowInsert("requests", requestColumns,
			requestParams, 1<<k, upsertSuffix)); err != nil {
			s.close()
			return nil, err
		}
	}
	db.auditStmts = s
	return s, nil
}

// close closes the statements prepared so far.
func (s *auditStmts) close() {
	for _, st := range s {
		if st != nil {
			st.Close()
		}
	}
}

// WriteRecords writes recs in one transaction: all of them or, on error, none. A record whose
// request id is already stored replaces it, attempts included; when recs holds one id twice the
// later record wins. Records with an empty RequestID, and records with two attempts of one
// number, are rejected. It does not retain recs.
//
// Each record is one requests row, its attempts in attempts_json (auditjson), written by
// multi-row upserts in chunks of 256, 128, ... 1 rows. In the same transaction the overview's
// rollup (migration 0015, auditsql.Rollup) gains the batch's records and loses the stored rows
// they replace: two upserts of one JSON parameter each.
func (db *DB) WriteRecords(ctx context.Context, recs []*audit.Record) error {
	if len(recs) == 0 {
		return nil
	}
	for _, r := range recs {
		if r.RequestID == "" {
			return fmt.Errorf("store: writing audit record %q: empty request id", r.RequestID)
		}
		if err := checkAttemptNumbers(r.Attempts); err != nil {
			return fmt.Errorf("store: writing audit record %q: %w", r.RequestID, err)
		}
	}
	stmts, err := db.auditStatements(ctx)
	if err != nil {
		return fmt.Errorf("store: writing audit records: %w", err)
	}
	w := db.batchWriter(len(recs))
	defer db.writers.Put(w)
	tx, err := db.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: writing audit records: %w", err)
	}
	defer tx.Rollback()
	if err := w.rollup(ctx, tx, recs); err != nil {
		return fmt.Errorf("store: writing audit records: %w", err)
	}
	for len(recs) > 0 {
		k := chunkLevel(len(recs))
		if err := w.exec(ctx, tx.StmtContext(ctx, stmts[k]), recs[:1<<k]); err != nil {
			return fmt.Errorf("store: writing audit records: %w", err)
		}
		recs = recs[1<<k:]
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: writing audit records: %w", err)
	}
	return nil
}

// checkAttemptNumbers rejects two attempts of one number (the primary key of the former
// attempts table): a record is written whole or not at all.
func checkAttemptNumbers(as []audit.Attempt) error {
	for i := range as {
		for j := range i {
			if as[i].Attempt == as[j].Attempt {
				return fmt.Errorf("two attempts numbered %d", as[i].Attempt)
			}
		}
	}
	return nil
}

// batchWriter holds the buffers of one WriteRecords call, reused across calls (db.writers).
type batchWriter struct {
	args []any // parameters of the statement being run
	// the batch's change to the overview's rollup, and its JSON (ids: the batch's request ids)
	roll                   auditsql.Rollup
	ids, sumsJSON, latJSON []byte
	last                   map[string]int // request id -> index of its last record in the batch
	buf                    []byte         // the admission events and compact attempts of the chunk's records, back to back
	ends                   []int          // record i's events are buf[ends[3i]:ends[3i+1]], its attempts buf[ends[3i+1]:ends[3i+2]]
}

func (db *DB) batchWriter(n int) *batchWriter {
	w, _ := db.writers.Get().(*batchWriter)
	if w == nil {
		w = &batchWriter{args: make([]any, 0, min(n, maxChunkRows)*requestParams)}
	}
	return w
}

// rollup applies to the rollup what writing recs changes (before they are written, in tx):
// each id's last record of the batch is added, the stored row it replaces subtracted.
func (w *batchWriter) rollup(ctx context.Context, tx *sql.Tx, recs []*audit.Record) error {
	w.roll.Reset()
	if w.last == nil {
		w.last = map[string]int{}
	}
	clear(w.last)
	for i, r := range recs {
		w.last[r.RequestID] = i
	}
	w.ids = append(w.ids[:0], '[')
	for i, r := range recs {
		if w.last[r.RequestID] != i {
			continue // a later record of the batch replaces it
		}
		if len(w.ids) > 1 {
			w.ids = append(w.ids, ',')
		}
		w.ids = auditsql.AppendJSONString(w.ids, r.RequestID)
		w.roll.Add(auditsql.RowOf(r), 1)
	}
	w.ids = append(w.ids, ']')
	if err := auditsql.SubtractStored(ctx, tx, selectReplaced, &w.roll, string(w.ids)); err != nil {
		return err
	}
	return applyRollup(ctx, tx, &w.roll, &w.sumsJSON, &w.latJSON)
}

// applyRollup adds u to the rollup tables in tx, with sums and lat as the buffers of its JSON.
func applyRollup(ctx context.Context, tx *sql.Tx, u *auditsql.Rollup, sums, lat *[]byte) error {
	if u.Empty() {
		return nil
	}
	*sums, *lat = u.AppendJSON((*sums)[:0], (*lat)[:0])
	if _, err := tx.ExecContext(ctx, auditsql.UpsertSumsJSON, string(*sums)); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, auditsql.UpsertLatencyJSON, string(*lat))
	return err
}

// chunkLevel is k such that 1<<k rows is the largest chunk to write of n > 0 rows.
func chunkLevel(n int) int { return min(bits.Len(uint(n))-1, rowLevels-1) }

// exec runs st (the upsert of len(chunk) rows) for chunk.
func (w *batchWriter) exec(ctx context.Context, st *sql.Stmt, chunk []*audit.Record) error {
	w.buf, w.ends = w.buf[:0], w.ends[:0]
	for _, r := range chunk {
		start := len(w.buf)
		w.buf = r.AdmissionEvents.AppendJSON(w.buf)
		mid := len(w.buf)
		w.buf = auditjson.Append(w.buf, r.Attempts)
		w.ends = append(w.ends, start, mid, len(w.buf))
	}
	// One string for the chunk's events and attempts, sliced per record: one allocation per
	// chunk.
	all := string(w.buf)
	w.args = w.args[:0]
	for i, r := range chunk {
		e := w.ends[3*i:]
		sum := audit.Summarize(r)
		var ttft any
		if sum.TTFTMS != nil {
			ttft = *sum.TTFTMS
		}
		w.args = append(w.args, r.RequestID, r.Account, r.Model, r.Surface, r.Status, r.ErrorCode,
			r.Stream, nanos(r.CreatedAt), r.DurationMS, all[e[0]:e[1]], all[e[1]:e[2]], r.KeyID,
			sum.CostUSD, sum.InputTokens, sum.OutputTokens, sum.Deployment, ttft, r.CallerRequestID)
	}
	_, err := st.ExecContext(ctx, w.args...)
	clear(w.args)
	return err
}

// Record returns the stored record for requestID, its attempts in order, or audit.ErrNotFound.
func (db *DB) Record(ctx context.Context, requestID string) (*audit.Record, error) {
	// One read transaction: a consistent snapshot of the request and its attempts.
	tx, err := db.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("store: reading audit record: %w", err)
	}
	defer tx.Rollback()
	r := &audit.Record{RequestID: requestID}
	var created sql.NullInt64
	var compact sql.RawBytes
	rows, err := tx.QueryContext(ctx, selectRequest, requestID)
	if err != nil {
		return nil, fmt.Errorf("store: reading audit record: %w", err)
	}
	if !rows.Next() {
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("store: reading audit record: %w", err)
		}
		return nil, audit.ErrNotFound
	}
	var hasCompact bool
	var events string
	if err = rows.Scan(&r.Account, &r.Model, &r.Surface, &r.Status, &r.ErrorCode, &r.Stream, &created,
		&r.DurationMS, &events, &compact, &r.KeyID, &r.CallerRequestID); err == nil {
		hasCompact = compact != nil
		if hasCompact {
			r.Attempts, err = auditjson.Parse(compact)
		}
		if err == nil {
			if err = json.Unmarshal([]byte(events), &r.AdmissionEvents); err != nil {
				err = fmt.Errorf("admission_events: %w", err)
			}
		}
	}
	rows.Close()
	if err != nil {
		return nil, fmt.Errorf("store: reading audit record: %w", err)
	}
	r.CreatedAt = fromNanos(created)
	if !hasCompact {
		if r.Attempts, err = attemptsV1(ctx, tx, requestID); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// attemptsV1 reads the attempts of a record written before migration 0010, from attempts_v1.
func attemptsV1(ctx context.Context, tx *sql.Tx, requestID string) ([]audit.Attempt, error) {
	rows, err := tx.QueryContext(ctx, selectAttemptsV1, requestID)
	if err != nil {
		return nil, fmt.Errorf("store: reading audit attempts: %w", err)
	}
	defer rows.Close()
	out := []audit.Attempt{}
	for rows.Next() {
		var (
			a                   audit.Attempt
			price               sql.NullString
			dispatched          sql.NullInt64
			headers, firstToken sql.NullFloat64
			dropped             string
			score               sql.NullFloat64
		)
		if err := rows.Scan(&a.Attempt, &a.Deployment, &a.Provider, &a.Model, &a.UpstreamModel, &a.Outcome,
			&a.ErrorCode, &a.Tokens.Input, &a.Tokens.Cached, &a.Tokens.CacheWrite, &a.Tokens.Output,
			&a.Tokens.Reasoning, &a.UsageProvenance, &a.ReservedMaxUSD, &a.CostUSD, &a.BillingSource, &price,
			&dispatched, &headers, &firstToken, &dropped, &a.UpstreamStatus, &a.Band, &score, &a.Strategy,
			&a.Region); err != nil {
			return nil, fmt.Errorf("store: reading audit attempts: %w", err)
		}
		if price.Valid {
			a.Price = new(audit.PriceSnapshot)
			if err := json.Unmarshal([]byte(price.String), a.Price); err != nil {
				return nil, fmt.Errorf("store: audit attempt %d price: %w", a.Attempt, err)
			}
		}
		if err := json.Unmarshal([]byte(dropped), &a.DroppedParams); err != nil {
			return nil, fmt.Errorf("store: audit attempt %d dropped_params: %w", a.Attempt, err)
		}
		if a.DroppedParams == nil {
			a.DroppedParams = []string{}
		}
		a.DispatchedAt = fromNanos(dispatched)
		if score.Valid {
			a.Score = audit.ScoreOf(score.Float64)
		}
		if headers.Valid {
			a.HeadersMS = &headers.Float64
		}
		if firstToken.Valid {
			a.FirstTokenMS = &firstToken.Float64
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: reading audit attempts: %w", err)
	}
	return out, nil
}

// nanos is t in Unix nanoseconds, or NULL for the zero time.
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

func nullFloat(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

var _ audit.Pruner = (*DB)(nil)

// pruneRecords deletes the oldest records created before a time, at most a number of them
// (requests_created, migration 0011, finds them in order), returning their overview columns
// for the rollup; their attempts_v1 rows go by the foreign key.
const pruneRecords = `DELETE FROM requests WHERE rowid IN
    (SELECT rowid FROM requests WHERE created_at < ? ORDER BY created_at LIMIT ?)
    RETURNING ` + auditsql.RowColumns

// PruneRecords implements audit.Pruner: it deletes at most limit records created before
// before, oldest first, in one transaction of the writer connection, and returns how many.
// The same transaction takes them out of the overview's rollup and deletes the rollup rows
// that no record counts any longer. The ledger is not touched.
func (db *DB) PruneRecords(ctx context.Context, before time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	tx, err := db.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("store: pruning audit records: %w", err)
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, pruneRecords, before.UnixNano(), limit)
	if err != nil {
		return 0, fmt.Errorf("store: pruning audit records: %w", err)
	}
	roll, n, newest, err := auditsql.ScanPruned(rows)
	if err != nil {
		return 0, fmt.Errorf("store: pruning audit records: %w", err)
	}
	var sums, lat []byte
	if err := applyRollup(ctx, tx, &roll, &sums, &lat); err != nil {
		return 0, fmt.Errorf("store: pruning audit records: rollup: %w", err)
	}
	for _, q := range auditsql.DeleteEmptySQL(false) {
		if _, err := tx.ExecContext(ctx, q, newest/1e9); err != nil {
			return 0, fmt.Errorf("store: pruning audit records: rollup: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("store: pruning audit records: %w", err)
	}
	return n, nil
}

// ListRecords implements audit.Lister: the ids of one page from the requests table (newest
// first, by the indexes of migration 0011 "audit_lists"), then each record as Record reads it.
func (db *DB) ListRecords(ctx context.Context, f audit.Filter, after audit.Position, limit int) ([]*audit.Record, error) {
	q, args := auditsql.ListQuery(f, after, limit, false)
	return auditsql.List(ctx, db.rdb, q, args, db.Record)
}

// Overview implements audit.Overviewer (auditsql.Overview).
func (db *DB) Overview(ctx context.Context, q audit.OverviewQuery) (*audit.Overview, error) {
	return auditsql.Overview(ctx, db.rdb, q, false)
}
