package main

import (
	"log/slog"
	"math"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

// memoryLimitRatio is the share of the container's memory limit given to the Go runtime as its
// soft memory limit (GOMEMLIMIT) when the operator set none: the rest is headroom for what the
// runtime does not count (goroutine stacks in flight, SQLite's pages, the kernel's buffers).
const memoryLimitRatio = 0.9

// applyMemoryLimit sets the Go runtime's soft memory limit (runtime/debug.SetMemoryLimit) to
// memoryLimitRatio of the memory limit provider reports (memlimit.FromCgroup: the cgroup's
// memory.max, v1 or v2), so that a gateway in a container collects harder near its limit instead
// of being killed by the kernel (docs/production.md "Memory"). GOMEMLIMIT set in the environment
// wins; AUTOMEMLIMIT=off turns it off, AUTOMEMLIMIT=0.8 changes the ratio. No limit (a process
// outside a memory-limited cgroup) leaves the runtime unlimited, as Go's default; GOGC is left
// at Go's default (docs/performance.md: GC is not what the gateway adds). It logs the limit it
// set, and returns it in bytes (math.MaxInt64: none).
func applyMemoryLimit(lg *slog.Logger, provider memlimit.Provider) int64 {
	limit, err := memlimit.Set(memlimit.WithRatio(memoryLimitRatio), memlimit.WithProvider(provider))
	switch {
	case err != nil:
		lg.Warn("memory limit: not set from the cgroup", "error", err.Error())
	case limit == math.MaxInt64:
		lg.Info("memory limit: none (no cgroup memory limit; set GOMEMLIMIT to set one)")
	default:
		lg.Info("memory limit", "gomemlimit_bytes", limit)
	}
	return limit
}
