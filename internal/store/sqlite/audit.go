package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/switchyard-gw/switchyard/internal/audit"
)

var _ audit.Store = (*DB)(nil)

const (
	insertRequest = `INSERT INTO requests
    (request_id, account, model, surface, status, error_code, stream, created_at, duration_ms)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT (request_id) DO NOTHING`
	replaceRequest = `UPDATE requests SET
    account = ?, model = ?, surface = ?, status = ?, error_code = ?, stream = ?, created_at = ?, duration_ms = ?
    WHERE request_id = ?`
	deleteAttempts = `DELETE FROM attempts WHERE request_id = ?`
	insertAttempt  = `INSERT INTO attempts
    (request_id, attempt, deployment, provider, model, upstream_model, outcome, error_code,
     input_tokens, cached_tokens, cache_write_tokens, output_tokens, reasoning_tokens,
     usage_provenance, reserved_max_usd, cost_usd, billing_source, price, dispatched_at,
     headers_ms, first_token_ms, dropped_params)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	selectRequest = `SELECT account, model, surface, status, error_code, stream, created_at, duration_ms
    FROM requests WHERE request_id = ?`
	selectAttempts = `SELECT attempt, deployment, provider, model, upstream_model, outcome, error_code,
     input_tokens, cached_tokens, cache_write_tokens, output_tokens, reasoning_tokens,
     usage_provenance, reserved_max_usd, cost_usd, billing_source, price, dispatched_at,
     headers_ms, first_token_ms, dropped_params
    FROM attempts WHERE request_id = ? ORDER BY attempt`
)

// WriteRecords writes recs in one transaction: all of them or, on error, none. A record whose
// request id is already stored replaces it, attempts included. Records with an empty
// RequestID are rejected. It does not retain recs.
func (db *DB) WriteRecords(ctx context.Context, recs []*audit.Record) error {
	if len(recs) == 0 {
		return nil
	}
	tx, err := db.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: writing audit records: %w", err)
	}
	defer tx.Rollback()
	insReq, err := tx.PrepareContext(ctx, insertRequest)
	if err != nil {
		return fmt.Errorf("store: writing audit records: %w", err)
	}
	defer insReq.Close()
	insAtt, err := tx.PrepareContext(ctx, insertAttempt)
	if err != nil {
		return fmt.Errorf("store: writing audit records: %w", err)
	}
	defer insAtt.Close()
	for _, r := range recs {
		if err := writeRecord(ctx, tx, insReq, insAtt, r); err != nil {
			return fmt.Errorf("store: writing audit record %q: %w", r.RequestID, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: writing audit records: %w", err)
	}
	return nil
}

func writeRecord(ctx context.Context, tx *sql.Tx, insReq, insAtt *sql.Stmt, r *audit.Record) error {
	if r.RequestID == "" {
		return errors.New("empty request id")
	}
	res, err := insReq.ExecContext(ctx, r.RequestID, r.Account, r.Model, r.Surface, r.Status, r.ErrorCode,
		r.Stream, nanos(r.CreatedAt), r.DurationMS)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 { // already stored: replace
		if _, err := tx.ExecContext(ctx, replaceRequest, r.Account, r.Model, r.Surface, r.Status, r.ErrorCode,
			r.Stream, nanos(r.CreatedAt), r.DurationMS, r.RequestID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, deleteAttempts, r.RequestID); err != nil {
			return err
		}
	}
	for i := range r.Attempts {
		a := &r.Attempts[i]
		var price any // NULL when unpriced
		if a.Price != nil {
			b, err := json.Marshal(a.Price)
			if err != nil {
				return err
			}
			price = string(b)
		}
		dropped := "[]"
		if len(a.DroppedParams) > 0 {
			b, err := json.Marshal(a.DroppedParams)
			if err != nil {
				return err
			}
			dropped = string(b)
		}
		if _, err := insAtt.ExecContext(ctx, r.RequestID, a.Attempt, a.Deployment, a.Provider, a.Model,
			a.UpstreamModel, a.Outcome, a.ErrorCode,
			a.Tokens.Input, a.Tokens.Cached, a.Tokens.CacheWrite, a.Tokens.Output, a.Tokens.Reasoning,
			a.UsageProvenance, a.ReservedMaxUSD, a.CostUSD, a.BillingSource, price, nanos(a.DispatchedAt),
			nullFloat(a.HeadersMS), nullFloat(a.FirstTokenMS), dropped); err != nil {
			return err
		}
	}
	return nil
}

// Record returns the stored record for requestID, its attempts in order, or audit.ErrNotFound.
func (db *DB) Record(ctx context.Context, requestID string) (*audit.Record, error) {
	// One read transaction: a consistent snapshot of the request and its attempts.
	tx, err := db.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("store: reading audit record: %w", err)
	}
	defer tx.Rollback()
	r := &audit.Record{RequestID: requestID, Attempts: []audit.Attempt{}}
	var created sql.NullInt64
	err = tx.QueryRowContext(ctx, selectRequest, requestID).Scan(&r.Account, &r.Model, &r.Surface, &r.Status,
		&r.ErrorCode, &r.Stream, &created, &r.DurationMS)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, audit.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("store: reading audit record: %w", err)
	}
	r.CreatedAt = fromNanos(created)
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
		)
		if err := rows.Scan(&a.Attempt, &a.Deployment, &a.Provider, &a.Model, &a.UpstreamModel, &a.Outcome,
			&a.ErrorCode, &a.Tokens.Input, &a.Tokens.Cached, &a.Tokens.CacheWrite, &a.Tokens.Output,
			&a.Tokens.Reasoning, &a.UsageProvenance, &a.ReservedMaxUSD, &a.CostUSD, &a.BillingSource, &price,
			&dispatched, &headers, &firstToken, &dropped); err != nil {
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
