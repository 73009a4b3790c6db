package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver, for -postgres

	"github.com/switchyard-gw/switchyard/internal/accounts"
	"github.com/switchyard-gw/switchyard/internal/audit"
	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/config"
	"github.com/switchyard-gw/switchyard/internal/fakeprovider"
	"github.com/switchyard-gw/switchyard/internal/server"
	"github.com/switchyard-gw/switchyard/internal/store"
	"github.com/switchyard-gw/switchyard/internal/telemetry"
)

// Model ids of the benchmark catalog: one per emulated provider.
const (
	modelChat      = "bench-mini"   // OpenAI, non-stream, answers at once
	modelStream    = "bench-stream" // OpenAI, streams deltas with a fixed gap
	modelAnthropic = "bench-claude" // Anthropic, streams deltas with a fixed gap
)

// providerURLs are the roots (scheme://host:port, no /v1) of the three emulated providers.
type providerURLs struct {
	OpenAI       string `json:"openai"`
	OpenAIStream string `json:"openai_stream"`
	Anthropic    string `json:"anthropic"`
}

// gatewayURLs are the roots of the proxies in front of the providers: one bare reverse proxy
// per provider, and one Switchyard for all three.
type gatewayURLs struct {
	BareOpenAI       string `json:"bare_openai"`
	BareOpenAIStream string `json:"bare_openai_stream"`
	BareAnthropic    string `json:"bare_anthropic"`
	Switchyard       string `json:"switchyard"`
	// With -obs: the same Switchyard with its observability off, and with tracing on.
	SwitchyardObsOff string `json:"switchyard_obs_off,omitempty"`
	SwitchyardTraced string `json:"switchyard_traced,omitempty"`
	// With -keyed: the default Switchyard with authentication on, called with a key of an
	// (unmetered) account, so that every request writes a ledger entry and secures its reserve
	// at its commit (billing.Reservation.Secure); KeyedSecret is that key.
	SwitchyardKeyed string `json:"switchyard_keyed,omitempty"`
	KeyedSecret     string `json:"keyed_secret,omitempty"`
	// With -keyed, also: the same with a key that has a budget (a metered request: it holds
	// money, its reserve is secured at its commit); MeteredSecret is that key.
	SwitchyardMetered string `json:"switchyard_metered,omitempty"`
	MeteredSecret     string `json:"metered_secret,omitempty"`
	// Control serves the gateway process's own figures (GET /_bench/stats: CPU, memory).
	Control string `json:"control"`
}

// streamBehavior is the emulated stream: deltas pieces of text, gap before each.
func streamBehavior(deltas int, gap time.Duration) fakeprovider.Behavior {
	text := strings.Repeat("word ", deltas*2)
	return fakeprovider.Behavior{Text: text, Deltas: deltas, Delay: gap}
}

// group runs servers until its context ends, and waits for them on stop.
type group struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	after  []func() // run in reverse order once every server has returned
}

func newGroup() *group {
	ctx, cancel := context.WithCancel(context.Background())
	return &group{ctx: ctx, cancel: cancel}
}

// serve runs fn in a goroutine owned by the group; fn must return once g.ctx ends.
func (g *group) serve(fn func(ctx context.Context)) {
	g.wg.Add(1)
	go func() { defer g.wg.Done(); fn(g.ctx) }()
}

// httpServe serves h on ln until the group stops. A non-empty target labels the CPU profile
// samples of the server's connections (and of the goroutines they start: the transport's
// connection loops) with pprof label target=NAME, so that -cpuprofile splits the gateway
// process by target: `go tool pprof -tagfocus target=switchyard`.
func (g *group) httpServe(ln net.Listener, target string, h http.Handler) {
	if target != "" {
		h = labeled(target, h)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second}
	g.serve(func(ctx context.Context) {
		errc := make(chan error, 1)
		go func() { errc <- srv.Serve(ln) }()
		select {
		case <-errc:
			return
		case <-ctx.Done():
		}
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if srv.Shutdown(sctx) != nil {
			_ = srv.Close()
		}
		<-errc
	})
}

func (g *group) stop() {
	g.cancel()
	g.wg.Wait()
	for i := len(g.after) - 1; i >= 0; i-- {
		g.after[i]()
	}
}

// startProviders starts the three emulated providers on loopback (addrs[i] "" picks a port).
func startProviders(g *group, addrs [3]string, deltas int, gap time.Duration) (providerURLs, error) {
	type spec struct {
		name string
		d    catalog.Dialect
		b    fakeprovider.Behavior
	}
	specs := [3]spec{
		{"bench-openai", catalog.OpenAI, fakeprovider.Behavior{}},
		{"bench-openai-stream", catalog.OpenAI, streamBehavior(deltas, gap)},
		{"bench-anthropic", catalog.Anthropic, streamBehavior(deltas, gap)},
	}
	var roots [3]string
	for i, s := range specs {
		addr := addrs[i]
		if addr == "" {
			addr = "127.0.0.1:0"
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return providerURLs{}, err
		}
		p := fakeprovider.New(s.name, s.d)
		p.SetDefault(s.b)
		g.serve(func(ctx context.Context) { _ = fakeprovider.Serve(ctx, ln, p) })
		roots[i] = "http://" + ln.Addr().String()
	}
	return providerURLs{OpenAI: roots[0], OpenAIStream: roots[1], Anthropic: roots[2]}, nil
}

// resetProviders empties the providers' request logs (the emulator records every request) and
// restores their behaviors, through the control API. Called between phases, while idle.
func resetProviders(ctx context.Context, hc *http.Client, p providerURLs, deltas int, gap time.Duration) error {
	for _, x := range []struct {
		root string
		b    fakeprovider.Behavior
	}{{p.OpenAI, fakeprovider.Behavior{}}, {p.OpenAIStream, streamBehavior(deltas, gap)}, {p.Anthropic, streamBehavior(deltas, gap)}} {
		if err := post(ctx, hc, x.root+"/_fake/reset", nil); err != nil {
			return err
		}
		body, _ := json.Marshal(map[string]any{"default": x.b})
		if err := post(ctx, hc, x.root+"/_fake/script", body); err != nil {
			return err
		}
	}
	return nil
}

func post(ctx context.Context, hc *http.Client, u string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: status %d", u, resp.StatusCode)
	}
	return nil
}

// bareProxy is the baseline: a plain httputil.ReverseProxy with a tuned transport. It flushes
// event streams at once (ReverseProxy does for text/event-stream). Full duplex is enabled:
// without it Go's HTTP/1 server closes the request body once the response headers are written
// while the transport may still be sending it upstream, and the proxy cuts a few percent of
// streams (golang/go#40747); a baseline that fails requests would flatter nobody.
func bareProxy(root string) (http.Handler, error) {
	target, err := url.Parse(root)
	if err != nil {
		return nil, err
	}
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        1024,
		MaxIdleConnsPerHost: 512,
		IdleConnTimeout:     90 * time.Second,
	}
	rp := &httputil.ReverseProxy{
		Rewrite:   func(r *httputil.ProxyRequest) { r.SetURL(target) },
		Transport: tr,
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = http.NewResponseController(w).EnableFullDuplex()
		rp.ServeHTTP(w, r)
	}), nil
}

// benchConfig is the Switchyard catalog of the run: one model per emulated provider.
func benchConfig(p providerURLs, storeURL string, auth bool) string {
	return fmt.Sprintf(`
auth: {required: %t}
server: {listen: "127.0.0.1:0"}
store: {url: %q}
models:
  - id: %s
  - id: %s
  - id: %s
deployments:
  - name: oa-fast
    dialect: openai
    base_url: "%s/v1"
    api_key: sk-bench
    routes: [{model: %s, price: {input: 0.15, output: 0.6}}]
  - name: oa-stream
    dialect: openai
    base_url: "%s/v1"
    api_key: sk-bench
    routes: [{model: %s, price: {input: 0.15, output: 0.6}}]
  - name: an-stream
    dialect: anthropic
    base_url: "%s"
    api_key: sk-ant-bench
    routes: [{model: %s, price: {input: 1, output: 5}}]
`, auth, storeURL, modelChat, modelStream, modelAnthropic,
		p.OpenAI, modelChat, p.OpenAIStream, modelStream, p.Anthropic, modelAnthropic)
}

// startGateways starts the three bare proxies and Switchyard, built as cmd/switchyard's run()
// builds it (config.Parse, catalog.New, a sqlite store in a temporary directory,
// audit.NewRecorder, server.New with the store as its accounts store, Server.Run),
// authentication off.
// traceSample, when positive, traces the default Switchyard at that ratio (-trace-sample).
func startGateways(g *group, p providerURLs, logf func(string, ...any), obs, keyed bool, traceSample float64, pg string) (gatewayURLs, error) {
	var out gatewayURLs
	cln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return out, err
	}
	g.httpServe(cln, "", statsHandler())
	out.Control = "http://" + cln.Addr().String()
	bares := []struct {
		root string
		dst  *string
	}{{p.OpenAI, &out.BareOpenAI}, {p.OpenAIStream, &out.BareOpenAIStream}, {p.Anthropic, &out.BareAnthropic}}
	for _, b := range bares {
		h, err := bareProxy(b.root)
		if err != nil {
			return out, err
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return out, err
		}
		g.httpServe(ln, "bare-proxy", h)
		*b.dst = "http://" + ln.Addr().String()
	}

	if out.Switchyard, _, err = startSwitchyard(g, p, logf, obsDefault, traceSample, pg); err != nil {
		return out, err
	}
	if keyed {
		if out.SwitchyardKeyed, out.KeyedSecret, err = startSwitchyard(g, p, logf, obsKeyed, traceSample, pg); err != nil {
			return out, err
		}
		if out.SwitchyardMetered, out.MeteredSecret, err = startSwitchyard(g, p, logf, obsMetered, traceSample, pg); err != nil {
			return out, err
		}
	}
	if !obs {
		return out, nil
	}
	if out.SwitchyardObsOff, _, err = startSwitchyard(g, p, logf, obsOff, 0, pg); err != nil {
		return out, err
	}
	out.SwitchyardTraced, _, err = startSwitchyard(g, p, logf, obsTraced, 0.1, pg)
	return out, err
}

// Observability variants of a measured Switchyard (-obs).
const (
	obsDefault = iota // metrics on, access log discarded, tracing off unless -trace-sample (what the default run measures)
	obsOff            // metrics off, no access log, tracing off
	obsTraced         // metrics on, JSON access log formatted (to io.Discard), tracing on: 10% sampled, OTLP/HTTP to an in-process sink
	obsKeyed          // obsDefault with authentication on and a key of an unmetered account (-keyed)
	obsMetered        // obsKeyed with a budget on the key: every request holds money (-keyed)
)

// obsTarget names the target of each Switchyard variant (the tables' rows, the profile label).
var obsTarget = [...]string{obsDefault: "switchyard", obsOff: "switchyard-obs-off", obsTraced: "switchyard-traced", obsKeyed: "switchyard-keyed", obsMetered: "switchyard-metered"}

// startSwitchyard starts one Switchyard of the variant obs, built as cmd/switchyard's run()
// builds it, and returns its root URL. sample is the tracing ratio of obsDefault and obsTraced
// (0: obsDefault untraced). obsKeyed also returns the secret of the key to call it with.
func startSwitchyard(g *group, p providerURLs, logf func(string, ...any), obs int, sample float64, pg string) (root, secret string, err error) {
	dir, err := os.MkdirTemp("", "switchyard-bench-")
	if err != nil {
		return "", "", err
	}
	g.after = append(g.after, func() { _ = os.RemoveAll(dir) })
	storeURL := "sqlite://" + filepath.Join(dir, "bench.db")
	if pg == "" {
		sampleWAL(obsTarget[obs], filepath.Join(dir, "bench.db-wal"))
	}
	if pg != "" {
		if storeURL, err = benchDatabase(g, pg, obsTarget[obs]); err != nil {
			return "", "", err
		}
	}
	cfg, err := config.Parse("bench.yaml", []byte(benchConfig(p, storeURL, obs == obsKeyed || obs == obsMetered)))
	if err != nil {
		return "", "", err
	}
	cat, err := catalog.New(cfg)
	if err != nil {
		return "", "", err
	}
	st, err := store.Open(g.ctx, cfg.Store.URL)
	if err != nil {
		return "", "", err
	}
	if obs == obsKeyed || obs == obsMetered { // an unmetered account and its key, in the store before the server loads it
		acct := &accounts.Account{ID: "acct_bench", Name: "bench"}
		var prefix string
		var hash [32]byte
		secret, prefix, hash = accounts.NewSecret()
		if err := st.CreateAccount(g.ctx, acct); err != nil {
			_ = st.Close()
			return "", "", err
		}
		settings := json.RawMessage(`{}`)
		if obs == obsMetered { // a budget no run reaches: every request reserves and settles
			settings = json.RawMessage(`{"limits":{"budget_usd":1000000,"budget_period":"total"}}`)
		}
		if err := st.CreateKey(g.ctx, &accounts.Key{ID: "key_bench", AccountID: acct.ID, Name: "bench", Prefix: prefix,
			SecretHash: hash, Settings: settings, CreatedAt: time.Now().UTC()}); err != nil {
			_ = st.Close()
			return "", "", err
		}
	}
	rec := audit.NewRecorder(st, audit.Options{Logf: logf})
	so := server.Options{Recorder: rec, Ready: st.Ping, Accounts: st, Logf: logf,
		Logger: slog.New(slog.DiscardHandler)} // no access log on the harness's stderr
	switch {
	case ledgerJournal != "":
		so.LedgerJournal = ledgerJournal
	case pg != "": // what cmd/switchyard does on a shared store: a directory of the process's own
		so.LedgerJournal = filepath.Join(dir, "ledger")
	}
	switch obs {
	case obsOff:
		so.MetricsOff = true
	case obsTraced:
		so.Logger = slog.New(slog.NewJSONHandler(io.Discard, nil))
	}
	if obs != obsOff && sample > 0 {
		if so.Tracing, err = otlpSink(g, sample); err != nil {
			_ = st.Close()
			return "", "", err
		}
	}
	srv, err := server.New(cfg, cat, so)
	if err != nil {
		_ = st.Close()
		return "", "", err
	}
	recCtx, stopRec := context.WithCancel(context.Background())
	recDone := make(chan struct{})
	go pprof.Do(recCtx, pprof.Labels("target", obsTarget[obs]), func(ctx context.Context) { // owned: stopped in the after hook
		defer close(recDone)
		_ = rec.Run(ctx) // the audit writer, in its target's profile samples
	})
	// The server's background work, as run() starts it: the route statistics, and with a store
	// of accounts the ledger writer and the key cache. Without it the statistics queue fills
	// and drops, and the measured process does less than the real one.
	bgCtx, stopBg := context.WithCancel(context.Background())
	bgDone := make(chan struct{})
	go func() { defer close(bgDone); _ = srv.Run(bgCtx) }() // owned: stopped in the after hook
	// Runs after every HTTP server has returned, in run()'s order: close the pools, stop the
	// background work, drain the recorder, close the store.
	g.after = append(g.after, func() {
		srv.Close()
		stopBg()
		<-bgDone
		fctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = rec.Flush(fctx)
		cancel()
		stopRec()
		<-recDone
		_ = st.Close()
	})
	ln, err := net.Listen("tcp", cfg.Server.Listen)
	if err != nil {
		return "", "", err
	}
	g.httpServe(ln, obsTarget[obs], srv)
	return "http://" + ln.Addr().String(), secret, nil
}

// walDB is a connection to the -postgres server whose WAL position readProcStats reads; nil
// without -postgres.
var walDB *sql.DB

// ledgerJournal is -ledger-journal: the Switchyard targets' store.ledger_journal ("" the
// default).
var ledgerJournal string

// spawn runs this program again in a server role and reads the JSON line of URLs it prints.
// The child stops when its stdin closes (when the parent calls the returned stop, or dies).
func spawn(args []string, into any) (stop func(), err error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, args...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	outp, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	stop = func() { _ = in.Close(); _ = cmd.Wait() }
	line, err := bufio.NewReader(outp).ReadBytes('\n')
	if err == nil {
		err = json.Unmarshal(line, into)
	}
	if err != nil {
		stop()
		return nil, fmt.Errorf("child %v: %w", args, err)
	}
	return stop, nil
}

// serveRole is the child side of spawn: print v as one JSON line, then serve until stdin closes.
func serveRole(g *group, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if _, err := os.Stdout.Write(append(b, '\n')); err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, os.Stdin) // returns at EOF: the parent is done
	g.stop()
	if errors.Is(err, os.ErrClosed) {
		err = nil
	}
	return err
}

// otlpSink starts an in-process OTLP/HTTP receiver that reads and discards each export, and
// returns tracing that sends to it, sampling ratio of the traces.
func otlpSink(g *group, ratio float64) (*telemetry.Tracing, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	// Not one of the group's servers: it must outlive the gateways, whose tracing exports its
	// last batch at shutdown (in the after hooks).
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	})}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }() // owned: closed in the after hook
	tr, err := telemetry.NewTracing(g.ctx, config.Tracing{Endpoint: "http://" + ln.Addr().String(), Insecure: true, SampleRatio: &ratio},
		"bench", func(string) string { return "" })
	if err != nil {
		_ = srv.Close()
		<-done
		return nil, err
	}
	g.after = append(g.after, func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = tr.Shutdown(sctx)
		cancel()
		_ = srv.Close()
		<-done
	})
	return tr, nil
}

// labeled sets the pprof label target=name on the goroutine serving each request: it stays on
// the connection's goroutine after the request (each connection serves one target), and
// goroutines started from it inherit it.
func labeled(name string, h http.Handler) http.Handler {
	lctx := pprof.WithLabels(context.Background(), pprof.Labels("target", name))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pprof.SetGoroutineLabels(lctx)
		h.ServeHTTP(w, r)
	})
}

// benchDatabase creates a database of its own for the target name on the Postgres server of
// base (postgres://USER@HOST:PORT/DB) and returns its URL; the group's after hook drops it.
func benchDatabase(g *group, base, name string) (string, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", fmt.Errorf("-postgres %q: want postgres://USER@HOST:PORT/DB", base)
	}
	admin, err := sql.Open("pgx", base)
	if err != nil {
		return "", err
	}
	if walDB == nil {
		walDB = admin // the server's WAL position, for procStats.WALBytes
	}
	db := fmt.Sprintf("sy_bench_%d_%s", os.Getpid(), strings.ReplaceAll(name, "-", "_"))
	if _, err := admin.ExecContext(g.ctx, "CREATE DATABASE "+db); err != nil {
		admin.Close()
		return "", fmt.Errorf("creating the bench database: %w", err)
	}
	g.after = append(g.after, func() {
		_, _ = admin.Exec("DROP DATABASE IF EXISTS " + db + " WITH (FORCE)")
		admin.Close()
	})
	u.Path = "/" + db
	return u.String(), nil
}
