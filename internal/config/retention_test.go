package config

import (
	"strings"
	"testing"
	"time"
)

// TestAuditRetention: store.audit_retention takes days, Go durations, 0 and off (forever);
// unset is 30 days; a negative, unitless or malformed value is refused with its line.
func TestAuditRetention(t *testing.T) {
	for _, tc := range []struct {
		yaml    string
		want    time.Duration
		wantErr string
	}{
		{"", 30 * 24 * time.Hour, ""},
		{"store: {}\n", 30 * 24 * time.Hour, ""},
		{"store:\n  audit_retention: 7d\n", 7 * 24 * time.Hour, ""},
		{"store:\n  audit_retention: 720h\n", 720 * time.Hour, ""},
		{"store:\n  audit_retention: 90m\n", 90 * time.Minute, ""},
		{"store:\n  audit_retention: off\n", 0, ""},
		{"store:\n  audit_retention: \"off\"\n", 0, ""},
		{"store:\n  audit_retention: OFF\n", 0, ""},
		{"store:\n  audit_retention: 0\n", 0, ""},
		{"store:\n  audit_retention: 0d\n", 0, ""},
		{"store:\n  audit_retention: -1d\n", 0, "store.audit_retention"},
		{"store:\n  audit_retention: -5h\n", 0, "store.audit_retention"},
		{"store:\n  audit_retention: 30\n", 0, "t.yaml:2: store.audit_retention: invalid retention \"30\""},
		{"store:\n  audit_retention: 1.5d\n", 0, "invalid retention"},
		{"store:\n  audit_retention: forever\n", 0, "invalid retention"},
		{"store:\n  audit_retention: [1]\n", 0, "invalid retention"},
		{"store:\n  audit_retention: 999999d\n", 0, "invalid retention"},
	} {
		c, err := parse("t.yaml", []byte(tc.yaml), env(nil))
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: %v, want an error with %q", tc.yaml, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.yaml, err)
			continue
		}
		if got := c.Store.AuditRetention.D(); got != tc.want {
			t.Errorf("%q: retention %v, want %v", tc.yaml, got, tc.want)
		}
	}
	for r, s := range map[Retention]string{0: "off", Retention(30 * 24 * time.Hour): "30d", Retention(90 * time.Minute): "1h30m0s"} {
		if r.String() != s {
			t.Errorf("%d.String() = %q, want %q", r, r.String(), s)
		}
	}
}
