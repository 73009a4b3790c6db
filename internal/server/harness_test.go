package server_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	anthropicopt "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	openaiopt "github.com/openai/openai-go/v3/option"

	"github.com/switchyard-gw/switchyard/internal/admission"
	"github.com/switchyard-gw/switchyard/internal/audit"
	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/fakeprovider"
	"github.com/switchyard-gw/switchyard/internal/server"
	"github.com/switchyard-gw/switchyard/internal/store/sqlite"
)

// fakeClock is an injectable clock for circuits and cooldowns.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// gateway is a running Switchyard with scripted emulated providers behind it.
type gateway struct {
	URL   string
	Srv   *server.Server
	Rec   *audit.Recorder
	Clock *fakeClock
	Fakes map[string]*fakeprovider.Provider
	// Admission is the gateway's admission store (the in-memory one admission.url memory://
	// builds, on Clock), for tests that read the limits' counters.
	Admission *admission.Memory
	// Store is the gateway's store (audit, accounts, keys, ledger): SQLite in memory.
	Store *sqlite.DB
	// Logs are the lines the gateway logged (Options.Logf), also sent to t.Logf.
	Logs *logBuffer
}

// fakeSpec names an emulated deployment: {{NAME}} in the YAML becomes its base URL.
type fakeSpec struct {
	Name    string
	Dialect catalog.Dialect
}

func oa(name string) fakeSpec { return fakeSpec{name, catalog.OpenAI} }
func an(name string) fakeSpec { return fakeSpec{name, catalog.Anthropic} }

// startGateway starts emulated providers, then the real server on a loopback listener with the
// configuration yaml (where {{NAME}} is replaced by each fake's base URL). Everything stops at
// the end of the test.
func startGateway(t testing.TB, yaml string, fakes ...fakeSpec) *gateway {
	t.Helper()
	st, err := sqlite.Open(context.Background(), "sqlite://:memory:")
	if err != nil {
		t.Fatalf("store: %v", err)
	}
	return startGatewayStore(t, st, yaml, fakes...)
}

// openaiClient is the official OpenAI SDK pointed at the gateway, retries off.
func (g *gateway) openaiClient(opts ...openaiopt.RequestOption) openai.Client {
	return openai.NewClient(append([]openaiopt.RequestOption{
		openaiopt.WithBaseURL(g.URL + "/v1/"), openaiopt.WithAPIKey("test-key"), openaiopt.WithMaxRetries(0),
	}, opts...)...)
}

// anthropicClient is the official Anthropic SDK pointed at the gateway, retries off.
func (g *gateway) anthropicClient(opts ...anthropicopt.RequestOption) anthropic.Client {
	return anthropic.NewClient(append([]anthropicopt.RequestOption{
		anthropicopt.WithBaseURL(g.URL), anthropicopt.WithAPIKey("test-key"), anthropicopt.WithMaxRetries(0),
	}, opts...)...)
}

// generation waits for the audit record of a request id: it is queued when the handler
// returns, which can be after an SDK has read the end of a stream.
func (g *gateway) generation(t *testing.T, id string) *audit.Record {
	t.Helper()
	return waitGeneration(t, g, id)
}

// twoDeployments is a catalog with one model of each dialect, each served by a primary (cheaper,
// tried first) and a backup. Authentication is off.
const twoDeployments = `
auth: {required: false}
routing:
  timeouts: {headers: 5s, stream_headers: 5s, stream_idle: 5s}
models:
  - id: gpt-4o-mini
    aliases: [mini]
  - id: claude-haiku-4-5
    aliases: [rp-haiku-4-5]
deployments:
  - name: oa-primary
    provider: openai
    dialect: openai
    base_url: "{{oa-primary}}"
    api_key: sk-house-primary
    routes: [{model: gpt-4o-mini, price: {input: 0.15, output: 0.6}}]
  - name: oa-backup
    provider: reseller
    dialect: openai
    base_url: "{{oa-backup}}"
    api_key: sk-house-backup
    routes: [{model: gpt-4o-mini, upstream_model: gpt-4o-mini-2024-07-18, price: {input: 0.2, output: 0.8}}]
  - name: an-primary
    provider: anthropic
    dialect: anthropic
    base_url: "{{an-primary}}"
    api_key: sk-ant-house-primary
    routes: [{model: claude-haiku-4-5, price: {input: 1, output: 5}}]
  - name: an-backup
    provider: cloud
    dialect: anthropic
    base_url: "{{an-backup}}"
    api_key: sk-ant-house-backup
    routes: [{model: claude-haiku-4-5, price: {input: 1.1, output: 5.5}}]
`

func startTwo(t testing.TB) *gateway {
	return startGateway(t, twoDeployments, oa("oa-primary"), oa("oa-backup"), an("an-primary"), an("an-backup"))
}
