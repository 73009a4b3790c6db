package migrate

import (
	"context"
	"database/sql"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"

	_ "modernc.org/sqlite" // the "sqlite" driver, to run Apply against a real database
)

func file(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }

func TestLoad(t *testing.T) {
	tests := []struct {
		name    string
		fs      fstest.MapFS
		want    []int
		wantErr string
	}{
		{"ordered", fstest.MapFS{"m/0002_b.sql": file("B"), "m/0001_a.sql": file("A"), "m/README": file("")}, []int{1, 2}, ""},
		{"empty", fstest.MapFS{"m/README": file("")}, nil, ""},
		{"gap", fstest.MapFS{"m/0001_a.sql": file(""), "m/0003_c.sql": file("")}, nil, "not numbered"},
		{"duplicate", fstest.MapFS{"m/0001_a.sql": file(""), "m/0001_b.sql": file("")}, nil, "not numbered"},
		{"starts at 2", fstest.MapFS{"m/0002_a.sql": file("")}, nil, "not numbered"},
		{"bad name", fstest.MapFS{"m/first.sql": file("")}, nil, "0001_name.sql"},
		{"zero", fstest.MapFS{"m/0000_a.sql": file("")}, nil, "0001_name.sql"},
		{"no dir", fstest.MapFS{}, nil, "reading migrations"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms, err := Load(tt.fs, "m")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			var got []int
			for _, m := range ms {
				got = append(got, m.Version)
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("versions %v, %v; want %v", got, err, tt.want)
			}
		})
	}
	ms, err := Load(fstest.MapFS{"m/0001_audit_log.sql": file("CREATE TABLE t (x INTEGER);")}, "m")
	if err != nil || len(ms) != 1 || ms[0] != (Migration{1, "audit_log", "CREATE TABLE t (x INTEGER);"}) {
		t.Errorf("Load = %+v, %v", ms, err)
	}
}

func openMemory(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1) // one connection: one in-memory database
	t.Cleanup(func() { db.Close() })
	return db
}

func versions(t *testing.T, db *sql.DB) []int {
	t.Helper()
	rows, err := db.Query("SELECT version FROM schema_migrations ORDER BY version")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var vs []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		vs = append(vs, v)
	}
	return vs
}

// TestApply: steps are applied once, in order, each atomically with its schema_migrations
// row; a failed step leaves nothing of itself; a newer database is refused.
func TestApply(t *testing.T) {
	ctx := context.Background()
	db := openMemory(t)
	one := []Migration{{1, "a", "CREATE TABLE a (x INTEGER); INSERT INTO a VALUES (1);"}}
	if err := Apply(ctx, db, one, Options{}); err != nil {
		t.Fatal(err)
	}
	if err := Apply(ctx, db, one, Options{}); err != nil { // already applied: no-op
		t.Fatal(err)
	}
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM a").Scan(&n); err != nil || n != 1 {
		t.Errorf("rows of a = %d, %v; want 1 (step applied once)", n, err)
	}

	bad := append(one, Migration{2, "b", "CREATE TABLE b (x INTEGER); INSERT INTO nope VALUES (1);"})
	err := Apply(ctx, db, bad, Options{})
	if err == nil || !strings.Contains(err.Error(), "migration 0002_b") {
		t.Fatalf("failing step: err = %v", err)
	}
	if got := versions(t, db); !reflect.DeepEqual(got, []int{1}) {
		t.Errorf("versions after a failed step = %v, want [1]", got)
	}
	if err := db.QueryRow("SELECT COUNT(*) FROM b").Scan(&n); err == nil {
		t.Error("table b of the failed step exists: the step was not rolled back")
	}

	good := append(one, Migration{2, "b", "CREATE TABLE b (x INTEGER);"})
	if err := Apply(ctx, db, good, Options{}); err != nil {
		t.Fatal(err)
	}
	if got := versions(t, db); !reflect.DeepEqual(got, []int{1, 2}) {
		t.Errorf("versions = %v, want [1 2]", got)
	}
	if err := Apply(ctx, db, one, Options{}); err == nil || !strings.Contains(err.Error(), "newer than this binary") {
		t.Errorf("older binary on a newer database: err = %v, want refusal", err)
	}
}

// TestApplyLock: the lock statement runs in every transaction of the runner; its failure
// stops the migration.
func TestApplyLock(t *testing.T) {
	ctx := context.Background()
	db := openMemory(t)
	ms := []Migration{{1, "a", "CREATE TABLE a (x INTEGER);"}}
	if err := Apply(ctx, db, ms, Options{Lock: "SELECT no_such_function()"}); err == nil {
		t.Fatal("a failing lock statement was ignored")
	}
	if err := Apply(ctx, db, ms, Options{Lock: "SELECT 1"}); err != nil {
		t.Fatal(err)
	}
}
