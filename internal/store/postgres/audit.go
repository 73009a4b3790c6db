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
)

var _ audit.Store = (*DB)(nil)

// A batch is written with a constant number of statements whatever its size: each column is
// one array parameter, and unnest turns the arrays back into rows.
const (
	upsertRequests = `INSERT INTO requests
    (request_id, account, model, surface, status, error_code, stream, created_at, duration_ms,
     admission_events)
    SELECT rid, acct, model, sf, st, ec, stream, ca, dms, ev::jsonb
    FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::text[],
        $7::boolean[], $8::bigint[], $9::float8[], $10::text[])
        AS t(rid, acct, model, sf, st, ec, stream, ca, dms, ev)
    ON CONFLICT (request_id) DO UPDATE SET
        account = EXCLUDED.account, model = EXCLUDED.model, surface = EXCLUDED.surface,
        status = EXCLUDED.status, error_code = EXCLUDED.error_code, stream = EXCLUDED.stream,
        created_at = EXCLUDED.created_at, duration_ms = EXCLUDED.duration_ms,
        admission_events = EXCLUDED.admission_events`
	deleteAttempts = `DELETE FROM attempts WHERE request_id = ANY($1::text[])`
	insertAttempts = `INSERT INTO attempts
    (request_id, attempt, deployment, provider, model, upstream_model, outcome, error_code,
     input_tokens, cached_tokens, cache_write_tokens, output_tokens, reasoning_tokens,
     usage_provenance, reserved_max_usd, cost_usd, billing_source, price, dispatched_at,
     headers_ms, first_token_ms, dropped_params, upstream_status, band, score, strategy, region)
    SELECT rid, n, dep, prov, model, um, outcome, ec, ti, tc, tcw, tout, tr, up, rmax, cost, bs,
        price::jsonb, da, hms, ftms, dp::jsonb, us, band, score, strat, region
    FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
        $8::text[], $9::bigint[], $10::bigint[], $11::bigint[], $12::bigint[], $13::bigint[],
        $14::text[], $15::float8[], $16::float8[], $17::text[], $18::text[], $19::bigint[],
        $20::float8[], $21::float8[], $22::text[], $23::bigint[], $24::bigint[], $25::float8[],
        $26::text[], $27::text[])
        AS t(rid, n, dep, prov, model, um, outcome, ec, ti, tc, tcw, tout, tr, up, rmax, cost, bs,
        price, da, hms, ftms, dp, us, band, score, strat, region)`
	// One statement, so one snapshot: a concurrent replace is seen whole or not at all.
	selectRecord = `SELECT r.account, r.model, r.surface, r.status, r.error_code, r.stream, r.created_at,
        r.duration_ms, r.admission_events::text, a.attempt, a.deployment, a.provider, a.model, a.upstream_model, a.outcome,
        a.error_code, a.input_tokens, a.cached_tokens, a.cache_write_tokens, a.output_tokens,
        a.reasoning_tokens, a.usage_provenance, a.reserved_max_usd, a.cost_usd, a.billing_source,
        a.price::text, a.dispatched_at, a.headers_ms, a.first_token_ms, a.dropped_params::text,
        a.upstream_status, a.band, a.score, a.strategy, a.region
    FROM requests r LEFT JOIN attempts a ON a.request_id = r.request_id
    WHERE r.request_id = $1
    ORDER BY a.attempt`
)

// WriteRecords writes recs in one transaction: all of them or, on error, none. A record whose
// request id is already stored replaces it, attempts included; when recs holds one id twice the
// later record wins. Records with an empty RequestID are rejected. Rows are written in request
// id order, so concurrent batches that share ids lock them in the same order and cannot
// deadlock. It does not retain recs.
func (db *DB) WriteRecords(ctx context.Context, recs []*audit.Record) error {
	if len(recs) == 0 {
		return nil
	}
	for _, r := range recs {
		if r.RequestID == "" {
			return fmt.Errorf("store: writing audit record %q: empty request id", r.RequestID)
		}
	}
	recs = lastByID(recs)
	var rq requestCols
	var at attemptCols
	rq.grow(len(recs))
	at.grow(2 * len(recs))
	for _, r := range recs {
		if err := rq.add(r); err != nil {
			return fmt.Errorf("store: writing audit record %q: %w", r.RequestID, err)
		}
		for i := range r.Attempts {
			if err := at.add(r.RequestID, &r.Attempts[i]); err != nil {
				return fmt.Errorf("store: writing audit record %q: %w", r.RequestID, err)
			}
		}
	}
	tx, err := db.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: writing audit records: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, upsertRequests, rq.id, rq.account, rq.model, rq.surface, rq.status,
		rq.errorCode, rq.stream, rq.created, rq.duration, rq.events); err != nil {
		return fmt.Errorf("store: writing audit records: %w", err)
	}
	if _, err := tx.ExecContext(ctx, deleteAttempts, rq.id); err != nil {
		return fmt.Errorf("store: writing audit records: %w", err)
	}
	if len(at.id) > 0 {
		if _, err := tx.ExecContext(ctx, insertAttempts, at.id, at.num, at.deployment, at.provider, at.model,
			at.upstream, at.outcome, at.errorCode, at.input, at.cached, at.cacheWrite, at.output,
			at.reasoning, at.provenance, at.reserved, at.cost, at.billing, at.price, at.dispatched,
			at.headers, at.firstToken, at.dropped, at.upstreamStatus, at.band, at.score, at.strategy,
			at.region); err != nil {
			return fmt.Errorf("store: writing audit attempts: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: writing audit records: %w", err)
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
	id, account, model, surface, errorCode, events []string
	status                                         []int64
	stream                                         []bool
	created                                        []pgtype.Int8
	duration                                       []float64
}

func (c *requestCols) grow(n int) {
	c.id, c.account, c.model = make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)
	c.surface, c.errorCode, c.events = make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)
	c.status, c.stream = make([]int64, 0, n), make([]bool, 0, n)
	c.created, c.duration = make([]pgtype.Int8, 0, n), make([]float64, 0, n)
}

func (c *requestCols) add(r *audit.Record) error {
	events := "[]"
	if r.AdmissionEvents.Len() > 0 || r.AdmissionEvents.Omitted() > 0 {
		b, err := json.Marshal(r.AdmissionEvents)
		if err != nil {
			return err
		}
		events = string(b)
	}
	c.events = append(c.events, events)
	c.id = append(c.id, r.RequestID)
	c.account = append(c.account, r.Account)
	c.model = append(c.model, r.Model)
	c.surface = append(c.surface, r.Surface)
	c.status = append(c.status, int64(r.Status))
	c.errorCode = append(c.errorCode, r.ErrorCode)
	c.stream = append(c.stream, r.Stream)
	c.created = append(c.created, nanos(r.CreatedAt))
	c.duration = append(c.duration, r.DurationMS)
	return nil
}

// attemptCols are the columns of attempts, one array per column.
type attemptCols struct {
	id, deployment, provider, model, upstream, outcome, errorCode, provenance, billing, dropped []string
	strategy, region                                                                            []string
	num, input, cached, cacheWrite, output, reasoning, upstreamStatus, band                     []int64
	reserved, cost                                                                              []float64
	price                                                                                       []pgtype.Text
	dispatched                                                                                  []pgtype.Int8
	headers, firstToken, score                                                                  []pgtype.Float8
}

func (c *attemptCols) grow(n int) {
	for _, s := range []*[]string{&c.id, &c.deployment, &c.provider, &c.model, &c.upstream, &c.outcome,
		&c.errorCode, &c.provenance, &c.billing, &c.dropped, &c.strategy, &c.region} {
		*s = make([]string, 0, n)
	}
	for _, s := range []*[]int64{&c.num, &c.input, &c.cached, &c.cacheWrite, &c.output, &c.reasoning, &c.upstreamStatus, &c.band} {
		*s = make([]int64, 0, n)
	}
	c.reserved, c.cost = make([]float64, 0, n), make([]float64, 0, n)
	c.price, c.dispatched = make([]pgtype.Text, 0, n), make([]pgtype.Int8, 0, n)
	c.headers, c.firstToken, c.score = make([]pgtype.Float8, 0, n), make([]pgtype.Float8, 0, n), make([]pgtype.Float8, 0, n)
}

func (c *attemptCols) add(id string, a *audit.Attempt) error {
	var price pgtype.Text // NULL when unpriced
	if a.Price != nil {
		b, err := json.Marshal(a.Price)
		if err != nil {
			return err
		}
		price = pgtype.Text{String: string(b), Valid: true}
	}
	dropped := "[]"
	if len(a.DroppedParams) > 0 {
		b, err := json.Marshal(a.DroppedParams)
		if err != nil {
			return err
		}
		dropped = string(b)
	}
	c.id = append(c.id, id)
	c.num = append(c.num, int64(a.Attempt))
	c.deployment = append(c.deployment, a.Deployment)
	c.provider = append(c.provider, a.Provider)
	c.model = append(c.model, a.Model)
	c.upstream = append(c.upstream, a.UpstreamModel)
	c.outcome = append(c.outcome, a.Outcome)
	c.errorCode = append(c.errorCode, a.ErrorCode)
	c.input = append(c.input, a.Tokens.Input)
	c.cached = append(c.cached, a.Tokens.Cached)
	c.cacheWrite = append(c.cacheWrite, a.Tokens.CacheWrite)
	c.output = append(c.output, a.Tokens.Output)
	c.reasoning = append(c.reasoning, a.Tokens.Reasoning)
	c.provenance = append(c.provenance, a.UsageProvenance)
	c.reserved = append(c.reserved, a.ReservedMaxUSD)
	c.cost = append(c.cost, a.CostUSD)
	c.billing = append(c.billing, a.BillingSource)
	c.price = append(c.price, price)
	c.dispatched = append(c.dispatched, nanos(a.DispatchedAt))
	c.headers = append(c.headers, nullFloat(a.HeadersMS))
	c.firstToken = append(c.firstToken, nullFloat(a.FirstTokenMS))
	c.dropped = append(c.dropped, dropped)
	c.upstreamStatus = append(c.upstreamStatus, int64(a.UpstreamStatus))
	c.band = append(c.band, int64(a.Band))
	score := pgtype.Float8{} // NULL when the route had no metric
	if a.Score.Valid {
		score = pgtype.Float8{Float64: a.Score.Value, Valid: true}
	}
	c.score = append(c.score, score)
	c.strategy = append(c.strategy, a.Strategy)
	c.region = append(c.region, a.Region)
	return nil
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
			reserved, cost, headers, firstToken            sql.NullFloat64
			dispatched, upstreamStatus, band               sql.NullInt64
			events, strategy, region                       sql.NullString
			score                                          sql.NullFloat64
		)
		if err := rows.Scan(&rec.Account, &rec.Model, &rec.Surface, &rec.Status, &rec.ErrorCode, &rec.Stream,
			&created, &rec.DurationMS, &events, &num, &dep, &prov, &model, &upstream, &outcome, &errorCode, &input,
			&cached, &cacheWrite, &output, &reason, &provenance, &reserved, &cost, &billing, &price,
			&dispatched, &headers, &firstToken, &dropped, &upstreamStatus, &band, &score, &strategy,
			&region); err != nil {
			return nil, fmt.Errorf("store: reading audit record: %w", err)
		}
		if r == nil {
			rec.RequestID = requestID
			rec.CreatedAt = fromNanos(created)
			rec.Attempts = []audit.Attempt{}
			if events.Valid {
				if err := json.Unmarshal([]byte(events.String), &rec.AdmissionEvents); err != nil {
					return nil, fmt.Errorf("store: audit record admission_events: %w", err)
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
// (requests_created_at finds them in order; rows another replica is deleting are skipped);
// their attempts_v1 rows go by the foreign key.
const pruneRecords = `DELETE FROM requests WHERE request_id IN
    (SELECT request_id FROM requests WHERE created_at < $1 ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED)`

// PruneRecords implements audit.Pruner: it deletes at most limit records created before
// before, oldest first, in one statement, and returns how many. Replicas pruning at once skip
// each other's rows. The ledger is not touched.
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
