package config

import "time"

// Config is the whole configuration file (contract.md, "Configuration file"). Field comments give
// units and defaults; applyDefaults fills zero values and Validate rejects bad ones.
type Config struct {
	Server      Server       `yaml:"server"`
	Store       Store        `yaml:"store"`
	Admission   Admission    `yaml:"admission"`
	Routing     Routing      `yaml:"routing"`
	Models      []Model      `yaml:"models"`
	Deployments []Deployment `yaml:"deployments"`
	// Endpoints are the dedicated endpoints (R-KEY-6): names a caller sends as its model to
	// use a model's reserved deployments first.
	Endpoints []Endpoint `yaml:"endpoints"`
	Keys      []Key      `yaml:"keys"`
	// Accounts carry account-level limits (R-BILL-1), enforced together with each key's own.
	// An account that no entry names has no account-level limits.
	Accounts []Account `yaml:"accounts"`
	Admin    Admin     `yaml:"admin"`
	Auth     Auth      `yaml:"auth"`
	// Log and Tracing configure the logs and the OpenTelemetry traces (observability.go).
	Log     Log     `yaml:"log"`
	Tracing Tracing `yaml:"tracing"`
	// Pricing configures the built-in price catalog (docs/pricing.md).
	Pricing Pricing `yaml:"pricing"`

	// File is the path the configuration was read from ("" for built-in defaults). Not in YAML.
	File string `yaml:"-"`

	// pos records where each value came from (file:line by path) and which values were written
	// explicitly; nil for a Config built in Go. Validate uses it to prefix problems with file:line,
	// applyDefaults to tell an explicit zero (rejected) from an absent field (defaulted).
	pos *positions
}

// Server configures the listener.
type Server struct {
	// Listen is HOST:PORT (default 127.0.0.1:8080).
	Listen string `yaml:"listen"`
	// MaxBodyBytes caps a request body (default 32 MiB); larger is 413 request_too_large.
	MaxBodyBytes int64 `yaml:"max_body_bytes"`
	// ShutdownGrace is how long in-flight requests may finish after SIGTERM (default 30s).
	ShutdownGrace Duration `yaml:"shutdown_grace"`
	// Name is the gateway's own name (default "switchyard"): the provider a closed dedicated
	// endpoint (public_fallback: false) shows in x-switchyard-provider and provider_metadata,
	// whichever route served (seed 000; issue 11 item 7).
	Name string `yaml:"name"`
	// BodyTimeout is how long a caller has, from the end of its request headers, to send the
	// whole request body (default 30s; docs/behaviour.md "Request limits"). Past it the read
	// fails and a caller still connected gets 400 invalid_request; a request without a body
	// is not affected, nor is the time spent answering (streams).
	BodyTimeout Duration `yaml:"body_timeout"`
	// MaxInflightBodyBytes caps the bytes held by the bodies of all requests in flight together
	// (default 256 MiB): each body counts its Content-Length (a chunked body, the bytes received
	// so far in 64 KiB steps) from before it is read until its request ends. A request that
	// would pass the cap is refused at once with 503 gateway_error and retry-after (413
	// request_too_large when its body alone is over the cap).
	MaxInflightBodyBytes int64 `yaml:"max_inflight_body_bytes"`
	// MaxHeaderBytes caps a request's header block, request line included (default 1 MiB; Go's
	// net/http allows 4 KiB of slack over it). Larger is 431 request_too_large in the caller's
	// dialect.
	MaxHeaderBytes int `yaml:"max_header_bytes"`
}

// Store selects the embedded or shared store: sqlite://REL, sqlite:///ABS, postgres://...
// Default sqlite://switchyard.db.
type Store struct {
	URL string `yaml:"url"`
	// ReloadInterval is how often the stored keys and accounts are reloaded from the store, so
	// that changes made through another replica's admin API take effect here (default 5s).
	// Changes made through this process's admin API take effect at once.
	ReloadInterval Duration `yaml:"reload_interval"`
	// SecretKey, when set (normally "${SWITCHYARD_SECRET_KEY}", at least 16 bytes), encrypts the
	// API keys of BYOK connections in the store (AES-256-GCM, internal/secret). Empty stores them
	// in the clear. Changing it makes connections sealed under the old one unusable.
	SecretKey string `yaml:"secret_key"`
	// AuditRetention is how long audit records are kept, from their created_at (default 30d;
	// "0" or "off" keeps them forever): older ones are deleted in the background, in small
	// batches (audit.Prune). The ledger is never deleted. Read at start.
	AuditRetention Retention `yaml:"audit_retention"`
	// LedgerJournal is the directory of the ledger's crash journals (docs/deploy.md "The ledger
	// journal"): a keyed request's reserve is secured at its commit (the first byte to the
	// caller) by one append to this process's journal file there, instead of a wait for the
	// store's commit; a process killed before its ledger batch was committed leaves its
	// reserves there, and the next process started on the directory, or any live replica
	// sharing it, writes them to the ledger for the crash reconciliation. Empty: next to the
	// database file for sqlite ("<file>-ledger"), "switchyard-ledger" in the working directory
	// for postgres (if it cannot be created, the process logs why and runs with "off"). "off":
	// no journal; the commit waits for the store's group commit, which also covers the loss of
	// the host, at the cost of the store's round trip on every keyed request. Read at start.
	LedgerJournal string `yaml:"ledger_journal"`
}

// Admission selects the admission store: memory:// (default) or redis://...
type Admission struct {
	URL string `yaml:"url"`
	// Redis tunes the redis:// and rediss:// store (docs/deploy.md "The Redis admission
	// store"); it is ignored for memory://.
	Redis RedisAdmission `yaml:"redis"`
}

// RedisAdmission tunes the shared admission store. Zero (omitted) fields take the defaults.
type RedisAdmission struct {
	// Timeout bounds every call to Redis, the wait for a pooled connection included (default
	// 100ms); past it a metered request is refused (fail closed) and an unmetered one is
	// admitted on the replica's own counters (docs/limits.md "Degraded mode").
	Timeout Duration `yaml:"timeout"`
	// LeaseTTL is how long a dead replica's concurrency slots and reserves outlive it (default
	// 30s; renewed every LeaseTTL/3 while alive); at least 3s.
	LeaseTTL Duration `yaml:"lease_ttl"`
	// Prefix starts every key the store writes (default "sy:"): gateways sharing one Redis
	// database need different prefixes.
	Prefix string `yaml:"prefix"`
	// PoolSize is the most connections a replica opens to Redis (default 256); MinIdleConns
	// how many it keeps open while idle (default 16), so a burst does not dial first.
	PoolSize     int `yaml:"pool_size"`
	MinIdleConns int `yaml:"min_idle_conns"`
}

// Routing configures ordering, deadlines and circuits.
type Routing struct {
	// Strategy is price (default), latency, throughput, reliability, balanced or priority.
	Strategy   string     `yaml:"strategy"`
	PriceBlend PriceBlend `yaml:"price_blend"`
	Timeouts   Timeouts   `yaml:"timeouts"`
	Circuit    Circuit    `yaml:"circuit"`
	// AttemptLimit caps the physical upstream attempts of one request, model fallbacks included
	// (R-FAIL-10); 0 (the default) is unlimited.
	AttemptLimit int `yaml:"attempt_limit"`
}

// PriceBlend weighs input and output prices for the price strategy (default 3:1, R-ORDER-2).
type PriceBlend struct {
	Input  float64 `yaml:"input"`
	Output float64 `yaml:"output"`
}

// Timeouts are the upstream deadlines (R-FAIL-5).
type Timeouts struct {
	// Headers is the non-streaming response-headers deadline (default 60s).
	Headers Duration `yaml:"headers"`
	// StreamHeaders is the streaming response-headers deadline (default 20s).
	StreamHeaders Duration `yaml:"stream_headers"`
	// StreamIdle is the longest gap between two upstream stream frames (keep-alives count) before
	// the attempt is a hang (default 60s). Before commit it fails over; after, it truncates.
	StreamIdle Duration `yaml:"stream_idle"`
	// FirstOutput is, on a stream, the longest time from the response headers to the first
	// semantic output (default 30s). Lifecycle frames (pings, keep-alive comments, unknown
	// events) do not stop it: a provider that sends only those is a hang (R-CIRCUIT-5) and,
	// before commit, fails over.
	FirstOutput Duration `yaml:"first_output"`
}

// Circuit configures the breakers (R-CIRCUIT-1, R-CIRCUIT-7).
type Circuit struct {
	// Failures is the count of consecutive failover-eligible failures that opens a circuit (default 2).
	Failures int `yaml:"failures"`
	// Cooldown is how long an open circuit stays open before one probe (default 30s).
	Cooldown Duration `yaml:"cooldown"`
}

// Price is USD per million tokens, USD per image returned by the images endpoints, and USD per
// server-side web search (contract.md "Additions pinned in round 4"; docs/pricing.md). The cost
// of an attempt is uncached input x Input + cache reads x CacheRead + cache writes x CacheWrite
// (one-hour writes x CacheWrite1h) + output x Output (+ images x Image) (+ web searches x
// WebSearch).
type Price struct {
	Input  float64 `yaml:"input"`
	Output float64 `yaml:"output"`
	// Image is USD per image an images endpoint returns (docs/routing.md "Images"): for models
	// whose provider bills by the image and reports no token usage (dall-e-3); 0 bills tokens
	// only.
	Image float64 `yaml:"image"`
	// WebSearch is USD per web search the provider ran and reported (Anthropic's web search
	// server tool, the Responses API's web_search tool; docs/pricing.md "Server-tool calls"):
	// Anthropic's and OpenAI's 10 USD per 1,000 searches is 0.01. 0 bills none; tiers leave it.
	WebSearch float64 `yaml:"web_search"`
	// CacheRead is USD per million cache-read input tokens; nil (left out) bills them at Input.
	CacheRead *float64 `yaml:"cache_read"`
	// CacheWrite is USD per million cache-write input tokens (Anthropic's 5-minute writes);
	// nil bills them at Input.
	CacheWrite *float64 `yaml:"cache_write"`
	// CacheWrite1h is USD per million one-hour cache-write tokens (Anthropic); nil is
	// CacheWrite.
	CacheWrite1h *float64 `yaml:"cache_write_1h"`
	// Tiers are long-context tiers: when an attempt's total input (uncached + cache reads +
	// cache writes) is above a tier's AboveInputTokens, every token of the attempt is priced at
	// the tier with the highest such threshold. Thresholds must be distinct and > 0.
	Tiers []PriceTier `yaml:"tiers"`
}

// PriceTier is a long-context tier of a Price; a field left out (nil) keeps the base price's
// value. Prices in USD per million tokens.
type PriceTier struct {
	AboveInputTokens int64    `yaml:"above_input_tokens"`
	Input            *float64 `yaml:"input"`
	Output           *float64 `yaml:"output"`
	CacheRead        *float64 `yaml:"cache_read"`
	CacheWrite       *float64 `yaml:"cache_write"`
	CacheWrite1h     *float64 `yaml:"cache_write_1h"`
}

// Pricing configures the built-in price catalog (docs/pricing.md).
type Pricing struct {
	// Catalog, when true (the default; nil is true), gives a route without a price the
	// catalog's price for its deployment's provider and upstream model, and a route whose own
	// and whose model's context_window are unset the catalog's window.
	Catalog *bool `yaml:"catalog"`
	// CatalogFile replaces the built-in catalog with a file in the same format
	// (internal/pricedata/prices.json); a reload reads it again. "" uses the built-in one.
	CatalogFile string `yaml:"catalog_file"`
}

// CatalogOn reports whether the price catalog is used (pricing.catalog, default true).
func (p *Pricing) CatalogOn() bool { return p.Catalog == nil || *p.Catalog }

// Model is a catalog entry.
type Model struct {
	ID              string   `yaml:"id"`
	Aliases         []string `yaml:"aliases"`
	ContextWindow   int      `yaml:"context_window"`    // tokens; 0 = not filtered by context fit
	MaxOutputTokens int      `yaml:"max_output_tokens"` // tokens; default max_tokens and reserve basis
	Price           *Price   `yaml:"price"`             // optional billing price (R-BILL-3)
	// Reasoning says the model accepts reasoning parameters (OpenAI reasoning_effort;
	// Anthropic thinking and output_config.effort). Default false: a translated request
	// (R-DIALECT-2) drops them and lists them as dropped parameters instead of sending a
	// parameter the model refuses. Same-dialect requests pass through unchanged either way.
	Reasoning bool `yaml:"reasoning"`
}

// Deployment is one provider endpoint.
type Deployment struct {
	Name     string `yaml:"name"`
	Provider string `yaml:"provider"` // defaults to Name
	Dialect  string `yaml:"dialect"`  // openai | anthropic
	BaseURL  string `yaml:"base_url"`
	APIKey   string `yaml:"api_key"`
	Priority int    `yaml:"priority"`
	Tier     string `yaml:"tier"`
	Region   string `yaml:"region"`
	// Reserved keeps the deployment out of public traffic: it serves only requests made
	// through a dedicated endpoint that lists it (R-KEY-6). Default false.
	Reserved bool `yaml:"reserved"`
	// Disabled takes the deployment out of routing (issue 11 item 3, seed 001 "a routable
	// state"): plans drop its routes with reason "disabled" and never attempt them. The admin
	// API (PATCH /admin/v1/deployments/{name}) overrides it live on every replica. Default false.
	Disabled bool    `yaml:"disabled"`
	Routes   []Route `yaml:"routes"`
	// Platform names the service behind the dialect (contract.md, round 3): "anthropic" (the
	// default for dialect anthropic), "bedrock" or "vertex" (Claude on Amazon Bedrock or Google
	// Vertex AI, dialect anthropic), "openai" (the default for dialect openai) or "azure" (Azure
	// OpenAI, dialect openai). For bedrock and vertex, base_url is optional (derived from the
	// region or location) and, when set, replaces only the scheme and host; for azure it is the
	// resource endpoint (https://RESOURCE.openai.azure.com).
	Platform string `yaml:"platform"`
	// AWS configures platform bedrock; nil elsewhere.
	AWS *AWS `yaml:"aws"`
	// Vertex configures platform vertex; nil elsewhere.
	Vertex *Vertex `yaml:"vertex"`
	// Azure configures platform azure; nil elsewhere (and then Azure's v1 API is used).
	Azure *Azure `yaml:"azure"`
	// Responses says whether an openai-dialect deployment serves the Responses API, so that
	// /v1/responses requests pass through to it instead of being translated to chat completions
	// (R-DIALECT-3). Nil takes the default: true for OpenAI's own API (https://api.openai.com/v1)
	// and for platform azure on its v1 API or a preview api_version from 2025-03-01-preview on
	// (catalog.Azure.ServesResponses), false for other openai-dialect services and for a GA
	// Azure api_version (2024-10-21).
	Responses *bool `yaml:"responses"`
}

// Platform values (Deployment.Platform).
const (
	PlatformOpenAI    = "openai"
	PlatformAnthropic = "anthropic"
	PlatformBedrock   = "bedrock"
	PlatformVertex    = "vertex"
	PlatformAzure     = "azure"
)

// AWS is a bedrock deployment's AWS settings. Region is required. Without AccessKeyID the AWS
// SDK's default credential chain applies (environment, shared config and Profile, web
// identity, container and instance roles). An api_key on a bedrock deployment is a Bedrock API
// key, sent as a bearer token instead of a SigV4 signature.
type AWS struct {
	Region          string `yaml:"region"`
	AccessKeyID     string `yaml:"access_key_id"`
	SecretAccessKey string `yaml:"secret_access_key"`
	SessionToken    string `yaml:"session_token"`
	Profile         string `yaml:"profile"`
}

// Vertex is a vertex deployment's Google Cloud settings. Project and Location are required
// (Location "global" is allowed). Without CredentialsFile, Google's Application Default
// Credentials apply.
type Vertex struct {
	Project         string `yaml:"project"`
	Location        string `yaml:"location"`
	CredentialsFile string `yaml:"credentials_file"`
}

// Azure is an azure deployment's settings. With APIVersion the deployments API
// (/openai/deployments/{upstream_model}/...?api-version=APIVersion, the key in api-key) is
// used; without it, Azure's v1 API (/openai/v1/...).
type Azure struct {
	APIVersion string `yaml:"api_version"`
}

// Endpoint is a dedicated endpoint (R-KEY-6): a caller who sends ID as its model is served by
// the reserved Deployments first, in the order listed, then (PublicFallback) by the public
// deployments of Model. The request is billed and routed as Model, never another model.
type Endpoint struct {
	// ID is "<namespace>/<name>", e.g. "acme/chat"; it must not equal a model id or alias.
	ID string `yaml:"id"`
	// Model is the catalog model id the endpoint serves (not an alias).
	Model string `yaml:"model"`
	// Deployments are the reserved deployments (reserved: true) tried first, in this order;
	// each must route Model.
	Deployments []string `yaml:"deployments"`
	// Accounts are the accounts whose keys may use the endpoint; empty means every account.
	// To any other caller the endpoint does not exist (404 model_unavailable).
	Accounts []string `yaml:"accounts"`
	// PublicFallback, after defaults never nil, lets the request fall back to the public
	// (non-reserved) deployments of Model after the reserved ones. Default true.
	PublicFallback *bool `yaml:"public_fallback"`
}

// Fallback reports public_fallback after defaults (true when unset).
func (e *Endpoint) Fallback() bool { return e.PublicFallback == nil || *e.PublicFallback }

// Route is a deployment serving a catalog model.
type Route struct {
	Model         string  `yaml:"model"`
	UpstreamModel string  `yaml:"upstream_model"` // defaults to Model
	Price         *Price  `yaml:"price"`
	Weight        float64 `yaml:"weight"`         // default 1
	ContextWindow int     `yaml:"context_window"` // tokens; overrides the model's
	// UpstreamSnapshots maps a dated snapshot the caller names (the date, "YYYYMMDD" or
	// "YYYY-MM-DD"; both spellings of one date are the same key) to the id this route sends
	// upstream for it (R-MODEL-3). It wins over UpstreamSnapshotPattern.
	UpstreamSnapshots map[string]string `yaml:"upstream_snapshots"`
	// UpstreamSnapshotPattern is the upstream id of any other dated snapshot: "{date}" (exactly
	// once) is replaced by the caller's date as written, e.g.
	// "anthropic.claude-sonnet-4-5-{date}-v1:0". Empty (and no map entry): the caller's dated
	// id (the catalog model id plus the caller's date suffix) is sent.
	UpstreamSnapshotPattern string `yaml:"upstream_snapshot_pattern"`
	// Region is where this route serves (for region-aware failover, docs/routing.md);
	// defaults to the deployment's region.
	Region string `yaml:"region"`
	// Disabled takes this one route out of routing, as Deployment.Disabled does for all of a
	// deployment's routes (PATCH /admin/v1/deployments/{name}/routes/{model} overrides it).
	Disabled bool `yaml:"disabled"`
}

// Key is a static API key.
type Key struct {
	Name    string `yaml:"name"`
	Secret  string `yaml:"secret"`
	Account string `yaml:"account"` // default "default"
	// AllowRequestOverride lets this key's requests set the ordering strategy (a
	// `model:@strategy` suffix or provider.sort, R-SUFFIX-2). Default false: such a request is
	// a typed 400. Anonymous requests (auth.required false, no key) are always allowed.
	AllowRequestOverride bool `yaml:"allow_request_override"`
	// Limits are this key's own limits (docs/limits.md); zero fields are no limit.
	Limits Limits `yaml:"limits"`
}

// Account is an account's settings in the file: today only its limits.
type Account struct {
	// ID is the account id keys name in keys[].account.
	ID string `yaml:"id"`
	// Limits apply to all the account's keys together, on top of each key's own.
	Limits Limits `yaml:"limits"`
}

// Limits are one layer's limits (R-BILL-1, docs/limits.md). Zero (or absent) is no limit.
type Limits struct {
	// RPM is requests per one-minute window.
	RPM int `yaml:"rpm"`
	// TPM is tokens per one-minute window (input estimate plus max output, settled to usage).
	TPM int `yaml:"tpm"`
	// Concurrency is requests in flight at once.
	Concurrency int `yaml:"concurrency"`
	// BudgetUSD is the spend allowed per BudgetPeriod, in USD (kept as integer micro-USD).
	BudgetUSD float64 `yaml:"budget_usd"`
	// BudgetPeriod is day, month or total (never resets); "" is month. See Period.
	BudgetPeriod string `yaml:"budget_period"`
}

// Period reports budget_period with its default: "month" when unset.
func (l *Limits) Period() string {
	if l.BudgetPeriod == "" {
		return "month"
	}
	return l.BudgetPeriod
}

// Admin configures the admin API; an empty Token turns it off.
type Admin struct {
	Token string `yaml:"token"`
}

// Auth configures caller authentication.
type Auth struct {
	// Required defaults to true; false lets requests without a key through (local use only).
	Required *bool `yaml:"required"`
}

// Duration is a time.Duration written as a Go duration string ("20s") in YAML.
type Duration time.Duration

// D returns the duration.
func (d Duration) D() time.Duration { return time.Duration(d) }
