package plan

import (
	"math"
	"math/rand/v2"

	"github.com/switchyard-gw/switchyard/internal/catalog"
)

// Session affinity (R-ORDER-5). The weighted random order inside a band is a weighted sample
// without replacement (Efraimidis–Spirakis): each route draws u in (0,1) and sorts by
// -ln(u)/weight ascending, so a route is first with probability weight/sum(weights). u comes
// from a hash of the session key and the route's id (deployment name, model), each folded in
// with a separator and the result finalized with mix13, so one session key gives the same
// order on every turn, while different keys, and different routes under one key, are
// uncorrelated. An empty key draws the seed from math/rand/v2.

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
	sep       = 0xff // never in a UTF-8 string: "ab"+"c" and "a"+"bc" hash apart
)

// seedOf is the per-request seed: the session key hashed and finalized, or a random one.
func seedOf(sessionKey string) uint64 {
	if sessionKey == "" {
		return rand.Uint64()
	}
	return mix13(fold(fnvOffset, sessionKey))
}

// drawKey is the route's weighted random key under seed: -ln(u)/weight, +Inf for a weight of
// zero or less (such routes follow every positive-weight route of their band).
func drawKey(seed uint64, rt *catalog.Route) float64 {
	if !(rt.Weight > 0) {
		return math.Inf(1)
	}
	h := fold(seed, rt.Deployment.Name)
	h = fold(h, rt.Model)
	return -math.Log(unit(mix13(h))) / rt.Weight
}

// fold hashes s into h (FNV-1a) followed by the separator.
func fold(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * fnvPrime
	}
	return (h ^ sep) * fnvPrime
}

// mix13 is Stafford's variant 13 of the MurmurHash3 64-bit finalizer: full avalanche.
func mix13(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// unit maps h to (0,1), open at both ends (53 bits, offset by half a step).
func unit(h uint64) float64 {
	return (float64(h>>11) + 0.5) / (1 << 53)
}
