package config

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// strategyNames lists the routing.strategy names (R-ORDER), in contract order, for messages.
const strategyNames = "price, latency, throughput, reliability, balanced, priority"

func validStrategy(s string) bool {
	switch s {
	case "price", "latency", "throughput", "reliability", "balanced", "priority":
		return true
	}
	return false
}

// Validate checks a configuration after defaults and returns every problem, joined with
// errors.Join, each a *Problem with file:line when the Config was read by Load or Parse. It
// rejects, and never corrects:
//
//   - server: listen not HOST:PORT; max_body_bytes <= 0; negative shutdown_grace; body_timeout
//     <= 0; max_inflight_body_bytes <= 0; max_header_bytes < 4096.
//   - store.url not sqlite://PATH, postgres:// or postgresql://; admission.url not memory://,
//     redis:// or rediss://.
//   - routing: a strategy other than price, latency, throughput, reliability, balanced or
//     priority; a negative or non-finite price_blend weight, or
//     both zero; a deadline or cooldown <= 0; circuit.failures < 1.
//   - models: an empty, duplicate or whitespace-holding id or alias; an alias equal to a model
//     id; negative context_window or max_output_tokens; a negative or non-finite price.
//   - deployments: an empty or duplicate name; a name or provider outside [A-Za-z0-9._-]; a
//     dialect other than openai or anthropic; a base_url that is not an absolute http(s) URL; negative
//     priority; a route whose model is not a catalog model id (an alias is named as such), or
//     that the deployment already routes; negative price or context_window; weight <= 0; an
//     upstream_snapshots key that is not a snapshot date (or names a date twice) or an empty id;
//     an upstream_snapshot_pattern without exactly one {date}.
//   - keys: an empty or duplicate name; while auth is required, an empty or duplicate secret.
//   - limits (keys[].limits, accounts[].limits): a negative rpm, tpm or concurrency; a
//     negative, non-finite or larger than MaxBudgetUSD budget_usd; a budget_period other than
//     day, month or total. accounts: an empty or duplicate id.
//   - endpoints (R-KEY-6): an id that is not "<namespace>/<name>" (each part non-empty, of
//     [A-Za-z0-9._-]), that is defined twice or that equals a model id or alias; a model that is
//     not a catalog model id; a listed deployment that does not exist, is not reserved, does not
//     route the model or is listed twice; an empty account; no deployments while
//     public_fallback is false (the endpoint could serve nothing). A deployment marked reserved
//     that no endpoint lists is a problem too (it could serve nothing).
//
// A catalog model that no deployment routes is allowed (it is listed but every request for it
// fails as unavailable; BYOK connections may serve it). An empty catalog is allowed. Messages
// never echo a credential or a URL.
func (c *Config) Validate() error {
	v := validator{pos: c.pos}
	v.server(&c.Server)
	v.stores(c)
	v.routing(&c.Routing)
	ids := v.models(c.Models)
	v.deployments(c.Deployments, ids)
	v.endpoints(c.Endpoints, c.Deployments, ids)
	v.keys(c.Keys, c.AuthRequired())
	v.accounts(c.Accounts)
	v.observability(c)
	return errors.Join(v.problems...)
}

type validator struct {
	pos      *positions
	problems []error
}

// empty reports a required value that is empty: "missing" when the file does not write it at
// all, "is empty" when it is written empty (or the Config was built in Go); hint, when not "",
// says what the value is.
func (v *validator) empty(path, hint string) {
	msg := "is empty"
	if v.pos != nil && !v.pos.has(path) {
		msg = "missing"
	}
	if hint != "" {
		msg += ": " + hint
	}
	v.add(path, "%s", msg)
}

func (v *validator) add(path, format string, args ...any) {
	v.problems = append(v.problems, v.pos.problem(path, format, args...))
}

func (v *validator) server(s *Server) {
	if host, port, err := net.SplitHostPort(s.Listen); err != nil || !validPort(port) || strings.ContainsAny(host, " \t") {
		v.add("server.listen", "%q is not HOST:PORT (e.g. 127.0.0.1:8080; port 0 picks a free port)", s.Listen)
	}
	if s.MaxBodyBytes <= 0 {
		v.add("server.max_body_bytes", "must be > 0 bytes, got %d (omit it for the default %d)", s.MaxBodyBytes, DefaultMaxBodyBytes)
	}
	if s.ShutdownGrace < 0 {
		v.add("server.shutdown_grace", "must not be negative, got %s", s.ShutdownGrace)
	}
	if s.Name != "" {
		v.token("server.name", s.Name)
	}
	if s.BodyTimeout <= 0 {
		v.add("server.body_timeout", "must be > 0, got %s (omit it for the default %s)", s.BodyTimeout, DefaultBodyTimeout)
	}
	if s.MaxInflightBodyBytes <= 0 {
		v.add("server.max_inflight_body_bytes", "must be > 0 bytes, got %d (omit it for the default %d)", s.MaxInflightBodyBytes, DefaultMaxInflightBodyBytes)
	}
	if s.MaxHeaderBytes < 4096 {
		v.add("server.max_header_bytes", "must be >= 4096 bytes, got %d (omit it for the default %d)", s.MaxHeaderBytes, DefaultMaxHeaderBytes)
	}
}

func validPort(p string) bool {
	n, err := strconv.Atoi(p)
	return err == nil && n >= 0 && n <= 65535 && p != "" && p[0] != '+' && p[0] != '-'
}

func (v *validator) stores(c *Config) {
	scheme, rest, ok := strings.Cut(c.Store.URL, "://")
	switch {
	case !ok:
		v.add("store.url", "must be sqlite://PATH, sqlite:///ABS/PATH or postgres://...")
	case scheme != "sqlite" && scheme != "postgres" && scheme != "postgresql":
		v.add("store.url", "unsupported scheme %q: want sqlite:// or postgres://", scheme)
	case scheme == "sqlite" && strings.Trim(rest, "/") == "":
		v.add("store.url", "sqlite:// needs a database path (sqlite://switchyard.db or sqlite:///abs/path.db)")
	case scheme != "sqlite" && !parsesWithHost(c.Store.URL):
		v.add("store.url", "is not a valid %s:// URL", scheme)
	}
	if c.Store.AuditRetention < 0 {
		v.add("store.audit_retention", "must not be negative: days such as 30d, or off to keep audit records forever")
	}
	if k := c.Store.SecretKey; k != "" && len(k) < 16 {
		v.add("store.secret_key", "must be at least 16 bytes (32 random characters recommended), or empty to store BYOK credentials in the clear")
	}
	scheme, _, ok = strings.Cut(c.Admission.URL, "://")
	switch {
	case !ok:
		v.add("admission.url", "must be memory:// or redis://HOST:PORT/DB")
	case scheme == "memory":
	case scheme == "redis" || scheme == "rediss":
		if !parsesWithHost(c.Admission.URL) {
			v.add("admission.url", "is not a valid %s:// URL", scheme)
		}
	default:
		v.add("admission.url", "unsupported scheme %q: want memory:// or redis://", scheme)
	}
	ra := &c.Admission.Redis
	if ra.Timeout < 0 || (ra.Timeout == 0 && v.pos.has("admission.redis.timeout")) {
		v.add("admission.redis.timeout", "must be > 0, got %s (omit it for the default 100ms)", ra.Timeout)
	}
	if ra.LeaseTTL < 0 || (ra.LeaseTTL > 0 && ra.LeaseTTL.D() < 3*time.Second) || (ra.LeaseTTL == 0 && v.pos.has("admission.redis.lease_ttl")) {
		v.add("admission.redis.lease_ttl", "must be at least 3s, got %s (omit it for the default 30s)", ra.LeaseTTL)
	}
	if ra.Prefix == "" && v.pos.has("admission.redis.prefix") {
		v.add("admission.redis.prefix", "must not be empty (omit it for the default \"sy:\")")
	}
	v.nonNegativeInt("admission.redis.pool_size", ra.PoolSize)
	v.nonNegativeInt("admission.redis.min_idle_conns", ra.MinIdleConns)
	if ra.PoolSize > 0 && ra.MinIdleConns > ra.PoolSize {
		v.add("admission.redis.min_idle_conns", "must be at most pool_size (%d), got %d", ra.PoolSize, ra.MinIdleConns)
	}
}

func parsesWithHost(s string) bool {
	u, err := url.Parse(s)
	return err == nil && u.Host != ""
}

func (v *validator) routing(r *Routing) {
	if !validStrategy(r.Strategy) {
		v.add("routing.strategy", "unknown strategy %q: want one of %s", r.Strategy, strategyNames)
	}
	v.nonNegative("routing.price_blend.input", r.PriceBlend.Input)
	v.nonNegative("routing.price_blend.output", r.PriceBlend.Output)
	if r.PriceBlend.Input == 0 && r.PriceBlend.Output == 0 {
		v.add("routing.price_blend", "input and output weights are both 0 (omit price_blend for the default 3:1)")
	}
	v.positiveDuration("routing.timeouts.headers", r.Timeouts.Headers, DefaultHeaders)
	v.positiveDuration("routing.timeouts.stream_headers", r.Timeouts.StreamHeaders, DefaultStreamHeaders)
	v.positiveDuration("routing.timeouts.stream_idle", r.Timeouts.StreamIdle, DefaultStreamIdle)
	v.positiveDuration("routing.timeouts.first_output", r.Timeouts.FirstOutput, DefaultFirstOutput)
	v.positiveDuration("routing.circuit.cooldown", r.Circuit.Cooldown, DefaultCooldown)
	if r.Circuit.Failures < 1 {
		v.add("routing.circuit.failures", "must be >= 1, got %d (omit it for the default %d)", r.Circuit.Failures, DefaultFailures)
	}
	if r.AttemptLimit < 0 {
		v.add("routing.attempt_limit", "must be >= 0 (0: no limit), got %d", r.AttemptLimit)
	}
}

func (v *validator) positiveDuration(path string, d Duration, def time.Duration) {
	if d <= 0 {
		v.add(path, "must be > 0, got %s (omit it for the default %s)", d, def)
	}
}

func (v *validator) nonNegative(path string, f float64) {
	if f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
		v.add(path, "must be a finite number >= 0, got %v", f)
	}
}

func (v *validator) nonNegativeInt(path string, n int) {
	if n < 0 {
		v.add(path, "must be >= 0, got %d", n)
	}
}

func (v *validator) price(path string, p *Price) {
	if p == nil {
		return
	}
	v.nonNegative(path+".input", p.Input)
	v.nonNegative(path+".output", p.Output)
	v.nonNegative(path+".image", p.Image)
	v.nonNegative(path+".web_search", p.WebSearch)
	v.optPrice(path+".cache_read", p.CacheRead)
	v.optPrice(path+".cache_write", p.CacheWrite)
	v.optPrice(path+".cache_write_1h", p.CacheWrite1h)
	seen := make(map[int64]bool, len(p.Tiers))
	for i, t := range p.Tiers {
		tp := fmt.Sprintf("%s.tiers[%d]", path, i)
		switch {
		case t.AboveInputTokens <= 0:
			v.add(tp+".above_input_tokens", "must be > 0, got %d", t.AboveInputTokens)
		case seen[t.AboveInputTokens]:
			v.add(tp+".above_input_tokens", "another tier already has threshold %d", t.AboveInputTokens)
		}
		seen[t.AboveInputTokens] = true
		v.optPrice(tp+".input", t.Input)
		v.optPrice(tp+".output", t.Output)
		v.optPrice(tp+".cache_read", t.CacheRead)
		v.optPrice(tp+".cache_write", t.CacheWrite)
		v.optPrice(tp+".cache_write_1h", t.CacheWrite1h)
	}
}

func (v *validator) optPrice(path string, f *float64) {
	if f != nil {
		v.nonNegative(path, *f)
	}
}

// models checks the catalog and returns its names: id -> true for a model id, false for an alias.
func (v *validator) models(models []Model) map[string]bool {
	names := make(map[string]bool, len(models))
	where := make(map[string]string, len(models)) // name -> path that defined it
	for i, m := range models {
		p := fmt.Sprintf("models[%d]", i)
		if v.modelName(p+".id", m.ID) {
			if prev, dup := where[m.ID]; dup {
				v.add(p+".id", "model id %q is already defined at %s", m.ID, v.at(prev))
			} else {
				names[m.ID], where[m.ID] = true, p+".id"
			}
		}
		v.nonNegativeInt(p+".context_window", m.ContextWindow)
		v.nonNegativeInt(p+".max_output_tokens", m.MaxOutputTokens)
		v.price(p+".price", m.Price)
	}
	// Aliases after every id, so that an alias equal to a later model's id is caught too.
	for i, m := range models {
		for j, a := range m.Aliases {
			p := fmt.Sprintf("models[%d].aliases[%d]", i, j)
			if !v.modelName(p, a) {
				continue
			}
			if prev, dup := where[a]; dup {
				kind := "an alias"
				if names[a] {
					kind = "a model id"
				}
				v.add(p, "alias %q is already %s at %s", a, kind, v.at(prev))
				continue
			}
			names[a], where[a] = false, p
		}
	}
	return names
}

// modelName checks an id or alias: non-empty, no whitespace or control characters.
func (v *validator) modelName(path, s string) bool {
	if s == "" {
		v.empty(path, "")
		return false
	}
	if i := strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }); i >= 0 {
		v.add(path, "%q contains whitespace or a control character", s)
		return false
	}
	return true
}

func (v *validator) deployments(ds []Deployment, names map[string]bool) {
	seen := make(map[string]string, len(ds))
	for i := range ds {
		d := &ds[i]
		p := fmt.Sprintf("deployments[%d]", i)
		if v.token(p+".name", d.Name) {
			if prev, dup := seen[d.Name]; dup {
				v.add(p+".name", "deployment %q is already defined at %s", d.Name, v.at(prev))
			} else {
				seen[d.Name] = p + ".name"
			}
		}
		if d.Provider != d.Name {
			v.token(p+".provider", d.Provider)
		}
		switch d.Dialect {
		case "openai", "anthropic":
		case "":
			v.empty(p+".dialect", "openai or anthropic, the wire format the deployment speaks")
		default:
			v.add(p+".dialect", "unknown dialect %q: want openai or anthropic", d.Dialect)
		}
		v.platform(p, d)
		if d.BaseURL == "" {
			if d.Platform != PlatformBedrock && d.Platform != PlatformVertex {
				v.empty(p+".base_url", "the provider's API base URL, as its own SDK takes it (e.g. https://api.openai.com/v1)")
			}
		} else if u, err := url.Parse(d.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			v.add(p+".base_url", "must be an absolute http:// or https:// URL")
		} else if u.RawQuery != "" || u.Fragment != "" {
			v.add(p+".base_url", "must not carry a query or fragment")
		}
		v.nonNegativeInt(p+".priority", d.Priority)
		routed := make(map[string]string, len(d.Routes))
		for j := range d.Routes {
			v.route(fmt.Sprintf("%s.routes[%d]", p, j), &d.Routes[j], names, routed)
		}
	}
}

func (v *validator) route(p string, r *Route, names map[string]bool, routed map[string]string) {
	isID, known := names[r.Model]
	switch {
	case r.Model == "":
		v.empty(p+".model", "the catalog model id the route serves")
	case !known:
		v.add(p+".model", "model %q is not in the catalog (models:)", r.Model)
	case !isID:
		v.add(p+".model", "%q is an alias; a route names the model id it serves", r.Model)
	default:
		if prev, dup := routed[r.Model]; dup {
			v.add(p+".model", "this deployment already routes %q at %s", r.Model, v.at(prev))
		} else {
			routed[r.Model] = p + ".model"
		}
	}
	if r.UpstreamModel != r.Model {
		v.modelName(p+".upstream_model", r.UpstreamModel)
	}
	v.price(p+".price", r.Price)
	if !(r.Weight > 0) || math.IsInf(r.Weight, 0) {
		v.add(p+".weight", "must be a finite number > 0, got %v (omit it for the default %d)", r.Weight, DefaultWeight)
	}
	v.nonNegativeInt(p+".context_window", r.ContextWindow)
	seen := make(map[string]string, len(r.UpstreamSnapshots))
	for date, id := range r.UpstreamSnapshots {
		kp := p + ".upstream_snapshots." + date
		compact, ok := SnapshotDate(date)
		if !ok {
			v.add(kp, "%q is not a snapshot date: want YYYYMMDD or YYYY-MM-DD, a real calendar date", date)
			continue
		}
		if other, dup := seen[compact]; dup {
			v.add(kp, "names the same date as %q", other)
		}
		seen[compact] = date
		v.modelName(kp, id)
	}
	if pt := r.UpstreamSnapshotPattern; pt != "" {
		if strings.Count(pt, "{date}") != 1 {
			v.add(p+".upstream_snapshot_pattern", "must hold {date} exactly once, got %q", pt)
		} else {
			v.modelName(p+".upstream_snapshot_pattern", strings.Replace(pt, "{date}", "20060102", 1))
		}
	}
}

// SnapshotDate reads the date of a dated snapshot ("YYYYMMDD" or "YYYY-MM-DD", a real calendar
// date with a year from 1900) and returns it as "YYYYMMDD"; ok is false for anything else.
func SnapshotDate(s string) (compact string, ok bool) {
	layout := "20060102"
	if len(s) == 10 {
		layout = "2006-01-02"
	} else if len(s) != 8 {
		return "", false
	}
	t, err := time.Parse(layout, s)
	if err != nil || t.Year() < 1900 {
		return "", false
	}
	return t.Format("20060102"), true
}

// endpoints checks the dedicated endpoints against the catalog names and the deployments.
func (v *validator) endpoints(eps []Endpoint, ds []Deployment, names map[string]bool) {
	deps := make(map[string]*Deployment, len(ds))
	for i := range ds {
		if _, dup := deps[ds[i].Name]; !dup {
			deps[ds[i].Name] = &ds[i]
		}
	}
	listed := make(map[string]bool)
	seen := make(map[string]string, len(eps))
	for i := range eps {
		e := &eps[i]
		p := fmt.Sprintf("endpoints[%d]", i)
		if v.endpointID(p+".id", e.ID) {
			isID, clash := names[e.ID]
			prev, dup := seen[e.ID]
			switch {
			case clash && isID:
				v.add(p+".id", "endpoint %q is already a model id", e.ID)
			case clash:
				v.add(p+".id", "endpoint %q is already a model alias", e.ID)
			case dup:
				v.add(p+".id", "endpoint %q is already defined at %s", e.ID, v.at(prev))
			default:
				seen[e.ID] = p + ".id"
			}
		}
		isID, known := names[e.Model]
		switch {
		case e.Model == "":
			v.empty(p+".model", "the catalog model id the endpoint serves")
		case !known:
			v.add(p+".model", "model %q is not in the catalog (models:)", e.Model)
		case !isID:
			v.add(p+".model", "%q is an alias; an endpoint names the model id it serves", e.Model)
		}
		inList := make(map[string]string, len(e.Deployments))
		for j, name := range e.Deployments {
			dp := fmt.Sprintf("%s.deployments[%d]", p, j)
			d, ok := deps[name]
			if prev, dup := inList[name]; dup {
				v.add(dp, "deployment %q is already listed at %s", name, v.at(prev))
				continue
			}
			inList[name] = dp
			switch {
			case name == "":
				v.add(dp, "is empty")
			case !ok:
				v.add(dp, "no deployment is named %q (deployments:)", name)
			case !d.Reserved:
				v.add(dp, "deployment %q is not reserved: mark it reserved: true (a public deployment already serves every caller)", name)
			case known && isID && !routes(d, e.Model):
				listed[name] = true // reported here, not again as unlisted
				v.add(dp, "deployment %q has no route for model %q", name, e.Model)
			default:
				listed[name] = true
			}
		}
		for j, a := range e.Accounts {
			if a == "" {
				v.add(fmt.Sprintf("%s.accounts[%d]", p, j), "is empty")
			}
		}
		if len(e.Deployments) == 0 && !e.Fallback() {
			v.add(p, "lists no deployments and public_fallback is false: it could serve nothing")
		}
	}
	for i := range ds {
		if ds[i].Reserved && !listed[ds[i].Name] {
			v.add(fmt.Sprintf("deployments[%d].reserved", i), "deployment %q is reserved but no endpoint lists it (endpoints:)", ds[i].Name)
		}
	}
}

// endpointID checks a dedicated endpoint id: "<namespace>/<name>", each part a token.
func (v *validator) endpointID(path, s string) bool {
	ns, name, ok := strings.Cut(s, "/")
	if !ok || !isToken(ns) || !isToken(name) {
		v.add(path, "%q is not <namespace>/<name> (each part non-empty, of letters, digits, '.', '_' and '-')", s)
		return false
	}
	return true
}

func routes(d *Deployment, model string) bool {
	for _, r := range d.Routes {
		if r.Model == model {
			return true
		}
	}
	return false
}

// token checks a deployment name or provider id: non-empty, [A-Za-z0-9._-] only, since it
// appears in `model:provider` pins, provider.order lists and response headers.
func (v *validator) token(path, s string) bool {
	if s == "" {
		v.empty(path, "")
		return false
	}
	if !isToken(s) {
		v.add(path, "%q may hold only letters, digits, '.', '_' and '-'", s)
		return false
	}
	return true
}

// isToken reports whether s is non-empty and of [A-Za-z0-9._-] only.
func isToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return s != ""
}

func (v *validator) keys(keys []Key, authRequired bool) {
	names := make(map[string]string, len(keys))
	secrets := make(map[string]string, len(keys))
	for i, k := range keys {
		p := fmt.Sprintf("keys[%d]", i)
		if k.Name == "" {
			v.empty(p+".name", "")
		} else if prev, dup := names[k.Name]; dup {
			v.add(p+".name", "key %q is already defined at %s", k.Name, v.at(prev))
		} else {
			names[k.Name] = p + ".name"
		}
		v.limits(p+".limits", &k.Limits)
		if !authRequired {
			continue
		}
		switch prev, dup := secrets[k.Secret]; {
		case k.Secret == "":
			if name, ok := v.pos.unsetVarAt(p + ".secret"); ok {
				v.add(p+".secret", "is empty: environment variable %s is not set (auth.required is true)", name)
			} else {
				v.empty(p+".secret", "the key callers send (auth.required is true); e.g. secret: ${SWITCHYARD_API_KEY}")
			}
		case dup:
			v.add(p+".secret", "is the same secret as %s", v.at(prev))
		default:
			secrets[k.Secret] = p + ".secret"
		}
	}
}

// at names where path is, for "already defined at" messages: "line 12" when known, else path.
func (v *validator) at(path string) string {
	if l := v.pos.line(path); l > 0 {
		return "line " + strconv.Itoa(l)
	}
	return path
}

func (p *positions) unsetVarAt(path string) (string, bool) {
	if p == nil {
		return "", false
	}
	name, ok := p.unsetVars[path]
	return name, ok
}

// MaxBudgetUSD is the largest budget_usd accepted: its micro-USD stay far inside an int64.
const MaxBudgetUSD = 1e9

func (v *validator) limits(path string, l *Limits) {
	v.nonNegativeInt(path+".rpm", l.RPM)
	v.nonNegativeInt(path+".tpm", l.TPM)
	v.nonNegativeInt(path+".concurrency", l.Concurrency)
	v.nonNegative(path+".budget_usd", l.BudgetUSD)
	if l.BudgetUSD > MaxBudgetUSD {
		v.add(path+".budget_usd", "must be at most %g USD, got %g", float64(MaxBudgetUSD), l.BudgetUSD)
	}
	switch l.BudgetPeriod {
	case "", "day", "month", "total":
	default:
		v.add(path+".budget_period", "unknown period %q: want day, month or total", l.BudgetPeriod)
	}
}

func (v *validator) accounts(accounts []Account) {
	ids := make(map[string]string, len(accounts))
	for i, a := range accounts {
		p := fmt.Sprintf("accounts[%d]", i)
		if a.ID == "" {
			v.empty(p+".id", "")
		} else if prev, dup := ids[a.ID]; dup {
			v.add(p+".id", "account %q is already defined at %s", a.ID, v.at(prev))
		} else {
			ids[a.ID] = p + ".id"
		}
		v.limits(p+".limits", &a.Limits)
	}
}

// UnsetVar reports the environment variable behind the credential at path (e.g.
// "deployments[0].api_key") when the file wrote it exactly as ${VAR}, VAR was unset, and the
// credential was left empty; false otherwise (a Config built in Go included).
func (c *Config) UnsetVar(path string) (string, bool) { return c.pos.unsetVarAt(path) }

// EmptyVar reports the environment variable behind the credential at path when the file wrote
// it exactly as ${VAR} and VAR was set but empty or blank (exported as ""), which leaves the
// credential empty as surely as an unset one; false otherwise.
func (c *Config) EmptyVar(path string) (string, bool) {
	if c.pos == nil {
		return "", false
	}
	name, ok := c.pos.emptyVars[path]
	return name, ok
}

// platform checks a deployment's platform and its settings block (contract.md, round 3): the
// platform fits the dialect, bedrock names aws.region, vertex names vertex.project and
// vertex.location and a readable vertex.credentials_file when one is set, and no settings block
// stands on a deployment of another platform.
func (v *validator) platform(p string, d *Deployment) {
	want := map[string]string{PlatformOpenAI: "openai", PlatformAzure: "openai",
		PlatformAnthropic: "anthropic", PlatformBedrock: "anthropic", PlatformVertex: "anthropic"}
	dialect, known := want[d.Platform]
	switch {
	case d.Platform == "":
	case !known:
		v.add(p+".platform", "unknown platform %q: want anthropic, bedrock, vertex (dialect anthropic), openai or azure (dialect openai)", d.Platform)
	case d.Dialect != "" && dialect != d.Dialect:
		v.add(p+".platform", "platform %q speaks dialect %s, but the deployment's dialect is %s", d.Platform, dialect, d.Dialect)
	}
	if d.AWS != nil && d.Platform != PlatformBedrock {
		v.add(p+".aws", "aws: applies only to platform bedrock (this deployment's platform is %q)", d.Platform)
	}
	if d.Vertex != nil && d.Platform != PlatformVertex {
		v.add(p+".vertex", "vertex: applies only to platform vertex (this deployment's platform is %q)", d.Platform)
	}
	if d.Azure != nil && d.Platform != PlatformAzure {
		v.add(p+".azure", "azure: applies only to platform azure (this deployment's platform is %q)", d.Platform)
	}
	if d.Responses != nil && *d.Responses && d.Dialect != "openai" {
		v.add(p+".responses", "responses: true applies only to an openai-dialect deployment")
	}
	switch d.Platform {
	case PlatformBedrock:
		if d.AWS == nil || d.AWS.Region == "" {
			v.empty(p+".aws.region", "the AWS region of the Bedrock runtime (e.g. us-east-1)")
		} else {
			v.token(p+".aws.region", d.AWS.Region)
		}
		if d.AWS != nil && (d.AWS.AccessKeyID == "") != (d.AWS.SecretAccessKey == "") {
			v.add(p+".aws", "access_key_id and secret_access_key go together (leave both out for the default credential chain)")
		}
	case PlatformVertex:
		if d.Vertex == nil || d.Vertex.Project == "" {
			v.empty(p+".vertex.project", "the Google Cloud project id")
		}
		if d.Vertex == nil || d.Vertex.Location == "" {
			v.empty(p+".vertex.location", "the Vertex AI location (e.g. us-east5, or global)")
		} else {
			v.token(p+".vertex.location", d.Vertex.Location)
		}
		if d.Vertex != nil && d.Vertex.CredentialsFile != "" {
			if f, err := os.Open(d.Vertex.CredentialsFile); err != nil {
				v.add(p+".vertex.credentials_file", "cannot read %q: %v", d.Vertex.CredentialsFile, errors.Unwrap(err))
			} else {
				f.Close()
			}
		}
	case PlatformAzure:
		if d.Azure != nil && d.Azure.APIVersion != "" {
			v.token(p+".azure.api_version", d.Azure.APIVersion)
		}
	}
}
