package catalog

import "strings"

// Dialect is a wire format a deployment speaks and a surface callers use.
type Dialect string

// The dialects Switchyard speaks (R-DIALECT-1).
const (
	OpenAI    Dialect = "openai"    // OpenAI chat completions (base URL ends in /v1)
	Anthropic Dialect = "anthropic" // Anthropic messages (base URL is the root; /v1/messages is appended)
	// Responses is the OpenAI Responses API: a caller surface only. No deployment speaks it; it
	// is served from chat-completions and messages deployments through translation.
	Responses Dialect = "responses"
)

// Model is a catalog entry that callers name (R-MODEL). Routes lists every route that serves it,
// in catalog order (deployment order in the configuration).
type Model struct {
	ID      string
	Aliases []string
	// ContextWindowTokens is the model's context window; 0 means not filtered by context fit.
	ContextWindowTokens int
	// MaxOutputTokens is the default max_tokens when a request omits it and the reserve basis;
	// 0 means unknown (4096 is then used where a number is needed).
	MaxOutputTokens int
	// Price is the model's billing price (R-BILL-3); nil means bill at the serving route's price.
	Price *Price
	// Reasoning says the model accepts reasoning parameters (config models[].reasoning): a
	// translated request keeps its reasoning effort or thinking budget only then.
	Reasoning bool
	Routes    []*Route
}

// Deployment is one provider endpoint with a wire dialect and the routes it serves.
type Deployment struct {
	// Name is unique in the catalog; used in pins, provider.order, audit and headers.
	Name string
	// Provider is the provider id (defaults to Name).
	Provider string
	Dialect  Dialect
	// BaseURL is the provider's root as its own SDK takes it (OpenAI: ending in /v1).
	BaseURL string
	// APIKey is the gateway's credential for this deployment; never logged or shown.
	APIKey string
	// Priority orders equals: lower is tried first.
	Priority int
	// Tier is the supply tier (official, value, ...); Region is the default region of the
	// deployment's routes (Route.Region, region-aware failover).
	Tier   string
	Region string
	// Reserved keeps the deployment out of public traffic: its routes serve only requests made
	// through an Endpoint that lists it (R-KEY-6). They stay in Model.Routes, and plans of
	// public requests drop them with a reason.
	Reserved bool
	// BYOK marks a caller's own provider connection (R-KEY-5, R-POLICY), named "byok:<id>": it
	// is not in the catalog, its usage is billed by its provider to the caller (never by the
	// gateway: cost 0, billing_source "byok"), and it is outside the supply tiers.
	BYOK bool
	// Disabled is config disabled: true (issue 11 item 3): plans drop the deployment's routes
	// with reason "disabled" unless an operator's live override (the admin API) says otherwise.
	Disabled bool
	Routes   []*Route
	// Platform is the service behind the dialect (contract.md, round 3): PlatformOpenAI or
	// PlatformAzure for dialect openai; PlatformAnthropic, PlatformBedrock or PlatformVertex for
	// dialect anthropic. Never empty in a built catalog. The price catalog falls back to it when
	// Provider is not a catalog provider id (CatalogProvider).
	Platform Platform
	// AWS, Vertex and Azure are the platform's settings (config.AWS etc.); zero elsewhere.
	AWS    AWS
	Vertex Vertex
	Azure  Azure
	// Responses: the deployment serves the Responses API itself (an openai-dialect deployment
	// whose config says so, or takes the default), so /v1/responses passes through to it.
	Responses bool
}

// Platform is the service behind a deployment's dialect (config.Deployment.Platform).
type Platform string

// The platforms. The first two are the dialects' own APIs.
const (
	PlatformOpenAI    Platform = "openai"
	PlatformAnthropic Platform = "anthropic"
	PlatformBedrock   Platform = "bedrock"
	PlatformVertex    Platform = "vertex"
	PlatformAzure     Platform = "azure"
)

// AWS is a bedrock deployment's AWS settings (config.AWS): Region is always set; without
// AccessKeyID the AWS SDK's default credential chain applies.
type AWS struct {
	Region, AccessKeyID, SecretAccessKey, SessionToken, Profile string
}

// Vertex is a vertex deployment's Google Cloud settings (config.Vertex).
type Vertex struct {
	Project, Location, CredentialsFile string
}

// Azure is an azure deployment's settings (config.Azure): an empty APIVersion means Azure's
// v1 API.
type Azure struct {
	APIVersion string
}

// ServesResponses reports whether Azure serves the Responses API at these settings, the default
// of Deployment.Responses for platform azure (docs/platforms.md "Azure OpenAI"): the v1 API
// (POST {base_url}/openai/v1/responses) does, and so does a dated preview api_version from
// 2025-03-01-preview on (POST {base_url}/openai/responses?api-version=V); the dated GA versions
// (2024-10-21 and before) have no Responses route.
func (a Azure) ServesResponses() bool {
	v := a.APIVersion
	return v == "" || (strings.HasSuffix(v, "-preview") && v >= "2025-03-01-preview")
}

// PauseScope is the provider key under which the deployment's circuits and 429 pauses are
// kept (R-CIRCUIT-4): Provider for the house's deployments, Name for a BYOK connection, so a
// caller's own key hitting its rate limit never pauses the house's deployments of that provider,
// nor the reverse.
func (d *Deployment) PauseScope() string {
	if d.BYOK {
		return d.Name
	}
	return d.Provider
}

// Endpoint is a dedicated endpoint `<namespace>/<name>` (R-KEY-6): a name callers send as
// their model to be served by reserved deployments of Model first. It never serves another
// model.
type Endpoint struct {
	// ID is the endpoint's name, "<namespace>/<name>"; never a model id or alias.
	ID string
	// Model is the catalog model the endpoint routes and bills as; never nil.
	Model *Model
	// Reserved are the routes of Model on the endpoint's reserved deployments, in the order the
	// endpoint lists them: tried first, in this order.
	Reserved []*Route
	// Accounts may use the endpoint; empty means every account.
	Accounts []string
	// PublicFallback lets a request fall back to Model's public (non-reserved) routes after
	// the reserved ones.
	PublicFallback bool
}

// Allows reports whether a caller of account may use the endpoint: Accounts is empty or
// names it. To any other caller the endpoint does not exist.
func (e *Endpoint) Allows(account string) bool {
	if len(e.Accounts) == 0 {
		return true
	}
	for _, a := range e.Accounts {
		if a == account {
			return true
		}
	}
	return false
}

// Lists reports whether rt is one of the endpoint's reserved routes.
func (e *Endpoint) Lists(rt *Route) bool {
	for _, r := range e.Reserved {
		if r == rt {
			return true
		}
	}
	return false
}

// Route is one deployment serving one catalog model.
type Route struct {
	Deployment *Deployment
	// Model is the catalog model id this route serves.
	Model string
	// UpstreamModel is the id sent to the provider (defaults to Model).
	UpstreamModel string
	// Price is the route's price: the configured one, else (pricing.catalog) the price
	// catalog's for its provider and upstream model (Price.Source); nil means unpriced.
	Price *Price
	// Weight is the relative weight among equals (default 1).
	Weight float64
	// ContextWindowTokens overrides the model's window when non-zero. With both unset, the
	// price catalog's window for the route's provider and upstream model (ContextWindowSource
	// "catalog").
	ContextWindowTokens int
	// ContextWindowSource says where the window in force comes from: "config" (the route's or
	// the model's), "catalog" (ContextWindowTokens was filled from the price catalog) or
	// "none" (not filtered by context fit). "" for a Route built in Go.
	ContextWindowSource string
	// UpstreamSnapshots maps a snapshot date ("YYYYMMDD", either spelling of config normalized)
	// to the upstream id sent for it; nil when the route defines none (R-MODEL-3, config
	// upstream_snapshots).
	UpstreamSnapshots map[string]string
	// UpstreamSnapshotPattern is the upstream id of other dated snapshots, "{date}" replaced by
	// the caller's date as written; "" when the route has none (config upstream_snapshot_pattern).
	UpstreamSnapshotPattern string
	// Region is where the route serves: the route's region, else its deployment's; "" when
	// neither is set. Failover after an attempt fails moves inside or across regions by the
	// failure class (plan.Failover).
	Region string
	// Disabled is the route's config disabled: true (see Deployment.Disabled).
	Disabled bool
}

// Protocol is the kind of call a request makes (R-ADMIT-5): a model call (chat completions or
// messages, either surface, translated as needed), embeddings, or a token count. The Responses
// surface is served by model calls.
type Protocol uint8

// The protocols.
const (
	ProtocolModel       Protocol = iota // chat completions / messages (and the Responses surface)
	ProtocolEmbeddings                  // OpenAI-dialect deployments only
	ProtocolCountTokens                 // Anthropic-dialect deployments only
	// ProtocolImages is POST /v1/images/generations and ProtocolImageEdits POST
	// /v1/images/edits (multipart/form-data): OpenAI-dialect deployments only (docs/routing.md
	// "Images").
	ProtocolImages
	ProtocolImageEdits
	NumProtocols
)

// String names the protocol as plans show it.
func (p Protocol) String() string {
	switch p {
	case ProtocolEmbeddings:
		return "embeddings"
	case ProtocolCountTokens:
		return "count_tokens"
	case ProtocolImages:
		return "images"
	case ProtocolImageEdits:
		return "image_edits"
	}
	return "chat"
}

// Supports reports whether the deployment can serve protocol p: every deployment serves model
// calls (through translation when needed); embeddings and images need the OpenAI dialect and
// token counts the Anthropic one.
func (d *Deployment) Supports(p Protocol) bool {
	switch p {
	case ProtocolEmbeddings, ProtocolImages, ProtocolImageEdits:
		return d.Dialect == OpenAI
	case ProtocolCountTokens:
		return d.Dialect == Anthropic
	}
	return true
}
