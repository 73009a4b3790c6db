package litellm

// Output shapes, in the order of docs/configuration.md, with omitempty everywhere.
type outConfig struct {
	Routing     *outRouting      `yaml:"routing,omitempty"`
	Models      []*outModel      `yaml:"models"`
	Deployments []*outDeployment `yaml:"deployments"`
	Keys        []outKey         `yaml:"keys,omitempty"`
	Auth        *outAuth         `yaml:"auth,omitempty"`
}

type outRouting struct {
	Strategy     string       `yaml:"strategy,omitempty"`
	AttemptLimit int          `yaml:"attempt_limit,omitempty"`
	Timeouts     *outTimeouts `yaml:"timeouts,omitempty"`
	Circuit      *outCircuit  `yaml:"circuit,omitempty"`
}

type outTimeouts struct {
	Headers       string `yaml:"headers,omitempty"`
	StreamHeaders string `yaml:"stream_headers,omitempty"`
}

type outCircuit struct {
	Failures int    `yaml:"failures,omitempty"`
	Cooldown string `yaml:"cooldown,omitempty"`
}

type outModel struct {
	ID              string   `yaml:"id"`
	Aliases         []string `yaml:"aliases,omitempty,flow"`
	ContextWindow   int      `yaml:"context_window,omitempty"`
	MaxOutputTokens int      `yaml:"max_output_tokens,omitempty"`
}

type outDeployment struct {
	Name     string     `yaml:"name"`
	Provider string     `yaml:"provider,omitempty"`
	Dialect  string     `yaml:"dialect"`
	Platform string     `yaml:"platform,omitempty"`
	BaseURL  string     `yaml:"base_url,omitempty"`
	APIKey   string     `yaml:"api_key,omitempty"`
	AWS      *outAWS    `yaml:"aws,omitempty"`
	Vertex   *outVertex `yaml:"vertex,omitempty"`
	Azure    *outAzure  `yaml:"azure,omitempty"`
	Priority int        `yaml:"priority,omitempty"`
	Routes   []outRoute `yaml:"routes"`
}

// outAWS, outVertex and outAzure are the platform settings of contract.md round 3 (config.AWS,
// config.Vertex, config.Azure).
type outAWS struct {
	Region          string `yaml:"region"`
	AccessKeyID     string `yaml:"access_key_id,omitempty"`
	SecretAccessKey string `yaml:"secret_access_key,omitempty"`
	SessionToken    string `yaml:"session_token,omitempty"`
	Profile         string `yaml:"profile,omitempty"`
}

type outVertex struct {
	Project         string `yaml:"project"`
	Location        string `yaml:"location"`
	CredentialsFile string `yaml:"credentials_file,omitempty"`
}

type outAzure struct {
	APIVersion string `yaml:"api_version"`
}

type outRoute struct {
	Model         string    `yaml:"model"`
	UpstreamModel string    `yaml:"upstream_model,omitempty"`
	Price         *outPrice `yaml:"price,omitempty,flow"`
	Weight        float64   `yaml:"weight,omitempty"`
}

type outPrice struct {
	Input        float64   `yaml:"input"`
	Output       float64   `yaml:"output"`
	Image        float64   `yaml:"image,omitempty"`
	CacheRead    *float64  `yaml:"cache_read,omitempty"`
	CacheWrite   *float64  `yaml:"cache_write,omitempty"`
	CacheWrite1h *float64  `yaml:"cache_write_1h,omitempty"`
	Tiers        []outTier `yaml:"tiers,omitempty,flow"`
}

// outTier is a long-context tier of a price (LiteLLM's *_above_200k_tokens costs).
type outTier struct {
	AboveInputTokens int64    `yaml:"above_input_tokens"`
	Input            *float64 `yaml:"input,omitempty"`
	Output           *float64 `yaml:"output,omitempty"`
	CacheRead        *float64 `yaml:"cache_read,omitempty"`
	CacheWrite       *float64 `yaml:"cache_write,omitempty"`
}

type outKey struct {
	Name   string `yaml:"name"`
	Secret string `yaml:"secret"`
}

type outAuth struct {
	Required bool `yaml:"required"`
}
