package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"text/tabwriter"
)

// summarize returns the distribution of ns samples, in microseconds (nearest-rank percentiles).
func summarize(ns []int64) dist {
	if len(ns) == 0 {
		return dist{}
	}
	slices.Sort(ns)
	pct := func(p float64) float64 {
		k := int(math.Ceil(p*float64(len(ns)))) - 1
		k = max(0, min(k, len(ns)-1))
		return float64(ns[k]) / 1e3
	}
	var sum float64
	for _, v := range ns {
		sum += float64(v)
	}
	return dist{N: len(ns), P50: pct(0.50), P90: pct(0.90), P99: pct(0.99),
		Max: float64(ns[len(ns)-1]) / 1e3, Mean: sum / float64(len(ns)) / 1e3}
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// row is the median over rounds of one (scenario, rate, target), with the added latency: the
// target's percentile minus direct's in the same round, then the median over rounds.
type row struct {
	Scenario string  `json:"scenario"`
	Rate     int     `json:"rate"`
	Target   string  `json:"target"`
	Rounds   int     `json:"rounds"`
	OK       int     `json:"ok"`     // summed over rounds
	Errors   int     `json:"errors"` // summed over rounds
	Shed     int     `json:"shed"`
	Late     int     `json:"late"`
	Achieved float64 `json:"achieved_rps"` // median
	// Metric is what the percentiles measure: latency (non-stream), ttft, ttfb, gap (streams).
	Metric   string `json:"metric"`
	P50      num    `json:"p50_us"`
	P90      num    `json:"p90_us"`
	P99      num    `json:"p99_us"`
	AddedP50 num    `json:"added_p50_us"`
	AddedP90 num    `json:"added_p90_us"`
	AddedP99 num    `json:"added_p99_us"`
	// GatewayCPU is the median over rounds of the gateway process's CPU µs per request.
	GatewayCPU num `json:"gateway_cpu_us_per_request"`
	// AllocKB and GCPer10k are the medians over rounds of the gateway's allocation per request
	// (KiB) and GC cycles per 10,000 requests.
	AllocKB  num `json:"gateway_alloc_kib_per_request"`
	GCPer10k num `json:"gateway_gc_per_10k_requests"`
	// DiskBytes is the median over rounds of the gateway's bytes written to storage per request.
	DiskBytes num `json:"gateway_write_bytes_per_request"`
	// WALBytes is the median over rounds of the Postgres WAL bytes per request (-postgres).
	WALBytes num `json:"postgres_wal_bytes_per_request"`
	// WALPeakMiB is the median over rounds of the SQLite WAL's peak (MiB); FirstWindowP99 and
	// LastWindowP99 the medians over rounds of the first and the last -window's p99 (µs), and
	// MaxWindowP99 of the largest window p99 (0 without -window).
	WALPeakMiB     num `json:"sqlite_wal_peak_mib"`
	FirstWindowP99 num `json:"first_window_p99_us"`
	LastWindowP99  num `json:"last_window_p99_us"`
	MaxWindowP99   num `json:"max_window_p99_us"`
}

// metricOf picks one distribution of a phase.
func metricOf(p phase, metric string) dist {
	switch metric {
	case "ttfb":
		return *p.TTFB
	case "ttft":
		return *p.TTFT
	case "gap":
		return *p.Gap
	}
	return p.Latency
}

type key struct {
	sc     string
	rate   int
	target string
}

// aggregate reduces the phases to rows, in first-seen order of (scenario, rate) and target order.
func aggregate(phases []phase, targets []string, metrics map[string][]string) []row {
	by := map[key][]phase{}
	var order []key
	for _, p := range phases {
		k := key{p.Scenario, p.Rate, ""}
		if _, ok := by[k]; !ok {
			order = append(order, k)
			by[k] = nil
		}
		kt := key{p.Scenario, p.Rate, p.Target}
		by[kt] = append(by[kt], p)
	}
	var rows []row
	for _, k := range order {
		direct := map[int]phase{}
		for _, p := range by[key{k.sc, k.rate, "direct"}] {
			direct[p.Round] = p
		}
		for _, m := range metrics[k.sc] {
			for _, t := range targets {
				ps := by[key{k.sc, k.rate, t}]
				if len(ps) == 0 {
					continue
				}
				r := row{Scenario: k.sc, Rate: k.rate, Target: t, Rounds: len(ps), Metric: m}
				var p50, p90, p99, a50, a90, a99, ach, cpu, alloc, gcs, disk, wal, walPeak, firstW, lastW, maxW []float64
				for _, p := range ps {
					r.OK += p.OK
					r.Errors += p.Errors
					r.Shed += p.Shed
					r.Late += p.Late
					ach = append(ach, float64(p.OK)/p.Seconds)
					if p.GatewayCPU > 0 {
						cpu = append(cpu, p.GatewayCPU)
						alloc, gcs = append(alloc, p.AllocKB), append(gcs, p.GCPer10k)
					}
					if p.OK > 0 {
						disk, wal = append(disk, p.DiskBytes), append(wal, p.WALBytes)
						walPeak = append(walPeak, p.WALPeakMiB)
					}
					if w := p.WindowP99; len(w) > 0 {
						firstW, lastW, maxW = append(firstW, w[0]), append(lastW, w[len(w)-1]), append(maxW, slices.Max(w))
					}
					d := metricOf(p, m)
					p50, p90, p99 = append(p50, d.P50), append(p90, d.P90), append(p99, d.P99)
					if dp, ok := direct[p.Round]; ok {
						dd := metricOf(dp, m)
						a50, a90, a99 = append(a50, d.P50-dd.P50), append(a90, d.P90-dd.P90), append(a99, d.P99-dd.P99)
					}
				}
				r.P50, r.P90, r.P99, r.Achieved = num(median(p50)), num(median(p90)), num(median(p99)), median(ach)
				r.AddedP50, r.AddedP90, r.AddedP99 = num(median(a50)), num(median(a90)), num(median(a99))
				r.GatewayCPU, r.AllocKB, r.GCPer10k = num(median(cpu)), num(median(alloc)), num(median(gcs))
				r.DiskBytes, r.WALBytes, r.WALPeakMiB = num(median(disk)), num(median(wal)), num(median(walPeak))
				r.FirstWindowP99, r.LastWindowP99, r.MaxWindowP99 = num(median(firstW)), num(median(lastW)), num(median(maxW))
				rows = append(rows, r)
			}
		}
	}
	return rows
}

// ratio is one Switchyard/bare-proxy comparison of added latency.
type ratio struct {
	Scenario string `json:"scenario"`
	Rate     int    `json:"rate"`
	Metric   string `json:"metric"`
	Target   string `json:"target"`
	P50      num    `json:"added_p50_ratio"` // NaN (null in JSON) when the baseline adds nothing measurable
	P99      num    `json:"added_p99_ratio"`
	// CPU is the target's gateway CPU per request over the baseline's (non-stream only).
	CPU num `json:"gateway_cpu_ratio"`
}

// ratios compares every target but direct and the baseline with the baseline.
func ratios(rows []row, baseline string) []ratio {
	base := map[key]map[string]row{}
	for _, r := range rows {
		if r.Target == baseline {
			k := key{r.Scenario, r.Rate, ""}
			if base[k] == nil {
				base[k] = map[string]row{}
			}
			base[k][r.Metric] = r
		}
	}
	var out []ratio
	for _, r := range rows {
		if r.Target == baseline || r.Target == "direct" {
			continue
		}
		b, ok := base[key{r.Scenario, r.Rate, ""}][r.Metric]
		if !ok {
			continue
		}
		out = append(out, ratio{Scenario: r.Scenario, Rate: r.Rate, Metric: r.Metric, Target: r.Target,
			P50: div(r.AddedP50, b.AddedP50), P99: div(r.AddedP99, b.AddedP99), CPU: div(r.GatewayCPU, b.GatewayCPU)})
	}
	return out
}

// num is a float64 that encodes NaN as JSON null.
type num float64

// MarshalJSON encodes n as a number, or null when it is NaN or infinite.
func (n num) MarshalJSON() ([]byte, error) {
	f := float64(n)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, f, 'f', 2, 64), nil
}

func div(a, b num) num {
	if b <= 0 || a < 0 || math.IsNaN(float64(a)) || math.IsNaN(float64(b)) { // not measurable
		return num(math.NaN())
	}
	return a / b
}

func us(n num) string {
	v := float64(n)
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.0f", v)
}

func rx(n num) string {
	v := float64(n)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "n/a"
	}
	return fmt.Sprintf("%.2fx", v)
}

// printTables writes the human report.
func printTables(w io.Writer, rows []row, rs []ratio, rounds int, baseline string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "\nLatency in µs, median of %d rounds; added = target − direct, per round, then the median.\n\n", rounds)
	fmt.Fprintln(tw, "scenario\trate/s\tmetric\ttarget\tok\terr\tshed\tlate\tp50\tp90\tp99\tadded p50\tadded p90\tadded p99\tgw CPU µs/req\tgw alloc KiB/req\tGC/10k req\tgw disk B/req\tpg WAL B/req\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n",
			r.Scenario, r.Rate, r.Metric, r.Target, r.OK, r.Errors, r.Shed, r.Late,
			us(r.P50), us(r.P90), us(r.P99), us(r.AddedP50), us(r.AddedP90), us(r.AddedP99), fx(r.GatewayCPU), fx(r.AllocKB), fx(r.GCPer10k), fx(r.DiskBytes), fx(r.WALBytes))
	}
	_ = tw.Flush()
	if slices.ContainsFunc(rows, func(r row) bool { return r.WALPeakMiB > 0 || r.MaxWindowP99 > 0 }) {
		fmt.Fprintf(w, "\nSteady load (issue 27), median of %d rounds: the SQLite WAL's peak, and the p99 of the phase's first, last and worst -window.\n\n", rounds)
		fmt.Fprintln(tw, "scenario\trate/s\ttarget\tWAL peak MiB\tp99 first window\tp99 last window\tp99 worst window\t")
		for _, r := range rows {
			if r.Metric != "latency" {
				continue
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t\n", r.Scenario, r.Rate, r.Target, fx(r.WALPeakMiB), us(r.FirstWindowP99), us(r.LastWindowP99), us(r.MaxWindowP99))
		}
		_ = tw.Flush()
	}
	fmt.Fprintf(w, "\nAdded latency, target / %s:\n\n", baseline)
	fmt.Fprintln(tw, "scenario\trate/s\tmetric\ttarget\tadded p50\tadded p99\tgw CPU/req\t")
	for _, r := range rs {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t\n", r.Scenario, r.Rate, r.Metric, r.Target, rx(r.P50), rx(r.P99), rx(r.CPU))
	}
	_ = tw.Flush()
}

func fx(n num) string {
	v := float64(n)
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.1f", v)
}

// printHeld writes the held-streams table: memory per held stream, and the ratio to the
// baseline's in the same run.
func printHeld(w io.Writer, held []heldResult, baseline string) {
	if len(held) == 0 {
		return
	}
	var base heldResult
	for _, h := range held {
		if h.Target == baseline {
			base = h
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "\nHeld streams (all open at once, each past its first delta), gateway process, per stream:\n\n")
	fmt.Fprintln(tw, "target\tstreams\tfailed\theap+stacks B\tKiB\tRSS B\tgoroutines\tvs "+baseline+"\t")
	for _, h := range held {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.0f\t%.1f\t%.0f\t%.2f\t%s\t\n", h.Target, h.Streams, h.Failed, h.BytesPerStream,
			h.BytesPerStream/1024, h.RSSPerStream, h.GoroutinesPerConn, rx(div(num(h.BytesPerStream), num(base.BytesPerStream))))
	}
	_ = tw.Flush()
}
