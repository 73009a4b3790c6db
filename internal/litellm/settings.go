package litellm

import (
	"sort"
	"strings"
)

// routerSetting maps one router_settings (or litellm_settings) key. A setting of the output
// that two keys set is the last one's (set): convert reads litellm_settings before
// router_settings, and each section's keys in sorted order, so router_settings wins over
// litellm_settings and, within a section, timeout over request_timeout.
func (c *converter) routerSetting(path, k string, v any, r *outRouting) {
	switch k {
	case "routing_strategy":
		c.set("routing.strategy", path)
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
			c.set("routing.circuit.failures", path)
			// LiteLLM cools a deployment down after more than allowed_fails failures in a minute;
			// a circuit opens after this many consecutive failures.
			r.ensureCircuit().Failures = int(n) + 1
			c.note(path, "mapped to routing.circuit.failures: %d (a circuit opens after that many consecutive failures, not failures per minute)", int(n)+1)
		}
	case "cooldown_time":
		if n, ok := num(v); ok && n > 0 {
			c.set("routing.circuit.cooldown", path)
			r.ensureCircuit().Cooldown = seconds(n)
		}
	case "num_retries":
		if n, ok := num(v); ok && n >= 0 {
			c.set("routing.attempt_limit", path)
			r.AttemptLimit = int(n) + 1
			c.note(path, "mapped to routing.attempt_limit: %d (attempts in all, failovers included); Switchyard fails over to the next deployment instead of retrying the same one", int(n)+1)
		}
	case "timeout", "request_timeout":
		if n, ok := num(v); ok && n > 0 {
			c.set("routing.timeouts.headers", path)
			if r.Timeouts == nil {
				r.Timeouts = &outTimeouts{}
			}
			r.Timeouts.Headers = seconds(n)
			c.note(path, "mapped to routing.timeouts.headers (the wait for a non-streaming answer to start); streams have stream_headers and stream_idle")
		}
	case "stream_timeout":
		if n, ok := num(v); ok && n > 0 {
			c.set("routing.timeouts.stream_headers", path)
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
			c.set("alias "+alias, path+"."+alias)
			c.aliases[alias] = aliasSetting{target: target, path: path + "." + alias}
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

// set records that the setting at path sets the output setting target, replacing what an
// earlier one set: the earlier one's notes (how it was mapped) give way to one saying it was
// not applied and which setting was, so that no setting reads as applied when another one won.
func (c *converter) set(target, path string) {
	prev, ok := c.setBy[target]
	c.setBy[target] = path
	if !ok || prev == path {
		return
	}
	kept := c.notes[:0]
	for _, n := range c.notes {
		if n.Path != prev {
			kept = append(kept, n)
		}
	}
	c.notes = kept
	c.note(prev, "not applied: %s sets %s too, and wins", path, target)
}

// aliasSetting is one model_group_alias entry: the model it names and where it was set.
type aliasSetting struct{ target, path string }

// applyAliases adds each model_group_alias alias (the one set last, set) to its model, or notes
// why not.
func (c *converter) applyAliases() {
	names := make([]string, 0, len(c.aliases))
	for a := range c.aliases {
		names = append(names, a)
	}
	sort.Strings(names)
	for _, alias := range names {
		a := c.aliases[alias]
		if mo := c.models[a.target]; mo != nil && c.models[alias] == nil {
			mo.Aliases = append(mo.Aliases, alias)
		} else {
			c.note(a.path, "alias of %q, which is not a model of the output (or the alias is one); not mapped", a.target)
		}
	}
}
