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
		{"postgres://u:secret@h/db", "not supported yet"},
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
