package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/switchyard-gw/switchyard/internal/accounts"
	"github.com/switchyard-gw/switchyard/internal/audit"
	"github.com/switchyard-gw/switchyard/internal/store/migrate"
	"github.com/switchyard-gw/switchyard/internal/store/storetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func fileURL(t testing.TB) string {
	return "sqlite://" + filepath.ToSlash(filepath.Join(t.TempDir(), "audit.db"))
}

func open(t testing.TB, url string) *DB {
	t.Helper()
	db, err := Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestWALAndReopen(t *testing.T) {
	url := fileURL(t)
	ctx := context.Background()
	db, err := Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(db.Path()); err != nil {
		t.Error(err)
	} else if fi.Mode().Perm() != 0o600 {
		t.Errorf("new database file mode %v, want 0600", fi.Mode().Perm())
	}
	var mode string
	if err := db.db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode = %q, %v; want wal", mode, err)
	}
	var busy int
	if err := db.db.QueryRowContext(ctx, "PRAGMA busy_timeout").Scan(&busy); err != nil || busy != 5000 {
		t.Errorf("busy_timeout = %d, %v; want 5000", busy, err)
	}
	var temp int
	if err := db.db.QueryRowContext(ctx, "PRAGMA temp_store").Scan(&temp); err != nil || temp != 2 {
		t.Errorf("temp_store = %d, %v; want 2 (memory: the audit writer's statement journals)", temp, err)
	}
	want := storetest.FullRecord("req_keep")
	if err := db.WriteRecords(ctx, []*audit.Record{want}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db = open(t, url) // migrations are not re-applied; data is kept
	got, err := db.Record(ctx, "req_keep")
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("after reopen: %+v, %v", got, err)
	}
	var versions int
	if want := migrationCount(t); db.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM schema_migrations").Scan(&versions) != nil || versions != want {
		t.Errorf("schema_migrations rows = %d; want %d (the embedded migrations)", versions, want)
	}
	if err := db.Ping(ctx); err != nil {
		t.Errorf("Ping: %v", err)
	}
}

// TestNewerSchemaRefused: a binary does not run on a database migrated by a newer one.
func TestNewerSchemaRefused(t *testing.T) {
	url := fileURL(t)
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

// migrationCount is the number of embedded migrations: what a migrated database records.
func migrationCount(t testing.TB) int {
	t.Helper()
	ms, err := migrate.Load(migrationFS, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	return len(ms)
}

// TestEmbeddedMigrations: the embedded set is valid for the shared runner.
func TestEmbeddedMigrations(t *testing.T) {
	if _, err := migrate.Load(migrationFS, "migrations"); err != nil {
		t.Fatal(err)
	}
}

func TestParseURL(t *testing.T) {
	tests := []struct{ url, want, wantErr string }{
		{"sqlite://switchyard.db", "switchyard.db", ""},
		{"sqlite://data/audit.db", filepath.FromSlash("data/audit.db"), ""},
		{"sqlite:///var/lib/switchyard/s.db", filepath.FromSlash("/var/lib/switchyard/s.db"), ""},
		{"sqlite://:memory:", ":memory:", ""},
		{"sqlite://", "", "names no database file"},
		{"sqlite://a.db?mode=ro", "", "no query"},
		{"sqlite://data/", "", "directory"},
		{"file:a.db", "", "not a sqlite URL"},
		{"sqlite://file:a.db?mode=ro", "", "no query"},
		{"sqlite://file:a.db", "", "not a file: URI"},
	}
	for _, tt := range tests {
		got, err := parseURL(tt.url)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("parseURL(%q) = %q, %v; want error %q", tt.url, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("parseURL(%q) = %q, %v; want %q", tt.url, got, err, tt.want)
		}
	}
}

func TestOpenMissingDirectory(t *testing.T) {
	_, err := Open(context.Background(), "sqlite://"+filepath.ToSlash(filepath.Join(t.TempDir(), "nope", "a.db")))
	if err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("Open in a missing directory: %v", err)
	}
}

// TestStore runs the shared behaviour suite on file databases.
func TestStore(t *testing.T) {
	storetest.Run(t, func(t testing.TB) audit.Store { return open(t, fileURL(t)) })
}

// TestStoreMemory runs the shared behaviour suite on sqlite://:memory:.
func TestStoreMemory(t *testing.T) {
	storetest.Run(t, func(t testing.TB) audit.Store { return open(t, "sqlite://:memory:") })
}

// TestAccounts runs the shared accounts.Store suite on file databases.
func TestAccounts(t *testing.T) {
	storetest.RunAccounts(t, func(t testing.TB) accounts.Store { return open(t, fileURL(t)) })
}

// BenchmarkWriteRecords measures batched writes of two-attempt records into a file database
// (storetest.BenchmarkWriteRecords).
func BenchmarkWriteRecords(b *testing.B) {
	storetest.BenchmarkWriteRecords(b, open(b, fileURL(b)))
}
