package layers

import (
	"strconv"

	"github.com/switchyard-gw/switchyard/internal/failure"
)

// Name names a layer. The zero value is [Default], the gateway's own defaults below every layer.
// Layers are ordered from the most general to the most specific: Default < Account < Workspace <
// Key < Request.
type Name uint8

// The layers, from the most general to the most specific.
const (
	Default   Name = iota // the gateway's defaults: preference fields only
	Account               // an account's settings
	Workspace             // a workspace's settings; optional between account and key
	Key                   // an API key's settings
	Request               // the request's own overrides (model suffixes, provider options)
	numNames
)

var names = [numNames]string{"default", "account", "workspace", "key", "request"}

// String returns the name used in fixed_by: "default", "account", "workspace", "key" or
// "request"; "layer(N)" for an out-of-range value.
func (n Name) String() string {
	if n < numNames {
		return names[n]
	}
	return "layer(" + strconv.Itoa(int(n)) + ")"
}

// MarshalJSON renders the name as a JSON string.
func (n Name) MarshalJSON() ([]byte, error) { return []byte(`"` + n.String() + `"`), nil }

// LayerSet is a set of layers, as a bit mask; the zero value is the empty set. Its JSON is the
// list of names from the most general to the most specific ([] when empty).
type LayerSet uint8

// With returns s with n added.
func (s LayerSet) With(n Name) LayerSet { return s | 1<<n }

// Has reports whether n is in s.
func (s LayerSet) Has(n Name) bool { return s&(1<<n) != 0 }

// Empty reports whether s holds no layer.
func (s LayerSet) Empty() bool { return s == 0 }

// Names returns the layers of s from the most general to the most specific; nil when empty.
func (s LayerSet) Names() []Name {
	var out []Name
	for n := Default; n < numNames; n++ {
		if s.Has(n) {
			out = append(out, n)
		}
	}
	return out
}

// MarshalJSON renders s as a list of layer names, e.g. ["account","key"].
func (s LayerSet) MarshalJSON() ([]byte, error) {
	b := []byte{'['}
	for _, n := range s.Names() {
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, n.String()...)
		b = append(b, '"')
	}
	return append(b, ']'), nil
}

// TierScope is a supply-tier scope (R-KEY-3). The zero value "" is unset. Scopes are not a total
// order: official and value intersect to nothing.
type TierScope string

// The tier scopes of contract.md.
const (
	ScopeAll      TierScope = "all"      // every supply tier
	ScopeOfficial TierScope = "official" // official supply only
	ScopeValue    TierScope = "value"    // value supply only
)

// tier masks: "all" admits official, value and any other tier a deployment may name.
const (
	maskOfficial uint8 = 1 << iota
	maskValue
	maskOther
	maskAll = maskOfficial | maskValue | maskOther
)

func (t TierScope) mask() (uint8, bool) {
	switch t {
	case "", ScopeAll:
		return maskAll, true
	case ScopeOfficial:
		return maskOfficial, true
	case ScopeValue:
		return maskValue, true
	}
	return 0, false
}

// Intersect returns the scope admitting the tiers both t and u admit, by the table of R-KEY-3:
// all∩x = x, x∩x = x, official∩value = "" with ok false (nothing). Unset ("") is all. An
// unknown scope yields ok false.
func (t TierScope) Intersect(u TierScope) (TierScope, bool) {
	a, ok1 := t.mask()
	b, ok2 := u.mask()
	if !ok1 || !ok2 {
		return "", false
	}
	return scopeOf(a & b)
}

func scopeOf(m uint8) (TierScope, bool) {
	switch m {
	case maskAll:
		return ScopeAll, true
	case maskOfficial:
		return ScopeOfficial, true
	case maskValue:
		return ScopeValue, true
	}
	return "", false
}

// Admits reports whether a deployment of supply tier tier (catalog.Deployment.Tier) is within
// the scope (R-ADMIT-3). Unset and "all" admit every tier.
func (t TierScope) Admits(tier string) bool {
	m, ok := t.mask()
	if !ok {
		return false
	}
	switch tier {
	case string(ScopeOfficial):
		return m&maskOfficial != 0
	case string(ScopeValue):
		return m&maskValue != 0
	}
	return m&maskOther != 0
}

// Limits are one layer's own limits (R-BILL-1, docs/limits.md). A zero field is no limit; the
// zero Limits limits nothing. They are never merged across layers: every layer's are enforced.
type Limits struct {
	// RPM is requests per one-minute window.
	RPM int64
	// TPM is tokens per one-minute window.
	TPM int64
	// Concurrency is requests in flight at once.
	Concurrency int64
	// BudgetMicroUSD is the spend allowed per BudgetPeriod, in micro-USD (JSON budget_usd, in USD).
	BudgetMicroUSD int64
	// BudgetPeriod is "day", "month" or "total"; "" is unset (month).
	BudgetPeriod string
}

// IsZero reports whether l limits nothing and sets no period.
func (l Limits) IsZero() bool { return l == Limits{} }

// Settings are one layer's own settings: the `settings` object of contract.md. The zero value
// sets nothing. See the package documentation for unset versus empty.
type Settings struct {
	// Strategy is the ordering strategy (price, latency, throughput, reliability, balanced,
	// priority); nil inherits.
	Strategy *string
	// PreferredProviders are providers tried first, in order; nil inherits, an empty list
	// replaces an inherited preference with none.
	PreferredProviders *[]string
	// AllowRequestOverride lets the request layer set preference fields; nil inherits
	// (default false). Not settable on the request layer.
	AllowRequestOverride *bool
	// Policy is the id of a saved routing policy (R-POLICY); nil inherits, "" detaches.
	Policy *string
	// Billing is "unmetered" or "prepaid" (contract.md Billing); account layer only.
	Billing *string

	// Models is the model allowlist (catalog ids); nil is no restriction (R-ADMIT-1).
	Models []string
	// Providers are the pinned providers; nil is no restriction (R-ADMIT-2).
	Providers []string
	// TierScope is the supply-tier scope; "" is unset (R-ADMIT-3).
	TierScope TierScope

	// Limits are this layer's own limits; not settable on the default or request layer.
	Limits Limits
}

var strategies = []string{"price", "latency", "throughput", "reliability", "balanced", "priority"}

func oneOf(v string, allowed ...string) bool {
	for _, a := range allowed {
		if v == a {
			return true
		}
	}
	return false
}

// invalid returns an invalid_request error naming settings.field ("settings" when field is "").
func invalid(field, format string, args ...any) error {
	param := "settings"
	if field != "" {
		param += "." + field
	}
	e := failure.Newf(failure.InvalidRequest, param+": "+format, args...).(*failure.Error)
	e.Param = param
	return e
}

// Validate reports whether s may be set on layer n: every value is one the contract allows,
// billing is set on the account layer only, limits are not set on the default or request layer,
// the default layer sets no constraint, and the request layer does not set
// allow_request_override. The error is a [failure.Error] of class invalid_request whose Param
// names the field ("settings.billing").
func (s *Settings) Validate(n Name) error {
	if n >= numNames {
		return failure.Newf(failure.InvalidRequest, "unknown layer %d", n)
	}
	if s.Strategy != nil && !oneOf(*s.Strategy, strategies...) {
		return invalid("strategy", "must be one of price, latency, throughput, reliability, balanced, priority")
	}
	if s.Billing != nil {
		if !oneOf(*s.Billing, "unmetered", "prepaid") {
			return invalid("billing", "must be unmetered or prepaid")
		}
		if n != Account && n != Default {
			return invalid("billing", "can be set on an account only, not on a %s", n)
		}
	}
	if _, ok := s.TierScope.mask(); !ok {
		return invalid("tier_scope", "must be all, official or value")
	}
	if err := s.Limits.validate(); err != nil {
		return err
	}
	switch n {
	case Default:
		switch {
		case s.Models != nil:
			return invalid("models", "the default layer sets no constraint")
		case s.Providers != nil:
			return invalid("providers", "the default layer sets no constraint")
		case s.TierScope != "":
			return invalid("tier_scope", "the default layer sets no constraint")
		}
	case Request:
		if s.AllowRequestOverride != nil {
			return invalid("allow_request_override", "cannot be set by a request")
		}
	}
	if (n == Default || n == Request) && !s.Limits.IsZero() {
		return invalid("limits", "cannot be set on the %s layer", n)
	}
	return nil
}

// maxBudgetMicroUSD is 1e9 USD, the ceiling of docs/limits.md.
const maxBudgetMicroUSD = 1e9 * 1e6

func (l Limits) validate() error {
	for _, f := range []struct {
		name string
		v    int64
	}{{"rpm", l.RPM}, {"tpm", l.TPM}, {"concurrency", l.Concurrency}, {"budget_usd", l.BudgetMicroUSD}} {
		if f.v < 0 {
			return invalid("limits."+f.name, "must not be negative")
		}
	}
	if l.BudgetMicroUSD > maxBudgetMicroUSD {
		return invalid("limits.budget_usd", "must not exceed 1e9")
	}
	if l.BudgetPeriod != "" && !oneOf(l.BudgetPeriod, "day", "month", "total") {
		return invalid("limits.budget_period", "must be day, month or total")
	}
	return nil
}
