package admission

import "math"

// AddSat is a + b saturated at math.MinInt64 and math.MaxInt64: money and token counters add
// with it, so that an absurd provider-reported usage (2^62 tokens) pins a spend at its maximum
// instead of wrapping it negative, where a budget would admit again.
func AddSat(a, b int64) int64 {
	s := a + b
	switch {
	case a > 0 && b > 0 && s < 0:
		return math.MaxInt64
	case a < 0 && b < 0 && s >= 0:
		return math.MinInt64
	}
	return s
}

// SubSat is a - b saturated like AddSat.
func SubSat(a, b int64) int64 {
	if b == math.MinInt64 {
		if a >= 0 {
			return math.MaxInt64
		}
		return a - b // a < 0: no overflow
	}
	return AddSat(a, -b)
}
