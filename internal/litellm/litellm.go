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

type converter struct {
	src   string
	notes []Note
	out   outConfig
	// models by id, in order of first appearance.
	models map[string]*outModel
	// deps by name; groups maps an endpoint identity to its deployments.
	depNames map[string]bool
	groups   map[string][]*outDeployment
	// limitBy names the setting that set a model's limit ("model\x00context_window").
	limitBy map[string]string
	// setBy names the setting that set an output setting of routing ("routing.attempt_limit",
	// "alias <name>"): the one applied (set).
	setBy map[string]string
	// aliases are model_group_alias's, applied once every section is read.
	aliases map[string]aliasSetting
}

func (c *converter) note(path, format string, args ...any) {
	c.notes = append(c.notes, Note{Path: path, Msg: fmt.Sprintf(format, args...)})
}

func (c *converter) convert(in map[string]any) error {
	c.models, c.depNames, c.groups = map[string]*outModel{}, map[string]bool{}, map[string][]*outDeployment{}
	c.limitBy, c.setBy, c.aliases = map[string]string{}, map[string]string{}, map[string]aliasSetting{}
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
	c.applyAliases()
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
	switch mode := str(info["mode"]); mode {
	case "", "chat", "embedding", "completion":
	case "image_generation", "image_edit":
		// POST /v1/images/generations and /v1/images/edits serve any model with an
		// OpenAI-dialect route (docs/routing.md "Images").
		if p.dialect != "openai" {
			c.note(path+".model_info.mode", "%q: Switchyard's images endpoints call OpenAI-dialect deployments only, and %s/ is not one; skipped", mode, prefix)
			return
		}
	default:
		c.note(path+".model_info.mode", "%q models are not a Switchyard surface (chat, embeddings and images are); skipped", mode)
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
	c.costNotes(path, lp, info)
	mo := c.model(name)
	c.modelLimit(path+".model_info.max_input_tokens", info["max_input_tokens"], name, "context_window", &mo.ContextWindow)
	outKey := "max_output_tokens"
	if _, ok := info[outKey]; !ok {
		outKey = "max_tokens"
	} else if _, both := info["max_tokens"]; both {
		c.note(path+".model_info.max_tokens", "not applied: %s.model_info.max_output_tokens sets the model's max_output_tokens too, and wins", path)
	}
	c.modelLimit(path+".model_info."+outKey, info[outKey], name, "max_output_tokens", &mo.MaxOutputTokens)
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
		case "input_cost_per_pixel", "output_cost_per_pixel":
			c.note(path+".litellm_params."+k, pixelCostNote)
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
		case "input_cost_per_pixel", "output_cost_per_pixel":
			c.note(path+".model_info."+k, pixelCostNote)
		default:
			c.note(path+".model_info."+k, "not mapped")
		}
	}
}

// pixelCostNote is the note of LiteLLM's per-pixel image costs.
const pixelCostNote = "per-pixel image costs are not modelled; set the route's price.image (USD per image returned, docs/routing.md \"Images\") or its token prices, as the provider bills"

// modelLimit sets the model's limit (context_window or max_output_tokens, *dst) from the
// setting at path (value v, a positive integer), unless an earlier entry of the same
// model_name set it: the first entry's value is the model's, and a different later one is
// noted as not applied.
func (c *converter) modelLimit(path string, v any, model, limit string, dst *int) {
	n, ok := num(v)
	if !ok || n <= 0 {
		return
	}
	if *dst == 0 {
		*dst = int(n)
		c.limitBy[model+"\x00"+limit] = path
		return
	}
	if *dst != int(n) {
		c.note(path, "not applied: %s already set model %s's %s to %d (the first entry's value is the model's)", c.limitBy[model+"\x00"+limit], model, limit, *dst)
	}
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
