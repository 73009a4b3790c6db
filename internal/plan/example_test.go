package plan_test

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/plan"
)

// open is a Health with some deployments' circuits open.
type open map[string]bool

func (o open) Open(provider, deployment, model string) bool { return o[deployment] }

// Three priced deployments and one billed at provider-reported cost: the two within 2% of each
// other share band 0 (lower priority first), the unpriced one comes last, and the open one is
// dropped with its reason. AllowFallbacks false would cut the plan to its first candidate.
func ExampleBuild() {
	dep := func(name string, prio int) *catalog.Deployment {
		return &catalog.Deployment{Name: name, Provider: name, Dialect: catalog.OpenAI, Priority: prio}
	}
	price := func(in, out float64) *catalog.Price {
		return &catalog.Price{InputPerMTokUSD: in, OutputPerMTokUSD: out}
	}
	m := &catalog.Model{ID: "gpt-4o-mini", ContextWindowTokens: 128000, Routes: []*catalog.Route{
		{Deployment: dep("azure", 1), Model: "gpt-4o-mini", UpstreamModel: "gpt-4o-mini", Price: price(0.15, 0.60), Weight: 1},
		{Deployment: dep("openai", 0), Model: "gpt-4o-mini", UpstreamModel: "gpt-4o-mini", Price: price(0.15, 0.61), Weight: 1},
		{Deployment: dep("relay", 0), Model: "gpt-4o-mini", UpstreamModel: "openai/gpt-4o-mini", Weight: 1},
		{Deployment: dep("groq", 0), Model: "gpt-4o-mini", UpstreamModel: "gpt-4o-mini", Price: price(0.10, 0.40), Weight: 1},
		{Deployment: dep("dear", 0), Model: "gpt-4o-mini", UpstreamModel: "gpt-4o-mini", Price: price(1, 2), Weight: 1},
	}}
	var p plan.Plan
	plan.Build(&p, plan.Input{
		Resolution:  catalog.Resolution{Requested: "gpt-4o-mini", Model: m},
		Surface:     catalog.OpenAI,
		SessionKey:  "conversation-42",
		InputTokens: 1200,
	}, open{"groq": true})
	for _, c := range p.Candidates {
		fmt.Printf("band %d  %-6s  priority %d  score %.4g\n", c.Band, c.Route.Deployment.Name, c.Route.Deployment.Priority, c.Score)
	}
	for _, d := range p.Dropped {
		fmt.Printf("dropped %s: %s\n", d.Deployment, d.Reason)
	}
	enc := json.NewEncoder(os.Stdout)
	_ = enc.Encode(p.Candidates[3])
	// Output:
	// band 0  openai  priority 0  score 1.06
	// band 0  azure   priority 1  score 1.05
	// band 1  dear    priority 0  score 5
	// band 2  relay   priority 0  score NaN
	// dropped groq: circuit open
	// {"deployment":"relay","provider":"relay","model":"gpt-4o-mini","upstream_model":"openai/gpt-4o-mini","priority":0,"weight":1,"band":2,"score":null}
}
