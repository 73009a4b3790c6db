package relay

import (
	"testing"

	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/circuit"
	"github.com/switchyard-gw/switchyard/internal/upstream"
)

// Clients added after New (BYOK connections) are found by deployment name and can be removed;
// a client given to New is neither replaced nor removed.
func TestAddRemoveClient(t *testing.T) {
	house := upstream.New(&catalog.Deployment{Name: "house", Provider: "openai", Dialect: catalog.OpenAI, BaseURL: "http://127.0.0.1:1/v1"}, upstream.Deadlines{})
	rl := New(circuit.NewSet(circuit.Settings{}, circuit.Settings{}), map[string]*upstream.Client{"house": house})
	own := upstream.New(&catalog.Deployment{Name: "byok:c1", Provider: "openai", Dialect: catalog.OpenAI, BaseURL: "http://127.0.0.1:2/v1", BYOK: true}, upstream.Deadlines{})
	rl.AddClient(own)
	if c, h := rl.client("byok:c1"); c != own || h.name[0] != "byok:c1" || h.provider[0] != "openai" {
		t.Fatalf("added client: %p %+v", c, h)
	}
	rl.AddClient(upstream.New(&catalog.Deployment{Name: "house", Provider: "x"}, upstream.Deadlines{}))
	rl.RemoveClient("house")
	if c, _ := rl.client("house"); c != house {
		t.Fatal("a client given to New was replaced or removed")
	}
	rl.RemoveClient("byok:c1")
	if c, _ := rl.client("byok:c1"); c != nil {
		t.Fatal("a removed client is still found")
	}
}
