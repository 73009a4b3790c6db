package server_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	openaiopt "github.com/openai/openai-go/v3/option"
	"github.com/tidwall/gjson"

	fp "github.com/switchyard-gw/switchyard/internal/fakeprovider"
)

// eventsYAML: deployment d serves m-a and m-b; e serves m-b only, dearer, in another region.
// One failure opens a circuit.
const eventsYAML = `
auth: {required: false}
routing:
  circuit: {failures: 1}
  timeouts: {headers: 5s, stream_headers: 5s, stream_idle: 5s}
models:
  - id: m-a
  - id: m-b
deployments:
  - name: d
    provider: pd
    dialect: openai
    base_url: "{{d}}"
    region: us
    routes: [{model: m-a, price: {input: 1, output: 1}}, {model: m-b, price: {input: 1, output: 1}}]
  - name: e
    provider: pe
    dialect: openai
    base_url: "{{e}}"
    region: eu
    routes: [{model: m-b, price: {input: 2, output: 2}}]
`

// generationJSON is GET /v1/generation?id= as a caller reads it, once the record is stored.
func generationJSON(t *testing.T, g *gateway, id string, hdr ...string) gjson.Result {
	t.Helper()
	g.generation(t, id)
	resp, b := icGet(t, g.URL, "/v1/generation?id="+id, hdr...)
	if resp.StatusCode != 200 {
		t.Fatalf("GET /v1/generation: %d %s", resp.StatusCode, b)
	}
	return gjson.ParseBytes(b)
}

// TestAuditRouteContextAndCircuitEvents: R-AUDIT-2, issue 11 item 5: each attempt carries its
// route context (band, score, strategy, region) as its plan had it, and admission_events names
// the routes circuits took out: at dispatch (a fallback's candidate whose deployment circuit
// the first attempt just opened: not an attempt) and at planning (the next request's plan
// drops it), with the circuit and the end of its cooldown. A request nothing refused or
// limited has admission_events []. Read back from the store through the official SDK's call
// and GET /v1/generation.
func TestAuditRouteContextAndCircuitEvents(t *testing.T) {
	t.Parallel()
	g := startGateway(t, eventsYAML, oa("d"), oa("e"))
	g.Fakes["d"].Script(fp.Behavior{Kind: fp.KindStatus, Status: 503})
	oc := g.openaiClient()
	var hr *http.Response
	_, err := oc.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{Model: "m-a",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello")}},
		openaiopt.WithJSONSet("extra", map[string]any{"fallbacks": []string{"m-b"}}), openaiopt.WithResponseInto(&hr))
	if err != nil {
		t.Fatal(err)
	}
	if got := hr.Header.Get("X-Switchyard-Deployment"); got != "e" {
		t.Fatalf("served by %q, want e", got)
	}
	rec := generationJSON(t, g, hr.Header.Get("X-Request-Id"))
	atts := rec.Get("attempts").Array()
	if len(atts) != 2 {
		t.Fatalf("attempts %s", rec.Get("attempts").Raw)
	}
	for i, want := range []struct {
		dep, region string
		band        int64
	}{{"d", "us", 0}, {"e", "eu", 1}} {
		a := atts[i]
		if a.Get("deployment").String() != want.dep || a.Get("region").String() != want.region ||
			a.Get("band").Int() != want.band || a.Get("strategy").String() != "price" || a.Get("score").Type != gjson.Number {
			t.Errorf("attempt %d route context: %s; want %s in %s, band %d, strategy price, a score", i+1, a.Raw, want.dep, want.region, want.band)
		}
	}
	if s0, s1 := atts[0].Get("score").Float(), atts[1].Get("score").Float(); !(s0 > 0 && s1 > s0) {
		t.Errorf("scores %v, %v: want the blended prices, d's below e's", s0, s1)
	}
	until := g.Clock.Now().Add(30 * time.Second).UTC().Format(time.RFC3339Nano)
	want := `[{"kind":"circuit_open","stage":"dispatch","deployment":"d","model":"m-b","circuit":"deployment","until":"` + until + `"}]`
	if got := rec.Get("admission_events").Raw; got != want {
		t.Errorf("admission_events %s\nwant %s", got, want)
	}

	// The next request's plan drops d for its open circuit: an event of stage plan, no attempt.
	resp, b := icPost(t, g.URL, "/v1/chat/completions", `{"model":"m-b","messages":[{"role":"user","content":"x"}]}`)
	if resp.StatusCode != 200 || resp.Header.Get("X-Switchyard-Attempts") != "1" {
		t.Fatalf("m-b: %d attempts %s %s", resp.StatusCode, resp.Header.Get("X-Switchyard-Attempts"), b)
	}
	rec = generationJSON(t, g, resp.Header.Get("X-Request-Id"))
	want = strings.Replace(want, `"dispatch"`, `"plan"`, 1)
	if got := rec.Get("admission_events").Raw; got != want {
		t.Errorf("admission_events %s\nwant %s", got, want)
	}
	if a := rec.Get("attempts.0"); a.Get("deployment").String() != "e" || a.Get("band").Int() != 0 {
		t.Errorf("attempt %s: want e in band 0 (d is not in the plan)", a.Raw)
	}

	// Nothing limited, nothing dropped: [].
	g.Clock.Advance(31 * time.Second)
	resp, b = icPost(t, g.URL, "/v1/chat/completions", `{"model":"m-a","messages":[{"role":"user","content":"x"}]}`)
	if resp.StatusCode != 200 {
		t.Fatalf("m-a after the cooldown: %d %s", resp.StatusCode, b)
	}
	if got := generationJSON(t, g, resp.Header.Get("X-Request-Id")).Get("admission_events").Raw; got != `[]` {
		t.Errorf("admission_events %s, want []", got)
	}

	// Every route cooling down: the refusal is an event after the drops.
	g.Fakes["d"].Script(fp.Behavior{Kind: fp.KindStatus, Status: 503})
	if resp, _ = icPost(t, g.URL, "/v1/chat/completions", `{"model":"m-a","messages":[{"role":"user","content":"x"}]}`); resp.StatusCode != 503 {
		t.Fatalf("m-a on a failing d: %d, want the provider's 503", resp.StatusCode)
	}
	resp, _ = icPost(t, g.URL, "/v1/chat/completions", `{"model":"m-a","messages":[{"role":"user","content":"x"}]}`)
	if resp.StatusCode != 503 || resp.Header.Get("X-Switchyard-Limit-Kind") != "health" {
		t.Fatalf("all cooling down: %d %s", resp.StatusCode, resp.Header.Get("X-Switchyard-Limit-Kind"))
	}
	ev := generationJSON(t, g, resp.Header.Get("X-Request-Id")).Get("admission_events")
	if got := ev.Get("#.kind").Raw; got != `["circuit_open","refused"]` {
		t.Errorf("events %s", ev.Raw)
	}
	if got := ev.Get("1").Raw; got != `{"kind":"refused","error_code":"gateway_error","limit_kind":"health"}` {
		t.Errorf("refusal event %s", got)
	}
}

// TestAuditLimitEvents: R-AUDIT-2, issue 11 item 5: a key under limits records the limits
// checked (its layers' scopes, the tpm charge, the reserve) and, when it holds money, the
// reserve taken (the scopes whose budgets hold it); a refusal records its class and limit kind.
func TestAuditLimitEvents(t *testing.T) {
	t.Parallel()
	g := startLimits(t)
	resp, b := postKey(t, g, oaSurface, "sk-budget", limitBody(oaSurface, false))
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	rec := generationJSON(t, g, resp.Header.Get("X-Request-Id"), "Authorization", "Bearer sk-budget")
	reserve := rec.Get("attempts.0.reserved_max_usd")
	if reserve.Float() <= 0 {
		t.Fatalf("no reserve: %s", rec.Raw)
	}
	ev := rec.Get("admission_events")
	if got := ev.Get("#.kind").Raw; got != `["limits_checked","reserve_taken"]` {
		t.Fatalf("events %s", ev.Raw)
	}
	lc, rt := ev.Get("0"), ev.Get("1")
	if lc.Get("scopes").Raw != `["key","account"]` || lc.Get("credit").Raw != "false" || lc.Get("tokens").Int() <= 5 ||
		lc.Get("reserve_usd").Raw != reserve.Raw {
		t.Errorf("limits_checked %s (reserve %s)", lc.Raw, reserve.Raw)
	}
	if rt.Get("scopes").Raw != `["key","account"]` || rt.Get("reserve_usd").Raw != reserve.Raw {
		t.Errorf("reserve_taken %s (reserve %s)", rt.Raw, reserve.Raw)
	}

	var rid string
	for range 3 {
		resp, _ = postKey(t, g, anSurface, "sk-rpm2", limitBody(anSurface, false))
		rid = resp.Header.Get("X-Request-Id")
	}
	if resp.StatusCode != 429 {
		t.Fatalf("third request: %d", resp.StatusCode)
	}
	ev = generationJSON(t, g, rid, "Authorization", "Bearer sk-rpm2").Get("admission_events")
	if got := ev.Get("#.kind").Raw; got != `["limits_checked","refused"]` || ev.Get("0.scopes").Raw != `["key"]` ||
		ev.Get("1").Raw != `{"kind":"refused","error_code":"rate_limited","limit_kind":"rpm"}` {
		t.Errorf("events of a refused request %s", ev.Raw)
	}
}
