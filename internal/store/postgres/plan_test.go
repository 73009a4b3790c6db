package postgres

import (
	"context"
	"fmt"
	"github.com/switchyard-gw/switchyard/internal/store/auditjson"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/stdlib"

	"github.com/switchyard-gw/switchyard/internal/audit"
	"github.com/switchyard-gw/switchyard/internal/store/auditsql"
	"github.com/switchyard-gw/switchyard/internal/store/migrate"
	"github.com/switchyard-gw/switchyard/internal/store/storetest"
)

// TestPartialIndexMigration (migration 0012): records written under migration 0011, with and
// without an account and a key, read back and list unchanged after the upgrade; the account
// and key indexes are partial, and the call log's account and key filters use them even in a
// generic plan (which cannot tell that the parameter is not empty: the query's own terms
// that the account and the key are not empty let it).
func TestPartialIndexMigration(t *testing.T) {
	url := storetest.PostgresURL(t)
	ctx := context.Background()
	ms, err := migrate.Load(migrationFS, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	var before []migrate.Migration
	for _, m := range ms {
		if m.Name == "audit_partial_indexes" {
			break
		}
		before = append(before, m)
	}
	if len(before) == 0 || before[len(before)-1].Name != "audit_lists" {
		t.Fatalf("migrations before 0012: %d of %d", len(before), len(ms))
	}
	cfg, err := parseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	old := stdlib.OpenDB(*cfg)
	if err := migrate.Apply(ctx, old, before, migrate.Options{DollarPlaceholders: true, Lock: migrationLock}); err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	var recs []*audit.Record
	for i, who := range [][2]string{{"a1", "k1"}, {"", ""}, {"a1", "k2"}, {"a2", ""}, {"", ""}} {
		r := storetest.FullRecord(fmt.Sprintf("req_%d", i))
		r.Account, r.KeyID = who[0], who[1]
		r.CallerRequestID = "" // not stored before migration 0015
		r.CreatedAt = base.Add(time.Duration(i) * time.Minute)
		recs = append(recs, r)
	}
	// The 0011 writer's columns (0014 added the summary).
	for _, r := range recs {
		if _, err := old.ExecContext(ctx, `INSERT INTO requests (request_id, account, model, surface, status, error_code,
			stream, created_at, duration_ms, admission_events, attempts_json, key_id)
			VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10::jsonb,$11::jsonb,$12)`,
			r.RequestID, r.Account, r.Model, r.Surface, r.Status, r.ErrorCode, r.Stream, nanos(r.CreatedAt), r.DurationMS,
			string(r.AdmissionEvents.AppendJSON(nil)), string(auditjson.Append(nil, r.Attempts)), r.KeyID); err != nil {
			t.Fatal(err)
		}
	}
	old.Close()

	db := open(t, url)
	for _, r := range recs {
		if got, err := db.Record(ctx, r.RequestID); err != nil || !reflect.DeepEqual(got, r) {
			t.Errorf("record %s after the upgrade: %+v, %v", r.RequestID, got, err)
		}
	}
	storetest.CheckOverviewBackfill(t, db, recs)
	for _, tc := range []struct {
		f    audit.Filter
		want []string
	}{
		{audit.Filter{}, []string{"req_4", "req_3", "req_2", "req_1", "req_0"}},
		{audit.Filter{Account: "a1"}, []string{"req_2", "req_0"}},
		{audit.Filter{Account: "a2"}, []string{"req_3"}},
		{audit.Filter{KeyID: "k2"}, []string{"req_2"}},
		{audit.Filter{Account: "a1", KeyID: "k1"}, []string{"req_0"}},
	} {
		got, err := db.ListRecords(ctx, tc.f, audit.Position{}, 10)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range got {
			ids = append(ids, r.RequestID)
		}
		if !slices.Equal(ids, tc.want) {
			t.Errorf("list %+v after the upgrade: %v, want %v", tc.f, ids, tc.want)
		}
	}
	for _, index := range []string{"requests_account_created", "requests_key_created"} {
		var def string
		if err := db.db.QueryRowContext(ctx, "SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema() AND indexname = $1",
			index).Scan(&def); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(def, "WHERE") {
			t.Errorf("%s is not partial: %s", index, def)
		}
	}

	// A generic plan of the call log's page, on one connection.
	conn, err := db.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, s := range []string{"SET plan_cache_mode = force_generic_plan", "SET enable_seqscan = off"} {
		if _, err := conn.ExecContext(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	for i, tc := range []struct {
		f     audit.Filter
		index string
	}{
		{audit.Filter{Account: "a1"}, "requests_account_created"},
		{audit.Filter{KeyID: "k1"}, "requests_key_created"},
	} {
		q, args := auditsql.ListQuery(tc.f, audit.Position{}, 10, true)
		name := fmt.Sprintf("page%d", i)
		if _, err := conn.ExecContext(ctx, "PREPARE "+name+" AS "+q); err != nil {
			t.Fatal(err)
		}
		lits := make([]string, len(args))
		for j, a := range args {
			if s, ok := a.(string); ok {
				lits[j] = "'" + s + "'"
			} else {
				lits[j] = fmt.Sprint(a)
			}
		}
		rows, err := conn.QueryContext(ctx, "EXPLAIN EXECUTE "+name+"("+strings.Join(lits, ", ")+")")
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, line)
		}
		rows.Close()
		if text := strings.Join(plan, "\n"); !strings.Contains(text, tc.index) {
			t.Errorf("generic plan of %+v does not use %s:\n%s", tc.f, tc.index, text)
		}
	}
}
