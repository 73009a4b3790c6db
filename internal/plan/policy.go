package plan

import "github.com/switchyard-gw/switchyard/internal/catalog"

// savedRank is a deployment's place in a routing policy's saved order (R-ORDER-7): the index of
// the first entry naming it (by deployment name or provider), or len(saved) when none does, so
// that unnamed routes come after every named one and keep the strategy's order among
// themselves.
func savedRank(d *catalog.Deployment, saved []string) int32 {
	if i := index(saved, d); i >= 0 {
		return int32(i)
	}
	return int32(len(saved))
}
