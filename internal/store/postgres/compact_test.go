package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5/stdlib"

	"github.com/switchyard-gw/switchyard/internal/audit"
	"github.com/switchyard-gw/switchyard/internal/store/migrate"
	"github.com/switchyard-gw/switchyard/internal/store/storetest"
)

// TestCompactMigrationKeepsOldRecords (migration 0010): records written before the compact
// form read back unchanged after the upgrade, beside new ones; the attempts view has the
// former table's columns, types and values over both kinds; a record replaced after the
// upgrade shows only its new attempts, to the call log's deployment filter too.
func TestCompactMigrationKeepsOldRecords(t *testing.T) {
	url := storetest.PostgresURL(t)
	ctx := context.Background()
	ms, err := migrate.Load(migrationFS, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	var before []migrate.Migration
	for _, m := range ms {
		if m.Name == "audit_compact" {
			break
		}
		before = append(before, m)
	}
	cfg, err := parseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	old := stdlib.OpenDB(*cfg)
	if err := migrate.Apply(ctx, old, before, migrate.Options{DollarPlaceholders: true, Lock: migrationLock}); err != nil {
		t.Fatal(err)
	}
	r := storetest.FullRecord("old")
	if _, err := old.ExecContext(ctx, `INSERT INTO requests (request_id, account, model, surface, status, error_code, stream, created_at, duration_ms, admission_events)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::jsonb)`, r.RequestID, r.Account, r.Model, r.Surface, r.Status, r.ErrorCode, r.Stream,
		r.CreatedAt.UnixNano(), r.DurationMS, mustJSON(r.AdmissionEvents)); err != nil {
		t.Fatal(err)
	}
	for _, a := range r.Attempts {
		var price any
		if a.Price != nil {
			b, _ := json.Marshal(a.Price)
			price = string(b)
		}
		dropped, _ := json.Marshal(a.DroppedParams)
		if _, err := old.ExecContext(ctx, `INSERT INTO attempts (request_id, attempt, deployment, provider, model, upstream_model,
			outcome, error_code, input_tokens, cached_tokens, cache_write_tokens, output_tokens, reasoning_tokens,
			usage_provenance, reserved_max_usd, cost_usd, billing_source, price, dispatched_at, headers_ms, first_token_ms,
			dropped_params, upstream_status, band, score, strategy, region) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17,
			$18::jsonb, $19, $20, $21, $22::jsonb, $23, $24, $25, $26, $27)`,
			r.RequestID, a.Attempt, a.Deployment, a.Provider, a.Model, a.UpstreamModel, a.Outcome, a.ErrorCode,
			a.Tokens.Input, a.Tokens.Cached, a.Tokens.CacheWrite, a.Tokens.Output, a.Tokens.Reasoning,
			a.UsageProvenance, a.ReservedMaxUSD, a.CostUSD, a.BillingSource, price, nanos(a.DispatchedAt),
			nullFloat(a.HeadersMS), nullFloat(a.FirstTokenMS), string(dropped), a.UpstreamStatus,
			a.Band, scoreArg(a.Score), a.Strategy, a.Region); err != nil {
			t.Fatal(err)
		}
	}
	old.Close()

	db := open(t, url)
	want := *r
	want.KeyID = ""           // written before migration 0011: no calling key was stored
	want.CallerRequestID = "" // nor, before 0015, the caller's request id
	want.Attempts = append([]audit.Attempt(nil), r.Attempts...)
	for i := range want.Attempts {
		want.Attempts[i].Platform = "" // the former attempts table had no platform
	}
	if got, err := db.Record(ctx, "old"); err != nil || !reflect.DeepEqual(got, &want) {
		t.Errorf("record after the upgrade: %+v, %v", got, err)
	}
	if err := db.WriteRecords(ctx, []*audit.Record{storetest.FullRecord("new")}); err != nil {
		t.Fatal(err)
	}
	view := func(id string) (rows []string) {
		t.Helper()
		q, err := db.db.QueryContext(ctx, `SELECT attempt, deployment, outcome, error_code, input_tokens, output_tokens, usage_provenance,
			reserved_max_usd, cost_usd, billing_source, price::text, dispatched_at, headers_ms, first_token_ms, dropped_params::text,
			upstream_status, pg_typeof(price)::text, pg_typeof(attempt)::text, pg_typeof(dropped_params)::text,
			band, score, strategy, region, pg_typeof(score)::text FROM attempts WHERE request_id = $1 ORDER BY attempt`, id)
		if err != nil {
			t.Fatal(err)
		}
		defer q.Close()
		for q.Next() {
			var v [24]any
			ptrs := make([]any, len(v))
			for i := range v {
				ptrs[i] = &v[i]
			}
			if err := q.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			rows = append(rows, fmt.Sprint(v))
		}
		return rows
	}
	oldRows, newRows := view("old"), view("new")
	if len(oldRows) != 2 || !reflect.DeepEqual(oldRows, newRows) {
		t.Errorf("attempts view:\nformer %v\ncompact %v", oldRows, newRows)
	}
	byDeployment := func(dep string) []string {
		t.Helper()
		got, err := db.ListRecords(ctx, audit.Filter{Deployment: dep}, audit.Position{}, 10)
		if err != nil {
			t.Fatal(err)
		}
		ids := []string{}
		for _, r := range got {
			ids = append(ids, r.RequestID)
		}
		return ids
	}
	// The call log's deployment filter sees the former attempts rows and the compact ones.
	if got := byDeployment("anthropic"); !slices.Equal(got, []string{"old", "new"}) {
		t.Errorf("deployment filter after the upgrade: %v", got)
	}
	replaced := storetest.FullRecord("old")
	replaced.Attempts = replaced.Attempts[1:]
	if err := db.WriteRecords(ctx, []*audit.Record{replaced}); err != nil {
		t.Fatal(err)
	}
	if got, err := db.Record(ctx, "old"); err != nil || !reflect.DeepEqual(got, replaced) {
		t.Errorf("replaced former record: %+v, %v", got, err)
	}
	if rows := view("old"); len(rows) != 1 || rows[0] != newRows[1] {
		t.Errorf("attempts view of the replaced record: %v", rows)
	}
	// A replaced former record's attempts are its new ones only, for the filter too.
	if got := byDeployment("anthropic"); !slices.Equal(got, []string{"new"}) {
		t.Errorf("deployment filter after the replace: %v", got)
	}
	if got := byDeployment("bedrock-east"); !slices.Equal(got, []string{"old", "new"}) {
		t.Errorf("deployment filter after the replace: %v", got)
	}
	if got := byDeployment("nowhere"); len(got) != 0 {
		t.Errorf("deployment filter of no attempt: %v", got)
	}
}

// mustJSON is v's JSON text.
func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// scoreArg is s as a parameter: NULL when not Valid.
func scoreArg(s audit.Score) any {
	if !s.Valid {
		return nil
	}
	return s.Value
}
