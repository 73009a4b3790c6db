// Package litellm converts a LiteLLM proxy config.yaml into a Switchyard configuration
// (`switchyard import litellm config.yaml > switchyard.yaml`; docs/import-litellm.md).
//
// model_list entries become catalog models (model_name) and deployments (litellm_params:
// the provider prefix of model picks the dialect and the default base URL, api_base and
// api_key are kept, os.environ/VAR becomes ${VAR}, order becomes priority, weight the route
// weight, model_info prices and token limits the route price and the model's limits);
// router_settings (and the same keys in litellm_settings) map routing_strategy,
// allowed_fails/cooldown_time, num_retries and timeouts; general_settings.master_key becomes a
// static key. Everything without an equivalent is returned as a Note saying why, never
// dropped silently. The package is pure: bytes in, bytes and notes out.
package litellm

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// MaxInputBytes caps the LiteLLM file Convert reads.
const MaxInputBytes = 4 << 20

// Note is one thing of the LiteLLM file that was not mapped as written: Path names it
// ("model_list[2].litellm_params.rpm", "router_settings.fallbacks"), Msg says why and what
// to do instead.
type Note struct {
	Path string
	Msg  string
}

func (n Note) String() string { return n.Path + ": " + n.Msg }

// provider is what a LiteLLM provider prefix maps to.
type provider struct {
	id      string // Switchyard provider id
	dialect string // openai | anthropic
	baseURL string // default base URL; "" requires api_base
	keyEnv  string // LiteLLM's default API key variable
	// apiSuffix is appended to api_base (Ollama: /v1).
	apiSuffix string
	// platform is the service behind the dialect (config.Deployment.Platform) when it is not
	// the dialect's own API: bedrock, vertex or azure; "" otherwise.
	platform string
}

// providers are the LiteLLM prefixes with an OpenAI- or Anthropic-compatible API that takes a
// bearer (or x-api-key) credential.
var providers = map[string]provider{
	"openai":       {"openai", "openai", "https://api.openai.com/v1", "OPENAI_API_KEY", "", ""},
	"anthropic":    {"anthropic", "anthropic", "https://api.anthropic.com", "ANTHROPIC_API_KEY", "", ""},
	"azure":        {"azure", "openai", "", "AZURE_API_KEY", "", "azure"},
	"bedrock":      {"bedrock", "anthropic", "", "", "", "bedrock"},
	"vertex_ai":    {"vertex", "anthropic", "", "", "", "vertex"},
	"gemini":       {"gemini", "openai", "https://generativelanguage.googleapis.com/v1beta/openai", "GEMINI_API_KEY", "", ""},
	"groq":         {"groq", "openai", "https://api.groq.com/openai/v1", "GROQ_API_KEY", "", ""},
	"mistral":      {"mistral", "openai", "https://api.mistral.ai/v1", "MISTRAL_API_KEY", "", ""},
	"deepseek":     {"deepseek", "openai", "https://api.deepseek.com/v1", "DEEPSEEK_API_KEY", "", ""},
	"together_ai":  {"together", "openai", "https://api.together.xyz/v1", "TOGETHERAI_API_KEY", "", ""},
	"fireworks_ai": {"fireworks", "openai", "https://api.fireworks.ai/inference/v1", "FIREWORKS_AI_API_KEY", "", ""},
	"openrouter":   {"openrouter", "openai", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY", "", ""},
	"xai":          {"xai", "openai", "https://api.x.ai/v1", "XAI_API_KEY", "", ""},
	"perplexity":   {"perplexity", "openai", "https://api.perplexity.ai", "PERPLEXITYAI_API_KEY", "", ""},
	"hosted_vllm":  {"vllm", "openai", "", "", "", ""},
	"ollama":       {"ollama", "openai", "http://localhost:11434/v1", "", "/v1", ""},
	"ollama_chat":  {"ollama", "openai", "http://localhost:11434/v1", "", "/v1", ""},
	"lm_studio":    {"lmstudio", "openai", "http://localhost:1234/v1", "", "", ""},
}

// unsupported are prefixes whose API Switchyard cannot call, with the reason.
var unsupported = map[string]string{
	"sagemaker":              "AWS SageMaker needs SigV4 request signing, which Switchyard does not do",
	"vertex_ai_beta":         "vertex_ai_beta is not mapped; write vertex_ai/ for Claude on Vertex AI",
	"cohere":                 "Cohere's API is neither the OpenAI nor the Anthropic wire format",
	"cohere_chat":            "Cohere's API is neither the OpenAI nor the Anthropic wire format",
	"replicate":              "Replicate's prediction API is neither the OpenAI nor the Anthropic wire format",
	"huggingface":            "the Hugging Face inference API is not mapped; give its OpenAI-compatible endpoint as openai/ with api_base",
	"watsonx":                "watsonx needs IBM IAM tokens, which Switchyard does not mint",
	"azure_ai":               "Azure AI model inference is not mapped; give its OpenAI-compatible endpoint as openai/ with api_base",
	"cloudflare":             "Cloudflare Workers AI is not mapped; give its OpenAI-compatible endpoint as openai/ with api_base",
	"databricks":             "Databricks serving endpoints are not mapped; give the OpenAI-compatible endpoint as openai/ with api_base",
	"dashscope":              "DashScope is not mapped; give its OpenAI-compatible endpoint as openai/ with api_base",
	"text-completion-openai": "the legacy completions API (/v1/completions) is not a Switchyard surface",
}

// Convert reads a LiteLLM proxy config.yaml (name is used in errors) and returns the
// Switchyard configuration and the notes of everything not mapped as written. An error is
// returned only for input that is not a LiteLLM configuration at all (not YAML, no
// model_list, too large).
func Convert(name string, data []byte) ([]byte, []Note, error) {
	if len(data) > MaxInputBytes {
		return nil, nil, fmt.Errorf("%s: larger than %d bytes", name, MaxInputBytes)
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, nil, fmt.Errorf("%s: %v", name, err)
	}
	var in map[string]any
	if err := root.Decode(&in); err != nil {
		return nil, nil, fmt.Errorf("%s: not a LiteLLM config (a mapping with model_list): %v", name, err)
	}
	c := &converter{src: name}
	if err := c.convert(in); err != nil {
		return nil, c.notes, err
	}
	return c.render(), c.notes, nil
}

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

// priceKeys are LiteLLM's per-token cost settings that Convert maps into price (USD per token
// x 10^6): the base costs, the cache costs, and their _above_200k_tokens long-context tier.
var priceKeys = []string{
	"input_cost_per_token", "output_cost_per_token", "cache_read_input_token_cost", "cache_creation_input_token_cost",
	"cache_creation_input_token_cost_above_1hr",
	"input_cost_per_token_above_200k_tokens", "output_cost_per_token_above_200k_tokens",
	"cache_read_input_token_cost_above_200k_tokens", "cache_creation_input_token_cost_above_200k_tokens",
}

// priceKeyCase is k when k is one of priceKeys (a switch case that matches it), else a value
// no setting has.
func priceKeyCase(k string) string {
	for _, p := range priceKeys {
		if k == p {
			return k
		}
	}
	return "\x00not a price key"
}

type outKey struct {
	Name   string `yaml:"name"`
	Secret string `yaml:"secret"`
}

type outAuth struct {
	Required bool `yaml:"required"`
}

type converter struct {
	src   string
	notes []Note
	out   outConfig
	// models by id, in order of first appearance.
	models map[string]*outModel
	// deps by name; groups maps an endpoint identity to its deployments.
	depNames map[string]bool
	groups   map[string][]*outDeployment
}

func (c *converter) note(path, format string, args ...any) {
	c.notes = append(c.notes, Note{Path: path, Msg: fmt.Sprintf(format, args...)})
}

func (c *converter) convert(in map[string]any) error {
	c.models, c.depNames, c.groups = map[string]*outModel{}, map[string]bool{}, map[string][]*outDeployment{}
	list, ok := in["model_list"].([]any)
	if !ok {
		return errors.New(c.src + ": no model_list: not a LiteLLM proxy config")
	}
	for i, e := range list {
		c.entry(fmt.Sprintf("model_list[%d]", i), e)
	}
	routing := &outRouting{}
	// litellm_settings may carry router keys too; router_settings wins.
	for _, sec := range []string{"litellm_settings", "router_settings"} {
		m, _ := in[sec].(map[string]any)
		for _, k := range sortedKeys(m) {
			c.routerSetting(sec+"."+k, k, m[k], routing)
		}
	}
	if routing.Strategy == "" {
		// LiteLLM's default, simple-shuffle: weighted random, order tiers first.
		routing.Strategy = "priority"
	}
	if *routing != (outRouting{}) {
		c.out.Routing = routing
	}
	gs, _ := in["general_settings"].(map[string]any)
	for _, k := range sortedKeys(gs) {
		c.generalSetting("general_settings."+k, k, gs[k])
	}
	if c.out.Keys == nil {
		c.out.Auth = &outAuth{Required: false}
		c.note("general_settings.master_key", "absent: the LiteLLM proxy accepted any caller, so the output has auth.required: false; add keys (secret: ${SWITCHYARD_API_KEY}) before listening beyond loopback")
	}
	if ev, ok := in["environment_variables"].(map[string]any); ok && len(ev) > 0 {
		c.note("environment_variables", "not copied (%s): set them in the gateway's environment; the output reads them as ${VAR}", strings.Join(sortedKeys(ev), ", "))
	}
	for _, k := range sortedKeys(in) {
		switch k {
		case "model_list", "router_settings", "litellm_settings", "general_settings", "environment_variables":
		default:
			c.note(k, "unknown top-level section; not mapped")
		}
	}
	return nil
}

// entry maps one model_list item.
func (c *converter) entry(path string, e any) {
	m, ok := e.(map[string]any)
	if !ok {
		c.note(path, "not a mapping; skipped")
		return
	}
	name := str(m["model_name"])
	if name == "" {
		c.note(path, "no model_name; skipped")
		return
	}
	if strings.Contains(name, "*") {
		c.note(path+".model_name", "%q is a wildcard route; Switchyard serves only the models it lists: add each model explicitly", name)
		return
	}
	if strings.IndexFunc(name, func(r rune) bool { return r <= ' ' }) >= 0 {
		c.note(path+".model_name", "%q contains whitespace, which a model id may not; skipped", name)
		return
	}
	lp, _ := m["litellm_params"].(map[string]any)
	model := str(lp["model"])
	if model == "" {
		c.note(path+".litellm_params.model", "missing; skipped")
		return
	}
	prefix, upstream, found := strings.Cut(model, "/")
	if !found {
		prefix, upstream = inferProvider(model), model
		if prefix == "" {
			c.note(path+".litellm_params.model", "%q has no provider prefix and is not an OpenAI or Anthropic model name; write it as openai/<model> with api_base for an OpenAI-compatible server; skipped", model)
			return
		}
	}
	if why, bad := unsupported[prefix]; bad {
		c.note(path, "%s (model %s): skipped. %s", name, model, why)
		return
	}
	p, known := providers[prefix]
	if !known || p.dialect == "" {
		c.note(path+".litellm_params.model", "provider %q is not mapped (Switchyard speaks the OpenAI and Anthropic wire formats); give an OpenAI-compatible endpoint as openai/<model> with api_base; skipped", prefix)
		return
	}
	info, _ := m["model_info"].(map[string]any)
	if mode := str(info["mode"]); mode != "" && mode != "chat" && mode != "embedding" && mode != "completion" {
		c.note(path+".model_info.mode", "%q models are not a Switchyard surface (chat and embeddings are); skipped", mode)
		return
	}
	var plat platformSettings
	if p.platform != "" {
		var ok bool
		if upstream, plat, ok = c.platform(path, p, upstream, lp); !ok {
			return
		}
	}
	base := p.baseURL
	if ab := str(lp["api_base"]); ab != "" {
		base = strings.TrimRight(envRef(ab), "/")
		if p.apiSuffix != "" && !strings.HasSuffix(base, p.apiSuffix) {
			base += p.apiSuffix
		}
	}
	if base == "" && p.platform != "bedrock" && p.platform != "vertex" {
		c.note(path+".litellm_params.api_base", "missing: provider %q has no default base URL; skipped", prefix)
		return
	}
	key := ""
	switch ak := str(lp["api_key"]); {
	case ak != "":
		key = envRef(ak)
		if !strings.HasPrefix(ak, "os.environ/") {
			c.note(path+".litellm_params.api_key", "a literal secret: copied, but write it as ${VAR} and keep it out of the file")
		}
	case p.keyEnv != "":
		key = "${" + p.keyEnv + "}" // LiteLLM's default variable for the provider
	}
	priority := 0
	if o, ok := num(lp["order"]); ok {
		if o >= 1 && o == math.Trunc(o) {
			priority = int(o) - 1 // LiteLLM order 1 is tried first; priority 0 is
		} else {
			c.note(path+".litellm_params.order", "%v is not an integer >= 1; ignored", lp["order"])
		}
	}
	rt := outRoute{Model: name}
	if upstream != name {
		rt.UpstreamModel = upstream
	}
	if w, ok := num(lp["weight"]); ok {
		if w > 0 {
			rt.Weight = w
		} else {
			c.note(path+".litellm_params.weight", "%v is not > 0; the default weight 1 is used", lp["weight"])
		}
	}
	rt.Price = price(lp, info)
	mo := c.model(name)
	if n, ok := num(first(info, "max_input_tokens")); ok && n > 0 && mo.ContextWindow == 0 {
		mo.ContextWindow = int(n)
	}
	if n, ok := num(first(info, "max_output_tokens", "max_tokens")); ok && n > 0 && mo.MaxOutputTokens == 0 {
		mo.MaxOutputTokens = int(n)
	}
	c.route(p, base, key, priority, plat, rt)

	for _, k := range sortedKeys(lp) {
		switch k {
		case "model", "api_base", "api_key", "order", "weight":
		case "aws_region_name", "aws_access_key_id", "aws_secret_access_key", "aws_session_token", "aws_profile_name":
			if prefix != "bedrock" {
				c.note(path+".litellm_params."+k, "applies only to bedrock/ models; not mapped")
			}
		case "vertex_project", "vertex_location", "vertex_credentials":
			if prefix != "vertex_ai" {
				c.note(path+".litellm_params."+k, "applies only to vertex_ai/ models; not mapped")
			}
		case "api_version":
			if prefix != "azure" {
				c.note(path+".litellm_params.api_version", "not mapped (no api-version is sent)")
			}
		case "rpm", "tpm":
			c.note(path+".litellm_params."+k, "deployment rate limits are not modelled: Switchyard limits callers (keys[].limits, accounts[].limits); a provider's 429 fails over and pauses the provider for its Retry-After")
		case priceKeyCase(k):
		case "timeout", "stream_timeout":
			c.note(path+".litellm_params."+k, "per-deployment timeouts are not modelled; routing.timeouts applies to every deployment")
		case "max_retries":
			c.note(path+".litellm_params."+k, "per-deployment retries are not modelled; a failed attempt fails over (routing.attempt_limit caps attempts)")
		default:
			c.note(path+".litellm_params."+k, "per-deployment request parameters and credentials other than api_key are not modelled; not mapped")
		}
	}
	for _, k := range sortedKeys(m) {
		switch k {
		case "model_name", "litellm_params", "model_info":
		case "rpm", "tpm":
			c.note(path+"."+k, "deployment rate limits are not modelled: Switchyard limits callers (keys[].limits, accounts[].limits)")
		default:
			c.note(path+"."+k, "not mapped")
		}
	}
	for _, k := range sortedKeys(info) {
		switch k {
		case "mode", "max_input_tokens", "max_output_tokens", "max_tokens", "id", priceKeyCase(k):
		default:
			c.note(path+".model_info."+k, "not mapped")
		}
	}
}

// platformSettings are a deployment's platform and its settings block (contract.md round 3),
// zero for a dialect's own API.
type platformSettings struct {
	platform string
	aws      *outAWS
	vertex   *outVertex
	azure    *outAzure
}

// key identifies the settings within a deployment group.
func (ps platformSettings) key() string {
	k := ps.platform
	if ps.aws != nil {
		k += "\x00" + ps.aws.Region + "\x00" + ps.aws.AccessKeyID + "\x00" + ps.aws.SecretAccessKey + "\x00" + ps.aws.SessionToken + "\x00" + ps.aws.Profile
	}
	if ps.vertex != nil {
		k += "\x00" + ps.vertex.Project + "\x00" + ps.vertex.Location + "\x00" + ps.vertex.CredentialsFile
	}
	if ps.azure != nil {
		k += "\x00" + ps.azure.APIVersion
	}
	return k
}

// platform maps the model and the platform parameters of a bedrock/, vertex_ai/ or azure/
// entry: Bedrock serves Anthropic models through InvokeModel (LiteLLM's converse/ and invoke/
// routes alike), Vertex AI serves Claude through rawPredict, Azure takes api_version. It
// returns the upstream model and the settings, or false (with a note) when the entry is
// skipped.
func (c *converter) platform(path string, p provider, upstream string, lp map[string]any) (string, platformSettings, bool) {
	ps := platformSettings{platform: p.platform}
	lpPath := path + ".litellm_params."
	switch p.platform {
	case "bedrock":
		for _, route := range []string{"converse/", "invoke/"} {
			upstream = strings.TrimPrefix(upstream, route)
		}
		if !strings.Contains(upstream, "anthropic.") {
			c.note(path, "bedrock/%s: Switchyard calls Anthropic models on Bedrock (InvokeModel with the Messages body); other Bedrock models are not mapped; skipped", upstream)
			return "", ps, false
		}
		ps.aws = &outAWS{Region: envRef(str(lp["aws_region_name"])), AccessKeyID: envRef(str(lp["aws_access_key_id"])),
			SecretAccessKey: envRef(str(lp["aws_secret_access_key"])), SessionToken: envRef(str(lp["aws_session_token"])),
			Profile: envRef(str(lp["aws_profile_name"]))}
		if ps.aws.Region == "" {
			ps.aws.Region = "${AWS_REGION_NAME}"
			c.note(lpPath+"aws_region_name", "missing: the output reads ${AWS_REGION_NAME}, as LiteLLM does")
		}
		if ps.aws.AccessKeyID == "" {
			c.note(lpPath+"aws_access_key_id", "absent: the AWS SDK's default credential chain applies (environment, shared config and profile, web identity, container and instance roles)")
		}
	case "vertex":
		if !strings.HasPrefix(upstream, "claude-") {
			c.note(path, "vertex_ai/%s: Switchyard calls Claude on Vertex AI; for Gemini use gemini/ (the Gemini API's OpenAI-compatible endpoint); skipped", upstream)
			return "", ps, false
		}
		ps.vertex = &outVertex{Project: envRef(str(lp["vertex_project"])), Location: envRef(str(lp["vertex_location"]))}
		if ps.vertex.Project == "" {
			ps.vertex.Project = "${VERTEXAI_PROJECT}"
			c.note(lpPath+"vertex_project", "missing: the output reads ${VERTEXAI_PROJECT}, as LiteLLM does")
		}
		if ps.vertex.Location == "" {
			ps.vertex.Location = "${VERTEXAI_LOCATION}"
			c.note(lpPath+"vertex_location", "missing: the output reads ${VERTEXAI_LOCATION}, as LiteLLM does")
		}
		switch cred := str(lp["vertex_credentials"]); {
		case cred == "":
			c.note(lpPath+"vertex_credentials", "absent: Google's Application Default Credentials apply")
		case strings.HasPrefix(strings.TrimSpace(cred), "{"):
			c.note(lpPath+"vertex_credentials", "inline service-account JSON is not copied: save it to a file and set vertex.credentials_file")
		default:
			ps.vertex.CredentialsFile = envRef(cred)
		}
	case "azure":
		if v := str(lp["api_version"]); v != "" {
			ps.azure = &outAzure{APIVersion: envRef(v)}
		}
	}
	return upstream, ps, true
}

// route adds rt to a deployment of endpoint (p, base, key, priority, platform settings): the
// first one that does not route rt's model yet, or a new one.
func (c *converter) route(p provider, base, key string, priority int, ps platformSettings, rt outRoute) {
	group := p.id + "\x00" + base + "\x00" + key + "\x00" + strconv.Itoa(priority) + "\x00" + ps.key()
	for _, d := range c.groups[group] {
		if !routes(d, rt.Model) {
			d.Routes = append(d.Routes, rt)
			return
		}
	}
	name := p.id
	for n := 2; c.depNames[name]; n++ {
		name = p.id + "-" + strconv.Itoa(n)
	}
	c.depNames[name] = true
	d := &outDeployment{Name: name, Dialect: p.dialect, BaseURL: base, APIKey: key, Priority: priority, Routes: []outRoute{rt},
		Platform: ps.platform, AWS: ps.aws, Vertex: ps.vertex, Azure: ps.azure}
	if name != p.id {
		d.Provider = p.id
	}
	c.groups[group] = append(c.groups[group], d)
	c.out.Deployments = append(c.out.Deployments, d)
}

func routes(d *outDeployment, model string) bool {
	for _, r := range d.Routes {
		if r.Model == model {
			return true
		}
	}
	return false
}

func (c *converter) model(id string) *outModel {
	if m := c.models[id]; m != nil {
		return m
	}
	m := &outModel{ID: id}
	c.models[id] = m
	c.out.Models = append(c.out.Models, m)
	return m
}

// routerSetting maps one router_settings (or litellm_settings) key.
func (c *converter) routerSetting(path, k string, v any, r *outRouting) {
	switch k {
	case "routing_strategy":
		switch s := str(v); s {
		case "simple-shuffle", "":
			r.Strategy = "priority"
		case "latency-based-routing":
			r.Strategy = "latency"
		case "cost-based-routing":
			r.Strategy = "price"
		case "usage-based-routing", "usage-based-routing-v2", "least-busy":
			r.Strategy = "priority"
			c.note(path, "%q has no equivalent (Switchyard does not balance by current usage); mapped to priority: order tiers, then a weighted random order by weight", s)
		default:
			r.Strategy = "priority"
			c.note(path, "unknown strategy %q; mapped to priority", s)
		}
	case "allowed_fails":
		if n, ok := num(v); ok && n >= 0 {
			// LiteLLM cools a deployment down after more than allowed_fails failures in a minute;
			// a circuit opens after this many consecutive failures.
			r.ensureCircuit().Failures = int(n) + 1
			c.note(path, "mapped to routing.circuit.failures: %d (a circuit opens after that many consecutive failures, not failures per minute)", int(n)+1)
		}
	case "cooldown_time":
		if n, ok := num(v); ok && n > 0 {
			r.ensureCircuit().Cooldown = seconds(n)
		}
	case "num_retries":
		if n, ok := num(v); ok && n >= 0 {
			r.AttemptLimit = int(n) + 1
			c.note(path, "mapped to routing.attempt_limit: %d (attempts in all, failovers included); Switchyard fails over to the next deployment instead of retrying the same one", int(n)+1)
		}
	case "timeout", "request_timeout":
		if n, ok := num(v); ok && n > 0 {
			if r.Timeouts == nil {
				r.Timeouts = &outTimeouts{}
			}
			r.Timeouts.Headers = seconds(n)
			c.note(path, "mapped to routing.timeouts.headers (the wait for a non-streaming answer to start); streams have stream_headers and stream_idle")
		}
	case "stream_timeout":
		if n, ok := num(v); ok && n > 0 {
			if r.Timeouts == nil {
				r.Timeouts = &outTimeouts{}
			}
			r.Timeouts.StreamHeaders = seconds(n)
		}
	case "fallbacks", "default_fallbacks":
		c.note(path, "%s: model fallbacks are per request in Switchyard (\"extra\": {\"fallbacks\": [...]} or \"models\": [...]); within a model, every deployment already fails over to the next", describeFallbacks(v))
	case "context_window_fallbacks":
		c.note(path, "%s: not needed as such: Switchyard skips deployments whose context window the request does not fit (set context_window per model or route); a request that fits none is refused as context overflow. Per request, \"extra\": {\"fallbacks\": [...]} names larger models", describeFallbacks(v))
	case "content_policy_fallbacks":
		c.note(path, "%s: a content-policy refusal never fails over in Switchyard (it is the caller's answer)", describeFallbacks(v))
	case "model_group_alias":
		m, _ := v.(map[string]any)
		for _, alias := range sortedKeys(m) {
			target := str(m[alias])
			if tm, ok := m[alias].(map[string]any); ok {
				target = str(tm["model"])
			}
			if mo := c.models[target]; mo != nil && c.models[alias] == nil {
				mo.Aliases = append(mo.Aliases, alias)
			} else {
				c.note(path+"."+alias, "alias of %q, which is not a model of the output (or the alias is one); not mapped", target)
			}
		}
	case "redis_host", "redis_port", "redis_password", "redis_url":
		c.note(path, "LiteLLM's Redis is for its own state; Switchyard's shared limits use admission.url: redis://... (docs/deploy.md)")
	default:
		c.note(path, "no equivalent; not mapped")
	}
}

func (r *outRouting) ensureCircuit() *outCircuit {
	if r.Circuit == nil {
		r.Circuit = &outCircuit{}
	}
	return r.Circuit
}

// generalSetting maps one general_settings key.
func (c *converter) generalSetting(path, k string, v any) {
	switch k {
	case "master_key":
		s := str(v)
		if s == "" {
			return
		}
		if !strings.HasPrefix(s, "os.environ/") {
			c.note(path, "a literal secret: copied as keys[0].secret, but write it as ${VAR} and keep it out of the file")
		}
		c.out.Keys = append(c.out.Keys, outKey{Name: "master", Secret: envRef(s)})
		c.note(path, "mapped to the static key \"master\" (an API key callers send); it does not open the admin API: set admin.token to a different secret for /admin/v1/")
	case "database_url":
		c.note(path, "not mapped: Switchyard keeps its own schema (audit, accounts, ledger); give it a database of its own in store.url (sqlite:// or postgres://)")
	default:
		c.note(path, "no equivalent; not mapped")
	}
}

// render writes the configuration with a header saying where it came from.
func (c *converter) render() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Switchyard configuration converted from the LiteLLM config %s by `switchyard import litellm`.\n", c.src)
	b.WriteString("# What could not be mapped was listed on standard error. Check it with `switchyard check`;\n")
	b.WriteString("# the format is docs/configuration.md.\n")
	if c.out.Models == nil {
		c.out.Models = []*outModel{}
	}
	if c.out.Deployments == nil {
		c.out.Deployments = []*outDeployment{}
	}
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&c.out); err != nil {
		panic("litellm: encoding the output: " + err.Error()) // plain structs of strings and numbers
	}
	_ = enc.Close()
	return b.Bytes()
}

// inferProvider is LiteLLM's provider for a model written without a prefix.
func inferProvider(model string) string {
	switch {
	case strings.HasPrefix(model, "gpt-"), strings.HasPrefix(model, "o1"), strings.HasPrefix(model, "o3"),
		strings.HasPrefix(model, "o4"), strings.HasPrefix(model, "text-embedding-"), strings.HasPrefix(model, "chatgpt-"):
		return "openai"
	case strings.HasPrefix(model, "claude-"):
		return "anthropic"
	}
	return ""
}

// envRef turns LiteLLM's os.environ/VAR into ${VAR}; other values are returned as they are.
func envRef(s string) string {
	if v, ok := strings.CutPrefix(s, "os.environ/"); ok {
		return "${" + v + "}"
	}
	return s
}

// price reads input_cost_per_token / output_cost_per_token (USD per token) from litellm_params
// or model_info, as USD per million tokens.
//
// The cache costs map to cache_read (cache_read_input_token_cost), cache_write
// (cache_creation_input_token_cost) and cache_write_1h (cache_creation_input_token_cost_above_1hr),
// and the _above_200k_tokens costs to a tier above 200,000 input tokens; a cost LiteLLM leaves
// out stays out (the price's defaults apply: docs/pricing.md).
func price(lp, info map[string]any) *outPrice {
	in, okIn := num(first2(lp, info, "input_cost_per_token"))
	out, okOut := num(first2(lp, info, "output_cost_per_token"))
	if !okIn && !okOut {
		return nil
	}
	opt := func(key string) *float64 {
		v, ok := num(first2(lp, info, key))
		if !ok {
			return nil
		}
		m := perMillion(v)
		return &m
	}
	p := &outPrice{Input: perMillion(in), Output: perMillion(out), CacheRead: opt("cache_read_input_token_cost"),
		CacheWrite: opt("cache_creation_input_token_cost"), CacheWrite1h: opt("cache_creation_input_token_cost_above_1hr")}
	t := outTier{AboveInputTokens: 200_000, Input: opt("input_cost_per_token_above_200k_tokens"),
		Output: opt("output_cost_per_token_above_200k_tokens"), CacheRead: opt("cache_read_input_token_cost_above_200k_tokens"),
		CacheWrite: opt("cache_creation_input_token_cost_above_200k_tokens")}
	if t.Input != nil || t.Output != nil || t.CacheRead != nil || t.CacheWrite != nil {
		p.Tiers = []outTier{t}
	}
	return p
}

func perMillion(perToken float64) float64 {
	if perToken < 0 || math.IsNaN(perToken) || math.IsInf(perToken, 0) {
		return 0
	}
	v, _ := strconv.ParseFloat(strconv.FormatFloat(perToken*1e6, 'g', 10, 64), 64) // 2.5e-06 -> 2.5, not 2.4999999999999996
	return v
}

func first(m map[string]any, keys ...string) any {
	for _, k := range keys {
		if v, ok := m[k]; ok {
			return v
		}
	}
	return nil
}

func first2(a, b map[string]any, key string) any {
	if v, ok := a[key]; ok {
		return v
	}
	return b[key]
}

func seconds(n float64) string {
	return strconv.FormatFloat(n, 'f', -1, 64) + "s"
}

func describeFallbacks(v any) string {
	list, _ := v.([]any)
	var parts []string
	for _, e := range list {
		m, _ := e.(map[string]any)
		for _, k := range sortedKeys(m) {
			var to []string
			if l, ok := m[k].([]any); ok {
				for _, x := range l {
					to = append(to, str(x))
				}
			}
			parts = append(parts, k+" -> "+strings.Join(to, ", "))
		}
	}
	if len(parts) == 0 {
		return "not mapped"
	}
	return "not mapped (" + strings.Join(parts, "; ") + ")"
}

func str(v any) string {
	switch x := v.(type) {
	case string:
		return strings.TrimSpace(x)
	case int, int64, float64, bool:
		return fmt.Sprint(x)
	}
	return ""
}

func num(v any) (float64, bool) {
	switch x := v.(type) {
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case float64:
		return x, !math.IsNaN(x) && !math.IsInf(x, 0)
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		return f, err == nil && !math.IsNaN(f) && !math.IsInf(f, 0)
	}
	return 0, false
}

func sortedKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
