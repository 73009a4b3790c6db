// Command loadgen measures the latency Switchyard adds in front of a provider, against a bare
// net/http/httputil.ReverseProxy in front of the same emulated provider, in the same run.
//
// One run starts three emulated providers (internal/fakeprovider: OpenAI answering at once,
// OpenAI streaming -deltas deltas -delta-gap apart, Anthropic streaming the same way), a bare
// reverse proxy in front of each, and one Switchyard (built as cmd/switchyard's run() builds it,
// authentication off, sqlite store in a temporary directory) in front of all three, each on
// its own loopback port. By default the providers and the proxies run in two child processes
// of this program, so that the load generator's scheduler and GC stay out of the measured
// servers (-procs 1 keeps everything in one process).
//
// It then sends open-loop load to each target in turn, in an order that rotates every round:
// non-stream chat completions at each of -rates, and streams at -stream-rate. Reported per
// target are p50/p90/p99 of the whole response (streams: time to first content delta, first
// byte, and the gap between deltas), and the added latency: the target's percentile minus the
// direct path's in the same round, then the median over -rounds. The ratio of Switchyard's
// added latency to the bare proxy's is printed last.
//
// External gateways (another Switchyard, Bifrost, ...) are measured with -target NAME=URL; they
// must route the models of -model, -stream-model and -anthropic-model to the emulated providers,
// whose addresses -fake-addrs fixes. Only loopback targets are accepted.
//
// Every loop is bounded: each phase sends rate x duration requests and waits for them (the
// client times out after 30 s); the children stop when their stdin closes.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"
)

// targetList is the repeatable -target NAME=URL flag.
type targetList []target

func (t *targetList) String() string { return fmt.Sprint(len(*t), " targets") }

func (t *targetList) Set(v string) error {
	name, raw, ok := strings.Cut(v, "=")
	if !ok || name == "" {
		return errors.New("want NAME=URL")
	}
	switch name {
	case "direct", "bare-proxy", "switchyard":
		return fmt.Errorf("target name %q is taken by a built-in target", name)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an http(s) URL", raw)
	}
	if !loopback(u.Hostname()) {
		return fmt.Errorf("%q is not a loopback address: this harness only loads loopback targets", u.Host)
	}
	root := strings.TrimRight(raw, "/")
	*t = append(*t, target{Name: name, Root: map[string]string{"chat": root, "stream": root, "anthropic-stream": root}})
	return nil
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

type options struct {
	duration, warmup, gap time.Duration
	rates                 []int
	streamRate            int
	rounds, deltas        int
	maxInflight, procs    int
	json                  bool
	scenarios             map[string]bool
	fakeAddrs             [3]string
	cpuProfile, memProf   string
	models                [3]string
	targets               targetList
	// obs also measures Switchyard with its observability off and with tracing on (-obs).
	obs bool
	// traceSample traces the default Switchyard at this ratio (-trace-sample; 0: off).
	traceSample float64
	// keyed also measures switchyard-keyed (authentication on, a key of an unmetered account)
	// and switchyard-metered (a key with a budget: every request holds money) (-keyed).
	keyed bool
	// held streams held open at once per target in the held-streams phase (0: none), opened
	// at heldRate per second.
	held, heldRate int
	// heldProfile: write the gateway's heap profile during each held phase (FILE.TARGET).
	heldProfile string
	// slice, when positive and shorter than duration, measures each (scenario, rate) of a
	// round as interleaved slices of this length: every target's first slice, then every
	// target's second, ... (-slice; 0: each target's phase in one piece).
	slice time.Duration
	// postgres, when set, is a Postgres server URL (postgres://USER@HOST:PORT/DB): every
	// Switchyard target gets a database of its own there, created for the run and dropped after
	// it, instead of a SQLite file (-postgres; issue 24's Postgres figures).
	postgres string
}

// windowNote is the round line's note of a phase's SQLite WAL peak and per-window p99, or "".
func windowNote(ph phase) string {
	var b strings.Builder
	if ph.WALPeakMiB > 0 {
		fmt.Fprintf(&b, " wal peak %.1f MiB", ph.WALPeakMiB)
	}
	if len(ph.WindowP99) > 0 {
		b.WriteString(" p99 by window")
		for _, v := range ph.WindowP99 {
			fmt.Fprintf(&b, " %.0fµs", v)
		}
	}
	return b.String()
}

// presets are named sets of flag values (-preset); a flag given on the command line wins.
var presets = map[string][][2]string{
	// issue15: the whole table of issue 15 in one run (~6 minutes on 2 quiet cores): added
	// latency of non-stream chat at 500 and 1000 req/s, 5 rounds, Switchyard with metrics on
	// and tracing sampled at 1%, beside the same Switchyard with its observability off and with
	// tracing at 10% (the cost of observability, issue 12), the gateway's CPU per request, and
	// the memory per held stream at 5,000 concurrent slow streams against the bare proxy's. (Not
	// -keyed: its ledger backlog at 1000 req/s can take minutes to drain between phases.)
	"issue15": {{"rates", "500,1000"}, {"rounds", "5"}, {"duration", "5s"}, {"warmup", "1s"},
		{"scenarios", "chat"}, {"obs", "true"}, {"trace-sample", "0.01"}, {"held", "5000"}, {"held-rate", "1000"},
		{"slice", "1s"}},
	// issue24: the money path (issues 24 and 27) in one run: non-stream chat at 500 and 1000
	// req/s, 3 rounds sliced by 1 s, anonymous Switchyard beside switchyard-keyed (a key of an
	// unmetered account) and switchyard-metered (a key with a budget), their added latency
	// against the bare proxy's, the gateway's CPU and bytes written to disk per request.
	"issue24": {{"rates", "500,1000"}, {"rounds", "3"}, {"duration", "5s"}, {"warmup", "1s"},
		{"scenarios", "chat"}, {"keyed", "true"}, {"slice", "1s"}},
	// issue27: what the embedded store writes under steady load (~8 minutes): 30 s phases of
	// non-stream chat at 1000 req/s, not sliced, anonymous, keyed and metered, with the bytes
	// written per request, the SQLite WAL's peak and the p99 of each 10 s window.
	"issue27": {{"rates", "1000"}, {"rounds", "3"}, {"duration", "30s"}, {"warmup", "1s"},
		{"scenarios", "chat"}, {"keyed", "true"}, {"window", "10s"}},
}

func main() {
	var o options
	var rates, scen, fakeAddrs, role, provJSON string
	flag.DurationVar(&o.duration, "duration", 5*time.Second, "measured time per (target, rate) phase")
	flag.DurationVar(&o.warmup, "warmup", time.Second, "unmeasured load before each phase, at the phase's rate")
	flag.StringVar(&rates, "rates", "100,500,1000", "non-stream request rates, requests/s, comma-separated")
	flag.IntVar(&o.streamRate, "stream-rate", 50, "stream rate, streams/s")
	flag.IntVar(&o.rounds, "rounds", 3, "rounds; each measures every target once per rate, in a rotated order")
	flag.IntVar(&o.deltas, "deltas", 20, "content deltas per emulated stream")
	flag.DurationVar(&o.gap, "delta-gap", time.Millisecond, "emulated provider's wait before each stream delta")
	flag.IntVar(&o.maxInflight, "max-inflight", 2000, "most requests in flight; beyond it requests are shed (counted)")
	flag.IntVar(&o.procs, "procs", 3, "3: providers and gateways in two child processes; 1: everything in this process")
	flag.BoolVar(&o.json, "json", false, "print the results as JSON on stdout (the tables go to stderr)")
	flag.StringVar(&scen, "scenarios", "chat,stream,anthropic-stream", "scenarios to run")
	flag.StringVar(&fakeAddrs, "fake-addrs", "", "listen addresses of the OpenAI, OpenAI-stream and Anthropic emulated providers (default: free loopback ports)")
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the gateway process (proxies and Switchyard) to this file")
	flag.StringVar(&o.memProf, "memprofile", "", "write an allocation profile of the gateway process to this file")
	flag.StringVar(&o.models[0], "model", modelChat, "model of the chat scenario")
	flag.StringVar(&o.models[1], "stream-model", modelStream, "model of the stream scenario")
	flag.StringVar(&o.models[2], "anthropic-model", modelAnthropic, "model of the anthropic-stream scenario")
	flag.BoolVar(&o.obs, "obs", false, "also measure switchyard-obs-off (no metrics, no access log) and switchyard-traced (metrics, JSON access log, tracing 10% sampled to an in-process OTLP sink)")
	flag.Float64Var(&o.traceSample, "trace-sample", 0, "trace the switchyard target at this sampling ratio to an in-process OTLP sink (0: tracing off)")
	flag.BoolVar(&o.keyed, "keyed", false, "also measure switchyard-keyed (authentication on, requests with a key of an unmetered account) and switchyard-metered (a key with a budget: every request holds money)")
	flag.IntVar(&o.held, "held", 0, "held-streams phase: streams held open at once through bare-proxy and switchyard, memory per stream (0: skip)")
	flag.IntVar(&o.heldRate, "held-rate", 1000, "held-streams phase: streams opened per second")
	flag.StringVar(&o.heldProfile, "held-heapprofile", "", "held-streams phase: write the gateway process's heap profile while held to FILE.TARGET")
	flag.DurationVar(&windowLen, "window", 0, "also report the p99 of each window of this length of a phase, by send time (0: none)")
	flag.DurationVar(&o.slice, "slice", 0, "measure each target's phase as interleaved slices of this length, the targets taking turns (0: one piece per target)")
	var preset string
	flag.StringVar(&ledgerJournal, "ledger-journal", "", "the Switchyard targets' store.ledger_journal: \"\" (the default: a directory of the target's own) or off (a keyed request's commit waits for the store)")
	flag.StringVar(&o.postgres, "postgres", "", "store every Switchyard target in a database of its own on this Postgres server (postgres://USER@HOST:PORT/DB, created and dropped per run) instead of a SQLite file")
	flag.StringVar(&preset, "preset", "", "named flag values, overridden by flags given: issue15 (the issue 15 table in one run), issue24 (anonymous, keyed and metered)")
	flag.Var(&o.targets, "target", "external gateway NAME=URL on loopback (repeatable)")
	flag.StringVar(&role, "role", "", "internal: child process role (providers, gateways)")
	flag.StringVar(&provJSON, "providers", "", "internal: provider URLs for the gateways role")
	flag.Parse()
	if preset != "" {
		vals, ok := presets[preset]
		if !ok {
			fatal(fmt.Errorf("unknown -preset %q", preset))
		}
		given := map[string]bool{}
		flag.Visit(func(f *flag.Flag) { given[f.Name] = true })
		for _, kv := range vals {
			if !given[kv[0]] {
				fatal(flag.Set(kv[0], kv[1]))
			}
		}
	}

	var err error
	if o.rates, err = parseInts(rates); err != nil {
		fatal(fmt.Errorf("-rates: %w", err))
	}
	if fakeAddrs != "" {
		parts := strings.Split(fakeAddrs, ",")
		if len(parts) != 3 {
			fatal(errors.New("-fake-addrs wants three addresses"))
		}
		copy(o.fakeAddrs[:], parts)
	}
	o.scenarios = map[string]bool{}
	for _, s := range strings.Split(scen, ",") {
		o.scenarios[strings.TrimSpace(s)] = true
	}
	logf := func(f string, a ...any) { fmt.Fprintf(os.Stderr, "loadgen: "+f+"\n", a...) }

	switch role {
	case "providers":
		g := newGroup()
		p, err := startProviders(g, o.fakeAddrs, o.deltas, o.gap)
		if err != nil {
			g.stop()
			fatal(err)
		}
		fatal(serveRole(g, p))
		return
	case "gateways":
		var p providerURLs
		if err := json.Unmarshal([]byte(provJSON), &p); err != nil {
			fatal(err)
		}
		fatal(runGateways(p, o, logf))
		return
	case "":
	default:
		fatal(fmt.Errorf("unknown -role %q", role))
	}
	if o.rounds < 1 || o.duration <= 0 || o.streamRate < 1 || o.deltas < 2 {
		fatal(errors.New("-rounds, -duration, -stream-rate must be positive and -deltas at least 2"))
	}
	fatal(runParent(o, logf))
}

// runGateways is the gateways child: bare proxies and Switchyard, profiled when asked.
func runGateways(p providerURLs, o options, logf func(string, ...any)) error {
	g := newGroup()
	gw, err := startGateways(g, p, logf, o.obs, o.keyed, o.traceSample, o.postgres)
	if err != nil {
		g.stop()
		return err
	}
	stopProf, err := startProfiles(o.cpuProfile, o.memProf)
	if err != nil {
		g.stop()
		return err
	}
	err = serveRole(g, gw)
	stopProf()
	return err
}

// startProfiles starts a CPU profile and raises the allocation sampling rate; the returned
// function writes both.
func startProfiles(cpu, mem string) (func(), error) {
	var cf *os.File
	if cpu != "" {
		f, err := os.Create(cpu)
		if err != nil {
			return nil, err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return nil, err
		}
		cf = f
	}
	if mem != "" {
		runtime.MemProfileRate = 4096
	}
	return func() {
		if cf != nil {
			pprof.StopCPUProfile()
			cf.Close()
		}
		if mem != "" {
			if f, err := os.Create(mem); err == nil {
				_ = pprof.Lookup("allocs").WriteTo(f, 0)
				f.Close()
			}
		}
	}, nil
}

func runParent(o options, logf func(string, ...any)) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var p providerURLs
	var gw gatewayURLs
	if o.procs == 1 {
		g := newGroup()
		defer g.stop()
		var err error
		if p, err = startProviders(g, o.fakeAddrs, o.deltas, o.gap); err != nil {
			return err
		}
		if gw, err = startGateways(g, p, logf, o.obs, o.keyed, o.traceSample, o.postgres); err != nil {
			return err
		}
		stopProf, err := startProfiles(o.cpuProfile, o.memProf)
		if err != nil {
			return err
		}
		defer stopProf()
	} else {
		args := []string{"-role=providers", "-deltas=" + strconv.Itoa(o.deltas), "-delta-gap=" + o.gap.String()}
		if o.fakeAddrs[0] != "" {
			args = append(args, "-fake-addrs="+strings.Join(o.fakeAddrs[:], ","))
		}
		stopP, err := spawn(args, &p)
		if err != nil {
			return err
		}
		defer stopP()
		pj, _ := json.Marshal(p)
		stopG, err := spawn([]string{"-role=gateways", "-providers=" + string(pj),
			"-cpuprofile=" + o.cpuProfile, "-memprofile=" + o.memProf, fmt.Sprintf("-obs=%t", o.obs), fmt.Sprintf("-keyed=%t", o.keyed),
			"-postgres=" + o.postgres, "-ledger-journal=" + ledgerJournal, "-trace-sample=" + strconv.FormatFloat(o.traceSample, 'g', -1, 64)}, &gw)
		if err != nil {
			return err
		}
		defer stopG()
	}
	logf("providers: openai %s, openai-stream %s, anthropic %s", p.OpenAI, p.OpenAIStream, p.Anthropic)
	logf("bare proxies: %s %s %s; switchyard %s", gw.BareOpenAI, gw.BareOpenAIStream, gw.BareAnthropic, gw.Switchyard)

	targets := []target{
		{Name: "direct", Root: map[string]string{"chat": p.OpenAI, "stream": p.OpenAIStream, "anthropic-stream": p.Anthropic}},
		{Name: "bare-proxy", Root: map[string]string{"chat": gw.BareOpenAI, "stream": gw.BareOpenAIStream, "anthropic-stream": gw.BareAnthropic}},
		{Name: "switchyard", Root: map[string]string{"chat": gw.Switchyard, "stream": gw.Switchyard, "anthropic-stream": gw.Switchyard}},
	}
	for _, v := range []struct{ name, url, key string }{{"switchyard-obs-off", gw.SwitchyardObsOff, ""},
		{"switchyard-traced", gw.SwitchyardTraced, ""}, {"switchyard-keyed", gw.SwitchyardKeyed, gw.KeyedSecret},
		{"switchyard-metered", gw.SwitchyardMetered, gw.MeteredSecret}} {
		if v.url != "" {
			targets = append(targets, target{Name: v.name, Key: v.key, Root: map[string]string{"chat": v.url, "stream": v.url, "anthropic-stream": v.url}})
		}
	}
	targets = append(targets, o.targets...)
	names := make([]string, len(targets))
	for i, t := range targets {
		names[i] = t.Name
	}

	hc := newClient(o.maxInflight)
	ctl := newClient(4)
	var sys []string // the Switchyards of this run: quiesced after every phase
	for _, u := range []string{gw.Switchyard, gw.SwitchyardObsOff, gw.SwitchyardTraced, gw.SwitchyardKeyed, gw.SwitchyardMetered} {
		if u != "" {
			sys = append(sys, u)
		}
	}
	var phases []phase
	metrics := map[string][]string{"chat": {"latency"}, "stream": {"ttft", "ttfb", "gap"}, "anthropic-stream": {"ttft", "ttfb", "gap"}}
	start := time.Now()
	for round := 0; round < o.rounds && ctx.Err() == nil; round++ {
		step := 0
		for _, sc := range scenarios(o.models[0], o.models[1], o.models[2]) {
			if !o.scenarios[sc.Name] {
				continue
			}
			rates := o.rates
			if sc.Stream {
				rates = []int{o.streamRate}
			}
			for _, rate := range rates {
				step++
				order := make([]target, len(targets)) // interleaved: the order rotates
				for i := range targets {
					order[i] = targets[(i+round+step)%len(targets)]
				}
				// Sliced (-slice), every target is measured in turns of one slice, so that a
				// drift of the shared machine over seconds reaches every target alike.
				pieces, length := 1, o.duration
				if o.slice > 0 && o.slice < o.duration {
					pieces = int(o.duration / o.slice)
					length = o.duration / time.Duration(pieces)
				}
				parts := make([][]phase, len(order))
				for piece := 0; piece < pieces && ctx.Err() == nil; piece++ {
					for i, t := range order {
						if err := resetProviders(ctx, ctl, p, o.deltas, o.gap); err != nil {
							return fmt.Errorf("reset providers: %w", err)
						}
						if o.warmup > 0 && piece == 0 {
							runPhase(ctx, hc, sc, t.Root[sc.Name], t.Key, rate, o.warmup, o.maxInflight)
						}
						cpu0, cerr := getStats(ctx, ctl, gw.Control, false)
						ph := runPhase(ctx, hc, sc, t.Root[sc.Name], t.Key, rate, length, o.maxInflight)
						ph.Round, ph.Target = round, t.Name
						cpu1, err1 := getStats(ctx, ctl, gw.Control, false)
						if err := err1; err == nil && cerr == nil && ph.OK > 0 {
							ph.GatewayCPU = float64(cpu1.CPUNanos-cpu0.CPUNanos) / 1e3 / float64(ph.OK)
							ph.AllocKB = float64(cpu1.AllocBytes-cpu0.AllocBytes) / 1024 / float64(ph.OK)
							ph.GCPer10k = float64(cpu1.GCCycles-cpu0.GCCycles) * 1e4 / float64(ph.OK)
						}
						ph.Quiesce = quiesce(ctx, ctl, sys, 10*time.Second).Seconds()
						if io1, err := getStats(ctx, ctl, gw.Control, false); err == nil && cerr == nil && ph.OK > 0 {
							ph.DiskBytes = float64(io1.WriteBytes-cpu0.WriteBytes) / float64(ph.OK)
							ph.WALBytes = float64(io1.WALBytes-cpu0.WALBytes) / float64(ph.OK)
							ph.WALPeakMiB = float64(max(cpu1.WALPeakBytes[t.Name], io1.WALPeakBytes[t.Name])) / (1 << 20)
						}
						parts[i] = append(parts[i], ph)
					}
				}
				for i, t := range order {
					if len(parts[i]) == 0 {
						continue
					}
					ph := joinSlices(parts[i], sc.Stream)
					phases = append(phases, ph)
					logf("round %d %-16s %5d/s %-12s ok %6d err %d shed %d late %d p50 %.0fµs p99 %.0fµs quiesce %.2fs%s",
						round+1, sc.Name, rate, t.Name, ph.OK, ph.Errors, ph.Shed, ph.Late,
						ph.Latency.P50, ph.Latency.P99, ph.Quiesce, errNote(ph.FirstErr)+windowNote(ph))
				}
			}
		}
	}
	var held []heldResult
	if o.held > 0 {
		sc := scenarios(o.models[0], o.models[1], o.models[2])[1] // OpenAI stream
		for _, t := range targets {
			if t.Name != "bare-proxy" && t.Name != "switchyard" {
				continue // another process's memory is not ours to read
			}
			if err := resetHeld(ctx, ctl, p); err != nil {
				return fmt.Errorf("reset providers: %w", err)
			}
			prof := ""
			if o.heldProfile != "" {
				prof = o.heldProfile + "." + t.Name
			}
			h := runHeld(ctx, ctl, gw.Control, sc, t.Root[sc.Name], o.held, o.heldRate, prof)
			h.Target = t.Name
			held = append(held, h)
			logf("held %-12s streams %d failed %d: %.0f B/stream (heap %.0f + stacks %.0f), %.0f B/stream RSS, %.2f goroutines/stream%s",
				t.Name, h.Streams, h.Failed, h.BytesPerStream, h.HeapPerStream, h.StackPerStream, h.RSSPerStream, h.GoroutinesPerConn, errNote(h.FirstErr))
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	rows := aggregate(phases, names, metrics)
	rs := ratios(rows, "bare-proxy")
	m := machine()
	out := os.Stdout
	if o.json {
		out = os.Stderr // the tables still reach the terminal
	}
	fmt.Fprintf(out, "machine: %s, %d CPUs, %s %s/%s; procs %d; %d deltas %s apart; elapsed %.0fs\n",
		m["cpu"], runtime.NumCPU(), runtime.Version(), runtime.GOOS, runtime.GOARCH, o.procs, o.deltas, o.gap, time.Since(start).Seconds())
	printTables(out, rows, rs, o.rounds, "bare-proxy")
	printHeld(out, held, "bare-proxy")
	if o.json {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{
			"machine": m, "elapsed_s": time.Since(start).Seconds(),
			"settings": map[string]any{"duration_s": o.duration.Seconds(), "warmup_s": o.warmup.Seconds(),
				"rates": o.rates, "stream_rate": o.streamRate, "rounds": o.rounds, "deltas": o.deltas,
				"delta_gap_ms": float64(o.gap) / 1e6, "procs": o.procs, "obs": o.obs, "trace_sample": o.traceSample,
				"held": o.held, "held_rate": o.heldRate, "keyed": o.keyed, "slice_s": o.slice.Seconds()},
			"phases": phases, "rows": rows, "ratios": rs, "held": held,
		})
	}
	return nil
}

func errNote(e string) string {
	if e == "" {
		return ""
	}
	return " first error: " + e
}

func machine() map[string]any {
	cpu := "unknown"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	return map[string]any{"cpu": cpu, "cpus": runtime.NumCPU(), "go": runtime.Version(), "os": runtime.GOOS, "arch": runtime.GOARCH}
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive integer", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func fatal(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}
