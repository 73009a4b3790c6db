package postgres

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/stdlib"

	"github.com/switchyard-gw/switchyard/internal/audit"
	"github.com/switchyard-gw/switchyard/internal/store/auditsql"
	"github.com/switchyard-gw/switchyard/internal/store/migrate"
	"github.com/switchyard-gw/switchyard/internal/store/storetest"
)

// TestOverviewAtScale (issue 23): over 100,000 audit records (1,000,000 with
// SWITCHYARD_TEST_MILLION set) the overview, read from the rollup, equals the aggregate of the
// records themselves for the console's three windows: the records inserted in bulk under
// migration 0014 and added to the rollup by 0015's backfill, then 3,000 written through
// WriteRecords (replacing some) and 5,000 pruned (storetest.CheckOverviewAtScale). The
// overview's statements never read the requests table (EXPLAIN). Logs the query times.
func TestOverviewAtScale(t *testing.T) {
	if testing.Short() {
		t.Skip("100,000 records")
	}
	url := storetest.PostgresURL(t)
	ctx := context.Background()
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
	cfg, err := parseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	old := stdlib.OpenDB(*cfg)
	if err := migrate.Apply(ctx, old, before, migrate.Options{DollarPlaceholders: true, Lock: migrationLock}); err != nil {
		t.Fatal(err)
	}
	if _, err := old.ExecContext(ctx, "DROP INDEX requests_overview"); err != nil { // 0015 drops it: a faster bulk insert
		t.Fatal(err)
	}
	end := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	n := storetest.ScaleRecords()
	t0 := time.Now()
	if _, err := old.ExecContext(ctx, storetest.BulkRecordsSQL(true, n), end.Add(-7*24*time.Hour).UnixNano()); err != nil {
		t.Fatal(err)
	}
	old.Close()
	t.Logf("bulk insert of %d records: %v", n, time.Since(t0).Round(time.Millisecond))
	t0 = time.Now()
	db := open(t, url)
	t.Logf("migration 0015 (rollup backfill): %v", time.Since(t0).Round(time.Millisecond))
	if _, err := db.db.ExecContext(ctx, "ANALYZE"); err != nil {
		t.Fatal(err)
	}
	for i, q := range auditsql.OverviewSQL(true) {
		args := []any{int64(60), int64(0), int64(3600)}
		if i == 1 {
			args = []any{int64(0), int64(60), int64(60), int64(0), int64(0), int64(3600)}
		}
		rows, err := db.db.QueryContext(ctx, "EXPLAIN "+q, args...)
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
		p := strings.Join(plan, "\n")
		if strings.Contains(p, "on requests") || !strings.Contains(p, "audit_rollup") || strings.Contains(p, "Seq Scan on requests") {
			t.Errorf("overview statement %d reads more than the rollup:\n%s", i, p)
		}
	}
	storetest.CheckOverviewAtScale(t, db, n, end, func(q audit.OverviewQuery) (*audit.Overview, error) {
		return storetest.DirectOverview(ctx, db.db, q, true)
	})
}
