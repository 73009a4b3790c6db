// Package server is the HTTP face of Switchyard: the listener's mux, caller authentication,
// the body limit, request ids, and the surfaces of contract.md (OpenAI chat completions,
// Anthropic messages, models, generation, health, metrics, POST /v1/route). serveModelCall is
// the whole request path, top to bottom, for every surface that calls a model; its routing half
// (routing.go: suffixes R-SUFFIX, provider preferences R-ORDER-6, session key R-ORDER-5, the
// context-fit estimate R-ADMIT-4, model fallbacks R-FAIL-8, attempt limit R-FAIL-10, dedicated
// endpoints and their accounts R-KEY-6) is shared with POST /v1/route and Explain (R-ORDER-8),
// so the plan explained is the plan run. Caller limits and the budget reserve (limits.go,
// R-BILL-1, R-BILL-2, R-BILL-4) are taken from the admission store after planning and before
// the first attempt; they never fail over.
//
// With a store of accounts (Options.Accounts), callers may also authenticate with stored keys
// (R-KEY-1: looked up by SHA-256 in an in-memory cache after the static keys, never a store
// round trip on the request path), a prepaid account's balance is reserved before dispatch in
// the admission store (402 insufficient_credit, limit kind credit; one billing.Reservation owns
// the request's limits, reserves and ledger entries), a committed request's cost is queued for
// the ledger (R-BILL-1, R-BILL-2), and the admin API of contract.md is served under /admin/v1/
// (package admin, mounted by accounts.go; docs/admin-api.md), authenticated with admin.token.
package server

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/switchyard-gw/switchyard/internal/accounts"
	"github.com/switchyard-gw/switchyard/internal/admission"
	"github.com/switchyard-gw/switchyard/internal/audit"
	"github.com/switchyard-gw/switchyard/internal/billing"
	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/circuit"
	"github.com/switchyard-gw/switchyard/internal/config"
	"github.com/switchyard-gw/switchyard/internal/failure"
	"github.com/switchyard-gw/switchyard/internal/layers"
	"github.com/switchyard-gw/switchyard/internal/plan"
	"github.com/switchyard-gw/switchyard/internal/relay"
	"github.com/switchyard-gw/switchyard/internal/secret"
	"github.com/switchyard-gw/switchyard/internal/stats"
	"github.com/switchyard-gw/switchyard/internal/telemetry"
	"github.com/switchyard-gw/switchyard/internal/upstream"
)

// Surfaces, as recorded in the audit.
const (
	SurfaceChat        = "openai.chat"
	SurfaceEmbeddings  = "openai.embeddings"
	SurfaceResponses   = "openai.responses"
	SurfaceMessages    = "anthropic.messages"
	SurfaceCountTokens = "anthropic.count_tokens"
	SurfaceImages      = "openai.images"
	SurfaceImageEdits  = "openai.image_edits"
)

// surface is one endpoint that calls a model: the caller's dialect, its name in the audit, the
// protocol it asks deployments for, and the codec that reads its requests and writes its answers.
type surface struct {
	dialect  catalog.Dialect
	name     string
	protocol catalog.Protocol
	codec    relay.Codec
	// form says the body is multipart/form-data (POST /v1/images/edits), not JSON.
	form bool
}

// Options are the server's collaborators.
type Options struct {
	// Recorder receives one audit record per model call; required.
	Recorder *audit.Recorder
	// Ready reports whether the store is reachable (GET /readyz); nil means always ready.
	Ready func(context.Context) error
	// Now is the clock of the circuits and cooldowns; nil is time.Now.
	Now func() time.Time
	// Dial replaces the upstream TCP dialer when set (tests use an in-memory network).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Logf logs operational events (never prompt text, bodies or credentials); nil discards.
	// Without a Logger, the access log goes to Logf too, one "request key=value ..." line a
	// request.
	Logf func(format string, args ...any)
	// Logger receives the access log (one info line a request) and, when Logf is nil, the
	// operational events at warn (docs/observability.md).
	Logger *slog.Logger
	// Tracing is the OpenTelemetry tracing (telemetry.NewTracing); nil turns tracing off: no
	// span is created and the request path allocates nothing for it.
	Tracing *telemetry.Tracing
	// MetricsOff skips the request-path observations of /metrics (the series of each request;
	// the scrape-time gauges stay): for embedders that do not scrape, and for the load harness
	// measuring what the metrics cost (bench/README.md).
	MetricsOff bool
	// Admission is the admission store of the caller limits (docs/limits.md); nil builds the
	// one admission.url names (memory://: an in-memory store on the Now clock), seeded from the
	// ledger of Accounts. A store given here seeds from its own Seeder.
	Admission admission.Store
	// Accounts is the store of accounts, keys and the ledger (docs/admin-api.md). Nil turns
	// off stored keys, the ledger and the admin API's data (it answers 503); static keys keep
	// working. New loads the active keys and the accounts from it.
	Accounts accounts.Store
	// LedgerJournal is the directory of the ledger's crash journals (accounts.FileJournal;
	// docs/deploy.md "The ledger journal"): a request's reserve is secured at its commit by one
	// append to this process's journal there instead of a wait for the store's commit, and the
	// journals of processes that died there are replayed into the ledger (at the start, and every
	// heartbeat). "" takes the embedded store's own (next to its file); "off" keeps none: the
	// commit waits for the store (the shared store without a journal). cmd/switchyard sets it
	// from store.ledger_journal.
	LedgerJournal string
}

// Server serves the gateway's HTTP surfaces. Create it with New; it is an http.Handler.
type Server struct {
	// live is the snapshot serving new requests, shared by every snapshot of one gateway:
	// ServeHTTP loads it once per request, and the request runs to its end on that snapshot
	// (reload.go). reloadMu serializes Reload.
	live     *atomic.Pointer[Server]
	reloadMu *sync.Mutex
	// settling is held for reading by each settle from its admission store call until its
	// ledger entry is queued (billing.Biller.Settling), shared by every snapshot: the Redis
	// store's flush after a loss takes it for writing first (ledgerSeeder.flushLedger).
	settling *sync.RWMutex
	opts     Options
	cfg      *config.Config // the configuration this snapshot was built from

	cat          *catalog.Catalog
	circuits     *circuit.Set
	stats        *stats.Collector
	relay        *relay.Relay
	clients      map[string]*upstream.Client
	deadlines    upstream.Deadlines // of every upstream client, BYOK connections' included
	byok         *byokSet           // the callers' own connections as deployments (byok.go); shared by snapshots
	rec          *audit.Recorder
	ready        func(context.Context) error
	logf         func(string, ...any)
	keys         []staticKey
	admit        admission.Store
	billing      billing.Biller // reservations over admit and the ledger (call.go)
	authRequired bool
	maxBody      int64
	// The request limits (body.go, listen.go; docs/behaviour.md "Request limits"):
	// server.body_timeout, server.max_inflight_body_bytes and the bytes the requests in flight
	// hold against it (shared by the snapshots of one gateway: a request releases what it took
	// on the counter it took it from, whatever Reload did meanwhile), server.max_header_bytes
	// (of the first snapshot: the http.Server of HTTPServer reads it once).
	bodyTimeout  time.Duration
	maxInflight  int64
	inflight     *atomic.Int64
	maxHeader    int
	blend        plan.Blend
	strategy     string // routing.strategy
	attemptLimit int    // routing.attempt_limit; 0 is unlimited
	// chat and messages are the surfaces POST /v1/route explains.
	chat, messages *surface
	mux            *http.ServeMux
	models         modelLists
	metrics        *metrics
	log            *slog.Logger         // the access log (observe.go)
	tracing        *telemetry.Tracing   // nil: tracing off (trace.go)
	peers          map[string]genaiPeer // deployment name -> its GenAI server and provider name (genai.go)
	pool           sync.Pool            // *callState

	// Stored accounts and keys (accounts.go); all nil when Options.Accounts is.
	accts  accounts.Store
	cache  *accounts.Cache
	ledger *accounts.Writer
	// replica is this process's id on its reserve entries; reconciler keeps its heartbeat and
	// closes the reserves of replicas gone (nil without a store of replicas).
	replica    string
	reconciler *accounts.Reconciler
	// box seals BYOK connections' API keys in the store (store.secret_key); nil stores them in
	// the clear.
	box *secret.Box
	// acctLayers are the configured accounts' limits as layers, applied to their stored keys.
	acctLayers map[string][]admission.Layer
	// routable is the operators' live routable state (routable.go); reloadEvery is
	// store.reload_interval, the pace of its poll.
	routable    *routableState // shared by the snapshots of one gateway (Reload)
	reloadEvery time.Duration
	// gatewayProvider is server.name (default "switchyard") as a header value: the provider a
	// closed dedicated endpoint names (relay.Request.GatewayProvider).
	gatewayProvider []string
}

type staticKey struct {
	hash          [sha256.Size]byte
	name          string
	account       string
	allowOverride bool
	// layers are the key's and its account's limits (limits.go); nil when neither has any.
	layers []admission.Layer
}

// caller is the authenticated identity of a request.
type caller struct {
	key     string // key name; "" when authentication is off
	account string
	// keyID names the key in the ledger: a stored key's id, a static key's name.
	keyID string
	// allowOverride lets the request set the routing strategy (R-SUFFIX-2): the key's
	// allow_request_override; always true for an anonymous caller (auth.required false).
	allowOverride bool
	// anyEndpoint lets the caller use every dedicated endpoint whatever its accounts: only
	// Explain without a key (the operator's `switchyard route`).
	anyEndpoint bool
	// layers are the limits the caller is held to (R-BILL-1); nil: none (an anonymous caller).
	layers []admission.Layer
	// settings are a stored key's effective settings (account -> workspace -> key, cached in
	// accounts.Cache); nil for a static key or an anonymous caller.
	settings *layers.Merged
}

// mayUse reports whether the caller may use dedicated endpoint e (R-KEY-6): its account is
// allowed. An anonymous caller has no account, so it may use only endpoints open to every
// account.
func (c caller) mayUse(e *catalog.Endpoint) bool { return c.anyEndpoint || e.Allows(c.account) }

// New builds a server from a validated configuration and its catalog.
func New(cfg *config.Config, cat *catalog.Catalog, o Options) (*Server, error) {
	if o.Recorder == nil {
		return nil, errors.New("server: an audit recorder is required")
	}
	s, err := newSnapshot(cfg, cat, o, nil)
	if err != nil {
		return nil, err
	}
	s.live.Store(s)
	return s, nil
}

// newSnapshot builds the server of one configuration. prev, when non-nil, is the snapshot
// being replaced (Reload): the new one shares its long-lived parts (circuits, statistics,
// admission store, metrics, the store of accounts with its cache and ledger writer, the BYOK
// deployments, the live pointer) and builds the rest from cfg and cat.
func newSnapshot(cfg *config.Config, cat *catalog.Catalog, o Options, prev *Server) (*Server, error) {
	s := &Server{
		opts:         o,
		cfg:          cfg,
		cat:          cat,
		rec:          o.Recorder,
		ready:        o.Ready,
		logf:         o.Logf,
		authRequired: cfg.Auth.Required == nil || *cfg.Auth.Required,
		maxBody:      cfg.Server.MaxBodyBytes,
		bodyTimeout:  cfg.Server.BodyTimeout.D(),
		maxInflight:  cfg.Server.MaxInflightBodyBytes,
		maxHeader:    cfg.Server.MaxHeaderBytes,
		blend:        plan.Blend{Input: cfg.Routing.PriceBlend.Input, Output: cfg.Routing.PriceBlend.Output},
		strategy:     cfg.Routing.Strategy,
		attemptLimit: max(cfg.Routing.AttemptLimit, 0),
		reloadEvery:  cfg.Store.ReloadInterval.D(),
	}
	s.gatewayProvider = []string{cmp.Or(cfg.Server.Name, "switchyard")}
	s.initLog(o)
	s.tracing = o.Tracing
	if s.maxBody <= 0 {
		s.maxBody = config.DefaultMaxBodyBytes
	}
	if s.bodyTimeout <= 0 {
		s.bodyTimeout = config.DefaultBodyTimeout
	}
	if s.maxInflight <= 0 {
		s.maxInflight = config.DefaultMaxInflightBodyBytes
	}
	if s.maxHeader <= 0 {
		s.maxHeader = config.DefaultMaxHeaderBytes
	}
	if prev != nil {
		s.live, s.reloadMu, s.byok, s.circuits, s.stats, s.metrics = prev.live, prev.reloadMu, prev.byok, prev.circuits, prev.stats, prev.metrics
		s.routable, s.inflight, s.settling = prev.routable, prev.inflight, prev.settling
	} else {
		s.live, s.reloadMu, s.byok, s.routable = new(atomic.Pointer[Server]), new(sync.Mutex), new(byokSet), new(routableState)
		s.settling = new(sync.RWMutex)
		s.inflight = new(atomic.Int64)
		cs := circuit.Settings{Failures: cfg.Routing.Circuit.Failures, Cooldown: cfg.Routing.Circuit.Cooldown.D(), Now: o.Now}
		s.circuits = circuit.NewSet(cs, cs)
		s.stats = stats.New(stats.Options{Now: o.Now})
	}
	dl := upstream.Deadlines{
		Headers:       cfg.Routing.Timeouts.Headers.D(),
		StreamHeaders: cfg.Routing.Timeouts.StreamHeaders.D(),
		StreamIdle:    cfg.Routing.Timeouts.StreamIdle.D(),
		FirstOutput:   cfg.Routing.Timeouts.FirstOutput.D(),
		Dial:          o.Dial,
	}
	s.deadlines = dl
	s.peers = genaiPeers(cat)
	s.clients = make(map[string]*upstream.Client, len(cat.Deployments))
	for _, d := range cat.Deployments {
		s.clients[d.Name] = upstream.New(d, dl)
	}
	s.relay = relay.New(s.circuits, s.clients)
	s.relay.Logf = s.logf
	s.relay.Stats = s.stats
	if prev != nil {
		s.admit = prev.admit
	} else if s.admit = o.Admission; s.admit == nil {
		var err error
		if s.admit, err = newAdmission(cfg.Admission, o.Now, ledgerSeeder{s}, s.logf); err != nil {
			return nil, err
		}
	}
	if ps, ok := s.admit.(pauseSharer); ok {
		// Provider pauses (upstream 429s) reach every replica through the shared store; routing
		// reads the local copy only (R-CIRCUIT-4). Circuits stay per replica.
		s.circuits.OnPause(ps.PublishPause)
	}
	accounts := accountLimits(cfg.Accounts)
	s.acctLayers = make(map[string][]admission.Layer, len(accounts))
	for id, l := range accounts {
		s.acctLayers[id] = []admission.Layer{{Scope: admission.ScopeAccount, ID: id, Limits: l}}
	}
	for _, k := range cfg.Keys {
		if k.Secret == "" {
			continue
		}
		s.keys = append(s.keys, staticKey{hash: sha256.Sum256([]byte(k.Secret)), name: k.Name, account: k.Account,
			allowOverride: k.AllowRequestOverride, layers: keyLayers(&k, accounts)})
	}
	if err := s.initAccounts(cfg, o, prev); err != nil {
		return nil, err
	}
	s.billing = billing.Biller{Store: s.admit, Settling: s.settling}
	if s.ledger != nil {
		s.billing.Ledger = s.ledger
	}
	s.models = buildModelLists(cat)
	if prev == nil {
		s.metrics = newMetrics()
		s.registerCollectors()
		inflight := s.inflight
		s.metrics.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "switchyard_inflight_body_bytes",
			Help: "Bytes the request bodies in flight hold against server.max_inflight_body_bytes.",
		}, func() float64 { return float64(inflight.Load()) }))
	}
	s.pool.New = func() any { return new(callState) }

	mux := http.NewServeMux()
	s.chat = &surface{catalog.OpenAI, SurfaceChat, catalog.ProtocolModel, relay.CodecFor(catalog.OpenAI), false}
	s.messages = &surface{catalog.Anthropic, SurfaceMessages, catalog.ProtocolModel, relay.CodecFor(catalog.Anthropic), false}
	for path, sf := range map[string]*surface{
		"POST /v1/chat/completions":      s.chat,
		"POST /v1/embeddings":            {catalog.OpenAI, SurfaceEmbeddings, catalog.ProtocolEmbeddings, relay.EmbeddingsCodec(), false},
		"POST /v1/responses":             {catalog.Responses, SurfaceResponses, catalog.ProtocolModel, relay.ResponsesCodec(), false},
		"POST /v1/messages":              s.messages,
		"POST /v1/messages/count_tokens": {catalog.Anthropic, SurfaceCountTokens, catalog.ProtocolCountTokens, relay.CountTokensCodec(), false},
		"POST /v1/images/generations":    {catalog.OpenAI, SurfaceImages, catalog.ProtocolImages, relay.ImagesCodec(), false},
		"POST /v1/images/edits":          {catalog.OpenAI, SurfaceImageEdits, catalog.ProtocolImageEdits, relay.ImageEditsCodec(), true},
	} {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) { s.serveModelCall(w, r, sf) })
	}
	mux.HandleFunc("POST /v1/route", s.serveRoute)
	mux.HandleFunc("GET /v1/models", s.serveModels)
	mux.HandleFunc("GET /v1/models/{id...}", s.serveModel)
	mux.HandleFunc("GET /v1/generation", s.serveGeneration)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"ok"}`))
	})
	mux.HandleFunc("GET /readyz", s.serveReady)
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{}))
	adm := s.adminHandler()
	mux.Handle("/admin/", adm)
	s.mountConsole(mux, cfg, adm)
	mux.HandleFunc("/", s.serveNotFound)
	s.mux = mux
	return s, nil
}

// Run runs the server's background work until ctx ends: the statistics windows and, with a
// store of accounts, the ledger writer and the periodic reload of keys and accounts. Without
// it, observations are dropped (every latency, throughput or reliability plan degrades to
// balanced) and no ledger entry is written. Cancel ctx after the listener has shut down: the
// ledger writer then writes what is still queued (within its drain timeout) before Run
// returns. It returns the first error of its parts.
func (s *Server) Run(ctx context.Context) error {
	parts := []func(context.Context) error{s.stats.Run}
	if r, ok := s.admit.(interface{ Run(context.Context) error }); ok {
		parts = append(parts, r.Run) // the Redis store: lease renewal and retried ends
	}
	if ps, ok := s.admit.(pauseSharer); ok {
		parts = append(parts, func(ctx context.Context) error { return ps.SharePauses(ctx, s.circuits.PauseUntil) })
	}
	if s.ledger != nil {
		parts = append(parts, s.ledger.Run, s.cache.Run)
	}
	if s.routableStore() != nil {
		parts = append(parts, func(ctx context.Context) error { return s.runRoutable(ctx, s.reloadEvery) })
	}
	if s.reconciler != nil {
		parts = append(parts, s.reconciler.Run)
	}
	if feed, ok := s.accts.(accounts.ChangeFeed); ok && s.cache != nil {
		// Changes made through other replicas reach this one at once (Postgres LISTEN/NOTIFY);
		// the poll of cache.Run stays the fallback (docs/deploy.md).
		parts = append(parts, func(ctx context.Context) error { return s.cache.Follow(ctx, feed) })
	}
	errs := make(chan error, len(parts))
	var wg sync.WaitGroup
	for _, run := range parts {
		wg.Go(func() { errs <- run(ctx) })
	}
	wg.Wait()
	close(errs)
	var first error
	for err := range errs {
		if err != nil && first == nil {
			first = err
		}
	}
	return first
}

// pauseSharer is a shared admission store that carries provider pauses between replicas
// (admission.Redis).
type pauseSharer interface {
	PublishPause(provider string, until time.Time)
	SharePauses(ctx context.Context, apply func(provider string, until time.Time)) error
}

// Admission exposes the admission store (for observability and tests).
func (s *Server) Admission() admission.Store { return s.admit }

// Circuits exposes the circuit set (for observability and tests).
func (s *Server) Circuits() *circuit.Set { return s.circuits }

// Close releases the upstream connection pools (of the current configuration's deployments;
// Reload released the earlier ones') and the admission store's connections.
func (s *Server) Close() {
	s = s.live.Load()
	if c, ok := s.admit.(interface{ Close() error }); ok {
		_ = c.Close()
	}
	for _, c := range s.clients {
		c.Close()
	}
	s.closeBYOK()
}

// ServeHTTP mints the request id, sets it on the response, and dispatches. No panic reaches a
// caller: a panicking handler answers a typed error in the caller's dialect when nothing was
// written; after a model call's response started (relay.Answered) nothing is added to it (the
// relay ends a running stream with its terminal error event itself).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.live != nil { // nil only for a Server not built by New (package tests)
		s = s.live.Load()
	}
	s.serveHTTP(w, r)
}

// serveHTTP is ServeHTTP on snapshot s.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	rid := newRequestID()
	h := w.Header()
	h["X-Request-Id"] = []string{rid}
	h["Request-Id"] = []string{rid} // the Anthropic SDKs read this one
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.logf("panic serving %s %s (request %s): %v", r.Method, r.URL.Path, rid, v)
			if relay.Answered(h) {
				return // the response was started (a stream, or a body): nothing may be added to it
			}
			fe := &failure.Error{Class: failure.UpstreamError, Msg: "internal error"}
			relay.WriteError(w, relay.CodecFor(surfaceOf(r)), rid, fe, 0, nil)
		}
	}()
	s.mux.ServeHTTP(w, r)
}

// surfaceOf guesses the caller's dialect for errors outside a model call: Anthropic when the
// path is /v1/messages or the request carries anthropic-version.
func surfaceOf(r *http.Request) catalog.Dialect {
	if strings.HasPrefix(r.URL.Path, "/v1/messages") || r.Header.Get("Anthropic-Version") != "" {
		return catalog.Anthropic
	}
	return catalog.OpenAI
}

// allowedMethods are the methods each fixed path of the mux serves (its patterns above), for the
// 405 answer to another method; GET paths serve HEAD too (net/http's mux does).
var allowedMethods = map[string]string{
	"/v1/chat/completions":      http.MethodPost,
	"/v1/embeddings":            http.MethodPost,
	"/v1/responses":             http.MethodPost,
	"/v1/messages":              http.MethodPost,
	"/v1/messages/count_tokens": http.MethodPost,
	"/v1/images/generations":    http.MethodPost,
	"/v1/images/edits":          http.MethodPost,
	"/v1/route":                 http.MethodPost,
	"/v1/models":                "GET, HEAD",
	"/v1/generation":            "GET, HEAD",
	"/healthz":                  "GET, HEAD",
	"/readyz":                   "GET, HEAD",
	"/metrics":                  "GET, HEAD",
}

// allowOf is the Allow header of a path the gateway serves with other methods, "" for a path it
// does not serve at all.
func allowOf(path string) string {
	if a, ok := allowedMethods[path]; ok {
		return a
	}
	if strings.HasPrefix(path, "/v1/models/") {
		return "GET, HEAD"
	}
	return ""
}

// serveNotFound answers what no pattern of the mux serves: a path served with other methods is
// 405 invalid_request with Allow (RFC 9110 §15.5.6), any other path 404 invalid_request, in the
// dialect of surfaceOf, with the headers of every error (x-switchyard-attempts 0).
func (s *Server) serveNotFound(w http.ResponseWriter, r *http.Request) {
	if allow := allowOf(r.URL.Path); allow != "" {
		w.Header()["Allow"] = []string{allow}
		fe := &failure.Error{Class: failure.InvalidRequest, Status: http.StatusMethodNotAllowed,
			Msg: fmt.Sprintf("method %s is not allowed on %s; use %s", r.Method, r.URL.Path, allow)}
		relay.WriteError(w, relay.CodecFor(surfaceOf(r)), requestID(w), fe, 0, nil)
		return
	}
	fe := &failure.Error{Class: failure.InvalidRequest, Status: http.StatusNotFound, Msg: fmt.Sprintf("no such endpoint: %s %s", r.Method, r.URL.Path)}
	relay.WriteError(w, relay.CodecFor(surfaceOf(r)), requestID(w), fe, 0, nil)
}

// authenticate checks the caller's key (Authorization: Bearer or x-api-key) against the static
// keys in constant time. With auth.required false, a request without a key is anonymous; a
// request with a wrong key is still refused.
func (s *Server) authenticate(r *http.Request) (caller, error) {
	key := r.Header.Get("X-Api-Key")
	if key == "" {
		if a := r.Header.Get("Authorization"); len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
			key = strings.TrimSpace(a[7:])
		}
	}
	if key == "" {
		if !s.authRequired {
			return caller{allowOverride: true}, nil
		}
		return caller{}, &failure.Error{Class: failure.Authentication, Msg: "an API key is required: send Authorization: Bearer KEY or x-api-key: KEY"}
	}
	sum := sha256.Sum256([]byte(key))
	match := -1
	for i := range s.keys {
		if subtle.ConstantTimeCompare(sum[:], s.keys[i].hash[:]) == 1 {
			match = i
		}
	}
	if match < 0 && s.cache != nil {
		if k, ok := s.cache.Lookup(sum); ok {
			if k.EffectiveErr != nil { // fail closed: constraints that cannot be read are not ignored
				s.logf("key %s: effective settings: %v", k.ID, k.EffectiveErr)
				if fe, ok := k.EffectiveErr.(*failure.Error); ok && fe.Class == failure.GatewayError {
					return caller{}, fe
				}
				return caller{}, &failure.Error{Class: failure.Permission,
					Msg: "this API key's stored settings are not valid; an administrator must correct them"}
			}
			return caller{key: k.Name, keyID: k.ID, account: k.AccountID, layers: k.Layers,
				allowOverride: k.Effective.AllowRequestOverride.Value, settings: &k.Effective}, nil
		}
	}
	if match < 0 {
		if !s.authRequired && len(s.keys) == 0 {
			return caller{allowOverride: true}, nil // local use: any placeholder key the SDKs insist on is accepted
		}
		return caller{}, &failure.Error{Class: failure.Authentication, Msg: "the API key is not valid"}
	}
	k := &s.keys[match]
	return caller{key: k.name, keyID: k.name, account: k.account, allowOverride: k.allowOverride, layers: k.layers}, nil
}

func (s *Server) serveReady(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	if s.ready != nil {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := s.ready(ctx); err != nil {
			s.logf("readyz: store not reachable: %v", err)
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"status":"unavailable","reason":"store not reachable"}`))
			return
		}
	}
	_, _ = w.Write([]byte(`{"status":"ready"}`))
}

// errNoGeneration is the 404 of GET /v1/generation for a record that does not exist or is
// another account's. Shared: nothing mutates it.
var errNoGeneration = &failure.Error{Class: failure.InvalidRequest, Status: http.StatusNotFound, Param: "id", Msg: "no generation with that id"}

// serveGeneration answers GET /v1/generation?id= with the audit record (R-AUDIT-2). A record of
// another account, or none, is the same 404. Its errors carry the headers of every error
// (x-switchyard-error-code, x-switchyard-attempts 0: a read calls no provider); its 200 is the
// record, whose attempts are in the body.
func (s *Server) serveGeneration(w http.ResponseWriter, r *http.Request) {
	codec := relay.CodecFor(surfaceOf(r))
	rid := requestID(w)
	who, err := s.authenticate(r)
	if err != nil {
		relay.WriteError(w, codec, rid, failure.From(err), 0, nil)
		return
	}
	id := r.URL.Query().Get("id")
	if id == "" {
		relay.WriteError(w, codec, rid, &failure.Error{Class: failure.InvalidRequest, Param: "id", Msg: "the id query parameter is required"}, 0, nil)
		return
	}
	rec, err := s.rec.Lookup(r.Context(), id)
	// Only the account that made the request reads it; an anonymous caller (auth optional) reads
	// only anonymous records.
	if err != nil || rec.Account != who.account {
		if err != nil && !errors.Is(err, audit.ErrNotFound) {
			s.logf("generation lookup %q: %v", id, err)
		}
		relay.WriteError(w, codec, rid, errNoGeneration, 0, nil)
		return
	}
	body, err := jsonMarshal(rec)
	if err != nil {
		relay.WriteError(w, codec, rid, &failure.Error{Class: failure.UpstreamError, Msg: "internal error"}, 0, nil)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

// requestID is the id ServeHTTP minted for this response (its x-request-id header); reading it
// back from the header map avoids copying the request into a new context.
func requestID(w http.ResponseWriter) string {
	if v := w.Header()["X-Request-Id"]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// newRequestID mints "req_" + 24 hex digits: 12 of the Unix time in milliseconds (48 bits,
// the layout of UUIDv7 and ULID) and 12 of crypto randomness (48 bits). Ids minted later sort
// after, so every index of the audit keyed by request id takes new records at its end instead
// of on a random page (issue 15 item 1; docs/audit.md "Request ids"). The time an id shows is
// the request's arrival, which its caller knows and its audit record holds (created_at).
func newRequestID() string {
	var b [12]byte
	ms := uint64(time.Now().UnixMilli())
	for i := range 6 {
		b[i] = byte(ms >> (8 * (5 - i)))
	}
	_, _ = rand.Read(b[6:])
	var out [4 + 24]byte
	copy(out[:], "req_")
	hex.Encode(out[4:], b[:])
	return string(out[:])
}

var _ http.Handler = (*Server)(nil)
