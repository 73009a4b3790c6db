package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// scenario is one kind of request sent to every target.
type scenario struct {
	Name      string // chat, stream, anthropic-stream
	Path      string // request path under a target's root
	Body      []byte
	Stream    bool
	Anthropic bool
}

func scenarios(chatModel, streamModel, anthropicModel string) []scenario {
	msg := `"messages":[{"role":"user","content":"Say hello in one short sentence."}]`
	return []scenario{
		{Name: "chat", Path: "/v1/chat/completions",
			Body: fmt.Appendf(nil, `{"model":%q,%s,"max_tokens":64}`, chatModel, msg)},
		{Name: "stream", Path: "/v1/chat/completions", Stream: true,
			Body: fmt.Appendf(nil, `{"model":%q,%s,"max_tokens":64,"stream":true,"stream_options":{"include_usage":true}}`, streamModel, msg)},
		{Name: "anthropic-stream", Path: "/v1/messages", Stream: true, Anthropic: true,
			Body: fmt.Appendf(nil, `{"model":%q,%s,"max_tokens":64,"stream":true}`, anthropicModel, msg)},
	}
}

// target is one path to the providers: direct, a bare proxy, Switchyard, or an external gateway.
type target struct {
	Name string
	Root map[string]string // by scenario name
	Key  string            // the API key sent; "" sends the placeholder "bench"
}

// newClient is the load generator's client: keep-alive, a large idle pool, no compression, no
// proxy from the environment, HTTP/1.1 (what every path speaks on loopback).
func newClient(maxConns int) *http.Client {
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        4 * maxConns,
		MaxIdleConnsPerHost: maxConns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		WriteBufferSize:     16 << 10,
		ReadBufferSize:      16 << 10,
	}
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// dist is a latency distribution in microseconds.
type dist struct {
	N    int     `json:"n"`
	P50  float64 `json:"p50_us"`
	P90  float64 `json:"p90_us"`
	P99  float64 `json:"p99_us"`
	Max  float64 `json:"max_us"`
	Mean float64 `json:"mean_us"`
}

// phase is one (round, scenario, rate, target) measurement.
type phase struct {
	Round    int     `json:"round"`
	Scenario string  `json:"scenario"`
	Target   string  `json:"target"`
	Rate     int     `json:"rate"`
	Seconds  float64 `json:"seconds"`
	Sent     int     `json:"sent"`
	OK       int     `json:"ok"`
	Errors   int     `json:"errors"`
	Shed     int     `json:"shed"` // not sent: max in-flight reached (open loop never waits)
	Late     int     `json:"late"` // sent more than 1 ms after its scheduled time (generator lag)
	FirstErr string  `json:"first_error,omitempty"`
	// GatewayCPU is the gateway process's CPU time during the phase per request answered, in
	// µs (the bare proxies and every Switchyard share the process; only the phase's target
	// is loaded; 0 when unknown).
	GatewayCPU float64 `json:"gateway_cpu_us_per_request"`
	// AllocKB is the gateway process's heap allocation during the phase per request answered
	// (KiB), GCPer10k its GC cycles per 10,000 requests answered (what the tail is partly made of).
	AllocKB  float64 `json:"gateway_alloc_kib_per_request"`
	GCPer10k float64 `json:"gateway_gc_per_10k_requests"`
	// DiskBytes is what the gateway process wrote to storage (write_bytes) per request answered,
	// from the phase's start to the end of its quiesce (so the target's queued audit and ledger
	// batches count; a checkpoint of its database may land in the next phase): only the phase's
	// target is loaded, every Switchyard shares the process.
	DiskBytes float64 `json:"gateway_write_bytes_per_request"`
	// WALBytes is the Postgres WAL written per request answered over the same span (-postgres;
	// 0 on SQLite): every target's database is on one server, but only this one is loaded.
	WALBytes float64 `json:"postgres_wal_bytes_per_request"`
	// WALPeakMiB is the largest the SQLite targets' -wal files were, together, from the phase's
	// end of its quiesce back to its start, sampled every 50 ms (MiB; 0 on Postgres).
	WALPeakMiB float64 `json:"sqlite_wal_peak_mib"`
	// WindowP99 is the p99 latency (µs) of each -window of the phase, by send time, in order
	// (empty without -window): whether the tail grows as the phase goes on (issue 27).
	WindowP99 []float64 `json:"window_p99_us,omitempty"`
	// Quiesce is how long, after the phase, the harness waited for the Switchyards' audit and
	// ledger writer queues to empty before the next phase (seconds; not part of the phase).
	Quiesce float64 `json:"quiesce_s"`
	// Latency is the whole response: headers and body read to the end (streams: the last byte).
	Latency dist `json:"latency"`
	// TTFB is the first body byte; TTFT the first content delta; Gap the time between two
	// content deltas of a stream. Streams only.
	TTFB *dist `json:"ttfb,omitempty"`
	TTFT *dist `json:"ttft,omitempty"`
	Gap  *dist `json:"gap,omitempty"`
	// Slices is how many interleaved slices the phase was measured in (-slice; 1: one piece).
	Slices int `json:"slices"`

	// the raw timings (ns) the distributions summarize, kept to merge slices (joinSlices)
	tot, ttfb, ttft, gaps []int64
}

// joinSlices is one phase of a target made of its slices, measured apart in time (-slice): the
// counts and the gateway's CPU, allocation and GC summed, the distributions over every
// request of every slice.
func joinSlices(parts []phase, stream bool) phase {
	ph := parts[0]
	ph.Slices = len(parts)
	cpu, alloc, gc := ph.GatewayCPU*float64(ph.OK), ph.AllocKB*float64(ph.OK), ph.GCPer10k*float64(ph.OK)
	disk, wal := ph.DiskBytes*float64(ph.OK), ph.WALBytes*float64(ph.OK)
	for _, q := range parts[1:] {
		ph.Seconds += q.Seconds
		ph.Sent, ph.OK, ph.Errors, ph.Shed, ph.Late = ph.Sent+q.Sent, ph.OK+q.OK, ph.Errors+q.Errors, ph.Shed+q.Shed, ph.Late+q.Late
		ph.Quiesce += q.Quiesce
		if ph.FirstErr == "" {
			ph.FirstErr = q.FirstErr
		}
		cpu, alloc, gc = cpu+q.GatewayCPU*float64(q.OK), alloc+q.AllocKB*float64(q.OK), gc+q.GCPer10k*float64(q.OK)
		disk += q.DiskBytes * float64(q.OK)
		wal += q.WALBytes * float64(q.OK)
		ph.WALPeakMiB = max(ph.WALPeakMiB, q.WALPeakMiB)
		ph.WindowP99 = append(ph.WindowP99, q.WindowP99...)
		ph.tot, ph.ttfb, ph.ttft, ph.gaps = append(ph.tot, q.tot...), append(ph.ttfb, q.ttfb...), append(ph.ttft, q.ttft...), append(ph.gaps, q.gaps...)
	}
	if ph.OK > 0 {
		ph.GatewayCPU, ph.AllocKB, ph.GCPer10k = cpu/float64(ph.OK), alloc/float64(ph.OK), gc/float64(ph.OK)
		ph.DiskBytes, ph.WALBytes = disk/float64(ph.OK), wal/float64(ph.OK)
	}
	ph.Latency = summarize(ph.tot)
	if stream {
		a, b, c := summarize(ph.ttfb), summarize(ph.ttft), summarize(ph.gaps)
		ph.TTFB, ph.TTFT, ph.Gap = &a, &b, &c
	}
	return ph
}

// sample is one request's timings in nanoseconds.
type sample struct {
	ok         bool
	total      int64
	ttfb, ttft int64
	gaps       []int64
}

// runPhase sends rate requests per second for d, open loop: each request starts at its scheduled
// time in its own goroutine (bounded by maxInflight; beyond it the request is shed, not
// delayed), and the phase ends when the last one returns. Timings start when the request is
// actually sent.
// windowLen is -window: the length of the windows of a phase whose p99 is reported apart
// (phase.WindowP99); 0 reports none.
var windowLen time.Duration

// windowP99 is the p99 (µs) of the answered samples of each run of per consecutive samples
// (samples are in send order, one every 1/rate s); a last window of fewer than per/2 samples is
// left out. per < 1: none.
func windowP99(samples []sample, per int) []float64 {
	if per < 1 {
		return nil
	}
	var out []float64
	for lo := 0; len(samples)-lo >= max(1, per/2); lo += per {
		var tot []int64
		for _, s := range samples[lo:min(lo+per, len(samples))] {
			if s.ok {
				tot = append(tot, s.total)
			}
		}
		if len(tot) > 0 {
			out = append(out, summarize(tot).P99)
		}
	}
	return out
}

func runPhase(ctx context.Context, hc *http.Client, sc scenario, root, key string, rate int, d time.Duration, maxInflight int) phase {
	n := int(float64(rate) * d.Seconds())
	if n < 1 {
		n = 1
	}
	interval := time.Second / time.Duration(rate)
	samples := make([]sample, n)
	sem := make(chan struct{}, maxInflight)
	var wg sync.WaitGroup
	var firstErr atomic.Value
	ph := phase{Scenario: sc.Name, Rate: rate}
	url := root + sc.Path
	start := time.Now()
	for i := 0; i < n && ctx.Err() == nil; i++ {
		due := start.Add(time.Duration(i) * interval)
		if w := time.Until(due); w > 0 {
			time.Sleep(w)
		} else if w < -time.Millisecond {
			ph.Late++
		}
		select {
		case sem <- struct{}{}:
		default:
			ph.Shed++
			continue
		}
		ph.Sent++
		wg.Add(1)
		go func(s *sample) { // owned: the phase waits for it; bounded by the client timeout
			defer wg.Done()
			defer func() { <-sem }()
			if err := doOne(ctx, hc, sc, url, key, s); err != nil {
				firstErr.CompareAndSwap(nil, err.Error())
			}
		}(&samples[i])
	}
	wg.Wait()
	ph.Seconds = time.Since(start).Seconds()
	if e, ok := firstErr.Load().(string); ok {
		ph.FirstErr = e
	}
	var tot, ttfb, ttft, gaps []int64
	for i := range samples {
		s := &samples[i]
		if !s.ok {
			continue
		}
		ph.OK++
		tot = append(tot, s.total)
		if sc.Stream {
			ttfb = append(ttfb, s.ttfb)
			ttft = append(ttft, s.ttft)
			gaps = append(gaps, s.gaps...)
		}
	}
	ph.Errors = ph.Sent - ph.OK
	ph.Slices = 1
	ph.WindowP99 = windowP99(samples, int(float64(rate)*windowLen.Seconds()))
	ph.tot, ph.ttfb, ph.ttft, ph.gaps = tot, ttfb, ttft, gaps
	ph.Latency = summarize(tot)
	if sc.Stream {
		a, b, c := summarize(ttfb), summarize(ttft), summarize(gaps)
		ph.TTFB, ph.TTFT, ph.Gap = &a, &b, &c
	}
	return ph
}

var errIncomplete = errors.New("stream ended without its terminal frame")

// newRequest is one request of the scenario sc to url.
func newRequest(ctx context.Context, sc scenario, url, key string) (*http.Request, error) {
	if key == "" {
		key = "bench"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(sc.Body))
	if err != nil {
		return nil, err
	}
	req.Header["Content-Type"] = []string{"application/json"}
	if sc.Anthropic {
		req.Header["Anthropic-Version"] = []string{"2023-06-01"}
		req.Header["X-Api-Key"] = []string{key}
	} else {
		req.Header["Authorization"] = []string{"Bearer " + key}
	}
	return req, nil
}

// doOne sends one request and fills s.
func doOne(ctx context.Context, hc *http.Client, sc scenario, url, key string, s *sample) error {
	req, err := newRequest(ctx, sc, url, key)
	if err != nil {
		return err
	}
	t0 := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	if !sc.Stream {
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			return err
		}
		s.total = int64(time.Since(t0))
		s.ok = true
		return nil
	}
	br := bufio.NewReaderSize(resp.Body, 8<<10)
	var last int64
	done := false
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			now := int64(time.Since(t0))
			if s.ttfb == 0 {
				s.ttfb = now
			}
			if isDelta(line, sc.Anthropic) {
				if s.ttft == 0 {
					s.ttft = now
				} else {
					s.gaps = append(s.gaps, now-last)
				}
				last = now
			} else if isDone(line, sc.Anthropic) {
				done = true
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return err
		}
	}
	s.total = int64(time.Since(t0))
	if !done || s.ttft == 0 {
		return errIncomplete
	}
	s.ok = true
	return nil
}

var (
	oaContent   = []byte(`"content":"`)
	anTextDelta = []byte(`"type":"text_delta"`)
	oaDone      = []byte("data: [DONE]")
	anStop      = []byte("event: message_stop")
)

// isDelta reports whether an SSE line is a data line carrying a non-empty text delta.
func isDelta(line []byte, anthropic bool) bool {
	if !bytes.HasPrefix(line, []byte("data:")) {
		return false
	}
	if anthropic {
		return bytes.Contains(line, anTextDelta)
	}
	i := bytes.Index(line, oaContent)
	return i >= 0 && i+len(oaContent) < len(line) && line[i+len(oaContent)] != '"'
}

func isDone(line []byte, anthropic bool) bool {
	if anthropic {
		return bytes.HasPrefix(line, anStop)
	}
	return bytes.HasPrefix(line, oaDone)
}
