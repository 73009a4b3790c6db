package catalog

import (
	"strings"
	"testing"

	"github.com/switchyard-gw/switchyard/internal/config"
	"github.com/switchyard-gw/switchyard/internal/failure"
)

// endpointConfig: model chat is served by public deployment pub and reserved deployments r1
// and r2; endpoint acme/chat lists r2 then r1 for account acme; open/chat lists r1 for every
// account without public fallback.
func endpointConfig() *config.Config {
	no := false
	return &config.Config{
		Models: []config.Model{{ID: "chat"}, {ID: "other"}},
		Deployments: []config.Deployment{
			{Name: "pub", Dialect: "openai", BaseURL: "http://p/v1", Routes: []config.Route{{Model: "chat"}, {Model: "other"}}},
			{Name: "r1", Dialect: "openai", BaseURL: "http://r1/v1", Reserved: true, Routes: []config.Route{{Model: "chat"}}},
			{Name: "r2", Provider: "dedi", Dialect: "anthropic", BaseURL: "http://r2", Reserved: true, Routes: []config.Route{{Model: "chat"}}},
		},
		Endpoints: []config.Endpoint{
			{ID: "acme/chat", Model: "chat", Deployments: []string{"r2", "r1"}, Accounts: []string{"acme"}},
			{ID: "open/chat", Model: "chat", Deployments: []string{"r1"}, PublicFallback: &no},
		},
	}
}

// TestEndpointResolve: R-KEY-6: an endpoint id resolves whole to the endpoint's model with the
// endpoint set, without allocating; its reserved routes keep the endpoint's order.
func TestEndpointResolve(t *testing.T) {
	c := mustNew(t, endpointConfig())
	res, err := c.Resolve("acme/chat")
	if err != nil {
		t.Fatal(err)
	}
	e := res.Endpoint
	if e == nil || res.Model.ID != "chat" || res.Requested != "acme/chat" || e != c.Endpoint("acme/chat") {
		t.Fatalf("Resolve(acme/chat) = %+v", res)
	}
	if len(e.Reserved) != 2 || e.Reserved[0].Deployment.Name != "r2" || e.Reserved[1].Deployment.Name != "r1" || !e.PublicFallback {
		t.Errorf("endpoint = %+v, want reserved [r2 r1] and public fallback by default", e)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = c.Resolve("acme/chat") }); n != 0 {
		t.Errorf("Resolve of an endpoint allocates %.0f times", n)
	}
	if res, _ := c.Resolve("chat"); res.Endpoint != nil {
		t.Errorf("a model request carries an endpoint")
	}
	if _, err := c.Resolve("acme/chat-20250101"); failure.From(err).Class != failure.ModelUnavailable {
		t.Errorf("an endpoint took a snapshot suffix: %v", err)
	}
	for _, tt := range []struct {
		account string
		ok      bool
	}{{"acme", true}, {"other", false}, {"", false}} {
		if got := e.Allows(tt.account); got != tt.ok {
			t.Errorf("acme/chat Allows(%q) = %v, want %v", tt.account, got, tt.ok)
		}
	}
	if !c.Endpoint("open/chat").Allows("anyone") {
		t.Errorf("an endpoint without accounts refused an account")
	}
}

// TestResolutionServes: R-KEY-6: reserved routes serve only their endpoints; public routes
// serve model requests and endpoints with public fallback.
func TestResolutionServes(t *testing.T) {
	c := mustNew(t, endpointConfig())
	route := func(dep string) *Route { return c.Deployment(dep).Routes[0] }
	tests := []struct {
		id          string
		pub, r1, r2 bool
	}{
		{"chat", true, false, false},
		{"acme/chat", true, true, true},
		{"open/chat", false, true, false},
	}
	for _, tt := range tests {
		res, err := c.Resolve(tt.id)
		if err != nil {
			t.Fatal(err)
		}
		if got := [3]bool{res.Serves(route("pub")), res.Serves(route("r1")), res.Serves(route("r2"))}; got != [3]bool{tt.pub, tt.r1, tt.r2} {
			t.Errorf("%s serves pub, r1, r2 = %v, want %v", tt.id, got, [3]bool{tt.pub, tt.r1, tt.r2})
		}
	}
}

// TestEndpointPins: a public request cannot pin a reserved deployment (it does not exist for
// it); an endpoint request can pin one it lists, and suffixes work on endpoint ids.
func TestEndpointPins(t *testing.T) {
	c := mustNew(t, endpointConfig())
	if _, _, err := c.ResolveSuffixed("chat:dedi"); failure.From(err).Class != failure.InvalidRequest {
		t.Errorf("public pin to a reserved deployment: %v, want invalid_request", err)
	}
	res, sx, err := c.ResolveSuffixed("acme/chat:dedi")
	if err != nil || res.Endpoint == nil || sx.Pin != "dedi" || res.Requested != "acme/chat:dedi" {
		t.Errorf("endpoint pin: %+v %+v %v", res, sx, err)
	}
	if _, _, err := c.ResolveSuffixed("open/chat:pub"); failure.From(err).Class != failure.InvalidRequest {
		t.Errorf("pin to a public deployment of an endpoint without public fallback: %v", err)
	}
	if res, sx, err := c.ResolveSuffixed("acme/chat:@latency"); err != nil || res.Endpoint == nil || sx.Strategy != "latency" {
		t.Errorf("strategy suffix on an endpoint: %+v %+v %v", res, sx, err)
	}
}

// TestNewEndpointErrors: New rejects the endpoint problems config.Validate reports, for a
// Config built in Go.
func TestNewEndpointErrors(t *testing.T) {
	tests := []struct {
		name string
		edit func(*config.Config)
		want string
	}{
		{"id is a model", func(c *config.Config) { c.Endpoints[0].ID = "other" }, `endpoint "other" is a model id or alias`},
		{"duplicate", func(c *config.Config) { c.Endpoints[1].ID = "acme/chat" }, `endpoint "acme/chat" is defined twice`},
		{"unknown model", func(c *config.Config) { c.Endpoints[0].Model = "nope" }, `serves model "nope", which is not a catalog model id`},
		{"unknown deployment", func(c *config.Config) { c.Endpoints[0].Deployments[0] = "nope" }, `deployment "nope", which does not exist`},
		{"public deployment", func(c *config.Config) { c.Endpoints[0].Deployments[0] = "pub" }, `deployment "pub", which is not reserved`},
		{"no route", func(c *config.Config) { c.Endpoints[0].Model = "other" }, `deployment "r2", which does not route model "other"`},
		{"twice", func(c *config.Config) { c.Endpoints[0].Deployments[0] = "r1" }, `lists deployment "r1" twice`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := endpointConfig()
			tt.edit(cfg)
			_, err := New(cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New: %v, want %q", err, tt.want)
			}
		})
	}
}
