// Command switchyard is the Switchyard LLM gateway: one binary with the subcommands of
// contract.md — serve, demo, fake-provider, check, route. Flags and wiring only; the request path lives
// in internal/server and internal/relay.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/KimMachineGun/automemlimit/memlimit"

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
  demo           run the gateway with emulated providers and a scripted failover (no keys needed)
  serve          run the gateway (--config FILE, --listen ADDR)
  init           write a commented starter switchyard.yaml (the built-in catalog)
  check          validate a configuration (--config FILE)
  import         convert a LiteLLM config (import litellm config.yaml > switchyard.yaml)
  reload         make a running gateway re-read its configuration (--pid-file FILE or --pid PID)
  route          print the plan of a model (--model ID [--config FILE] [--key NAME] [--json])
  fake-provider  run the scriptable emulated provider (--addr ADDR --dialect openai|anthropic, or --platform bedrock|vertex|azure)
  version        print the version (also --version)

Without --config, serve, check and route read ./switchyard.yaml if present, else the built-in
catalog. "switchyard <command> --help" lists a command's flags.
`

func main() {
	os.Exit(runMain(os.Args[1:], os.Stdout, os.Stderr))
}

// runMain runs the command line args (without the program name) and returns the exit status:
// 0 on success and for help, 1 when the command failed, 2 for a usage error.
func runMain(args []string, stdout, stderr io.Writer) int {
	cliOut, cliErr = stdout, stderr
	if len(args) < 1 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch args[0] {
	case "serve":
		err = cmdServe(ctx, args[1:])
	case "demo":
		err = cmdDemo(ctx, args[1:], stdout)
	case "fake-provider":
		err = cmdFakeProvider(ctx, args[1:])
	case "check":
		err = cmdCheck(args[1:], stdout)
	case "route":
		err = cmdRoute(args[1:], stdout)
	case "reload":
		err = cmdReload(args[1:], stdout)
	case "import":
		err = cmdImport(args[1:], stdout, stderr)
	case "init":
		err = cmdInit(args[1:], stdout)
	case "version", "--version", "-version", "-v":
		fmt.Fprintln(stdout, versionString())
		return 0
	case "-h", "--help", "-help", "help":
		if len(args) > 1 && args[1] != "help" && !strings.HasPrefix(args[1], "-") {
			return runMain([]string{args[1], "--help"}, stdout, stderr)
		}
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "switchyard: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2 // the flag package has printed the problem and the command's usage
	}
	fmt.Fprintf(stderr, "switchyard: %v\n", err)
	return 1
}

// cliOut and cliErr are where flag usage and usage mistakes go (runMain's writers).
var cliOut, cliErr io.Writer = os.Stdout, os.Stderr

// errUsage marks a command-line mistake already reported by the flag package.
var errUsage = errors.New("usage")

// newFlags returns the flag set of a command whose synopsis (after "switchyard ") is synopsis;
// its usage text goes to stdout for --help and to stderr for a mistake.
func newFlags(name, synopsis, about string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: switchyard %s\n\n%s\n", synopsis, about)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args into fs: --help prints the usage on stdout and returns flag.ErrHelp; a
// bad flag prints the problem and the usage on stderr and returns errUsage.
func parseFlags(fs *flag.FlagSet, args []string) error {
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "-h" || a == "-help" || a == "--help" {
			fs.SetOutput(cliOut)
			fs.Usage()
			return flag.ErrHelp
		}
	}
	fs.SetOutput(cliErr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if fs.NArg() > 0 && fs.Name() != "import" {
		fmt.Fprintf(cliErr, "switchyard %s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		fs.Usage()
		return errUsage
	}
	return nil
}

// logOut receives the operational log (standard error; tests replace it before starting).
var logOut io.Writer = os.Stderr

// builtinName names the built-in catalog in messages.
const builtinName = "the built-in catalog"

// loadConfig reads the configuration the way serve, check, route and reload all do: file when
// given, else ./switchyard.yaml when it exists, else the built-in catalog (config.Default; then
// builtin is true). name is what messages call it.
func loadConfig(file string) (cfg *config.Config, name string, builtin bool, err error) {
	switch {
	case file != "":
		cfg, err = config.Load(file)
		return cfg, file, false, err
	case fileExists("switchyard.yaml"):
		cfg, err = config.Load("switchyard.yaml")
		return cfg, "switchyard.yaml", false, err
	}
	return config.Default(), builtinName, true, nil
}

// checkConfig is what check, serve and reload require of a configuration beyond config.Load:
// a catalog that builds, at least one model and one deployment (else the gateway could serve
// nothing), a store URL the store accepts, an admission store this build has. warn receives the
// warnings (nil discards them).
func checkConfig(cfg *config.Config, name string, warn func(string)) (*catalog.Catalog, error) {
	if warn == nil {
		warn = func(string) {}
	}
	var missing []string
	if len(cfg.Models) == 0 {
		missing = append(missing, "models")
	}
	if len(cfg.Deployments) == 0 {
		missing = append(missing, "deployments")
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s: no %s: a gateway without them serves nothing; "+
			"run `switchyard init` for a starter file, or see docs/configuration.md", name, strings.Join(missing, " and no "))
	}
	cat, err := catalog.New(cfg)
	if err != nil {
		return nil, err
	}
	if err := store.Check(cfg.Store.URL); err != nil {
		return nil, fmt.Errorf("%s: store.url: %w", name, err)
	}
	if !cfg.AuthRequired() && !isLoopback(cfg.Server.Listen) {
		warn(fmt.Sprintf("%s: warning: auth.required is false and server.listen %q is not a loopback address", name, cfg.Server.Listen))
	}
	for i, d := range cfg.Deployments {
		// (The built-in catalog's keyless deployments are emulated by serve instead.)
		path := fmt.Sprintf("deployments[%d].api_key", i)
		if strings.TrimSpace(d.APIKey) != "" || name == builtinName {
			continue
		}
		if v, unset := cfg.UnsetVar(path); unset {
			warn(fmt.Sprintf("%s: warning: deployment %s has no API key: %s is not set, so the provider will refuse its requests", name, d.Name, v))
		} else if v, empty := cfg.EmptyVar(path); empty {
			warn(fmt.Sprintf("%s: warning: deployment %s has no API key: %s is set but empty, so the provider will refuse its requests", name, d.Name, v))
		}
	}
	for _, w := range unpricedMetered(cfg, cat) {
		warn(fmt.Sprintf("%s: warning: %s", name, w))
	}
	if cfg.Admin.Token != "" && cfg.Store.SecretKey == "" {
		warn(fmt.Sprintf("%s: warning: store.secret_key is empty: BYOK connections' API keys are stored in the clear", name))
	}
	return cat, nil
}

// unpricedMetered lists the routes that can serve a metered account and have no price from any
// source (docs/pricing.md): no price of their own, of their model, nor from the price catalog.
// An account is metered when a budget is set on a key or an account in the file, or when the
// admin API is on (accounts and keys made there may hold budgets or prepaid balances). A
// metered request on such a route costs 0: its budget or balance never counts it.
func unpricedMetered(cfg *config.Config, cat *catalog.Catalog) []string {
	metered := cfg.Admin.Token != ""
	for _, k := range cfg.Keys {
		metered = metered || k.Limits.BudgetUSD > 0
	}
	for _, a := range cfg.Accounts {
		metered = metered || a.Limits.BudgetUSD > 0
	}
	if !metered {
		return nil
	}
	var out []string
	for _, d := range cat.Deployments {
		for _, r := range d.Routes {
			if m := cat.Model(r.Model); r.Price != nil || (m != nil && m.Price != nil) || d.BYOK {
				continue
			}
			out = append(out, fmt.Sprintf("deployment %s route %s (upstream %s) has no price (none configured, none in the price catalog): "+
				"requests of metered accounts (budgets, prepaid) on it cost 0; set its price (docs/pricing.md)", d.Name, r.Model, r.UpstreamModel))
		}
	}
	return out
}

func cmdCheck(args []string, out io.Writer) error {
	fs := newFlags("check", "check [--config FILE]",
		"Validates a configuration like serve and reload do: exit 0 and a summary, or exit 1 and every\nproblem as FILE:LINE: path: message.")
	file := fs.String("config", "", "configuration file (default ./switchyard.yaml if present, else the built-in catalog)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg, name, _, err := loadConfig(*file)
	if err != nil {
		return err
	}
	if _, err := checkConfig(cfg, name, func(w string) { fmt.Fprintln(out, w) }); err != nil {
		return err
	}
	fmt.Fprintf(out, "%s: ok (%d models, %d deployments)\n", name, len(cfg.Models), len(cfg.Deployments))
	return nil
}

func cmdServe(ctx context.Context, args []string) error {
	fs := newFlags("serve", "serve [--config FILE] [--listen ADDR] [--pid-file FILE]",
		"Runs the gateway. SIGHUP (or `switchyard reload`) re-reads the configuration file: a valid one\nreplaces the running configuration atomically, requests in flight finish on the old one, an\ninvalid one is refused (its problems logged) and the old one keeps serving. SIGTERM or SIGINT\ndrains in-flight requests and exits.")
	file := fs.String("config", "", "configuration file (default ./switchyard.yaml if present, else the built-in catalog)")
	listen := fs.String("listen", "", "listen address, overrides server.listen")
	pidFile := fs.String("pid-file", "", "write the process id to `FILE` (for switchyard reload --pid-file); removed at exit")
	logFormat := fs.String("log-format", "", "log format, text or json; overrides log.format")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg, name, builtin, err := loadConfig(*file)
	if err != nil {
		return err
	}
	if *logFormat != "" {
		cfg.Log.Format = *logFormat
	}
	if *listen != "" {
		cfg.Server.Listen = *listen
	}
	// The log first: the warnings below are lines of it, in log.format (docs/observability.md).
	if _, err := openLog(cfg); err != nil {
		return err
	}
	if builtin {
		if os.Getenv("SWITCHYARD_API_KEY") == "" && !isLoopback(cfg.Server.Listen) {
			return fmt.Errorf("refusing to serve the built-in catalog without authentication on %s, which is not a loopback address: "+
				"export SWITCHYARD_API_KEY=<a secret your apps will send>, or write a configuration with `switchyard init`", cfg.Server.Listen)
		}
		if err := defaultServe(ctx, cfg); err != nil {
			return err
		}
	}
	if _, err := checkConfig(cfg, name, func(w string) { warnf("%s", w) }); err != nil {
		return err
	}
	if *pidFile != "" {
		if err := os.WriteFile(*pidFile, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
			return fmt.Errorf("--pid-file: %w", err)
		}
		defer os.Remove(*pidFile)
	}
	opts := runOptions{}
	if !builtin {
		// SIGHUP re-reads the same file, validated as check does; --listen still wins.
		opts.reload = func() (*config.Config, *catalog.Catalog, error) {
			next, err := config.Load(name)
			if err != nil {
				return nil, nil, err
			}
			cat, err := checkConfig(next, name, func(w string) { warnf("%s", w) })
			if err != nil {
				return nil, nil, err
			}
			if *listen != "" {
				next.Server.Listen = *listen
			}
			return next, cat, nil
		}
	}
	return run(ctx, cfg, opts)
}

// restartOnly lists the settings that differ between prev and next but take effect only at a
// restart (the listener, the stores, the circuit settings).
func restartOnly(prev, next *config.Config) []string {
	var out []string
	if prev.Server.Listen != next.Server.Listen {
		out = append(out, "server.listen")
	}
	if prev.Server.MaxHeaderBytes != next.Server.MaxHeaderBytes {
		out = append(out, "server.max_header_bytes") // the http.Server's, set once
	}
	if prev.Store.URL != next.Store.URL {
		out = append(out, "store.url")
	}
	if prev.Store.ReloadInterval != next.Store.ReloadInterval {
		out = append(out, "store.reload_interval")
	}
	if prev.Store.AuditRetention != next.Store.AuditRetention {
		out = append(out, "store.audit_retention") // the pruner's, started once
	}
	if prev.Store.LedgerJournal != next.Store.LedgerJournal {
		out = append(out, "store.ledger_journal") // the ledger writer's, opened once
	}
	if prev.Admission.URL != next.Admission.URL {
		out = append(out, "admission.url")
	}
	if prev.Admission.Redis != next.Admission.Redis {
		out = append(out, "admission.redis")
	}
	if prev.Routing.Circuit != next.Routing.Circuit {
		out = append(out, "routing.circuit")
	}
	return out
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
		warnf("deployment %s has no API key: its models are answered by an EMULATED provider (%s), not by %s", d.Name, url, d.Provider)
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

// runOptions are run's optional hooks.
type runOptions struct {
	// ready, when non-nil, receives the listen address once connections are accepted.
	ready func(addr string)
	// reload, when non-nil, reads and validates the configuration again (SIGHUP); nil: SIGHUP
	// is logged and ignored (the built-in catalog, the demo).
	reload func() (*config.Config, *catalog.Catalog, error)
	// noAccounts leaves the store of accounts out of the server (no stored keys, ledger or
	// admin API data): the demo, which has no admin token and so nothing could fill it.
	noAccounts bool
}

// run serves cfg until ctx ends, then drains: in-flight requests and streams get
// server.shutdown_grace to finish (contract.md).
func run(ctx context.Context, cfg *config.Config, opts runOptions) error {
	// SIGHUP is a reload from the start: its default action would end the process.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	lg, err := openLog(cfg)
	if err != nil {
		return err
	}
	applyMemoryLimit(lg, memlimit.FromCgroup) // GOMEMLIMIT from the container's limit unless set
	tr, stopTracing, err := openTracing(ctx, cfg)
	if err != nil {
		return err
	}
	defer stopTracing() // after the listener and the recorder: the last spans are exported
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
	// Audit retention (store.audit_retention; the ledger is never pruned): read at start.
	if p, ok := st.(audit.Pruner); ok && cfg.Store.AuditRetention > 0 {
		pruneDone := make(chan struct{})
		go func() {
			defer close(pruneDone)
			audit.Prune(recCtx, p, audit.PruneOptions{Retention: cfg.Store.AuditRetention.D(), Logf: logf})
		}()
		defer func() { stopRec(); <-pruneDone }()
	}

	so := server.Options{Recorder: rec, Ready: st.Ping, Accounts: st, Logger: lg, Tracing: tr}
	if opts.noAccounts {
		so.Accounts = nil
	} else {
		so.LedgerJournal = ledgerJournal(cfg.Store, logf)
	}
	srv, err := server.New(cfg, cat, so)
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
	// The server's own http.Server and listener: its deadlines and request limits
	// (server.HTTPServer; docs/behaviour.md "Request limits").
	hs := srv.HTTPServer()
	hs.BaseContext = func(net.Listener) context.Context { return base }
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(srv.Listener(ln)) }()
	fmt.Fprintf(logOut, "listening on %s\n", ln.Addr())
	if opts.ready != nil {
		opts.ready(ln.Addr().String())
	}
wait:
	for {
		select {
		case err := <-errc:
			return err
		case <-ctx.Done():
			break wait
		case <-hup:
			reload(srv, opts.reload)
		}
	}
	grace := srv.Config().Server.ShutdownGrace.D()
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

// reload carries out one SIGHUP: read and validate the configuration again and swap it in, or
// log why not (at warn) and keep serving the current one. Either way it is counted
// (switchyard_config_reloads_total{result="applied"|"refused"}, Server.Reload and
// Server.ReloadRefused; docs/observability.md).
func reload(srv *server.Server, read func() (*config.Config, *catalog.Catalog, error)) {
	if read == nil {
		logf("SIGHUP: there is no configuration file to reload (built-in catalog or demo); ignored")
		return
	}
	cfg, cat, err := read()
	if err != nil {
		srv.ReloadRefused()
		warnf("reload refused, the previous configuration keeps serving:\n%v", err)
		return
	}
	prev := srv.Config()
	if err := srv.Reload(cfg, cat); err != nil {
		warnf("reload refused, the previous configuration keeps serving: %v", err)
		return
	}
	logf("reloaded %s: %d models, %d deployments, %d keys", cfg.File, len(cfg.Models), len(cfg.Deployments), len(cfg.Keys))
	if changed := restartOnly(prev, cfg); len(changed) > 0 {
		warnf("reload: %s changed; the running values stay until a restart", strings.Join(changed, ", "))
	}
}

func cmdFakeProvider(ctx context.Context, args []string) error {
	fs := newFlags("fake-provider", "fake-provider [--addr ADDR] [--dialect openai|anthropic] [--platform bedrock|vertex|azure [--credentials-file PATH]]",
		"Runs the scriptable emulated provider (docs/fake-provider.md), or a cloud platform's emulator in front of it (docs/platforms.md).")
	addr := fs.String("addr", "127.0.0.1:9001", "listen address")
	d := fs.String("dialect", "openai", "openai or anthropic")
	platform := fs.String("platform", "", "emulate a platform instead: bedrock (Claude on Amazon Bedrock, SigV4 or a Bedrock API key), vertex (Claude on Vertex AI) or azure (Azure OpenAI)")
	awsRegion := fs.String("aws-region", "us-east-1", "bedrock: the region signatures must be scoped to")
	awsKeyID := fs.String("aws-access-key-id", "AKIDSWITCHYARDFAKE01", "bedrock: the access key id whose signatures verify")
	awsSecret := fs.String("aws-secret-access-key", "switchyard-fake-secret", "bedrock: the secret access key of --aws-access-key-id")
	bedrockKey := fs.String("bedrock-api-key", "", "bedrock: a Bedrock API key accepted as a bearer token (empty: none)")
	saFile := fs.String("credentials-file", "", "vertex: where to write the emulator's service-account file (default: in the temporary directory)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch *platform {
	case "":
	case "bedrock":
		cfg := fakeprovider.BedrockConfig{Region: *awsRegion, AccessKeyID: *awsKeyID, SecretAccessKey: *awsSecret, APIKey: *bedrockKey}
		return fakeprovider.ListenAndServeBedrock(ctx, *addr, cfg, func(f string, a ...any) {
			fmt.Fprintf(os.Stderr, f+" (Bedrock, region %s, access key id %s)\n", append(a, cfg.Region, cfg.AccessKeyID)...)
		})
	case "vertex", "azure":
		return fakeprovider.ListenAndServePlatform(ctx, *addr, *platform, *saFile, func(f string, a ...any) {
			fmt.Fprintf(os.Stderr, f+"\n", a...)
		})
	default:
		return fmt.Errorf("--platform must be bedrock, vertex or azure, not %q", *platform)
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

// DefaultSharedLedgerJournal is store.ledger_journal's default on a shared store (postgres): a
// directory in the working directory (the container image's /data).
const DefaultSharedLedgerJournal = "switchyard-ledger"

// ledgerJournal is server.Options.LedgerJournal from store (docs/deploy.md "The ledger
// journal"): "off" as given; a directory (given, or DefaultSharedLedgerJournal on a shared
// store) joined with the store's own subdirectory (storeJournalDir), so that gateways of
// different stores that share a directory never replay each other's journals into the wrong
// store. A default directory that cannot be made or written (a read-only working directory)
// gives "off" with a log line saying why: the commit then waits for the store, as before the
// journal. An embedded store given none keeps its own, next to its file ("").
func ledgerJournal(st config.Store, logf func(string, ...any)) string {
	dir := st.LedgerJournal
	switch {
	case dir == "off":
		return dir
	case dir == "" && strings.HasPrefix(st.URL, "sqlite:"):
		return ""
	case dir == "":
		dir = DefaultSharedLedgerJournal
	}
	dir, err := filepath.Abs(filepath.Join(dir, storeJournalDir(st.URL)))
	if err == nil && st.LedgerJournal == "" {
		err = os.MkdirAll(dir, 0o700)
		if err == nil { // an existing directory may still refuse writes
			var f *os.File
			if f, err = os.CreateTemp(dir, ".probe-*"); err == nil {
				f.Close()
				os.Remove(f.Name())
			}
		}
		if err != nil {
			logf("ledger journal off: %v; keyed requests wait for the store's commit (set store.ledger_journal to a writable directory)", err)
			return "off"
		}
	}
	return dir
}

// storeJournalDir names a store's subdirectory of a ledger journal directory: "store-" and 16
// hex digits of a hash of the store's identity (a postgres URL's host, port and database; a
// SQLite file's absolute path), never its credentials. Replicas of one store given the same
// URL share it.
func storeJournalDir(storeURL string) string {
	id := storeURL
	if u, err := url.Parse(storeURL); err == nil {
		id = strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host) + u.Path
		if u.Scheme == "sqlite" {
			path := strings.TrimPrefix(storeURL, "sqlite://")
			path, _, _ = strings.Cut(path, "?")
			if abs, err := filepath.Abs(path); err == nil {
				id = "sqlite://" + abs
			}
		}
	}
	sum := sha256.Sum256([]byte(id))
	return "store-" + hex.EncodeToString(sum[:8])
}
