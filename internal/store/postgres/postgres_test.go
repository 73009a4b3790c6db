package postgres

import (
	"context"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/switchyard-gw/switchyard/internal/accounts"
	"github.com/switchyard-gw/switchyard/internal/audit"
	"github.com/switchyard-gw/switchyard/internal/store/migrate"
	"github.com/switchyard-gw/switchyard/internal/store/storetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func open(t testing.TB, url string) *DB {
	t.Helper()
	db, err := Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestStore runs the shared behaviour suite, each subtest in a fresh schema.
func TestStore(t *testing.T) {
	if os.Getenv(storetest.EnvPostgresURL) == "" {
		t.Skip(storetest.SkipMessage)
	}
	storetest.Run(t, func(t testing.TB) audit.Store { return open(t, storetest.PostgresURL(t)) })
}

// TestAccounts runs the shared accounts.Store suite, each subtest in a fresh schema.
func TestAccounts(t *testing.T) {
	if os.Getenv(storetest.EnvPostgresURL) == "" {
		t.Skip(storetest.SkipMessage)
	}
	storetest.RunAccounts(t, func(t testing.TB) accounts.Store { return open(t, storetest.PostgresURL(t)) })
}

// migrationCount is the number of embedded migrations: what a migrated database records.
func migrationCount(t testing.TB) int {
	t.Helper()
	ms, err := migrate.Load(migrationFS, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	return len(ms)
}

// TestSameMigrationsAsSQLite: the Postgres schema has the same steps, by number and name, as
// the SQLite one.
func TestSameMigrationsAsSQLite(t *testing.T) {
	pg, err := migrate.Load(migrationFS, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	lite, err := migrate.Load(os.DirFS(".."), "sqlite/migrations")
	if err != nil {
		t.Fatal(err)
	}
	names := func(ms []migrate.Migration) (s []string) {
		for _, m := range ms {
			s = append(s, m.Name)
		}
		return s
	}
	if !reflect.DeepEqual(names(pg), names(lite)) {
		t.Errorf("postgres migrations %v, sqlite %v", names(pg), names(lite))
	}
}

// TestReopen: data is kept and migrations are not re-applied when a store is reopened.
func TestReopen(t *testing.T) {
	url := storetest.PostgresURL(t)
	ctx := context.Background()
	db := open(t, url)
	if err := db.Ping(ctx); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	want := storetest.FullRecord("req_keep")
	if err := db.WriteRecords(ctx, []*audit.Record{want}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = open(t, url)
	got, err := db.Record(ctx, "req_keep")
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("after reopen: %+v, %v", got, err)
	}
	var versions int
	if want := migrationCount(t); db.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM schema_migrations").Scan(&versions) != nil || versions != want {
		t.Errorf("schema_migrations rows = %d; want %d (the embedded migrations)", versions, want)
	}
	// The JSON columns are JSONB, queryable as such.
	var n int
	if err := db.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM attempts WHERE dropped_params ? 'seed' AND (price->>'output')::float8 = 15").Scan(&n); err != nil || n != 1 {
		t.Errorf("JSONB query: %d rows, %v; want 1", n, err)
	}
}

// TestConcurrentOpen: gateways starting at once on an empty schema all migrate it without
// error (the advisory lock serialises them), and the steps are applied once.
func TestConcurrentOpen(t *testing.T) {
	url := storetest.PostgresURL(t)
	const n = 6
	dbs := make([]*DB, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { dbs[i], errs[i] = Open(context.Background(), url) })
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Errorf("Open %d: %v", i, errs[i])
			continue
		}
		defer dbs[i].Close()
	}
	if t.Failed() {
		return
	}
	var versions int
	if want := migrationCount(t); dbs[0].db.QueryRow("SELECT COUNT(*) FROM schema_migrations").Scan(&versions) != nil || versions != want {
		t.Errorf("schema_migrations rows = %d; want %d (the embedded migrations)", versions, want)
	}
}

// TestNewerSchemaRefused: a binary does not run on a database migrated by a newer one.
func TestNewerSchemaRefused(t *testing.T) {
	url := storetest.PostgresURL(t)
	db := open(t, url)
	if _, err := db.db.Exec("INSERT INTO schema_migrations (version, name, applied_at) VALUES (99, 'future', 0)"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if db, err := Open(context.Background(), url); err == nil || !strings.Contains(err.Error(), "newer than this binary") {
		if db != nil {
			db.Close()
		}
		t.Errorf("Open of a newer schema: %v, want refusal", err)
	}
}

// TestErrorsDoNotEchoURL: no error of Open or CheckURL contains the URL's password, whether
// the URL does not parse or the server cannot be reached. Needs no server.
func TestErrorsDoNotEchoURL(t *testing.T) {
	tests := []struct{ url, wantErr string }{
		{"postgres://u:s3cr3tpw@127.0.0.1:notaport/db", "cannot be parsed"},
		{"postgres://u:s3cr3tpw@127.0.0.1:5432/db?sslmode=bogus", "cannot be parsed"},
		{"postgresql://u:s3cr3tpw@[::1/db", "cannot be parsed"},
		{"postgres://u@127.0.0.1:5432/db?password=s3cr3tpw&connect_timeout=x", "cannot be parsed"},
		{"mysql://u:s3cr3tpw@h/db", "not a postgres URL"},
		{"host=h password=s3cr3tpw", "not a postgres URL"},
		// Port 1 on loopback refuses at once: a connect error, after parsing.
		{"postgres://u:s3cr3tpw@127.0.0.1:1/db?sslmode=disable&connect_timeout=5", "migrating postgres database"},
	}
	for _, tt := range tests {
		db, err := Open(context.Background(), tt.url)
		if err == nil {
			db.Close()
			t.Errorf("Open(%q) succeeded", tt.url)
			continue
		}
		if !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("Open(%q) = %v, want %q", tt.url, err, tt.wantErr)
		}
		if strings.Contains(err.Error(), "s3cr3tpw") {
			t.Errorf("Open(%q) error echoes the password: %v", tt.url, err)
		}
		if cerr := CheckURL(tt.url); (cerr == nil) != (tt.wantErr == "migrating postgres database") ||
			(cerr != nil && strings.Contains(cerr.Error(), "s3cr3tpw")) {
			t.Errorf("CheckURL(%q) = %v", tt.url, cerr)
		}
	}
}

func TestCheckURL(t *testing.T) {
	for _, u := range []string{
		"postgres://u:pw@db.internal:5432/switchyard?sslmode=require",
		"postgresql://db/switchyard",
		"postgres:///switchyard?host=/var/run/postgresql",
	} {
		if err := CheckURL(u); err != nil {
			t.Errorf("CheckURL(%q) = %v", u, err)
		}
	}
}

// BenchmarkWriteRecords measures batched writes of two-attempt records
// (storetest.BenchmarkWriteRecords).
func BenchmarkWriteRecords(b *testing.B) {
	storetest.BenchmarkWriteRecords(b, open(b, storetest.PostgresURL(b)))
}
