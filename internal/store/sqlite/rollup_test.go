package sqlite

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-gw/switchyard/internal/audit"
	"github.com/switchyard-gw/switchyard/internal/store/auditsql"
	"github.com/switchyard-gw/switchyard/internal/store/migrate"
	"github.com/switchyard-gw/switchyard/internal/store/storetest"
)

// TestRollupQueryPlans (migration 0015): the overview's statements read only the rollup
// tables, each a range of their primary key, never the requests table; the writer finds the
// rows a batch replaces by the primary key; the call log's request id filter reads the primary
// key or the caller's id index, not the whole table.
func TestRollupQueryPlans(t *testing.T) {
	db := open(t, fileURL(t))
	for i, q := range auditsql.OverviewSQL(false) {
		var plan string
		if i == 1 {
			plan = queryPlan(t, db, q, 0, 60, 60, 0, 0, 3600)
		} else {
			plan = queryPlan(t, db, q, 60, 0, 3600)
		}
		if strings.Contains(plan, "requests") || !strings.Contains(plan, "SEARCH audit_rollup") ||
			!strings.Contains(plan, "USING PRIMARY KEY (span=? AND") || strings.Contains(plan, "SCAN") {
			t.Errorf("overview statement %d does not read a range of the rollup's primary key:\n%s\n%s", i, q, plan)
		}
	}
	if plan := queryPlan(t, db, selectReplaced, `["req_x"]`); !strings.Contains(plan, "sqlite_autoindex_requests_1 (request_id=?)") ||
		strings.Contains(plan, "SCAN requests") {
		t.Errorf("the replaced rows are not read by the primary key:\n%s", plan)
	}
	q, args := auditsql.ListQuery(audit.Filter{RequestID: "abc"}, audit.Position{}, 50, false)
	if plan := queryPlan(t, db, q, args...); !strings.Contains(plan, "requests_caller_request_id") ||
		!strings.Contains(plan, "sqlite_autoindex_requests_1") || strings.Contains(plan, "SCAN requests") {
		t.Errorf("the request id filter does not read the two id indexes:\n%s", plan)
	}
}

// TestOverviewMillionRecords (issue 23): over 1,000,000 audit records (100,000 unless
// SWITCHYARD_TEST_MILLION is set: storetest.ScaleRecords) the overview, read from
// the rollup, equals the aggregate of the records themselves (storetest.DirectOverview) for each
// of the console's windows. The records are inserted in bulk by one generated statement under
// migration 0014 and added to the rollup by migration 0015's backfill; then 3,000 more go
// through WriteRecords (some replacing bulk records, some pruned), so both ways of filling the
// rollup are compared. Prints each query's time (not asserted).
func TestOverviewMillionRecords(t *testing.T) {
	if testing.Short() {
		t.Skip("a million records")
	}
	ctx := context.Background()
	url := fileURL(t)
	path, _ := parseURL(url)
	ms, err := migrate.Load(migrationFS, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	var before []migrate.Migration
	for _, m := range ms {
		if m.Name == "audit_rollup" {
			break
		}
		before = append(before, m)
	}
	old, err := sql.Open("sqlite", dsn(path, busyTimeout, dsnParams+writerParams))
	if err != nil {
		t.Fatal(err)
	}
	if err := migrate.Apply(ctx, old, before, migrate.Options{}); err != nil {
		t.Fatal(err)
	}
	// Without 0014's covering index, which 0015 drops: the bulk insert is faster.
	if _, err := old.ExecContext(ctx, "DROP INDEX requests_overview"); err != nil {
		t.Fatal(err)
	}
	// The 7 days before end, a record every 0.6048 s; the fields drawn from a 64-bit LCG of the
	// record's number.
	end := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	t0 := time.Now()
	n := storetest.ScaleRecords()
	if _, err := old.ExecContext(ctx, storetest.BulkRecordsSQL(false, n), end.Add(-7*24*time.Hour).UnixNano()); err != nil {
		t.Fatal(err)
	}
	old.Close()
	t.Logf("bulk insert of %d records: %v", n, time.Since(t0).Round(time.Millisecond))
	t0 = time.Now()
	db := open(t, url) // migration 0015: the backfill
	t.Logf("migration 0015 (rollup backfill): %v", time.Since(t0).Round(time.Millisecond))
	// The storage: the requests table and its indexes against the rollup's two tables.
	rows, err := db.rdb.QueryContext(ctx, `SELECT m.tbl_name, SUM(d.pgsize) FROM dbstat d JOIN sqlite_master m ON m.name = d.name
		WHERE m.tbl_name IN ('requests', 'audit_rollup', 'audit_rollup_latency') GROUP BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var name string
		var size int64
		if err := rows.Scan(&name, &size); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %.1f MB", name, float64(size)/1e6)
	}
	rows.Close()
	storetest.CheckOverviewAtScale(t, db, n, end, func(q audit.OverviewQuery) (*audit.Overview, error) {
		return storetest.DirectOverview(ctx, db.rdb, q, false)
	})
}
