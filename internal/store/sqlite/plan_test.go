package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"github.com/switchyard-gw/switchyard/internal/store/auditjson"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-gw/switchyard/internal/audit"
	"github.com/switchyard-gw/switchyard/internal/store/auditsql"
	"github.com/switchyard-gw/switchyard/internal/store/migrate"
	"github.com/switchyard-gw/switchyard/internal/store/storetest"
)

// queryPlan is the EXPLAIN QUERY PLAN of q with args, one detail per line.
func queryPlan(t *testing.T, db *DB, q string, args ...any) string {
	t.Helper()
	rows, err := db.rdb.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(plan, "\n")
}

// TestAuditReadsUseIndexes: every read of the audit records goes through an index: the call
// log's page (each filter, cursor paging) in the order of the index it reads, without sorting,
// the account and key filters through their partial indexes (migration 0012: they are only
// usable because the query says that the account and the key are not empty); retention pruning through
// requests_created; GET /v1/generation through the primary key. The deployment filter looks
// at each listed record's own attempts (its attempts_json, or its attempts_v1 rows by their
// primary key), not at the attempts view, which SQLite materialised whole (every attempt of
// every record) for each page.
func TestAuditReadsUseIndexes(t *testing.T) {
	db := open(t, fileURL(t))
	since := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	after := audit.Position{CreatedAt: since.Add(time.Hour), RequestID: "req_x"}
	for _, tc := range []struct {
		name  string
		f     audit.Filter
		after audit.Position
		index string
	}{
		{"none", audit.Filter{}, audit.Position{}, "requests_created"},
		{"cursor", audit.Filter{}, after, "requests_created"},
		{"account", audit.Filter{Account: "a1"}, audit.Position{}, "requests_account_created"},
		{"account, cursor", audit.Filter{Account: "a1"}, after, "requests_account_created"},
		{"key", audit.Filter{KeyID: "k1"}, audit.Position{}, "requests_key_created"},
		{"key, cursor, since", audit.Filter{KeyID: "k1", Since: since}, after, "requests_key_created"},
		{"account and key", audit.Filter{Account: "a1", KeyID: "k1"}, audit.Position{}, "requests_"},
		{"model", audit.Filter{Model: "gpt"}, audit.Position{}, "requests_created"},
		{"deployment", audit.Filter{Deployment: "oa"}, audit.Position{}, "requests_created"},
		{"deployment, account", audit.Filter{Deployment: "oa", Account: "a1"}, after, "requests_account_created"},
		{"status, class", audit.Filter{StatusMin: 400, StatusMax: 499, HasErrorCode: true, ErrorCode: "x"}, audit.Position{}, "requests_created"},
		{"since, until", audit.Filter{Since: since, Until: since.Add(time.Hour)}, audit.Position{}, "requests_created"},
		{"account, model, since", audit.Filter{Account: "a1", Model: "gpt", Since: since}, after, "requests_account_created"},
	} {
		q, args := auditsql.ListQuery(tc.f, tc.after, 50, false)
		plan := queryPlan(t, db, q, args...)
		first := strings.SplitN(plan, "\n", 2)[0]
		if !strings.Contains(first, "requests USING INDEX "+tc.index) && !strings.Contains(first, "requests USING COVERING INDEX "+tc.index) {
			t.Errorf("%s: the page does not read %s:\n%s", tc.name, tc.index, plan)
		}
		if strings.Contains(plan, "TEMP B-TREE") {
			t.Errorf("%s: the page is sorted, not read in index order:\n%s", tc.name, plan)
		}
		if tc.f.Deployment != "" && (!strings.Contains(plan, "SEARCH a USING INDEX sqlite_autoindex_attempts_v1_1 (request_id=?)") ||
			strings.Contains(plan, "CO-ROUTINE") || strings.Contains(plan, "AUTOMATIC") || strings.Contains(plan, "SCAN r") ||
			strings.Contains(plan, "SCAN a")) {
			t.Errorf("%s: the deployment filter reads more than the record's own attempts:\n%s", tc.name, plan)
		}
	}
	if plan := queryPlan(t, db, pruneRecords, since.UnixNano(), 500); !strings.Contains(plan, "INDEX requests_created") ||
		strings.Contains(plan, "TEMP B-TREE") {
		t.Errorf("pruning does not read requests_created in order:\n%s", plan)
	}
	if plan := queryPlan(t, db, selectRequest, "req_x"); !strings.Contains(plan, "INDEX sqlite_autoindex_requests_1 (request_id=?)") {
		t.Errorf("Record does not look the id up in the primary key:\n%s", plan)
	}
}

// TestPartialIndexMigration (migration 0012): records written under migration 0011, with and
// without an account and a key, read back and list unchanged after the upgrade, through the
// indexes that are now partial; those indexes hold only the records with an account or a key.
func TestPartialIndexMigration(t *testing.T) {
	url := fileURL(t)
	path, _ := parseURL(url)
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
	old, err := sql.Open("sqlite", dsn(path, busyTimeout, dsnParams+writerParams))
	if err != nil {
		t.Fatal(err)
	}
	if err := migrate.Apply(ctx, old, before, migrate.Options{}); err != nil {
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
	// The 0011 writer's columns, with the rows as it bound them (0014 added the summary).
	for _, r := range recs {
		if _, err := old.ExecContext(ctx, `INSERT INTO requests (request_id, account, model, surface, status, error_code,
			stream, created_at, duration_ms, admission_events, attempts_json, key_id) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)`,
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
	// 0014 summed the records written before it for the overview.
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
	partial := map[string]bool{}
	rows, err := db.rdb.QueryContext(ctx, "SELECT name, partial FROM pragma_index_list('requests')")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var name string
		var p bool
		if err := rows.Scan(&name, &p); err != nil {
			t.Fatal(err)
		}
		partial[name] = p
	}
	rows.Close()
	want := map[string]bool{"sqlite_autoindex_requests_1": false, "requests_created": false,
		"requests_account_created": true, "requests_key_created": true, "requests_caller_request_id": true}
	if !maps.Equal(partial, want) {
		t.Errorf("indexes of requests (name: partial): %v, want %v", partial, want)
	}
	if n := dbstatCells(t, db, "requests_account_created"); n != 3 {
		t.Errorf("requests_account_created holds %d entries, want 3 (the records with an account)", n)
	}
	if n := dbstatCells(t, db, "requests_key_created"); n != 2 {
		t.Errorf("requests_key_created holds %d entries, want 2 (the records with a key)", n)
	}
}

// dbstatCells is the number of entries of a one-page index.
func dbstatCells(t *testing.T, db *DB, index string) int {
	t.Helper()
	var n int
	if err := db.rdb.QueryRowContext(context.Background(), "SELECT SUM(ncell) FROM dbstat WHERE name = ?", index).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
