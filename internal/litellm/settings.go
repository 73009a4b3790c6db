package litellm

import "strings"

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
