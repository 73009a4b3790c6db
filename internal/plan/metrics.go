package plan

import (
	"math"
	"slices"
)

// statScores sets each candidate's measurement for a latency, throughput or reliability pass
// from st: the metric when the route has MinSamples samples, else the median of the measured
// candidates (Score NaN) (R-ORDER-4). It reports false, changing nothing, when no candidate is
// measured.
func statScores(cs []Candidate, k kind, st Stats) bool {
	if st == nil {
		return false
	}
	var buf [16]float64 // measured values; on the stack for up to 16 routes
	vals := buf[:0]
	for i := range cs {
		c := &cs[i]
		c.Score = math.NaN()
		rs, ok := st.Route(c.Route.Deployment.Name, c.Route.Model)
		if !ok {
			continue
		}
		v, n := rs.TTFTMillis, rs.TTFTSamples
		switch k {
		case kindThroughput:
			v, n = rs.TokensPerSec, rs.ThroughputSamples
		case kindReliability:
			v, n = rs.SuccessRatio, rs.Samples
		}
		if n >= MinSamples && !math.IsNaN(v) && !math.IsInf(v, 0) {
			c.Score = v
			vals = append(vals, v)
		}
	}
	if len(vals) == 0 {
		return false
	}
	slices.Sort(vals)
	med := vals[len(vals)/2]
	if len(vals)%2 == 0 {
		med = (vals[len(vals)/2-1] + med) / 2
	}
	descending := k == kindThroughput || k == kindReliability
	for i := range cs {
		c := &cs[i]
		c.metric = c.Score
		if math.IsNaN(c.Score) {
			c.metric = med
		}
		c.key = c.metric
		if descending {
			c.key = -c.metric
		}
	}
	return true
}
