package server_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	fp "github.com/switchyard-gw/switchyard/internal/fakeprovider"
)

// endpointCatalog: model chat is served publicly by pcheap (cheapest) and pdear, and by
// reserved deployments r1 (cheaper than every public one), r2 (an Anthropic deployment, the
// dearest) and r3. Dedicated endpoint acme/chat (account acme) lists r2 then r1 and falls back
// to the public deployments; solo/chat (every account) lists r3 without public fallback.
const endpointCatalog = `
routing:
  timeouts: {headers: 2s, stream_headers: 2s, stream_idle: 2s}
  circuit: {failures: 100}
models:
  - id: chat
deployments:
  - {name: pcheap, dialect: openai, base_url: "{{pcheap}}", routes: [{model: chat, price: {input: 2, output: 2}}]}
  - {name: r1, dialect: openai, base_url: "{{r1}}", reserved: true, routes: [{model: chat, upstream_model: chat-r1, price: {input: 1, output: 1}}]}
  - {name: pdear, dialect: openai, base_url: "{{pdear}}", routes: [{model: chat, price: {input: 3, output: 3}}]}
  - {name: r2, provider: dedi, dialect: anthropic, base_url: "{{r2}}", reserved: true, routes: [{model: chat, price: {input: 9, output: 9}}]}
  - {name: r3, dialect: openai, base_url: "{{r3}}", reserved: true, routes: [{model: chat}]}
endpoints:
  - {id: acme/chat, model: chat, deployments: [r2, r1], accounts: [acme]}
  - {id: solo/chat, model: chat, deployments: [r3], public_fallback: false}
keys:
  - {name: acme, secret: sk-acme, account: acme, allow_request_override: true}
  - {name: other, secret: sk-other, account: other, allow_request_override: true}
`

func startEndpoints(t *testing.T) *gateway {
	t.Helper()
	return startGateway(t, endpointCatalog, oa("pcheap"), oa("r1"), oa("pdear"), an("r2"), oa("r3"))
}

// postAs posts body to path with the key's bearer token.
func postAs(t *testing.T, g *gateway, key, path, body string) (*http.Response, []byte) {
	t.Helper()
	return icPost(t, g.URL, path, body, "Authorization", "Bearer "+key)
}

// TestEndpointReservedFirst: R-KEY-6: a request to a dedicated endpoint goes to its reserved
// deployments first, in the endpoint's order (r2 although it is the dearest), then to the
// public deployments of the same model by price; the echoed model is the endpoint id and the
// provider receives the route's upstream model.
func TestEndpointReservedFirst(t *testing.T) {
	t.Parallel()
	g := startEndpoints(t)
	resp, b := postAs(t, g, "sk-acme", "/v1/chat/completions", chatBody("acme/chat", ""))
	if resp.StatusCode != 200 || resp.Header.Get("X-Switchyard-Deployment") != "r2" {
		t.Fatalf("status %d deployment %q body %s, want 200 from r2", resp.StatusCode, resp.Header.Get("X-Switchyard-Deployment"), b)
	}
	if got := gjson.GetBytes(b, "model").String(); got != "acme/chat" {
		t.Errorf("echoed model %q, want the endpoint id", got)
	}
	if got := g.Fakes["r2"].Requests()[0].Model; got != "chat" {
		t.Errorf("r2 received model %q, want chat", got)
	}
	// r2 fails: r1 next (the endpoint's order); both fail: the cheapest public deployment.
	g.Fakes["r2"].SetDefault(fp.Behavior{Kind: fp.KindStatus, Status: 500})
	resp, b = postAs(t, g, "sk-acme", "/v1/chat/completions", chatBody("acme/chat", ""))
	if resp.StatusCode != 200 || resp.Header.Get("X-Switchyard-Deployment") != "r1" {
		t.Fatalf("r2 failing: status %d deployment %q body %s, want r1", resp.StatusCode, resp.Header.Get("X-Switchyard-Deployment"), b)
	}
	if got := g.Fakes["r1"].Requests()[0].Model; got != "chat-r1" {
		t.Errorf("r1 received model %q, want its upstream id chat-r1", got)
	}
	g.Fakes["r1"].SetDefault(fp.Behavior{Kind: fp.KindStatus, Status: 500})
	resp, b = postAs(t, g, "sk-acme", "/v1/chat/completions", chatBody("acme/chat", ""))
	if resp.StatusCode != 200 {
		t.Fatalf("reserved failing: status %d body %s, want a public fallback", resp.StatusCode, b)
	}
	if deps := attemptDeps(t, g, resp); !slices.Equal(deps, []string{"r2", "r1", "pcheap"}) {
		t.Errorf("attempts %v, want [r2 r1 pcheap]", deps)
	}
	if g.Fakes["r3"].Hits() != 0 {
		t.Errorf("r3, reserved for another endpoint, was called")
	}
}

// TestPublicNeverReserved: R-KEY-6: requests for the model itself never reach a reserved
// deployment: not by price (r1 is the cheapest), not when every public deployment fails, not
// through provider.order, provider.only or a pin, and not for a key of the endpoint's account.
func TestPublicNeverReserved(t *testing.T) {
	t.Parallel()
	g := startEndpoints(t)
	for _, key := range []string{"sk-acme", "sk-other"} {
		resp, b := postAs(t, g, key, "/v1/chat/completions", chatBody("chat", ""))
		if resp.StatusCode != 200 || resp.Header.Get("X-Switchyard-Deployment") != "pcheap" {
			t.Errorf("%s: status %d deployment %q body %s, want pcheap", key, resp.StatusCode, resp.Header.Get("X-Switchyard-Deployment"), b)
		}
	}
	resp, b := postAs(t, g, "sk-acme", "/v1/chat/completions", chatBody("chat", `,"provider":{"order":["r1","dedi"]}`))
	if resp.StatusCode != 200 || resp.Header.Get("X-Switchyard-Deployment") != "pcheap" {
		t.Errorf("provider.order naming reserved deployments: status %d deployment %q", resp.StatusCode, resp.Header.Get("X-Switchyard-Deployment"))
	}
	for _, body := range []string{chatBody("chat", `,"provider":{"only":["r1"]}`), chatBody("chat:r1", ""), chatBody("chat:dedi", "")} {
		if resp, b := postAs(t, g, "sk-acme", "/v1/chat/completions", body); resp.StatusCode != 400 || errorType(b) != "invalid_request" {
			t.Errorf("%s: status %d body %s, want 400 invalid_request", body, resp.StatusCode, b)
		}
	}
	g.Fakes["pcheap"].SetDefault(fp.Behavior{Kind: fp.KindStatus, Status: 500})
	g.Fakes["pdear"].SetDefault(fp.Behavior{Kind: fp.KindStatus, Status: 500})
	resp, b = postAs(t, g, "sk-acme", "/v1/chat/completions", chatBody("chat", ""))
	if resp.StatusCode < 500 {
		t.Errorf("every public deployment failing: status %d body %s, want a 5xx", resp.StatusCode, b)
	}
	if deps := attemptDeps(t, g, resp); !slices.Equal(deps, []string{"pcheap", "pdear"}) {
		t.Errorf("attempts %v, want [pcheap pdear]", deps)
	}
	if n := hits(g, "r1", "r2", "r3"); !slices.Equal(n, []int{0, 0, 0}) {
		t.Errorf("reserved deployments were called by public traffic: %v", n)
	}
	// The model list and the model's entry show no reserved deployment and no endpoint.
	_, b = icGet(t, g.URL, "/v1/models", "Authorization", "Bearer sk-acme")
	if ids := gjson.GetBytes(b, "data.#.id").String(); ids != `["chat"]` {
		t.Errorf("GET /v1/models ids %s, want [\"chat\"]", ids)
	}
	_, b = icGet(t, g.URL, "/v1/models/chat", "Authorization", "Bearer sk-acme")
	if deps := gjson.GetBytes(b, "endpoints.#.deployment").String(); deps != `["pcheap","pdear"]` {
		t.Errorf("GET /v1/models/chat deployments %s, want the public ones", deps)
	}
	// POST /v1/route for the model shows the reserved routes dropped as "reserved".
	_, b = postAs(t, g, "sk-acme", "/v1/route", chatBody("chat", ""))
	if got := gjson.GetBytes(b, `dropped.#(reason=="reserved")#.deployment`).String(); got != `["r1","r2","r3"]` {
		t.Errorf("plan of a public request: dropped reserved %s; body %s", got, b)
	}
}

// TestEndpointOtherAccount: R-KEY-6: to a key whose account the endpoint does not allow, the
// endpoint does not exist: 404 model_unavailable with the unknown-model message, with or
// without a suffix, as a fallback model, and on POST /v1/route; nothing reaches a provider.
func TestEndpointOtherAccount(t *testing.T) {
	t.Parallel()
	g := startEndpoints(t)
	_, unknown := postAs(t, g, "sk-other", "/v1/chat/completions", chatBody("acme/nope", ""))
	wantMsg := strings.ReplaceAll(gjson.GetBytes(unknown, "error.message").String(), "acme/nope", "acme/chat")
	for _, tc := range []struct{ path, body, msg string }{
		{"/v1/chat/completions", chatBody("acme/chat", ""), wantMsg},
		{"/v1/chat/completions", chatBody("acme/chat:dedi", ""), ""},
		{"/v1/chat/completions", chatBody("acme/chat:@latency", ""), ""},
		{"/v1/chat/completions", chatBody("chat", `,"models":["acme/chat"]`), ""},
		{"/v1/route", chatBody("acme/chat", ""), wantMsg},
	} {
		resp, b := postAs(t, g, "sk-other", tc.path, tc.body)
		if resp.StatusCode != 404 || errorType(b) != "model_unavailable" {
			t.Errorf("%s %s: status %d body %s, want 404 model_unavailable", tc.path, tc.body, resp.StatusCode, b)
		}
		if tc.msg != "" && gjson.GetBytes(b, "error.message").String() != tc.msg {
			t.Errorf("%s: message %q, want the unknown-model message %q", tc.body, gjson.GetBytes(b, "error.message"), tc.msg)
		}
	}
	if n := hits(g, "pcheap", "r1", "pdear", "r2", "r3"); !slices.Equal(n, []int{0, 0, 0, 0, 0}) {
		t.Errorf("refused requests reached providers: %v", n)
	}
	// The endpoint open to every account serves the same key.
	if resp, b := postAs(t, g, "sk-other", "/v1/chat/completions", chatBody("solo/chat", "")); resp.StatusCode != 200 || resp.Header.Get("X-Switchyard-Deployment") != "r3" {
		t.Errorf("solo/chat: status %d deployment %q body %s, want r3", resp.StatusCode, resp.Header.Get("X-Switchyard-Deployment"), b)
	}
}

// TestEndpointNoPublicFallback: R-KEY-6: with public_fallback false the request never leaves
// the reserved deployments: when they fail, it fails.
func TestEndpointNoPublicFallback(t *testing.T) {
	t.Parallel()
	g := startEndpoints(t)
	g.Fakes["r3"].SetDefault(fp.Behavior{Kind: fp.KindStatus, Status: 500})
	resp, b := postAs(t, g, "sk-acme", "/v1/chat/completions", chatBody("solo/chat", ""))
	if resp.StatusCode < 500 {
		t.Fatalf("status %d body %s, want a 5xx", resp.StatusCode, b)
	}
	if deps := attemptDeps(t, g, resp); !slices.Equal(deps, []string{"r3"}) {
		t.Errorf("attempts %v, want [r3]", deps)
	}
	if n := hits(g, "pcheap", "pdear", "r1", "r2"); !slices.Equal(n, []int{0, 0, 0, 0}) {
		t.Errorf("other deployments were called: %v", n)
	}
}

// TestEndpointPlan: R-KEY-6 with R-ORDER-8: POST /v1/route explains an endpoint's plan: the
// endpoint, its reserved candidates first in its order (one band each, marked reserved), then
// the public ones by price; the other endpoint's reserved route dropped as "reserved"; and for
// an endpoint without public fallback, the public routes dropped with that reason.
func TestEndpointPlan(t *testing.T) {
	t.Parallel()
	g := startEndpoints(t)
	resp, b := postAs(t, g, "sk-acme", "/v1/route", chatBody("acme/chat", ""))
	if resp.StatusCode != 200 {
		t.Fatalf("status %d body %s", resp.StatusCode, b)
	}
	p := gjson.ParseBytes(b)
	if p.Get("model").Str != "acme/chat" || p.Get("resolved_model").Str != "chat" || p.Get("endpoint").Str != "acme/chat" {
		t.Errorf("plan header: %s", b)
	}
	for _, want := range []struct {
		path, value string
	}{
		{"candidates.#.deployment", `["r2","r1","pcheap","pdear"]`},
		{"candidates.#.band", `[0,1,2,3]`},
		{"candidates.#.reserved", `[true,true]`},
		{"candidates.#.upstream_model", `["chat","chat-r1","chat","chat"]`},
		{"dropped", `[{"deployment":"r3","model":"chat","reason":"reserved"}]`},
	} {
		if got := p.Get(want.path).Raw; got != want.value {
			t.Errorf("%s = %s, want %s", want.path, got, want.value)
		}
	}
	_, b = postAs(t, g, "sk-acme", "/v1/route", chatBody("solo/chat", ""))
	if got := gjson.GetBytes(b, "candidates.#.deployment").Raw; got != `["r3"]` {
		t.Errorf("solo/chat candidates %s, want [r3]", got)
	}
	if got := gjson.GetBytes(b, `dropped.#(reason=="public fallback off")#.deployment`).Raw; got != `["pcheap","pdear"]` {
		t.Errorf("solo/chat dropped %s", b)
	}
}
