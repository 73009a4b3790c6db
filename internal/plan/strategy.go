package plan

import (
	"cmp"
	"math"
)

// The strategies of R-ORDER-1, as named in configuration, provider.sort and `model:@strategy`.
const (
	StrategyPrice       = "price"       // blended price ascending, unpriced last (R-ORDER-2); the default
	StrategyLatency     = "latency"     // mean time to first token ascending
	StrategyThroughput  = "throughput"  // output tokens per second descending
	StrategyReliability = "reliability" // success ratio descending
	StrategyBalanced    = "balanced"    // weighted random by route weight
	StrategyPriority    = "priority"    // tiers by ascending deployment priority, weighted random inside a tier
)

// MinSamples is the fewest requests a route's measurement needs in the 24-hour window to count
// for the latency, throughput and reliability strategies. A route with fewer is placed at the
// median of the measured ones; when no route has enough, the pass degrades to balanced
// (R-ORDER-4).
const MinSamples = 20

// ValidStrategy reports whether name is one of the Strategy constants.
func ValidStrategy(name string) bool {
	_, ok := parseStrategy(name)
	return ok
}

// kind is a strategy's ordering rule.
type kind uint8

const (
	kindPrice kind = iota
	kindLatency
	kindThroughput
	kindReliability
	kindBalanced
	kindPriority
)

// strategy is a parsed strategy name.
type strategy struct {
	name string
	kind kind
}

func parseStrategy(name string) (strategy, bool) {
	k := kindPrice
	switch name {
	case StrategyPrice:
	case StrategyLatency:
		k = kindLatency
	case StrategyThroughput:
		k = kindThroughput
	case StrategyReliability:
		k = kindReliability
	case StrategyBalanced:
		k = kindBalanced
	case StrategyPriority:
		k = kindPriority
	default:
		return strategy{}, false
	}
	return strategy{name: name, kind: k}, true
}

// metric reports whether the strategy orders by a metric (and so has tie bands by tolerance).
func (s strategy) metric() bool { return s.kind <= kindReliability }

// measure sets each candidate's Score, metric and sort key for strategy s and returns the
// strategy that orders the pool: s, or balanced when s needs measurements and no candidate has
// MinSamples of them (R-ORDER-4).
func measure(cs []Candidate, s strategy, in *Input) strategy {
	switch s.kind {
	case kindPrice:
		priceScores(cs, in.Blend)
		return s
	case kindBalanced, kindPriority:
		noScores(cs)
		return s
	}
	if !statScores(cs, s.kind, in.Stats) {
		noScores(cs)
		return strategy{name: StrategyBalanced, kind: kindBalanced}
	}
	return s
}

// noScores marks every candidate as having no metric.
func noScores(cs []Candidate) {
	for i := range cs {
		cs[i].Score = math.NaN()
	}
}

// compare is the order of the pool before banding: the caller's own (BYOK) routes before the
// house's, then an endpoint's reserved routes in the endpoint's order, then a routing policy's
// saved order, then the group (provider.order, preferred),
// then the strategy's key, then the weighted random draw. Inside a metric band, band() reorders
// by priority then draw.
func (s strategy) compare(a, b *Candidate) int {
	if a.house != b.house {
		if a.house {
			return 1 // the caller's own connections before the house (R-POLICY funding)
		}
		return -1
	}
	if c := cmp.Compare(a.rsv, b.rsv); c != 0 {
		return c // an endpoint's reserved routes first, in its order (R-KEY-6)
	}
	if c := cmp.Compare(a.saved, b.saved); c != 0 {
		return c // a routing policy's saved order (R-ORDER-7)
	}
	if c := cmp.Compare(a.group, b.group); c != 0 {
		return c
	}
	switch s.kind {
	case kindBalanced:
	case kindPriority:
		if c := cmp.Compare(a.Route.Deployment.Priority, b.Route.Deployment.Priority); c != 0 {
			return c
		}
	default:
		if a.nokey != b.nokey {
			if a.nokey {
				return 1
			}
			return -1
		}
		if c := cmp.Compare(a.key, b.key); c != 0 {
			return c
		}
	}
	return cmp.Compare(a.draw, b.draw)
}

// byBand is the order once a metric pass is banded: bands in order, and inside a band
// (R-ORDER-3) lower priority first, then the weighted random draw.
func byBand(a, b *Candidate) int {
	if c := cmp.Compare(a.Band, b.Band); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Route.Deployment.Priority, b.Route.Deployment.Priority); c != 0 {
		return c
	}
	return cmp.Compare(a.draw, b.draw)
}

// group sets each candidate's group: the index of the first provider.order entry naming it;
// then, when the preferred set splits the rest (matches some but not all of them), preferred
// before the others (R-ORDER-6).
func group(cs []Candidate, pr *Preferences) {
	n := int32(len(pr.Order))
	pref := 0
	for i := range cs {
		c := &cs[i]
		c.group = n
		if n > 0 {
			if j := index(pr.Order, c.Route.Deployment); j >= 0 {
				c.group = int32(j)
				continue
			}
		}
		if len(pr.Preferred) > 0 && index(pr.Preferred, c.Route.Deployment) >= 0 {
			pref++
			c.group = -1 // marked preferred; settled below
		}
	}
	rest := 0
	for i := range cs {
		if cs[i].group >= n {
			rest++
		}
	}
	for i := range cs {
		c := &cs[i]
		switch {
		case c.group == -1:
			c.group = n // preferred
		case c.group == n && pref > 0 && rest > 0:
			c.group = n + 1 // the rest, after the preferred
		}
	}
}

// band numbers the tie bands of each group from 0 along the plan (R-ORDER-3) and reports
// whether a band holds more than one candidate of a metric pass, which must then be reordered
// by byBand. For a metric strategy a band starts at its best candidate (its leader) and holds
// the following candidates within the tolerance of the leader's metric. Balanced makes one
// band per group, priority one per priority tier. cs must already be sorted by s.compare.
func band(cs []Candidate, s strategy) (reorder bool) {
	b, start := 0, 0
	for i := range cs {
		if i > 0 && !sameBand(&cs[start], &cs[i], s) {
			b, start = b+1, i
		}
		cs[i].Band = b
		reorder = reorder || i > start
	}
	return reorder && s.metric()
}

// sameBand reports whether c belongs to the band led by lead. Tolerances (R-ORDER-3): 2%
// relative for price, 20% relative for latency and throughput, 1 percentage point absolute for
// reliability, all measured from the leader, so a band never chains past its tolerance.
func sameBand(lead, c *Candidate, s strategy) bool {
	if lead.group != c.group || lead.rsv != c.rsv || c.rsv != publicRank || lead.house != c.house || lead.saved != c.saved {
		return false // a reserved route is a band of its own (R-KEY-6), as is a saved-order entry's (R-ORDER-7)
	}
	const eps = 1e-9 // float slack: 0.99 - 0.98 is a little over 0.01
	switch s.kind {
	case kindBalanced:
		return true
	case kindPriority:
		return lead.Route.Deployment.Priority == c.Route.Deployment.Priority
	}
	if lead.nokey || c.nokey {
		return lead.nokey == c.nokey
	}
	l, x := lead.metric, c.metric
	switch s.kind {
	case kindPrice:
		return x-l <= 0.02*l+eps
	case kindLatency:
		return x-l <= 0.2*l+eps
	case kindThroughput:
		return l-x <= 0.2*l+eps
	default: // reliability
		return l-x <= 0.01+eps
	}
}
