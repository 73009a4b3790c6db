package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strings"
	"time"

	"github.com/switchyard-gw/switchyard/internal/audit"
)

var _ audit.Store = (*DB)(nil)

const (
	requestColumns = `request_id, account, model, surface, status, error_code, stream, created_at, duration_ms,
     admission_events`
	attemptColumns = `request_id, attempt, deployment, provider, model, upstream_model, outcome, error_code,
     input_tokens, cached_tokens, cache_write_tokens, output_tokens, reasoning_tokens,
     usage_provenance, reserved_max_usd, cost_usd, billing_source, price, dispatched_at,
     headers_ms, first_token_ms, dropped_params, upstream_status, band, score, strategy, region`
	requestParams = 10 // placeholders per requests row
	attemptParams = 27 // placeholders per attempts row

	replaceRequest = `UPDATE requests SET
    account = ?, model = ?, surface = ?, status = ?, error_code = ?, stream = ?, created_at = ?, duration_ms = ?,
    admission_events = ?
    WHERE request_id = ?`
	deleteAttempts = `DELETE FROM attempts WHERE request_id = ?`
	selectRequest  = `SELECT account, model, surface, status, error_code, stream, created_at, duration_ms,
    admission_events FROM requests WHERE request_id = ?`
	selectAttempts = `SELECT attempt, deployment, provider, model, upstream_model, outcome, error_code,
     input_tokens, cached_tokens, cache_write_tokens, output_tokens, reasoning_tokens,
     usage_provenance, reserved_max_usd, cost_usd, billing_source, price, dispatched_at,
     headers_ms, first_token_ms, dropped_params, upstream_status, band, score, strategy, region
    FROM attempts WHERE request_id = ? ORDER BY attempt`
)

// A batch is written with multi-row INSERTs of 1, 2, 4, ... 64 rows (rowLevels statements per
// table, prepared once and reused by every batch): n rows take one statement per set bit of n
// below 64, plus one per 64 rows. 64 attempts rows bind 1408 parameters, far below SQLite's
// limit (32766). Such a statement journals the pages it changes, in memory (temp_store in
// dsnParams).
const (
	rowLevels     = 7 // statements for 1<<0 ... 1<<6 rows
	maxChunkRows  = 1 << (rowLevels - 1)
	tableRequests = 0
	tableAttempts = 1
)

// auditStmts are the prepared multi-row INSERTs: [table][k] inserts 1<<k rows. The requests
// statements skip (ON CONFLICT DO NOTHING) a row whose request id is already stored.
type auditStmts [2][rowLevels]*sql.Stmt

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

// auditStatements returns the prepared INSERTs, preparing them on first use (an error is not
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
		if s[tableRequests][k], err = db.db.PrepareContext(ctx, multiRowInsert("requests", requestColumns,
			requestParams, 1<<k, " ON CONFLICT (request_id) DO NOTHING")); err != nil {
			s.close()
			return nil, err
		}
		if s[tableAttempts][k], err = db.db.PrepareContext(ctx, multiRowInsert("attempts", attemptColumns,
			attemptParams, 1<<k, "")); err != nil {
			s.close()
			return nil, err
		}
	}
	db.auditStmts = s
	return s, nil
}

// close closes the statements prepared so far.
func (s *auditStmts) close() {
	for _, t := range s {
		for _, st := range t {
			if st != nil {
				st.Close()
			}
		}
	}
}

// WriteRecords writes recs in one transaction: all of them or, on error, none. A record whose
// request id is already stored replaces it, attempts included; when recs holds one id twice the
// later record wins. Records with an empty RequestID are rejected. It does not retain recs.
//
// Rows go in with multi-row INSERTs. A chunk of requests rows that inserts fewer rows than it
// holds (an id already stored, or twice in the chunk) is then replaced one record at a time,
// in order, which gives the same result as writing the records one by one.
func (db *DB) WriteRecords(ctx context.Context, recs []*audit.Record) error {
	if len(recs) == 0 {
		return nil
	}
	for _, r := range recs {
		if r.RequestID == "" {
			return fmt.Errorf("store: writing audit record %q: empty request id", r.RequestID)
		}
	}
	stmts, err := db.auditStatements(ctx)
	if err != nil {
		return fmt.Errorf("store: writing audit records: %w", err)
	}
	tx, err := db.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: writing audit records: %w", err)
	}
	defer tx.Rollback()
	rows := min(maxChunkRows, 2*len(recs)) // most records have one or two attempts; append grows it
	w := batchWriter{ctx: ctx, tx: tx, stmts: stmts, args: make([]any, 0, rows*attemptParams)}
	if err := w.write(recs); err != nil {
		return fmt.Errorf("store: writing audit records: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: writing audit records: %w", err)
	}
	return nil
}

// batchWriter writes one batch inside tx.
type batchWriter struct {
	ctx     context.Context
	tx      *sql.Tx
	stmts   *auditStmts
	txStmts auditStmts   // stmts bound to tx, made on first use
	args    []any        // parameters of the statement being built
	pending []attemptRef // attempts of inserted records, not yet written

	// the last price encoded, and its JSON (prices repeat within a batch)
	price     audit.PriceSnapshot
	priceJSON any
}

// attemptRef is one attempts row: the attempt and its record's request id.
type attemptRef struct {
	requestID string
	a         *audit.Attempt
}

// chunkLevel is k such that 1<<k rows is the largest chunk to write of n > 0 rows.
func chunkLevel(n int) int { return min(bits.Len(uint(n))-1, rowLevels-1) }

// exec runs the statement inserting 1<<k rows of table with w.args and returns the number of
// rows it inserted.
func (w *batchWriter) exec(table, k int) (int64, error) {
	s := w.txStmts[table][k]
	if s == nil {
		s = w.tx.StmtContext(w.ctx, w.stmts[table][k])
		w.txStmts[table][k] = s
	}
	res, err := s.ExecContext(w.ctx, w.args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// write writes recs in chunks of 64, 32, ... 1 requests rows, each followed by its records'
// attempts (queued in w.pending, written before anything that could replace them).
func (w *batchWriter) write(recs []*audit.Record) error {
	for len(recs) > 0 {
		k := chunkLevel(len(recs))
		chunk := recs[:1<<k]
		recs = recs[1<<k:]
		w.args = w.args[:0]
		for _, r := range chunk {
			events, err := eventsText(r)
			if err != nil {
				return fmt.Errorf("record %q: %w", r.RequestID, err)
			}
			w.args = append(w.args, r.RequestID, r.Account, r.Model, r.Surface, r.Status, r.ErrorCode,
				r.Stream, nanos(r.CreatedAt), r.DurationMS, events)
		}
		n, err := w.exec(tableRequests, k)
		if err != nil {
			return err
		}
		if n == int64(len(chunk)) { // every id was new: the common case
			for _, r := range chunk {
				for i := range r.Attempts {
					w.pending = append(w.pending, attemptRef{r.RequestID, &r.Attempts[i]})
				}
			}
			continue
		}
		// Some ids were stored before, or appear twice in the chunk (the insert skipped those
		// rows): replace each record in order, its attempts included.
		if err := w.flushAttempts(); err != nil {
			return err
		}
		for _, r := range chunk {
			if err := w.replace(r); err != nil {
				return fmt.Errorf("record %q: %w", r.RequestID, err)
			}
		}
	}
	return w.flushAttempts()
}

// replace overwrites the stored request row of r and replaces its attempts with r's.
func (w *batchWriter) replace(r *audit.Record) error {
	events, err := eventsText(r)
	if err != nil {
		return err
	}
	if _, err := w.tx.ExecContext(w.ctx, replaceRequest, r.Account, r.Model, r.Surface, r.Status, r.ErrorCode,
		r.Stream, nanos(r.CreatedAt), r.DurationMS, events, r.RequestID); err != nil {
		return err
	}
	if _, err := w.tx.ExecContext(w.ctx, deleteAttempts, r.RequestID); err != nil {
		return err
	}
	for i := range r.Attempts {
		w.pending = append(w.pending, attemptRef{r.RequestID, &r.Attempts[i]})
	}
	return w.flushAttempts()
}

// flushAttempts inserts the pending attempts rows.
func (w *batchWriter) flushAttempts() error {
	p := w.pending
	for len(p) > 0 {
		k := chunkLevel(len(p))
		w.args = w.args[:0]
		for _, ref := range p[:1<<k] {
			if err := w.appendAttempt(ref.requestID, ref.a); err != nil {
				return fmt.Errorf("record %q: %w", ref.requestID, err)
			}
		}
		if _, err := w.exec(tableAttempts, k); err != nil {
			return err
		}
		p = p[1<<k:]
	}
	clear(w.pending)
	w.pending = w.pending[:0]
	return nil
}

// appendAttempt appends the parameters of one attempts row to w.args.
func (w *batchWriter) appendAttempt(requestID string, a *audit.Attempt) error {
	var price any // NULL when unpriced
	if a.Price != nil {
		var err error
		if price, err = w.priceText(*a.Price); err != nil {
			return err
		}
	}
	var dropped any = "[]"
	if len(a.DroppedParams) > 0 {
		b, err := json.Marshal(a.DroppedParams)
		if err != nil {
			return err
		}
		dropped = string(b)
	}
	w.args = append(w.args, requestID, a.Attempt, a.Deployment, a.Provider, a.Model,
		a.UpstreamModel, a.Outcome, a.ErrorCode,
		a.Tokens.Input, a.Tokens.Cached, a.Tokens.CacheWrite, a.Tokens.Output, a.Tokens.Reasoning,
		a.UsageProvenance, a.ReservedMaxUSD, a.CostUSD, a.BillingSource, price, nanos(a.DispatchedAt),
		nullFloat(a.HeadersMS), nullFloat(a.FirstTokenMS), dropped, a.UpstreamStatus,
		a.Band, nullScore(a.Score), a.Strategy, a.Region)
	return nil
}

// eventsText is r's admission events as stored: their JSON array ("[]" when none).
func eventsText(r *audit.Record) (any, error) {
	if r.AdmissionEvents.Len() == 0 && r.AdmissionEvents.Omitted() == 0 {
		return "[]", nil
	}
	b, err := json.Marshal(r.AdmissionEvents)
	if err != nil {
		return nil, err
	}
	return string(b), nil
}

// nullScore is s, or NULL when the route had no metric.
func nullScore(s audit.Score) any {
	if !s.Valid {
		return nil
	}
	return s.Value
}

// priceText returns p as stored: its JSON, as a string. The last one is kept, compared bit for
// bit (-0 and 0 encode differently).
func (w *batchWriter) priceText(p audit.PriceSnapshot) (any, error) {
	if w.priceJSON != nil && math.Float64bits(p.InputPerMTokUSD) == math.Float64bits(w.price.InputPerMTokUSD) &&
		math.Float64bits(p.OutputPerMTokUSD) == math.Float64bits(w.price.OutputPerMTokUSD) {
		return w.priceJSON, nil
	}
	b, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	w.price, w.priceJSON = p, string(b)
	return w.priceJSON, nil
}

// Record returns the stored record for requestID, its attempts in order, or audit.ErrNotFound.
func (db *DB) Record(ctx context.Context, requestID string) (*audit.Record, error) {
	// One read transaction: a consistent snapshot of the request and its attempts.
	tx, err := db.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("store: reading audit record: %w", err)
	}
	defer tx.Rollback()
	r := &audit.Record{RequestID: requestID, Attempts: []audit.Attempt{}}
	var created sql.NullInt64
	var events string
	err = tx.QueryRowContext(ctx, selectRequest, requestID).Scan(&r.Account, &r.Model, &r.Surface, &r.Status,
		&r.ErrorCode, &r.Stream, &created, &r.DurationMS, &events)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, audit.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("store: reading audit record: %w", err)
	}
	r.CreatedAt = fromNanos(created)
	if err := json.Unmarshal([]byte(events), &r.AdmissionEvents); err != nil {
		return nil, fmt.Errorf("store: audit record admission_events: %w", err)
	}
	rows, err := tx.QueryContext(ctx, selectAttempts, requestID)
	if err != nil {
		return nil, fmt.Errorf("store: reading audit attempts: %w", err)
	}
	defer rows.Close()
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
		r.Attempts = append(r.Attempts, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: reading audit attempts: %w", err)
	}
	return r, nil
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
// (requests_created_at finds them in order); their attempts_v1 rows go by the foreign key.
const pruneRecords = `DELETE FROM requests WHERE rowid IN
    (SELECT rowid FROM requests WHERE created_at < ? ORDER BY created_at LIMIT ?)`

// PruneRecords implements audit.Pruner: it deletes at most limit records created before
// before, oldest first, in one transaction of the writer connection, and returns how many.
// The ledger is not touched.
func (db *DB) PruneRecords(ctx context.Context, before time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	res, err := db.db.ExecContext(ctx, pruneRecords, before.UnixNano(), limit)
	if err != nil {
		return 0, fmt.Errorf("store: pruning audit records: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("store: pruning audit records: %w", err)
	}
	return int(n), nil
}
