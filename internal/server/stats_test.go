package server_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/switchyard-gw/switchyard/internal/fakeprovider"
	"github.com/switchyard-gw/switchyard/internal/plan"
)

// R-ORDER-1/4 end to end: the latency strategy degrades to balanced until both routes have
// enough samples (recorded by the relay, off the request path), then orders the faster one
// first — the plan of POST /v1/route says so.
func TestLatencyStrategyLearnsFromTraffic(t *testing.T) {
	g := startGateway(t, `
auth: {required: false}
routing: {strategy: latency}
models: [{id: m}]
deployments:
  - {name: slow, dialect: openai, base_url: "{{slow}}", api_key: k, routes: [{model: m}]}
  - {name: fast, dialect: openai, base_url: "{{fast}}", api_key: k, routes: [{model: m}]}
`, oa("slow"), oa("fast"))
	g.Fakes["slow"].SetDefault(fakeprovider.Behavior{Kind: fakeprovider.KindSlowHeaders, Delay: 40 * time.Millisecond})
	_, b := icPost(t, g.URL, "/v1/route", icChatBody("m", false))
	if gjson.GetBytes(b, "strategy").String() != "balanced" || gjson.GetBytes(b, "degraded_from").String() != "latency" {
		t.Fatalf("before traffic: %s", b)
	}
	// Different conversations: each has its own session key, so the balanced (then banded) order
	// spreads them until both routes have plan.MinSamples samples.
	for i := 0; g.Fakes["slow"].Hits() < plan.MinSamples || g.Fakes["fast"].Hits() < plan.MinSamples; i++ {
		body := fmt.Sprintf(`{"model":"m","messages":[{"role":"user","content":"conversation %d"}]}`, i)
		if resp, b := icPost(t, g.URL, "/v1/chat/completions", body); resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
		if i > 1000 {
			t.Fatalf("traffic never reached both routes (slow %d, fast %d)", g.Fakes["slow"].Hits(), g.Fakes["fast"].Hits())
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, b = icPost(t, g.URL, "/v1/route", icChatBody("m", false))
		if gjson.GetBytes(b, "strategy").String() == "latency" && gjson.GetBytes(b, "candidates.0.deployment").String() == "fast" &&
			gjson.GetBytes(b, "candidates.1.band").Int() == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the latency plan does not put the fast route first in its own band: %s", b)
		}
		time.Sleep(20 * time.Millisecond) // the windows are published by the stats goroutine
	}
}

// R-CIRCUIT-8: GET /v1/models/{id} shows each deployment of the model with its circuit state
// and its uptime, which stays null until 100 requests were counted.
func TestModelEndpointsUptime(t *testing.T) {
	g := startTwo(t)
	_, b := icGet(t, g.URL, "/v1/models/gpt-4o-mini")
	if gjson.GetBytes(b, "id").String() != "gpt-4o-mini" || gjson.GetBytes(b, "endpoints.#").Int() != 2 ||
		gjson.GetBytes(b, "endpoints.0.uptime").Type != gjson.Null || gjson.GetBytes(b, "endpoints.0.circuit").String() != "closed" {
		t.Fatalf("before traffic: %s", b)
	}
	for i := 0; i < 100; i++ {
		icCall(t, g.URL, "openai", "gpt-4o-mini", false)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, b = icGet(t, g.URL, "/v1/models/gpt-4o-mini")
		if gjson.GetBytes(b, "endpoints.0.uptime").Float() == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("uptime after 100 requests: %s", b)
		}
		time.Sleep(20 * time.Millisecond) // published by the stats goroutine
	}
	if gjson.GetBytes(b, "endpoints.1.uptime").Type != gjson.Null {
		t.Fatalf("the backup has no traffic but an uptime: %s", b)
	}
	g.Fakes["oa-primary"].SetDefault(fakeprovider.Behavior{Kind: fakeprovider.KindStatus, Status: 503})
	icCall(t, g.URL, "openai", "gpt-4o-mini", false)
	icCall(t, g.URL, "openai", "gpt-4o-mini", false)
	_, b = icGet(t, g.URL, "/v1/models/gpt-4o-mini")
	if gjson.GetBytes(b, "endpoints.0.circuit").String() != "open" {
		t.Fatalf("circuit after two failures: %s", b)
	}
	if r, _ := icGet(t, g.URL, "/v1/models/nope"); r.StatusCode != 404 {
		t.Fatalf("unknown model: %d", r.StatusCode)
	}
}
