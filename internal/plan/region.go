package plan

import (
	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/failure"
)

// Failover direction of a failure class across regions (seed 003 "How the router decides to
// continue", issue 11 item 6).
const (
	// SameRegionFirst: authentication, permission, insufficient balance (upstream_auth: the
	// provider's 401, 402, 403) and rate limits (upstream_rate_limited, 429) move to another
	// target in the same region first, then to the rest of the plan.
	SameRegionFirst = "same_region_first"
	// OtherRegionFirst: unavailable and timeout failures (upstream_error: 5xx, 404, 408,
	// transport failures; upstream_timeout) move to another region first, then to the rest.
	OtherRegionFirst = "other_region_first"
)

// RegionRule is how a failure of class c reorders the rest of the plan: SameRegionFirst,
// OtherRegionFirst, or "" (the plan order is kept; a class that does not fail over stops).
func RegionRule(c failure.Class) string {
	switch c {
	case failure.UpstreamAuth, failure.UpstreamRateLimited:
		return SameRegionFirst
	case failure.UpstreamError, failure.UpstreamTimeout:
		return OtherRegionFirst
	}
	return ""
}

// Failover reorders the candidates not yet tried, p.Candidates[from:], after the route failed
// failed with class c (issue 11 item 6). With RegionRule(c) SameRegionFirst the candidates whose
// Region equals failed's come first, with OtherRegionFirst those whose Region differs; each part
// keeps its plan order, and the reordering happens only inside each run of candidates of one
// kind (an endpoint's reserved routes, the caller's own BYOK routes, the house routes), so a
// region never moves a route across those. A failed route without a region, or a class without
// a rule, changes nothing. It does not allocate.
func (p *Plan) Failover(from int, failed *catalog.Route, c failure.Class) {
	rule := RegionRule(c)
	if rule == "" || failed.Region == "" || from >= len(p.Candidates) {
		return
	}
	rest := p.Candidates[from:]
	for start := 0; start < len(rest); {
		end := start + 1
		for end < len(rest) && rest[end].Reserved == rest[start].Reserved && rest[end].BYOK == rest[start].BYOK {
			end++
		}
		partition(rest[start:end], func(x *Candidate) bool {
			same := x.Route.Region == failed.Region
			return same == (rule == SameRegionFirst)
		})
		start = end
	}
}

// partition moves the candidates for which first holds before the others, stably, in place.
func partition(cs []Candidate, first func(*Candidate) bool) {
	n := 0 // cs[:n] hold the candidates for which first holds, in order
	for i := range cs {
		if !first(&cs[i]) {
			continue
		}
		c := cs[i]
		copy(cs[n+1:i+1], cs[n:i])
		cs[n] = c
		n++
	}
}
