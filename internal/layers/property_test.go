package layers

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
)

// Property tests over a seeded generator: a failure prints the seed and layers to reproduce.

var (
	universe = []string{"a", "b", "c", "d", "e"}
	scopes   = []TierScope{"", ScopeAll, ScopeOfficial, ScopeValue}
)

func genList(r *rand.Rand) []string {
	if r.IntN(3) == 0 {
		return nil // unset
	}
	var l []string
	for _, v := range universe {
		if r.IntN(2) == 0 {
			l = append(l, v)
		}
	}
	return l
}

func genSettings(r *rand.Rand, n Name) Settings {
	var s Settings
	if r.IntN(2) == 0 {
		s.Strategy = new(strategies[r.IntN(len(strategies))])
	}
	if r.IntN(2) == 0 {
		l := genList(r)
		s.PreferredProviders = &l
	}
	if r.IntN(2) == 0 {
		s.Policy = new(universe[r.IntN(len(universe))])
	}
	if n == Default {
		return s
	}
	if n != Request && r.IntN(2) == 0 {
		s.AllowRequestOverride = new(r.IntN(2) == 0)
	}
	s.Models, s.Providers = genList(r), genList(r)
	s.TierScope = scopes[r.IntN(len(scopes))]
	if n != Request {
		s.Limits.RPM = int64(r.IntN(3))
	}
	return s
}

// genLayers returns a random ordered subset of the layers, request included only when the
// layers above allow overrides (so that Effective's preference gate does not interfere).
func genLayers(r *rand.Rand) []Layer {
	var ls []Layer
	for n := Default; n < numNames; n++ {
		if r.IntN(4) != 0 {
			ls = append(ls, Layer{Name: n, Settings: genSettings(r, n)})
		}
	}
	return ls
}

func asSet(l []string) []string {
	s := slices.Clone(l)
	slices.Sort(s)
	return s
}

func allow(ls []Layer) bool {
	ok := false
	for _, l := range ls {
		if l.Name != Request && l.Settings.AllowRequestOverride != nil {
			ok = *l.Settings.AllowRequestOverride
		}
	}
	return ok
}

// TestPropertyIntersection: intersection is commutative and associative as sets, for lists and
// tier scopes (R-KEY-2, R-KEY-3).
func TestPropertyIntersection(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 5000 {
		x, y, z := genList(r), genList(r), genList(r)
		lists := func(ls ...[]string) Constraint[[]string] {
			var c Constraint[[]string]
			for j, l := range ls {
				intersectList(&c, Name(j+1), l)
			}
			return c
		}
		if a, b := lists(x, y), lists(y, x); !slices.Equal(asSet(a.Value), asSet(b.Value)) || (a.FixedBy.Empty() != b.FixedBy.Empty()) {
			t.Fatalf("case %d: %v∩%v = %v but %v∩%v = %v", i, x, y, a.Value, y, x, b.Value)
		}
		// Associativity: grouping y and z first gives the same set. An empty but constrained
		// group cannot be a layer's input (empty = no restriction), so then the whole must be
		// empty and constrained too.
		xyz := lists(x, y, z)
		if yz := lists(y, z); !yz.FixedBy.Empty() && len(yz.Value) == 0 {
			if len(xyz.Value) != 0 || xyz.FixedBy.Empty() {
				t.Fatalf("case %d: %v∩%v is empty but %v∩%v∩%v = %v", i, y, z, x, y, z, xyz.Value)
			}
		} else if grouped := lists(x, yz.Value); !slices.Equal(asSet(xyz.Value), asSet(grouped.Value)) {
			t.Fatalf("case %d: %v∩%v∩%v = %v but %v∩(%v∩%v) = %v", i, x, y, z, xyz.Value, x, y, z, grouped.Value)
		}
		if zyx := lists(z, y, x); !slices.Equal(asSet(xyz.Value), asSet(zyx.Value)) || xyz.FixedBy.Empty() != zyx.FixedBy.Empty() {
			t.Fatalf("case %d: order matters: %v vs %v", i, xyz.Value, zyx.Value)
		}
		p, q, s := scopes[r.IntN(4)], scopes[r.IntN(4)], scopes[r.IntN(4)]
		pq, ok1 := p.Intersect(q)
		qp, ok2 := q.Intersect(p)
		if pq != qp || ok1 != ok2 {
			t.Fatalf("%q∩%q = %q but %q∩%q = %q", p, q, pq, q, p, qp)
		}
		l, okl := pq.Intersect(s)
		qs, okqs := q.Intersect(s)
		rr, okr := p.Intersect(qs)
		if (ok1 && okl) != (okqs && okr) || ok1 && okl && l != rr {
			t.Fatalf("(%q∩%q)∩%q = %q,%v but %q∩(%q∩%q) = %q,%v", p, q, s, l, ok1 && okl, p, q, s, rr, okqs && okr)
		}
	}
}

// TestPropertyMerge: over random layer stacks, (1) a lower layer never widens a constraint set
// above: the effective set is within every setter's list and every scope; (2) each preference
// comes from the most specific layer that sets it; (3) limits are each layer's own; (4) an
// empty intersection is always reported, never returned as "no restriction".
func TestPropertyMerge(t *testing.T) {
	seed := uint64(42)
	r := rand.New(rand.NewPCG(seed, seed))
	for i := range 5000 {
		ls := genLayers(r)
		if len(ls) > 0 && ls[len(ls)-1].Name == Request && !allow(ls[:len(ls)-1]) {
			ls[len(ls)-1].Settings.Strategy, ls[len(ls)-1].Settings.PreferredProviders, ls[len(ls)-1].Settings.Policy = nil, nil, nil
		}
		e, err := Effective(ls...)
		var ce *ConflictError
		if err != nil && !errors.As(err, &ce) {
			t.Fatalf("case %d: %v for %+v", i, err, ls)
		}
		emptyModels := false
		for _, l := range ls {
			s := l.Settings
			// (1) never wider than any layer that set the list.
			if len(s.Models) > 0 {
				for _, m := range e.Models.Value {
					if !slices.Contains(s.Models, m) {
						t.Fatalf("case %d: model %q allowed though %s allows only %v", i, m, l.Name, s.Models)
					}
				}
				if !e.Models.FixedBy.Has(l.Name) {
					t.Fatalf("case %d: %s constrained models but is not in fixed_by", i, l.Name)
				}
			}
			if len(s.Providers) > 0 {
				for _, p := range e.Providers.Value {
					if !slices.Contains(s.Providers, p) {
						t.Fatalf("case %d: provider %q allowed though %s pins %v", i, p, l.Name, s.Providers)
					}
				}
			}
			if err == nil {
				for _, tier := range []string{"official", "value", "spot"} {
					if e.TierScope.Value.Admits(tier) && !s.TierScope.Admits(tier) {
						t.Fatalf("case %d: tier %q admitted though %s scopes %q", i, tier, l.Name, s.TierScope)
					}
				}
			}
			// (3) limits carried as they are.
			if e.Limits[l.Name] != s.Limits {
				t.Fatalf("case %d: limits of %s = %+v, want %+v", i, l.Name, e.Limits[l.Name], s.Limits)
			}
		}
		if !e.Models.FixedBy.Empty() && len(e.Models.Value) == 0 {
			emptyModels = true
		}
		// (4) an empty intersection is a conflict.
		if emptyModels && (ce == nil || !slices.Contains(ce.Fields(), "models")) {
			t.Fatalf("case %d: models intersect to nothing but err = %v", i, err)
		}
		// (2) preference from the most specific setter.
		wantBy, want := Default, ""
		for _, l := range ls {
			if l.Settings.Strategy != nil {
				wantBy, want = l.Name, *l.Settings.Strategy
			}
		}
		if e.Strategy.Value != want || e.Strategy.FixedBy != wantBy {
			t.Fatalf("case %d: strategy %+v, want %q by %s", i, e.Strategy, want, wantBy)
		}
		wantBy = Default
		for _, l := range ls {
			if l.Settings.PreferredProviders != nil {
				wantBy = l.Name
			}
		}
		if e.PreferredProviders.FixedBy != wantBy {
			t.Fatalf("case %d: preferred_providers fixed by %s, want %s", i, e.PreferredProviders.FixedBy, wantBy)
		}
	}
}

// TestPropertyCheckMatchesEffective: Check reports a key exactly when Effective over the key's
// account, workspace and key layers reports a conflict, on the same fields.
func TestPropertyCheckMatchesEffective(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for i := range 2000 {
		acct := Node{ID: "acct", Settings: genSettings(r, Account)}
		ws := Node{ID: "w", Settings: genSettings(r, Workspace)}
		key := Node{ID: "k", Settings: genSettings(r, Key)}
		tr := Tree{Account: acct, Workspaces: []WorkspaceNode{{Node: ws, Keys: []Node{key}}}}
		var fromCheck []string
		var ce *ConflictError
		if err := Check(tr); errors.As(err, &ce) {
			for _, c := range ce.Conflicts {
				if c.Layer == Key {
					fromCheck = append(fromCheck, c.Field)
				}
			}
		} else if err != nil {
			t.Fatal(err)
		}
		var fromEff []string
		_, err := Effective(Layer{Account, "acct", acct.Settings}, Layer{Workspace, "w", ws.Settings}, Layer{Key, "k", key.Settings})
		if errors.As(err, &ce) {
			fromEff = ce.Fields()
		}
		if !slices.Equal(fromCheck, fromEff) {
			t.Fatalf("case %d: Check says %v, Effective says %v", i, fromCheck, fromEff)
		}
	}
}
