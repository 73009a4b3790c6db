package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/switchyard-gw/switchyard/internal/audit"
	"github.com/switchyard-gw/switchyard/internal/store/auditjson"
	"github.com/switchyard-gw/switchyard/internal/store/auditsql"
)

var (
	_ audit.Store  = (*DB)(nil)
	_ audit.Lister = (*DB)(nil)
)

// A batch is one statement whatever its size: each column is one array parameter, and unnest
// turns the arrays back into rows; a record's attempts are its attempts_json (auditjson,
// migration 0010).
const (
	upsertRequests = `INSERT INTO requests
    (request_id, account, model, surface, status, error_code, stream, created_at, duration_ms, admission_events, attempts_json,
     key_id, cost_usd, input_tokens, output_tokens, deployment, ttft_ms, caller_request_id)
    SELECT rid, account, model, surface, status, ec, stream, created, duration, events::jsonb, attempts::jsonb, kid,
        cost, tin, tout, dep, ttft, crid
    FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::text[],
        $7::boolean[], $8::bigint[], $9::float8[], $10::text[], $11::text[], $12::text[],
        $13::float8[], $14::bigint[], $15::bigint[], $16::text[], $17::float8[], $18::text[])
        AS t(rid, account, model, surface, status, ec, stream, created, duration, events, attempts, kid,
            cost, tin, tout, dep, ttft, crid)
    ON CONFLICT (request_id) DO UPDATE SET
        account = EXCLUDED.account, model = EXCLUDED.model, surface = EXCLUDED.surface,
        status = EXCLUDED.status, error_code = EXCLUDED.error_code, stream = EXCLUDED.stream,
        created_at = EXCLUDED.created_at, duration_ms = EXCLUDED.duration_ms,
        admission_events = EXCLUDED.admission_events, attempts_json = EXCLUDED.attempts_json,
        key_id = EXCLUDED.key_id, cost_usd = EXCLUDED.cost_usd, input_tokens = EXCLUDED.input_tokens,
        output_tokens = EXCLUDED.output_tokens, deployment = EXCLUDED.deployment, ttft_ms = EXCLUDED.ttft_ms,
        caller_request_id = EXCLUDED.caller_request_id`
	// lockIDs serialises the batches that write one request id (transaction advisory locks,
	// taken in the order of their keys so that two batches cannot deadlock), so that
	// selectReplaced reads the row a batch replaces after any other batch writing it has
	// committed: the rollup subtracts exactly the row replaced.
	lockIDs = `SELECT pg_advisory_xact_lock(k) FROM (SELECT k FROM
    (SELECT DISTINCT hashtextextended(id, 23) AS k FROM unnest($1::text[]) AS id) AS d ORDER BY k) AS ks`
	// selectReplaced reads the stored rows a batch replaces, whose counts the batch takes out
	// of the overview's rollup (auditsql.Rollup).
	selectReplaced = `SELECT ` + auditsql.RowColumns + ` FROM requests WHERE request_id = ANY($1::text[]) FOR UPDATE`
	// One statement, so one snapshot: a concurrent replace is seen whole or not at all. The
	// attempts_v1 rows are those of a record written before migration 0010 (attempts_json
	// NULL).
	selectRecord = `SELECT r.account, r.model, r.surface, r.status, r.error_code, r.stream, r.created_at,
        r.duration_ms, r.admission_events::text, r.attempts_json::text, a.attempt, a.deployment, a.provider, a.model, a.upstream_model, a.outcome,
        a.error_code, a.input_tokens, a.cached_tokens, a.cache_write_tokens, a.output_tokens,
        a.reasoning_tokens, a.usage_provenance, a.reserved_max_usd, a.cost_usd, a.billing_source,
        a.price::text, a.dispatched_at, a.headers_ms, a.first_token_ms, a.dropped_params::text,
        a.upstream_status, a.band, a.score, a.strategy, a.region, r.key_id, r.caller_request_id
    FROM requests r LEFT JOIN attempts_v1 a ON a.request_id = r.request_id AND r.attempts_json IS NULL
    WHERE r.request_id = $1
    ORDER BY a.attempt`
)

// WriteRecords writes recs in one transaction: all of them or, on error, none. A record whose
// request id is already stored replaces it, attempts included; when recs holds one id twice the
// later record wins. Records with an empty RequestID, and records with two attempts of one
// number, are rejected. Rows are written in request id order, so concurrent batches that
// share ids lock them in the same order and cannot deadlock. It does not retain recs.
//
// In the same transaction the overview's rollup (migration 0015, auditsql.Rollup) gains the
// batch's records and loses the stored rows they replace, its rows locked in key order.
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
	recs = lastByID(recs)
	var rq requestCols
	rq.grow(len(recs))
	var buf []byte
	var roll auditsql.Rollup
	for _, r := range recs {
		buf = r.AdmissionEvents.AppendJSON(buf[:0])
		mid := len(buf)
		buf = auditjson.Append(buf, r.Attempts)
		s := string(buf) // one allocation for both
		rq.add(r, s[:mid], s[mid:])
		roll.Add(auditsql.RowOf(r), 1)
	}
	tx, err := db.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: writing audit records: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, lockIDs, rq.id); err != nil {
		return fmt.Errorf("store: writing audit records: %w", err)
	}
	if err := auditsql.SubtractStored(ctx, tx, selectReplaced, &roll, rq.id); err != nil {
		return fmt.Errorf("store: writing audit records: %w", err)
	}
	if _, err := tx.ExecContext(ctx, upsertRequests, rq.id, rq.account, rq.model, rq.surface, rq.status,
		rq.errorCode, rq.stream, rq.created, rq.duration, rq.events, rq.attempts, rq.keyID,
		rq.cost, rq.tokensIn, rq.tokensOut, rq.deployment, rq.ttft, rq.callerRID); err != nil {
		return fmt.Errorf("store: writing audit records: %w", err)
	}
	if err := applyRollup(ctx, tx, &roll); err != nil {
		return fmt.Errorf("store: writing audit records: rollup: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: writing audit records: %w", err)
	}
	return nil
}

// applyRollup adds u to the rollup tables in tx, each table's rows in key order.
func applyRollup(ctx context.Context, tx *sql.Tx, u *auditsql.Rollup) error {
	if u.Empty() {
		return nil
	}
	sums, lat := u.PostgresArrays()
	if _, err := tx.ExecContext(ctx, auditsql.UpsertSumsArrays, sums...); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, auditsql.UpsertLatencyArrays, lat...)
	return err
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

// lastByID returns recs sorted by request id with only the last record of each id, in a new
// slice.
func lastByID(recs []*audit.Record) []*audit.Record {
	s := slices.Clone(recs)
	slices.SortStableFunc(s, func(a, b *audit.Record) int { return strings.Compare(a.RequestID, b.RequestID) })
	out := s[:0]
	for i, r := range s {
		if i+1 < len(s) && s[i+1].RequestID == r.RequestID {
			continue // a later record has this id
		}
		out = append(out, r)
	}
	return out
}

// requestCols are the columns of requests, one array per column.
type requestCols struct {
	id, account, model, surface, errorCode []string
	status                                 []int64
	stream                                 []bool
	created                                []pgtype.Int8
	duration                               []float64
	events                                 []string // admission events, JSON
	attempts                               []string // auditjson
	keyID                                  []string // the calling key (migration 0011)
	callerRID                              []string // the caller's request id (migration 0015)
	// The overview's summary (migration 0014, audit.Summarize).
	cost                []float64
	ttft                []pgtype.Float8 // NULL: no first output
	tokensIn, tokensOut []int64
	deployment          []string
}

func (c *requestCols) grow(n int) {
	c.id, c.account, c.model = make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)
	c.surface, c.errorCode, c.events = make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)
	c.status, c.stream = make([]int64, 0, n), make([]bool, 0, n)
	c.created, c.duration = make([]pgtype.Int8, 0, n), make([]float64, 0, n)
	c.events, c.attempts = make([]string, 0, n), make([]string, 0, n)
	c.keyID, c.callerRID = make([]string, 0, n), make([]string, 0, n)
	c.cost, c.ttft, c.deployment = make([]float64, 0, n), make([]pgtype.Float8, 0, n), make([]string, 0, n)
	c.tokensIn, c.tokensOut = make([]int64, 0, n), make([]int64, 0, n)
}

func (c *requestCols) add(r *audit.Record, events, attempts string) {
	c.id = append(c.id, r.RequestID)
	c.account = append(c.account, r.Account)
	c.model = append(c.model, r.Model)
	c.surface = append(c.surface, r.Surface)
	c.status = append(c.status, int64(r.Status))
	c.errorCode = append(c.errorCode, r.ErrorCode)
	c.stream = append(c.stream, r.Stream)
	c.created = append(c.created, nanos(r.CreatedAt))
	c.duration = append(c.duration, r.DurationMS)
	c.events = append(c.events, events)
	c.attempts = append(c.attempts, attempts)
	c.keyID = append(c.keyID, r.KeyID)
	c.callerRID = append(c.callerRID, r.CallerRequestID)
	sum := audit.Summarize(r)
	var ttft pgtype.Float8
	if sum.TTFTMS != nil {
		ttft = pgtype.Float8{Float64: *sum.TTFTMS, Valid: true}
	}
	c.cost, c.ttft, c.deployment = append(c.cost, sum.CostUSD), append(c.ttft, ttft), append(c.deployment, sum.Deployment)
	c.tokensIn, c.tokensOut = append(c.tokensIn, sum.InputTokens), append(c.tokensOut, sum.OutputTokens)
}

// Record returns the stored record for requestID, its attempts in order, or an error wrapping
// audit.ErrNotFound.
func (db *DB) Record(ctx context.Context, requestID string) (*audit.Record, error) {
	rows, err := db.db.QueryContext(ctx, selectRecord, requestID)
	if err != nil {
		return nil, fmt.Errorf("store: reading audit record: %w", err)
	}
	defer rows.Close()
	var r *audit.Record
	for rows.Next() {
		var (
			rec                                            audit.Record
			created                                        sql.NullInt64
			num, input, cached, cacheWrite, output, reason sql.NullInt64
			dep, prov, model, upstream, outcome, errorCode sql.NullString
			provenance, billing, price, dropped            sql.NullString
			compact                                        sql.NullString
			reserved, cost, headers, firstToken            sql.NullFloat64
			dispatched, upstreamStatus, band               sql.NullInt64
			events, strategy, region                       sql.NullString
			score                                          sql.NullFloat64
		)
		if err := rows.Scan(&rec.Account, &rec.Model, &rec.Surface, &rec.Status, &rec.ErrorCode, &rec.Stream,
			&created, &rec.DurationMS, &events, &compact, &num, &dep, &prov, &model, &upstream, &outcome, &errorCode, &input,
			&cached, &cacheWrite, &output, &reason, &provenance, &reserved, &cost, &billing, &price,
			&dispatched, &headers, &firstToken, &dropped, &upstreamStatus, &band, &score, &strategy,
			&region, &rec.KeyID, &rec.CallerRequestID); err != nil {
			return nil, fmt.Errorf("store: reading audit record: %w", err)
		}
		if r == nil {
			rec.RequestID = requestID
			rec.CreatedAt = fromNanos(created)
			rec.Attempts = []audit.Attempt{}
			if err := json.Unmarshal([]byte(events.String), &rec.AdmissionEvents); err != nil {
				return nil, fmt.Errorf("store: audit record admission_events: %w", err)
			}
			if compact.Valid {
				if rec.Attempts, err = auditjson.Parse([]byte(compact.String)); err != nil {
					return nil, fmt.Errorf("store: reading audit record: %w", err)
				}
			}
			r = &rec
		}
		if !num.Valid {
			continue // LEFT JOIN: a request without attempts
		}
		a := audit.Attempt{
			Attempt: int(num.Int64), Deployment: dep.String, Provider: prov.String, Model: model.String,
			UpstreamModel: upstream.String, Outcome: outcome.String, ErrorCode: errorCode.String,
			Tokens: audit.Tokens{Input: input.Int64, Cached: cached.Int64, CacheWrite: cacheWrite.Int64,
				Output: output.Int64, Reasoning: reason.Int64},
			UsageProvenance: provenance.String, ReservedMaxUSD: reserved.Float64, CostUSD: cost.Float64,
			BillingSource: billing.String, DispatchedAt: fromNanos(dispatched), UpstreamStatus: int(upstreamStatus.Int64),
			Band: int(band.Int64), Strategy: strategy.String, Region: region.String,
		}
		if score.Valid {
			a.Score = audit.ScoreOf(score.Float64)
		}
		if price.Valid {
			a.Price = new(audit.PriceSnapshot)
			if err := json.Unmarshal([]byte(price.String), a.Price); err != nil {
				return nil, fmt.Errorf("store: audit attempt %d price: %w", a.Attempt, err)
			}
		}
		if err := json.Unmarshal([]byte(dropped.String), &a.DroppedParams); err != nil {
			return nil, fmt.Errorf("store: audit attempt %d dropped_params: %w", a.Attempt, err)
		}
		if a.DroppedParams == nil {
			a.DroppedParams = []string{}
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
		return nil, fmt.Errorf("store: reading audit record: %w", err)
	}
	if r == nil {
		return nil, fmt.Errorf("store: audit record %q: %w", requestID, audit.ErrNotFound)
	}
	return r, nil
}

// nanos is t in Unix nanoseconds, or NULL for the zero time.
func nanos(t time.Time) pgtype.Int8 {
	if t.IsZero() {
		return pgtype.Int8{}
	}
	return pgtype.Int8{Int64: t.UnixNano(), Valid: true}
}

func fromNanos(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return time.Unix(0, n.Int64).UTC()
}

func nullFloat(p *float64) pgtype.Float8 {
	if p == nil {
		return pgtype.Float8{}
	}
	return pgtype.Float8{Float64: *p, Valid: true}
}

var _ audit.Pruner = (*DB)(nil)

// pruneRecords deletes the oldest records created before a time, at most a number of them
// (requests_created, migration 0011, finds them in order; rows another replica is deleting or
// writing are skipped), returning their overview columns for the rollup; their attempts_v1
// rows go by the foreign key.
const pruneRecords = `DELETE FROM requests WHERE request_id IN
    (SELECT request_id FROM requests WHERE created_at < $1 ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED)
    RETURNING ` + auditsql.RowColumns

// PruneRecords implements audit.Pruner: it deletes at most limit records created before
// before, oldest first, in one transaction, and returns how many. Replicas pruning at once
// skip each other's rows. The same transaction takes them out of the overview's rollup and
// deletes the rollup rows no record counts any longer. The ledger is not touched.
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
	if err := applyRollup(ctx, tx, &roll); err != nil {
		return 0, fmt.Errorf("store: pruning audit records: rollup: %w", err)
	}
	for _, q := range auditsql.DeleteEmptySQL(true) {
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
	q, args := auditsql.ListQuery(f, after, limit, true)
	return auditsql.List(ctx, db.db, q, args, db.Record)
}

// Overview implements audit.Overviewer (auditsql.Overview).
func (db *DB) Overview(ctx context.Context, q audit.OverviewQuery) (*audit.Overview, error) {
	return auditsql.Overview(ctx, db.db, q, true)
}
