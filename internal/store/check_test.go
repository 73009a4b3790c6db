package store

import (
	"path/filepath"
	"strings"
	"testing"
)

// Check refuses what Open would refuse, without opening anything.
func TestCheck(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ url, err string }{
		{"sqlite://" + filepath.Join(dir, "x.db"), ""},
		{"sqlite://:memory:", ""},
		{"", ""},
		{"sqlite:///no/such/dir/x.db", "does not exist"},
		{"postgres://u:secret@h/db", ""}, // parsed, not connected to
		{"postgresql://u:secret@h:5432/db?sslmode=require", ""},
		{"postgres://u:secret@h:port/db", "cannot be parsed"},
		{"postgres://u:secret@h/db?sslmode=bogus", "cannot be parsed"},
		{"mysql://h/db", "unsupported"},
		{"switchyard.db", "no scheme"},
	} {
		err := Check(tc.url)
		if (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("Check(%q) = %v, want %q", tc.url, err, tc.err)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("error echoes the url's password: %v", err)
		}
	}
}
