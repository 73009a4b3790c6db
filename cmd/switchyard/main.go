// Command switchyard is the Switchyard LLM gateway: one binary with the subcommands of
// contract.md — serve, demo, fake-provider, check, route. Flags and wiring only; the request path lives
// in internal/server and internal/relay.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/switchyard-gw/switchyard/internal/audit"
	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/config"
	"github.com/switchyard-gw/switchyard/internal/failure"
	"github.com/switchyard-gw/switchyard/internal/fakeprovider"
	"github.com/switchyard-gw/switchyard/internal/server"
	"github.com/switchyard-gw/switchyard/internal/store"
)

const usage = `usage: switchyard <command> [flags]

commands:
  serve          run the gateway (--config FILE, --listen ADDR)
  demo           run the gateway with emulated providers and a scripted failover (--listen ADDR, --store URL)
  fake-provider  run the scriptable emulated provider (--addr ADDR --dialect openai|anthropic)
  check          validate a configuration (--config FILE)
  route          print the plan of a model (--config FILE --model ID [--key NAME] [--json])
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch os.Args[1] {
	case "serve":
		err = cmdServe(ctx, os.Args[2:])
	case "demo":
		err = cmdDemo(ctx, os.Args[2:], os.Stdout)
	case "fake-provider":
		err = cmdFakeProvider(ctx, os.Args[2:])
	case "check":
		err = cmdCheck(os.Args[2:], os.Stdout)
	case "route":
		err = cmdRoute(os.Args[2:], os.Stdout)
	case "-h", "--help", "help":
		fmt.Print(usage)
		return
	default:
		fmt.Fprintf(os.Stderr, "switchyard: unknown command %q\n%s", os.Args[1], usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "switchyard: %v\n", err)
		os.Exit(1)
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, time.Now().UTC().Format(time.RFC3339)+" "+format+"\n", args...)
}

func cmdCheck(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	file := fs.String("config", "switchyard.yaml", "configuration file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := config.Load(*file)
	if err != nil {
		return err
	}
	if _, err := catalog.New(cfg); err != nil {
		return err
	}
	if err := store.Check(cfg.Store.URL); err != nil {
		return fmt.Errorf("%s: store.url: %w", *file, err)
	}
	if strings.HasPrefix(cfg.Admission.URL, "redis") {
		return fmt.Errorf("%s: admission.url: redis is not supported yet (use memory://)", *file)
	}
	if !cfg.AuthRequired() && !isLoopback(cfg.Server.Listen) {
		fmt.Fprintf(out, "%s: warning: auth.required is false and server.listen %q is not a loopback address\n", *file, cfg.Server.Listen)
	}
	if cfg.Admin.Token != "" && cfg.Store.SecretKey == "" {
		fmt.Fprintf(out, "%s: warning: store.secret_key is empty: BYOK connections' API keys are stored in the clear\n", *file)
	}
	fmt.Fprintf(out, "%s: ok (%d models, %d deployments)\n", *file, len(cfg.Models), len(cfg.Deployments))
	return nil
}

func cmdServe(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	file := fs.String("config", "", "configuration file (default ./switchyard.yaml if present, else the built-in catalog)")
	listen := fs.String("listen", "", "listen address, overrides server.listen")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var cfg *config.Config
	var err error
	switch {
	case *file != "":
		cfg, err = config.Load(*file)
	case fileExists("switchyard.yaml"):
		cfg, err = config.Load("switchyard.yaml")
	default:
		cfg = config.Default()
		err = defaultServe(ctx, cfg)
	}
	if err != nil {
		return err
	}
	if *listen != "" {
		cfg.Server.Listen = *listen
	}
	return run(ctx, cfg, nil)
}

// defaultServe prepares the built-in catalog: a key from SWITCHYARD_API_KEY when set, else
// authentication off (the default listener is loopback), and emulated providers for every
// deployment without a provider key.
func defaultServe(ctx context.Context, cfg *config.Config) error {
	if k := os.Getenv("SWITCHYARD_API_KEY"); k != "" {
		cfg.Keys = append(cfg.Keys, config.Key{Name: "env", Secret: k, Account: "default"})
	} else {
		off := false
		cfg.Auth.Required = &off
		logf("no configuration and no SWITCHYARD_API_KEY: authentication is off (listening on loopback unless --listen says otherwise)")
	}
	return emulateKeyless(ctx, cfg)
}

// emulateKeyless points every deployment of the built-in catalog that has no API key at an
// in-process emulated provider of its dialect, so that `serve` runs on a fresh machine.
func emulateKeyless(ctx context.Context, cfg *config.Config) error {
	for i := range cfg.Deployments {
		d := &cfg.Deployments[i]
		if d.APIKey != "" {
			continue
		}
		p := fakeprovider.New(d.Name, catalog.Dialect(d.Dialect))
		p.DisableControl()
		url, err := startFake(ctx, p, catalog.Dialect(d.Dialect))
		if err != nil {
			return err
		}
		logf("WARNING: deployment %s has no API key: its models are answered by an EMULATED provider (%s), not by %s", d.Name, url, d.Provider)
		d.BaseURL = url
	}
	return nil
}

// startFake serves p on a loopback port until ctx ends and returns the base URL a deployment
// of dialect d takes (OpenAI: ending in /v1).
func startFake(ctx context.Context, p http.Handler, d catalog.Dialect) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		_ = srv.Close()
	}()
	base := "http://" + ln.Addr().String()
	if d == catalog.OpenAI {
		base += "/v1"
	}
	return base, nil
}

// run serves cfg until ctx ends, then drains: in-flight requests and streams get
// server.shutdown_grace to finish (contract.md). ready, when non-nil, receives the address.
func run(ctx context.Context, cfg *config.Config, ready func(addr string)) error {
	cat, err := catalog.New(cfg)
	if err != nil {
		return err
	}
	st, err := store.Open(ctx, cfg.Store.URL)
	if err != nil {
		return err
	}
	defer st.Close()
	rec := audit.NewRecorder(st, audit.Options{Logf: logf})
	recCtx, stopRec := context.WithCancel(context.Background())
	recDone := make(chan struct{})
	go func() { defer close(recDone); _ = rec.Run(recCtx) }()
	defer func() { stopRec(); <-recDone }()

	srv, err := server.New(cfg, cat, server.Options{Recorder: rec, Ready: st.Ping, Accounts: st, Logf: logf})
	if err != nil {
		return err
	}
	bgCtx, stopBg := context.WithCancel(context.Background())
	bgDone := make(chan struct{})
	go func() { defer close(bgDone); _ = srv.Run(bgCtx) }()
	defer func() { stopBg(); <-bgDone }()
	defer srv.Close()
	ln, err := net.Listen("tcp", cfg.Server.Listen)
	if err != nil {
		return err
	}
	// Requests derive from base: when the shutdown grace runs out it is cancelled with
	// failure.ErrShutdown, so that streams still running end with a terminal error event (and
	// their audit is recorded) instead of being cut.
	base, stopBase := context.WithCancelCause(context.Background())
	defer stopBase(nil)
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 30 * time.Second, IdleTimeout: 120 * time.Second,
		BaseContext: func(net.Listener) context.Context { return base }}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	fmt.Fprintf(os.Stderr, "listening on %s\n", ln.Addr())
	if ready != nil {
		ready(ln.Addr().String())
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	grace := cfg.Server.ShutdownGrace.D()
	if grace <= 0 {
		grace = 30 * time.Second
	}
	logf("shutting down: letting in-flight requests finish (up to %s)", grace)
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		if !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		logf("shutdown grace over: ending the requests still in flight")
		stopBase(failure.ErrShutdown)
		ectx, ecancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer ecancel()
		_ = hs.Shutdown(ectx)
	}
	fctx, fcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer fcancel()
	_ = rec.Flush(fctx)
	return nil
}

func cmdFakeProvider(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("fake-provider", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:9001", "listen address")
	d := fs.String("dialect", "openai", "openai or anthropic")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *d != string(catalog.OpenAI) && *d != string(catalog.Anthropic) {
		return fmt.Errorf("--dialect must be openai or anthropic, not %q", *d)
	}
	return fakeprovider.ListenAndServe(ctx, *addr, catalog.Dialect(*d), func(f string, a ...any) {
		fmt.Fprintf(os.Stderr, f+"\n", a...)
	})
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// isLoopback reports whether a listen address binds only the loopback interface.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
