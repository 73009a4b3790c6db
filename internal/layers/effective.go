package layers

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/switchyard-gw/switchyard/internal/failure"
)

// Layer is one layer's settings as an input of [Effective].
type Layer struct {
	// Name is the layer; layers passed together must be in increasing order, each at most once.
	Name Name
	// ID is the account, workspace or key id; it names the layer in a [Conflict]. May be empty.
	ID string
	// Settings are the layer's own settings.
	Settings Settings
}

// Pref is the effective value of a preference field and the one layer that fixed it: the most
// specific layer that set it, or [Default] when none did (Value is then the built-in default).
type Pref[T any] struct {
	Value   T
	FixedBy Name
}

// Constraint is the effective value of a constraint field: the intersection over every layer
// that set it, and the set of those layers. FixedBy empty means unconstrained (Value is then nil
// for a list, [ScopeAll] for the tier scope).
type Constraint[T any] struct {
	Value   T
	FixedBy LayerSet
}

// Merged is a caller's effective settings, the result of [Effective] (R-KEY-2..4). Its JSON is the body of
// GET /admin/v1/keys/{id}/effective: {"settings": {FIELD: {"value": V, "fixed_by": F}}}.
// Slices in it may share memory with the input layers: treat them as read-only.
type Merged struct {
	// Strategy is the ordering strategy; "" when no layer set it (the gateway's
	// routing.strategy applies; pass it in a Default layer to have it reported).
	Strategy Pref[string]
	// PreferredProviders are the preferred providers in order; nil when none.
	PreferredProviders Pref[[]string]
	// AllowRequestOverride reports whether the request layer may set preference fields;
	// default false.
	AllowRequestOverride Pref[bool]
	// Policy is the attached routing policy id; "" when none.
	Policy Pref[string]
	// Billing is "unmetered" (default) or "prepaid".
	Billing Pref[string]

	// Models is the effective model allowlist; nil is no restriction.
	Models Constraint[[]string]
	// Providers is the effective pinned-provider list; nil is no restriction.
	Providers Constraint[[]string]
	// TierScope is the effective tier scope; ScopeAll when unconstrained.
	TierScope Constraint[TierScope]

	// Limits[n] are layer n's own limits, carried unmerged: every layer's are enforced. The zero
	// Limits of a layer limits nothing.
	Limits [numNames]Limits
}

// acc intersects the constraint axis layer by layer; shared by Effective and Check.
type acc struct {
	models, providers Constraint[[]string]
	tier              uint8 // mask; 0 after an empty intersection
	tierBy            LayerSet
}

func newAcc() acc { return acc{tier: maskAll} }

// add intersects layer n's constraints into a. It never mutates the slices it was given.
func (a *acc) add(n Name, s *Settings) {
	intersectList(&a.models, n, s.Models)
	intersectList(&a.providers, n, s.Providers)
	if s.TierScope != "" && s.TierScope != ScopeAll {
		m, _ := s.TierScope.mask()
		a.tier &= m
		a.tierBy = a.tierBy.With(n)
	}
}

func intersectList(c *Constraint[[]string], n Name, l []string) {
	if len(l) == 0 {
		return
	}
	if c.FixedBy.Empty() {
		c.Value, c.FixedBy = l, c.FixedBy.With(n)
		return
	}
	out := make([]string, 0, min(len(c.Value), len(l)))
	for _, v := range c.Value {
		if oneOf(v, l...) {
			out = append(out, v)
		}
	}
	c.Value, c.FixedBy = out, c.FixedBy.With(n)
}

// conflicts appends a Conflict for each field whose intersection is empty.
func (a *acc) conflicts(dst []Conflict, n Name, id string) []Conflict {
	if !a.models.FixedBy.Empty() && len(a.models.Value) == 0 {
		dst = append(dst, Conflict{Field: "models", Layer: n, ID: id, FixedBy: a.models.FixedBy})
	}
	if !a.providers.FixedBy.Empty() && len(a.providers.Value) == 0 {
		dst = append(dst, Conflict{Field: "providers", Layer: n, ID: id, FixedBy: a.providers.FixedBy})
	}
	if a.tier == 0 {
		dst = append(dst, Conflict{Field: "tier_scope", Layer: n, ID: id, FixedBy: a.tierBy})
	}
	return dst
}

// Effective returns the effective settings of layers, given from the most general to the most
// specific (R-KEY-2): each preference field from the most specific layer that sets it, each
// constraint field intersected over all layers, each layer's limits carried as they are. A
// leading [Default] layer supplies the gateway's defaults for preference fields.
//
// Errors: a [failure.Error] of class invalid_request when the layers are out of order or
// repeated, when a layer's settings fail [Settings.Validate] for its name, or when the request
// layer sets a preference field (Param names it) while the layers above do not allow request
// overrides; a *[ConflictError] when a constraint intersects to nothing — for stored layers
// this cannot happen once [Check] guards every save, so from a request it is the request's
// fault; the Merged returned with it is filled in all the same. Effective allocates only when two or more layers set the same constraint list.
func Effective(layers ...Layer) (Merged, error) {
	e := Merged{Billing: Pref[string]{Value: "unmetered"}}
	a := newAcc()
	var last Name
	for i := range layers {
		l := &layers[i]
		if i > 0 && l.Name <= last {
			return Merged{}, failure.Newf(failure.InvalidRequest, "layer %s after %s", l.Name, last)
		}
		last = l.Name
		s := &l.Settings
		if err := s.Validate(l.Name); err != nil {
			return Merged{}, err
		}
		if l.Name == Request && !e.AllowRequestOverride.Value {
			if f := requestPreference(s); f != "" {
				err := failure.Newf(failure.InvalidRequest, "this key may not override %s in a request", f).(*failure.Error)
				err.Param = f
				return Merged{}, err
			}
		}
		setPref(&e.Strategy, l.Name, s.Strategy)
		setPref(&e.PreferredProviders, l.Name, s.PreferredProviders)
		setPref(&e.AllowRequestOverride, l.Name, s.AllowRequestOverride)
		setPref(&e.Policy, l.Name, s.Policy)
		setPref(&e.Billing, l.Name, s.Billing)
		a.add(l.Name, s)
		e.Limits[l.Name] = s.Limits
	}
	e.Models, e.Providers = a.models, a.providers
	scope, _ := scopeOf(a.tier)
	e.TierScope = Constraint[TierScope]{Value: scope, FixedBy: a.tierBy}
	if c := a.conflicts(nil, last, idOf(layers)); c != nil {
		return e, &ConflictError{Conflicts: c}
	}
	return e, nil
}

func idOf(layers []Layer) string {
	if len(layers) == 0 {
		return ""
	}
	return layers[len(layers)-1].ID
}

func requestPreference(s *Settings) string {
	switch {
	case s.Strategy != nil:
		return "strategy"
	case s.PreferredProviders != nil:
		return "preferred_providers"
	case s.Policy != nil:
		return "policy"
	}
	return ""
}

func setPref[T any](p *Pref[T], n Name, v *T) {
	if v != nil {
		p.Value, p.FixedBy = *v, n
	}
}

// MarshalJSON renders e as {"settings": {FIELD: {"value": V, "fixed_by": F}}} (contract.md):
// F is one layer name for a preference field, the list of layers that constrained it for a
// constraint field ([] = unconstrained). "limits" has as value an object of each layer's own
// limits keyed by layer name, and as fixed_by the layers that set any limit.
func (e Merged) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`{"settings":{`)
	first := true
	field := func(name string, value any, fixedBy any) error {
		if !first {
			b.WriteByte(',')
		}
		first = false
		v, err := json.Marshal(value)
		if err != nil {
			return err
		}
		f, err := json.Marshal(fixedBy)
		if err != nil {
			return err
		}
		b.WriteString(strconv.Quote(name) + `:{"value":`)
		b.Write(v)
		b.WriteString(`,"fixed_by":`)
		b.Write(f)
		b.WriteByte('}')
		return nil
	}
	limits := map[string]json.RawMessage{}
	var limitedBy LayerSet
	for n, l := range e.Limits {
		if !l.IsZero() {
			limits[Name(n).String()] = l.json()
			limitedBy = limitedBy.With(Name(n))
		}
	}
	for _, err := range []error{
		field("strategy", e.Strategy.Value, e.Strategy.FixedBy),
		field("preferred_providers", nonNil(e.PreferredProviders.Value), e.PreferredProviders.FixedBy),
		field("allow_request_override", e.AllowRequestOverride.Value, e.AllowRequestOverride.FixedBy),
		field("policy", e.Policy.Value, e.Policy.FixedBy),
		field("billing", e.Billing.Value, e.Billing.FixedBy),
		field("models", nonNil(e.Models.Value), e.Models.FixedBy),
		field("providers", nonNil(e.Providers.Value), e.Providers.FixedBy),
		field("tier_scope", e.TierScope.Value, e.TierScope.FixedBy),
		field("limits", limits, limitedBy),
	} {
		if err != nil {
			return nil, err
		}
	}
	b.WriteString("}}")
	return b.Bytes(), nil
}
