package main

import (
	"bytes"
	"log/slog"
	"math"
	"os"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

// TestApplyMemoryLimit: serve gives the Go runtime 90% of the container's memory limit as its
// soft limit, logs it, leaves an operator's GOMEMLIMIT alone, and sets nothing without a limit.
func TestApplyMemoryLimit(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	var buf bytes.Buffer
	lg := slog.New(slog.NewTextHandler(&buf, nil))

	for _, k := range []string{"GOMEMLIMIT", "AUTOMEMLIMIT"} {
		t.Setenv(k, "") // restored at the end
		os.Unsetenv(k)
	}
	const gib = 1 << 30
	const want = 1932735283 // 90% of 2 GiB
	if got := applyMemoryLimit(lg, memlimit.Limit(2*gib)); got != want {
		t.Fatalf("limit %d, want 90%% of 2 GiB = %d", got, want)
	}
	if got := debug.SetMemoryLimit(-1); got != want {
		t.Fatalf("runtime memory limit %d, want %d", got, want)
	}
	if !strings.Contains(buf.String(), "gomemlimit_bytes=1932735283") {
		t.Fatalf("log: %s", buf.String())
	}

	// No cgroup limit: nothing is set (math.MaxInt64, Go's default).
	debug.SetMemoryLimit(math.MaxInt64)
	if got := applyMemoryLimit(lg, func() (uint64, error) { return 0, memlimit.ErrNoLimit }); got != math.MaxInt64 {
		t.Fatalf("no cgroup limit: %d, want none", got)
	}

	// The operator's GOMEMLIMIT wins: the provider is not even asked.
	debug.SetMemoryLimit(3 * gib)
	t.Setenv("GOMEMLIMIT", "3GiB")
	asked := false
	applyMemoryLimit(lg, func() (uint64, error) { asked = true; return gib, nil })
	if asked || debug.SetMemoryLimit(-1) != 3*gib {
		t.Fatalf("GOMEMLIMIT set: provider asked %v, limit %d; want the operator's 3 GiB untouched", asked, debug.SetMemoryLimit(-1))
	}
}
