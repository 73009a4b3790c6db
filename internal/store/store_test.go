package store

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchyard-gw/switchyard/internal/audit"
	"github.com/switchyard-gw/switchyard/internal/store/storetest"
)

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		url, wantErr string
	}{
		{"sqlite://:memory:", ""},
		{"sqlite://" + filepath.ToSlash(filepath.Join(dir, "a.db")), ""},
		// Port 1 on loopback refuses at once: the Postgres store is tried, and fails to connect.
		{"postgres://u:secret@127.0.0.1:1/switchyard?sslmode=disable", "store: migrating postgres database"},
		{"postgresql://u:secret@127.0.0.1:1/switchyard?sslmode=disable", "store: migrating postgres database"},
		{"postgres://u:secret@db:port/switchyard", "postgres url cannot be parsed"},
		{"mysql://db", "unsupported url scheme mysql://"},
		{"u:secret@db", "has no scheme"},
		{"sqlite://", "names no database file"},
	}
	for _, tt := range tests {
		st, err := Open(context.Background(), tt.url)
		if tt.wantErr == "" {
			if err != nil {
				t.Errorf("Open(%q): %v", tt.url, err)
				continue
			}
			if err := st.Ping(context.Background()); err != nil {
				t.Errorf("Ping(%q): %v", tt.url, err)
			}
			if err := st.Close(); err != nil {
				t.Errorf("Close(%q): %v", tt.url, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("Open(%q) = %v, want error containing %q", tt.url, err, tt.wantErr)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("Open(%q) error leaks the password: %v", tt.url, err)
		}
	}
}

// TestOpenDefault: an empty url opens switchyard.db in the working directory.
func TestOpenDefault(t *testing.T) {
	t.Chdir(t.TempDir())
	st, err := Open(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if m, _ := filepath.Glob("switchyard.db"); len(m) != 1 {
		t.Errorf("switchyard.db not created in the working directory")
	}
}

// TestOpenPostgres: a postgres:// URL opens the Postgres store, which answers Ping and
// stores records. Skipped unless SWITCHYARD_TEST_POSTGRES_URL is set.
func TestOpenPostgres(t *testing.T) {
	url := storetest.PostgresURL(t)
	for _, u := range []string{url, "postgresql" + strings.TrimPrefix(url, "postgres")} {
		st, err := Open(context.Background(), u)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Ping(context.Background()); err != nil {
			t.Errorf("Ping: %v", err)
		}
		if err := st.WriteRecords(context.Background(), []*audit.Record{storetest.FullRecord("r")}); err != nil {
			t.Error(err)
		}
		if err := st.Close(); err != nil {
			t.Error(err)
		}
	}
}
