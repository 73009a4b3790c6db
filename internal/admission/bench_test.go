package admission_test

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/switchyard-gw/switchyard/internal/admission"
	"github.com/switchyard-gw/switchyard/internal/admission/admissiontest"
)

// benchRequest is a limited, metered request: a key with every limit, its account with a
// budget, and a prepaid balance (three counters sets in one atomic step).
func benchRequest() admission.Request {
	return admission.Request{Layers: []admission.Layer{
		{Scope: admission.ScopeKey, ID: "k", Limits: admission.Limits{RPM: 1 << 40, TPM: 1 << 50, Concurrency: 1 << 20, BudgetMicroUSD: 1 << 50}},
		{Scope: admission.ScopeAccount, ID: "a", Limits: admission.Limits{Concurrency: 1 << 20, BudgetMicroUSD: 1 << 50}},
	}, Tokens: 1000, ReserveMicroUSD: 5000, CreditAccount: "a"}
}

// benchStores are the stores compared in one run: memory always, Redis when
// SWITCHYARD_TEST_REDIS_URL is set.
func benchStores(b *testing.B) map[string]admission.Store {
	led := admissiontest.NewLedger()
	led.Credit("a", 1<<50)
	stores := map[string]admission.Store{"memory": admission.NewMemory(nil, led)}
	if url := os.Getenv("SWITCHYARD_TEST_REDIS_URL"); url != "" {
		r := openRedis(b, url, testPrefix(b, url), admission.RedisOptions{Seeder: led, Timeout: time.Second})
		stores["redis"] = r
	}
	return stores
}

// benchEnd measures one admission and its end (settle or release) per iteration and reports
// the p50 and p99 of that round trip besides ns/op.
func benchEnd(b *testing.B, settle bool) {
	for _, name := range []string{"memory", "redis"} {
		b.Run(name, func(b *testing.B) {
			s, ok := benchStores(b)[name]
			if !ok {
				b.Skip("SWITCHYARD_TEST_REDIS_URL is not set: the Redis store is not benchmarked")
			}
			ctx := context.Background()
			req := benchRequest()
			if h, err := s.Acquire(ctx, req); err == nil { // seeds read once, outside the timing
				h.Release()
			}
			lat := make([]time.Duration, 0, 1<<16)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				t0 := time.Now()
				h, err := s.Acquire(ctx, req)
				if err != nil {
					b.Fatal(err)
				}
				if settle {
					h.Settle(900, 4000)
				} else {
					h.Release()
				}
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99-µs")
		})
	}
}

// BenchmarkRedisPing is the baseline of the Redis figures: one PING round trip on the same
// machine and connection pool settings.
func BenchmarkRedisPing(b *testing.B) {
	s, ok := benchStores(b)["redis"]
	if !ok {
		b.Skip("SWITCHYARD_TEST_REDIS_URL is not set: the Redis store is not benchmarked")
	}
	r := s.(*admission.Redis)
	ctx := context.Background()
	lat := make([]time.Duration, 0, 1<<16)
	for b.Loop() {
		t0 := time.Now()
		if err := r.Ping(ctx); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99-µs")
}

// BenchmarkAcquireSettle: what the shared store adds to a limited request that is served:
// one Acquire and one Settle (two round trips to Redis), memory and Redis in the same run.
func BenchmarkAcquireSettle(b *testing.B) { benchEnd(b, true) }

// BenchmarkAcquireRelease: the same for a request that fails before commit (Release).
func BenchmarkAcquireRelease(b *testing.B) { benchEnd(b, false) }
