package layers_test

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/switchyard-gw/switchyard/internal/layers"
)

func Example() {
	// Stored settings, as the admin API saved them.
	account, _ := layers.Apply(layers.Settings{}, json.RawMessage(`{"models":["gpt-4o","claude-sonnet"],"tier_scope":"official"}`))
	key, _ := layers.Apply(layers.Settings{}, json.RawMessage(`{"strategy":"latency","models":["claude-sonnet","o3"]}`))

	eff, err := layers.Effective(
		layers.Layer{Name: layers.Default, Settings: layers.Settings{Strategy: new("price")}},
		layers.Layer{Name: layers.Account, ID: "acme", Settings: account},
		layers.Layer{Name: layers.Key, ID: "k1", Settings: key},
	)
	if err != nil {
		panic(err)
	}
	fmt.Println(eff.Strategy.Value, "fixed by", eff.Strategy.FixedBy)
	fmt.Println(eff.Models.Value, "fixed by", eff.Models.FixedBy.Names())
	fmt.Println(eff.TierScope.Value, "fixed by", eff.TierScope.FixedBy.Names())

	// The account's official floor cannot be bypassed below: a key asking for value supply
	// is refused when saved, naming the field and the key.
	tree := layers.Tree{Account: layers.Node{ID: "acme", Settings: account}, Keys: []layers.Node{{ID: "k1", Settings: key}}}
	_, err = layers.Propose(tree, layers.Key, "k1", json.RawMessage(`{"tier_scope":"value"}`))
	var conflict *layers.ConflictError
	fmt.Println(errors.As(err, &conflict), err)
	// Output:
	// latency fixed by key
	// [claude-sonnet] fixed by [account key]
	// official fixed by [account]
	// true conflict: tier_scope would leave key "k1" with no candidate
}
