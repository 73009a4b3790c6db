package store

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		url, wantErr string
	}{
		{"sqlite://:memory:", ""},
		{"sqlite://" + filepath.ToSlash(filepath.Join(dir, "a.db")), ""},
		{"postgres://u:secret@db/switchyard", "store: postgres is not supported yet (url scheme postgres://)"},
		{"postgresql://db/switchyard", "store: postgres is not supported yet (url scheme postgresql://)"},
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
