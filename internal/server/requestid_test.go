package server

import (
	"regexp"
	"strconv"
	"testing"
	"time"
)

// TestNewRequestID: "req_" + 24 hex digits, the first 12 the minting time in Unix
// milliseconds, so ids sort by time (the audit's indexes append); ids of one millisecond
// differ (48 random bits).
func TestNewRequestID(t *testing.T) {
	re := regexp.MustCompile(`^req_[0-9a-f]{24}$`)
	before := time.Now().UnixMilli()
	seen := map[string]bool{}
	prev := ""
	for range 2000 {
		id := newRequestID()
		if !re.MatchString(id) {
			t.Fatalf("id %q is not req_ + 24 hex digits", id)
		}
		if seen[id] {
			t.Fatalf("id %q minted twice", id)
		}
		seen[id] = true
		if id[:16] < prev {
			t.Fatalf("id %q sorts before the earlier %q", id, prev)
		}
		prev = id[:16]
	}
	after := time.Now().UnixMilli()
	ms, err := strconv.ParseInt(prev[4:16], 16, 64)
	if err != nil || ms < before || ms > after {
		t.Errorf("time part %q = %d ms, want within [%d, %d]", prev[4:16], ms, before, after)
	}
}
