package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// procStats is what the gateways child reports of itself (GET /_bench/stats on its control
// listener): CPU time used so far and, after a forced GC when asked (?gc=1), the memory it
// holds. Byte counts are of the whole process: the bare proxies and every Switchyard share it,
// so a figure is read as a difference between two reads around one target's phase.
type procStats struct {
	CPUNanos   int64 `json:"cpu_ns"`      // user + system CPU time of the process
	HeapBytes  int64 `json:"heap_bytes"`  // Go heap objects (live after the GC when gc=1)
	StackBytes int64 `json:"stack_bytes"` // goroutine stacks
	RSSBytes   int64 `json:"rss_bytes"`   // resident set size (/proc/self/statm)
	Goroutines int   `json:"goroutines"`
	AllocBytes int64 `json:"alloc_bytes"` // heap bytes allocated since the process started
	GCCycles   int64 `json:"gc_cycles"`   // completed GC cycles since the process started
	// WriteBytes is what the process caused to be written to storage so far (/proc/self/io
	// write_bytes: the SQLite stores' WAL and database files, the ledger journals); 0 where the
	// kernel does not say.
	WriteBytes int64 `json:"write_bytes"`
	// WALBytes is the Postgres server's WAL position (pg_current_wal_lsn, bytes) with -postgres,
	// else 0: the WAL every Switchyard target's database wrote, read as a difference around one
	// target's phase like the others.
	WALBytes int64 `json:"wal_bytes"`
	// WALPeakBytes is, per Switchyard target on SQLite, the largest its -wal file was since the
	// previous read of the stats (sampled every 50 ms; walSampler).
	WALPeakBytes map[string]int64 `json:"wal_peak_bytes,omitempty"`
}

// walSampler keeps, per SQLite target, the largest its -wal file was since it was last read
// (issue 27: the WAL must stay bounded): the gateways child registers each target's path and
// the sampler runs for the life of the process.
var walSampler struct {
	mu    sync.Mutex
	paths map[string]string // target -> its -wal file
	peak  map[string]int64
	once  sync.Once
}

// sampleWAL registers target's -wal file path and starts the sampler (every 50 ms).
func sampleWAL(target, path string) {
	walSampler.mu.Lock()
	if walSampler.paths == nil {
		walSampler.paths, walSampler.peak = map[string]string{}, map[string]int64{}
	}
	walSampler.paths[target] = path
	walSampler.mu.Unlock()
	walSampler.once.Do(func() {
		go func() { // owned: the process's; it only stats files
			for range time.Tick(50 * time.Millisecond) {
				walSampler.mu.Lock()
				for t, p := range walSampler.paths {
					if fi, err := os.Stat(p); err == nil {
						walSampler.peak[t] = max(walSampler.peak[t], fi.Size())
					}
				}
				walSampler.mu.Unlock()
			}
		}()
	})
}

// takeWALPeaks returns the peaks since the last call and starts new ones.
func takeWALPeaks() map[string]int64 {
	walSampler.mu.Lock()
	defer walSampler.mu.Unlock()
	out := walSampler.peak
	if out != nil {
		walSampler.peak = make(map[string]int64, len(out))
	}
	return out
}

var statSamples = []metrics.Sample{
	{Name: "/memory/classes/heap/objects:bytes"},
	{Name: "/memory/classes/heap/stacks:bytes"},
	{Name: "/gc/heap/allocs:bytes"},
	{Name: "/gc/cycles/total:gc-cycles"},
}

// readProcStats reads this process's procStats; gc forces two collections first so that the
// heap figure is the live heap.
func readProcStats(gc bool) procStats {
	if gc {
		runtime.GC()
		runtime.GC()
	}
	metrics.Read(statSamples)
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	ps := procStats{
		CPUNanos:   ru.Utime.Nano() + ru.Stime.Nano(),
		HeapBytes:  int64(statSamples[0].Value.Uint64()),
		StackBytes: int64(statSamples[1].Value.Uint64()),
		Goroutines: runtime.NumGoroutine(),
		AllocBytes: int64(statSamples[2].Value.Uint64()),
		GCCycles:   int64(statSamples[3].Value.Uint64()),
	}
	if b, err := os.ReadFile("/proc/self/io"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "write_bytes: "); ok {
				ps.WriteBytes, _ = strconv.ParseInt(v, 10, 64)
			}
		}
	}
	ps.WALPeakBytes = takeWALPeaks()
	if walDB != nil {
		var lsn string
		if err := walDB.QueryRow(`SELECT (pg_current_wal_lsn() - '0/0'::pg_lsn)::text`).Scan(&lsn); err == nil {
			ps.WALBytes, _ = strconv.ParseInt(strings.TrimSuffix(lsn, ".0"), 10, 64)
		}
	}
	if b, err := os.ReadFile("/proc/self/statm"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 1 {
			if pages, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				ps.RSSBytes = pages * int64(os.Getpagesize())
			}
		}
	}
	return ps
}

// statsHandler serves GET /_bench/stats[?gc=1] on the gateways child's control listener.
func statsHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /debug/pprof/heap", pprof.Index) // pprof.Index serves the named profiles
	mux.HandleFunc("GET /_bench/stats", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(readProcStats(r.URL.Query().Get("gc") == "1"))
	})
	return mux
}

func saveProfile(ctx context.Context, hc *http.Client, u, file string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func getStats(ctx context.Context, hc *http.Client, control string, gc bool) (procStats, error) {
	var ps procStats
	u := control + "/_bench/stats"
	if gc {
		u += "?gc=1"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return ps, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return ps, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return ps, fmt.Errorf("%s: status %d", u, resp.StatusCode)
	}
	return ps, json.NewDecoder(resp.Body).Decode(&ps)
}

// heldResult is one held-streams measurement: n streams held open at once through a target,
// each past its first content delta (after commit), and what the gateway process held more
// than before they opened, per stream.
type heldResult struct {
	Round   int    `json:"round"`
	Target  string `json:"target"`
	Streams int    `json:"streams"` // streams that reached their first delta and were held
	Failed  int    `json:"failed"`  // streams that did not (error, or no delta in time)
	// Per stream: the Go heap (live, after GC) plus goroutine stacks, and the resident set.
	BytesPerStream    float64 `json:"bytes_per_stream"`
	HeapPerStream     float64 `json:"heap_bytes_per_stream"`
	StackPerStream    float64 `json:"stack_bytes_per_stream"`
	RSSPerStream      float64 `json:"rss_bytes_per_stream"`
	GoroutinesPerConn float64 `json:"goroutines_per_stream"`
	FirstErr          string  `json:"first_error,omitempty"`
}

// heldGap is the emulated provider's wait before each delta in the held phase: long enough that
// every stream is between two deltas when the memory is read, short enough that a stream commits
// (its first delta) soon after it opens.
const heldGap = 2 * time.Second

// heldDeltas is the deltas of a held stream: it lasts heldDeltas x heldGap.
const heldDeltas = 8

// resetHeld sets the emulated streams of the held phase (and empties the request logs).
func resetHeld(ctx context.Context, hc *http.Client, p providerURLs) error {
	return resetProviders(ctx, hc, p, heldDeltas, heldGap)
}

// runHeld opens n streams through root at most rate per second, waits until each has received
// its first content delta (committed) while the provider keeps them open (deltas heldGap apart),
// reads the gateway process's memory (before and while held, both after a GC), then closes them.
//
// With heapProfile set, the gateway process's heap profile (in-use, after a GC) is written
// there while the streams are held.
func runHeld(ctx context.Context, ctl *http.Client, control string, sc scenario, root string, n, rate int, heapProfile string) heldResult {
	res := heldResult{}
	before, err := getStats(ctx, ctl, control, true)
	if err != nil {
		res.FirstErr = err.Error()
		return res
	}
	hc := newClient(n + 16)
	defer hc.CloseIdleConnections()
	hctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var committed, failed atomic.Int64
	var firstErr atomic.Value
	interval := time.Second / time.Duration(rate)
	start := time.Now()
	for i := 0; i < n && ctx.Err() == nil; i++ {
		if w := time.Until(start.Add(time.Duration(i) * interval)); w > 0 {
			time.Sleep(w)
		}
		wg.Add(1)
		go func() { // owned: ends when hctx is cancelled below, or the stream ends
			defer wg.Done()
			if err := holdOne(hctx, hc, sc, root+sc.Path, &committed); err != nil && hctx.Err() == nil {
				failed.Add(1)
				firstErr.CompareAndSwap(nil, err.Error())
			}
		}()
	}
	// Every stream commits one heldGap after it opened; allow as much again for a slow machine.
	deadline := time.Now().Add(3 * heldGap)
	for committed.Load()+failed.Load() < int64(n) && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
	}
	held, err := getStats(ctx, ctl, control, true)
	if heapProfile != "" {
		if perr := saveProfile(ctx, ctl, control+"/debug/pprof/heap?gc=1", heapProfile); perr != nil {
			firstErr.CompareAndSwap(nil, perr.Error())
		}
	}
	cancel()
	wg.Wait()
	res.Streams, res.Failed = int(committed.Load()), n-int(committed.Load())
	if e, ok := firstErr.Load().(string); ok {
		res.FirstErr = e
	}
	if err != nil {
		res.FirstErr = err.Error()
		return res
	}
	if res.Streams > 0 {
		k := float64(res.Streams)
		res.BytesPerStream = float64(held.HeapBytes+held.StackBytes-before.HeapBytes-before.StackBytes) / k
		res.HeapPerStream = float64(held.HeapBytes-before.HeapBytes) / k
		res.StackPerStream = float64(held.StackBytes-before.StackBytes) / k
		res.RSSPerStream = float64(held.RSSBytes-before.RSSBytes) / k
		res.GoroutinesPerConn = float64(held.Goroutines-before.Goroutines) / k
	}
	return res
}

// holdOne opens one stream, counts it in committed once its first content delta arrived, and
// reads it until it ends or ctx is cancelled.
func holdOne(ctx context.Context, hc *http.Client, sc scenario, url string, committed *atomic.Int64) error {
	req, err := newRequest(ctx, sc, url, "")
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	br := bufio.NewReaderSize(resp.Body, 4<<10)
	seen := false
	for {
		line, err := br.ReadSlice('\n')
		if !seen && isDelta(line, sc.Anthropic) {
			seen = true
			committed.Add(1)
		}
		if err != nil && err != bufio.ErrBufferFull {
			if !seen {
				return err
			}
			return nil
		}
	}
}

// queueGauges are the Switchyard series whose backlog one phase would leave to the next one's
// measurement (the audit and ledger writers run off the request path).
var queueGauges = []string{"switchyard_audit_writer_queue_depth ", "switchyard_ledger_writer_queue_depth "}

// quiesce waits, at most limit, until every Switchyard root's audit and ledger writer queues are
// empty (read from its /metrics), so that a phase's background writes are not charged to the
// next target's phase; it returns how long it waited.
func quiesce(ctx context.Context, hc *http.Client, roots []string, limit time.Duration) time.Duration {
	start := time.Now()
	for _, root := range roots {
		for time.Since(start) < limit && ctx.Err() == nil {
			if queued(ctx, hc, root) == 0 {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return time.Since(start)
}

// queued sums the writer queue gauges of the Switchyard at root (0 when unreadable).
func queued(ctx context.Context, hc *http.Client, root string) float64 {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, root+"/metrics", nil)
	if err != nil {
		return 0
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	var sum float64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		for _, g := range queueGauges {
			if v, ok := strings.CutPrefix(line, g); ok {
				if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
					sum += f
				}
			}
		}
	}
	return sum
}
