package layers

import (
	"bytes"
	"encoding/json"
	"math/big"
	"strconv"
)

// Apply merges a PATCH body's `settings` object into current and returns the result (contract.md
// Admin API): a field present replaces that field, an absent field is unchanged, and null clears
// it. limits is merged the same way one level down ({"limits": {"rpm": 10}} sets rpm only;
// {"limits": null} clears every limit). A models or providers list that is empty is stored as
// nil: no restriction (R-ADMIT-1). Lists are deduplicated, keeping the first occurrence.
//
// current is not modified. The error is a [failure.Error] of class invalid_request whose Param
// names the field ("settings.limits.rpm") for an unknown field, a wrong JSON type, an empty name
// in a list, or a value [Settings.Validate] refuses on any layer; patch must be a JSON object.
// Layer-specific rules (billing on an account only) are checked by [Settings.Validate].
func Apply(current Settings, patch json.RawMessage) (Settings, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(patch, &fields); err != nil || fields == nil {
		return current, invalid("", "settings must be a JSON object")
	}
	s := current
	for k, raw := range fields {
		null := bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
		var err error
		switch k {
		case "strategy":
			s.Strategy, err = optString(k, raw, null)
		case "policy":
			s.Policy, err = optString(k, raw, null)
		case "billing":
			s.Billing, err = optString(k, raw, null)
		case "allow_request_override":
			s.AllowRequestOverride = nil
			if !null {
				var b bool
				if err = json.Unmarshal(raw, &b); err != nil {
					err = invalid(k, "must be true or false")
				}
				s.AllowRequestOverride = &b
			}
		case "preferred_providers":
			s.PreferredProviders = nil
			if !null {
				var l []string
				l, err = list(k, raw)
				if l == nil {
					l = []string{}
				}
				s.PreferredProviders = &l
			}
		case "models":
			s.Models, err = constraintList(k, raw, null)
		case "providers":
			s.Providers, err = constraintList(k, raw, null)
		case "tier_scope":
			var p *string
			if p, err = optString(k, raw, null); p != nil {
				s.TierScope = TierScope(*p)
			} else {
				s.TierScope = ""
			}
		case "limits":
			s.Limits, err = applyLimits(s.Limits, raw, null)
		default:
			err = invalid(k, "unknown field")
		}
		if err != nil {
			return current, err
		}
	}
	// Values are checked on the most permissive layer here; Validate(n) adds the layer's rules.
	if err := s.Validate(Account); err != nil {
		return current, err
	}
	return s, nil
}

func optString(field string, raw json.RawMessage, null bool) (*string, error) {
	if null {
		return nil, nil
	}
	var v string
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, invalid(field, "must be a string")
	}
	return &v, nil
}

// list decodes a JSON array of non-empty strings, dropping duplicates.
func list(field string, raw json.RawMessage) ([]string, error) {
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		return nil, invalid(field, "must be a list of strings")
	}
	out := make([]string, 0, len(elems))
	for _, e := range elems {
		var v string
		if err := json.Unmarshal(e, &v); err != nil || bytes.Equal(bytes.TrimSpace(e), []byte("null")) {
			return nil, invalid(field, "must be a list of strings")
		}
		if v == "" {
			return nil, invalid(field, "must not contain an empty name")
		}
		if !oneOf(v, out...) {
			out = append(out, v)
		}
	}
	return out, nil
}

func constraintList(field string, raw json.RawMessage, null bool) ([]string, error) {
	if null {
		return nil, nil
	}
	l, err := list(field, raw)
	if len(l) == 0 {
		l = nil // empty = no restriction (R-ADMIT-1)
	}
	return l, err
}

func applyLimits(cur Limits, raw json.RawMessage, null bool) (Limits, error) {
	if null {
		return Limits{}, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return cur, invalid("limits", "must be an object")
	}
	l := cur
	for k, v := range fields {
		null := bytes.Equal(bytes.TrimSpace(v), []byte("null"))
		name := "limits." + k
		var err error
		switch k {
		case "rpm":
			l.RPM, err = count(name, v, null)
		case "tpm":
			l.TPM, err = count(name, v, null)
		case "concurrency":
			l.Concurrency, err = count(name, v, null)
		case "budget_usd":
			l.BudgetMicroUSD, err = microUSD(name, v, null)
		case "budget_period":
			var p *string
			if p, err = optString(name, v, null); p != nil {
				l.BudgetPeriod = *p
			} else {
				l.BudgetPeriod = ""
			}
		default:
			err = invalid(name, "unknown field")
		}
		if err != nil {
			return cur, err
		}
	}
	return l, nil
}

func count(field string, raw json.RawMessage, null bool) (int64, error) {
	if null {
		return 0, nil
	}
	var v int64
	if err := json.Unmarshal(raw, &v); err != nil {
		return 0, invalid(field, "must be a whole number")
	}
	return v, nil
}

// microUSD reads a JSON number of USD exactly (no float rounding) as micro-USD.
func microUSD(field string, raw json.RawMessage, null bool) (int64, error) {
	if null {
		return 0, nil
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err != nil || !isNumber(raw) {
		return 0, invalid(field, "must be a number")
	}
	r, ok := new(big.Rat).SetString(n.String())
	if !ok {
		return 0, invalid(field, "must be a number")
	}
	r.Mul(r, big.NewRat(1e6, 1))
	if !r.IsInt() {
		return 0, invalid(field, "must have at most 6 decimal places")
	}
	if !r.Num().IsInt64() || r.Num().Int64() > maxBudgetMicroUSD {
		return 0, invalid(field, "must not exceed 1e9")
	}
	return r.Num().Int64(), nil
}

// isNumber reports whether raw is a JSON number literal (json.Number also accepts a string).
func isNumber(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9')
}

// formatMicroUSD renders micro-USD as a decimal USD number: 12500000 → 12.5.
func formatMicroUSD(v int64) []byte {
	b := strconv.AppendInt(nil, v/1e6, 10)
	if frac := v % 1e6; frac != 0 {
		if frac < 0 {
			frac = -frac
		}
		f := []byte(strconv.FormatInt(frac+1e6, 10)[1:])
		b = append(append(b, '.'), bytes.TrimRight(f, "0")...)
	}
	return b
}

// MarshalJSON renders the set fields of s as the `settings` object of contract.md; unset fields
// are left out. Its output read back by [Settings.UnmarshalJSON] gives s again.
func (s Settings) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	field := func(name string, v any) error {
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Quote(name))
		b.WriteByte(':')
		if raw, ok := v.([]byte); ok {
			b.Write(raw)
			return nil
		}
		j, err := json.Marshal(v)
		b.Write(j)
		return err
	}
	var err error
	add := func(name string, v any) {
		if err == nil {
			err = field(name, v)
		}
	}
	if s.Strategy != nil {
		add("strategy", *s.Strategy)
	}
	if s.PreferredProviders != nil {
		add("preferred_providers", nonNil(*s.PreferredProviders))
	}
	if s.AllowRequestOverride != nil {
		add("allow_request_override", *s.AllowRequestOverride)
	}
	if s.Policy != nil {
		add("policy", *s.Policy)
	}
	if s.Billing != nil {
		add("billing", *s.Billing)
	}
	if s.Models != nil {
		add("models", s.Models)
	}
	if s.Providers != nil {
		add("providers", s.Providers)
	}
	if s.TierScope != "" {
		add("tier_scope", s.TierScope)
	}
	if !s.Limits.IsZero() {
		add("limits", s.Limits.json())
	}
	b.WriteByte('}')
	return b.Bytes(), err
}

// UnmarshalJSON reads a `settings` object strictly, as [Apply] onto the zero Settings does.
func (s *Settings) UnmarshalJSON(data []byte) error {
	v, err := Apply(Settings{}, data)
	if err != nil {
		return err
	}
	*s = v
	return nil
}

func nonNil(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}

// json renders the set (non-zero) limits as a JSON object, budget_usd in USD.
func (l Limits) json() []byte {
	b := []byte{'{'}
	add := func(name string, v []byte) {
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = append(append(append(b, '"'), name...), `":`...)
		b = append(b, v...)
	}
	if l.RPM != 0 {
		add("rpm", strconv.AppendInt(nil, l.RPM, 10))
	}
	if l.TPM != 0 {
		add("tpm", strconv.AppendInt(nil, l.TPM, 10))
	}
	if l.Concurrency != 0 {
		add("concurrency", strconv.AppendInt(nil, l.Concurrency, 10))
	}
	if l.BudgetMicroUSD != 0 {
		add("budget_usd", formatMicroUSD(l.BudgetMicroUSD))
	}
	if l.BudgetPeriod != "" {
		add("budget_period", []byte(strconv.Quote(l.BudgetPeriod)))
	}
	return append(b, '}')
}

// MarshalJSON renders the set limits as {"rpm":…,"budget_usd":12.5,…}; zero fields are left out.
func (l Limits) MarshalJSON() ([]byte, error) { return l.json(), nil }
