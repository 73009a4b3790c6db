package server_test

import (
	"context"
	"fmt"
	"net"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchyard-gw/switchyard/internal/admission"
	"github.com/switchyard-gw/switchyard/internal/audit"
	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/config"
	"github.com/switchyard-gw/switchyard/internal/fakeprovider"
	"github.com/switchyard-gw/switchyard/internal/server"
	"github.com/switchyard-gw/switchyard/internal/store"
	"github.com/switchyard-gw/switchyard/internal/store/postgres"
	"github.com/switchyard-gw/switchyard/internal/store/sqlite"
	"github.com/switchyard-gw/switchyard/internal/store/storetest"
)

// storeBackend names a store the gateway can run on and opens a fresh, empty one for a test.
type storeBackend struct {
	name string
	// open returns a new store for t; it skips t when the backend is not available. The
	// store is closed by startGatewayStore.
	open func(t *testing.T) store.Store
}

// storeBackends are the stores of contract.md "Store": SQLite in memory, and Postgres in a
// schema of its own on the server named by SWITCHYARD_TEST_POSTGRES_URL (skipped, with
// storetest.SkipMessage, when it is unset).
var storeBackends = []storeBackend{
	{"sqlite", func(t *testing.T) store.Store {
		st, err := sqlite.Open(context.Background(), "sqlite://:memory:")
		if err != nil {
			t.Fatalf("sqlite store: %v", err)
		}
		return st
	}},
	{"postgres", func(t *testing.T) store.Store {
		url := storetest.PostgresURL(t) // its cleanup drops the schema after startGatewayStore's closes the store
		st, err := postgres.Open(context.Background(), url)
		if err != nil {
			t.Fatalf("postgres store: %v", err)
		}
		return st
	}},
}

// startGatewayStore is startGateway on the store st instead of a fresh in-memory SQLite one:
// emulated providers, then the real server on a loopback listener with the configuration yaml
// ({{NAME}} replaced by each fake's base URL), its audit, accounts, keys and ledger in st.
// g.Store is st when st is a *sqlite.DB, else nil. Everything, st included, stops at the end of
// the test.
func startGatewayStore(t testing.TB, st store.Store, yaml string, fakes ...fakeSpec) *gateway {
	t.Helper()
	return startGatewayFull(t, st, nil, nil, yaml, fakes...)
}

// startGatewayWith is startGatewayStore with the admission store admit (nil: the one
// admission.url names); g.Admission is nil unless the store is the in-memory one.
func startGatewayWith(t testing.TB, st store.Store, admit admission.Store, yaml string, fakes ...fakeSpec) *gateway {
	t.Helper()
	return startGatewayFull(t, st, admit, nil, yaml, fakes...)
}

// startGatewayOpts is startGatewayStore with tune, when not nil, changing the server's options
// before server.New.
func startGatewayOpts(t testing.TB, st store.Store, yaml string, tune func(*server.Options), fakes ...fakeSpec) *gateway {
	t.Helper()
	return startGatewayFull(t, st, nil, tune, yaml, fakes...)
}

// startGatewayFull is startGatewayWith and startGatewayOpts in one.
func startGatewayFull(t testing.TB, st store.Store, admit admission.Store, tune func(*server.Options), yaml string, fakes ...fakeSpec) *gateway {
	t.Helper()
	g := &gateway{Clock: &fakeClock{now: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}, Fakes: map[string]*fakeprovider.Provider{}}
	closeStore := func() { _ = st.Close() }
	for _, f := range fakes {
		p := fakeprovider.New(f.Name, f.Dialect)
		ts := httptest.NewServer(p)
		t.Cleanup(ts.Close)
		base := ts.URL
		if f.Dialect == catalog.OpenAI {
			base += "/v1"
		}
		yaml = strings.ReplaceAll(yaml, "{{"+f.Name+"}}", base)
		g.Fakes[f.Name] = p
	}
	cfg, err := config.Parse("test.yaml", []byte(yaml))
	if err != nil {
		closeStore()
		t.Fatalf("config: %v", err)
	}
	cat, err := catalog.New(cfg)
	if err != nil {
		closeStore()
		t.Fatalf("catalog: %v", err)
	}
	if db, ok := st.(*sqlite.DB); ok {
		g.Store = db
	}
	g.Rec = audit.NewRecorder(st, audit.Options{FlushInterval: 5 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = g.Rec.Run(ctx) }()
	g.Logs = new(logBuffer)
	logf := func(format string, args ...any) {
		t.Logf(format, args...)
		g.Logs.add(fmt.Sprintf(format, args...))
	}
	opts := server.Options{Recorder: g.Rec, Ready: st.Ping, Now: g.Clock.Now, Logf: logf,
		Accounts: st, Admission: admit}
	if _, ok := st.(*postgres.DB); ok {
		// Postgres secures reserves in a ledger journal, as `switchyard serve` does by default
		// (store.ledger_journal); the in-memory SQLite store has none and waits for the group
		// commit, so the tests run on both stores cover both ways of securing a reserve.
		opts.LedgerJournal = t.TempDir()
	}
	if tune != nil {
		tune(&opts)
	}
	g.Srv, err = server.New(cfg, cat, opts)
	if err != nil {
		cancel()
		<-done
		closeStore()
		t.Fatalf("server: %v", err)
	}
	g.Admission, _ = g.Srv.Admission().(*admission.Memory) // admission.url memory://, seeded from the store
	statsDone := make(chan struct{})
	go func() { defer close(statsDone); _ = g.Srv.Run(ctx) }()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		g.Srv.Close()
		cancel()
		<-done
		<-statsDone
		closeStore()
		t.Fatal(err)
	}
	hs := g.Srv.HTTPServer() // as switchyard serve runs it
	go func() { _ = hs.Serve(g.Srv.Listener(ln)) }()
	g.URL = "http://" + ln.Addr().String()
	t.Cleanup(func() {
		sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer scancel()
		_ = hs.Shutdown(sctx)
		g.Srv.Close()
		cancel()
		<-done
		<-statsDone
		closeStore()
	})
	return g
}

// logBuffer keeps the gateway's log lines for tests that check what is (and is not) logged.
type logBuffer struct {
	mu    sync.Mutex
	lines []string
}

func (b *logBuffer) add(line string) {
	b.mu.Lock()
	b.lines = append(b.lines, line)
	b.mu.Unlock()
}

// String is every line logged so far, one per line.
func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Join(b.lines, "\n")
}
