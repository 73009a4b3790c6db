// Package auditsql holds the SQL of the audit store that SQLite and Postgres share: the query
// of the admin API's call log (audit.Lister) over the requests and attempts tables.
package auditsql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/switchyard-gw/switchyard/internal/audit"
)

// ListQuery is the SELECT of the request ids of one page of audit records f selects, newest
// first (created_at, then request_id, descending), strictly after after; postgres selects $n
// placeholders, else ?.
// Each filter that narrows by an indexed column (account, key_id) reads its index
// (column, created_at, request_id), partial on a non-empty value, in order; the others are
// checked on the way.
func ListQuery(f audit.Filter, after audit.Position, limit int, postgres bool) (string, []any) {
	conds := []string{"created_at IS NOT NULL"}
	var args []any
	eq := func(col, v string) {
		if v != "" {
			conds = append(conds, col+" = ?")
			args = append(args, v)
		}
	}
	// The account and key indexes are partial (migration 0012: WHERE account <> '', WHERE
	// key_id <> ''): a planner uses one only when the query has its WHERE term, which it cannot
	// derive from an equality with a parameter.
	if f.Account != "" {
		conds = append(conds, "account = ?", "account <> ''")
		args = append(args, f.Account)
	}
	if f.KeyID != "" {
		conds = append(conds, "key_id = ?", "key_id <> ''")
		args = append(args, f.KeyID)
	}
	if f.RequestID != "" {
		// Either index: the primary key, or the partial requests_caller_request_id (migration
		// 0015), whose WHERE term the second branch states.
		conds = append(conds, "(request_id = ? OR (caller_request_id = ? AND caller_request_id <> ''))")
		args = append(args, f.RequestID, f.RequestID)
	}
	eq("model", f.Model)
	if f.HasErrorCode {
		conds = append(conds, "error_code = ?")
		args = append(args, f.ErrorCode)
	}
	if f.StatusMin > 0 {
		conds = append(conds, "status >= ?")
		args = append(args, f.StatusMin)
	}
	if f.StatusMax > 0 {
		conds = append(conds, "status <= ?")
		args = append(args, f.StatusMax)
	}
	if !f.Since.IsZero() {
		conds = append(conds, "created_at >= ?")
		args = append(args, f.Since.UnixNano())
	}
	if !f.Until.IsZero() {
		conds = append(conds, "created_at < ?")
		args = append(args, f.Until.UnixNano())
	}
	if f.Deployment != "" {
		// The record's own attempts: its attempts_json (element 1 is the deployment, auditjson),
		// or its attempts_v1 rows (primary key) when it was written before migration 0010. Not
		// the attempts view: both planners materialised the whole view (every attempt of every
		// record) for each page.
		elements := "json_each(requests.attempts_json) j WHERE j.value ->> 1 = ?"
		if postgres {
			elements = "jsonb_array_elements(requests.attempts_json) j WHERE j ->> 1 = ?"
		}
		conds = append(conds, "(EXISTS (SELECT 1 FROM "+elements+") OR (requests.attempts_json IS NULL AND "+
			"EXISTS (SELECT 1 FROM attempts_v1 a WHERE a.request_id = requests.request_id AND a.deployment = ?)))")
		args = append(args, f.Deployment, f.Deployment)
	}
	if !after.CreatedAt.IsZero() || after.RequestID != "" {
		n := after.CreatedAt.UnixNano()
		conds = append(conds, "(created_at < ? OR (created_at = ? AND request_id < ?))")
		args = append(args, n, n, after.RequestID)
	}
	args = append(args, limit)
	q := "SELECT request_id FROM requests WHERE " + strings.Join(conds, " AND ") +
		" ORDER BY created_at DESC, request_id DESC LIMIT ?"
	if postgres {
		var b strings.Builder
		n := 0
		for _, part := range strings.SplitAfter(q, "?") {
			if p, ok := strings.CutSuffix(part, "?"); ok {
				n++
				part = p + "$" + strconv.Itoa(n)
			}
			b.WriteString(part)
		}
		q = b.String()
	}
	return q, args
}

// List runs the id query q of ListQuery and reads each record with read (the store's
// Record); a record gone between the
// two (replaced away or pruned) is left out.
func List(ctx context.Context, db *sql.DB, q string, args []any, read func(context.Context, string) (*audit.Record, error)) ([]*audit.Record, error) {
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("store: listing audit records: %w", err)
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, fmt.Errorf("store: listing audit records: %w", err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: listing audit records: %w", err)
	}
	out := make([]*audit.Record, 0, len(ids))
	for _, id := range ids {
		r, err := read(ctx, id)
		if errors.Is(err, audit.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}
