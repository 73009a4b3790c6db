package audit

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"
	"time"
)

func ptr[T any](v T) *T { return &v }

// TestRecordJSON pins the JSON shape of GET /v1/generation (R-AUDIT-2): every field name, null
// for absent latencies and price, [] for no dropped params or attempts, times in UTC.
func TestRecordJSON(t *testing.T) {
	paris := time.FixedZone("CET", 3600)
	rec := Record{
		RequestID: "req_1", Model: "claude-sonnet-4-5", Surface: "openai.chat", Account: "acct",
		Status: 200, Stream: true,
		CreatedAt:  time.Date(2026, 3, 1, 13, 0, 0, 500, paris),
		DurationMS: 812.5,
		Attempts: []Attempt{{
			Attempt: 1, Deployment: "anthropic", Provider: "anthropic", Model: "claude-sonnet-4-5",
			UpstreamModel: "claude-sonnet-4-5-20250929", Outcome: OutcomeFailed, ErrorCode: "upstream_error",
			UsageProvenance: ProvenanceUnknown, ReservedMaxUSD: 0.96, BillingSource: "unpriced",
			DispatchedAt: time.Date(2026, 3, 1, 12, 0, 0, 1000, time.UTC),
			HeadersMS:    ptr(41.0), Band: 0, Score: ScoreOf(3.6), Strategy: "price", Region: "us-east",
		}, {
			Attempt: 2, Deployment: "bedrock", Provider: "aws", Model: "claude-sonnet-4-5",
			UpstreamModel: "anthropic.claude-sonnet-4-5", Outcome: OutcomeCompleted,
			Tokens:          Tokens{Input: 10, Cached: 20, CacheWrite: 30, Output: 40, Reasoning: 5},
			UsageProvenance: ProvenanceObserved, ReservedMaxUSD: 0.96, CostUSD: 0.00069,
			BillingSource: "route_price", Price: &PriceSnapshot{InputPerMTokUSD: 3, OutputPerMTokUSD: 15},
			DispatchedAt: time.Date(2026, 3, 1, 12, 0, 0, 2000, time.UTC),
			HeadersMS:    ptr(120.25), FirstTokenMS: ptr(300.5),
			DroppedParams: []string{"logprobs", "seed"}, UpstreamStatus: 200,
			Band: 1, Score: ScoreOf(math.NaN()), Strategy: "price",
		}},
	}
	rec.AdmissionEvents.Add(AdmissionEvent{Kind: EventCircuitOpen, Stage: StagePlan, Deployment: "vertex",
		Model: "claude-sonnet-4-5", Circuit: CircuitDeployment, Until: time.Date(2026, 3, 1, 13, 0, 30, 0, paris)})
	rec.AdmissionEvents.Add(AdmissionEvent{Kind: EventLimitsChecked, Scopes: ScopeKey | ScopeAccount, Tokens: 4196, ReserveUSD: 0.96})
	rec.AdmissionEvents.Add(AdmissionEvent{Kind: EventReserveTaken, Scopes: ScopeAccount, ReserveUSD: 0.96})
	got, err := json.Marshal(&rec)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"request_id":"req_1","model":"claude-sonnet-4-5","surface":"openai.chat","account":"acct",` +
		`"status":200,"error_code":"","stream":true,"created_at":"2026-03-01T12:00:00.0000005Z","duration_ms":812.5,` +
		`"admission_events":[{"kind":"circuit_open","stage":"plan","deployment":"vertex","model":"claude-sonnet-4-5",` +
		`"circuit":"deployment","until":"2026-03-01T12:00:30Z"},` +
		`{"kind":"limits_checked","scopes":["key","account"],"credit":false,"tokens":4196,"reserve_usd":0.96},` +
		`{"kind":"reserve_taken","scopes":["account"],"credit":false,"reserve_usd":0.96}],` +
		`"attempts":[{"attempt":1,"deployment":"anthropic","provider":"anthropic","model":"claude-sonnet-4-5",` +
		`"upstream_model":"claude-sonnet-4-5-20250929","outcome":"failed","error_code":"upstream_error",` +
		`"tokens":{"input":0,"cached":0,"cache_write":0,"output":0,"reasoning":0},"usage_provenance":"unknown",` +
		`"reserved_max_usd":0.96,"cost_usd":0,"billing_source":"unpriced","price":null,` +
		`"dispatched_at":"2026-03-01T12:00:00.000001Z","headers_ms":41,"first_token_ms":null,"dropped_params":[],"upstream_status":0,"error_origin":"upstream",` +
		`"band":0,"score":3.6,"strategy":"price","region":"us-east","platform":""},` +
		`{"attempt":2,"deployment":"bedrock","provider":"aws","model":"claude-sonnet-4-5",` +
		`"upstream_model":"anthropic.claude-sonnet-4-5","outcome":"completed","error_code":"",` +
		`"tokens":{"input":10,"cached":20,"cache_write":30,"output":40,"reasoning":5},"usage_provenance":"observed",` +
		`"reserved_max_usd":0.96,"cost_usd":0.00069,"billing_source":"route_price","price":{"input":3,"output":15,` +
		`"cache_read":3,"cache_write":3,"cache_write_1h":3,"lines":[{"kind":"input","count":10,"usd_per_mtok":3,"usd":0.00003},` +
		`{"kind":"cache_read","count":20,"usd_per_mtok":3,"usd":0.00006},{"kind":"cache_write","count":30,"usd_per_mtok":3,"usd":0.00009},` +
		`{"kind":"output","count":40,"usd_per_mtok":15,"usd":0.0006}]},` +
		`"dispatched_at":"2026-03-01T12:00:00.000002Z","headers_ms":120.25,"first_token_ms":300.5,` +
		`"dropped_params":["logprobs","seed"],"upstream_status":200,"error_origin":"",` +
		`"band":1,"score":null,"strategy":"price","region":"","platform":""}]}`
	if string(got) != want {
		t.Errorf("JSON mismatch\n got %s\nwant %s", got, want)
	}

	// A record without attempts and account: attempts is [], account is omitted.
	got, err = json.Marshal(Record{RequestID: "r", CreatedAt: time.Unix(0, 0)})
	if err != nil {
		t.Fatal(err)
	}
	const wantEmpty = `{"request_id":"r","model":"","surface":"","status":0,"error_code":"","stream":false,` +
		`"created_at":"1970-01-01T00:00:00Z","duration_ms":0,"admission_events":[],"attempts":[]}`
	if string(got) != wantEmpty {
		t.Errorf("JSON mismatch\n got %s\nwant %s", got, wantEmpty)
	}
}

func TestCloneIsDeep(t *testing.T) {
	orig := &Record{RequestID: "r", Attempts: []Attempt{{
		Price: &PriceSnapshot{InputPerMTokUSD: 1}, HeadersMS: ptr(1.0), FirstTokenMS: ptr(2.0),
		DroppedParams: []string{"seed"},
	}, {DroppedParams: []string{}}}}
	c := orig.Clone()
	c.Attempts[0].Price.InputPerMTokUSD = 9
	*c.Attempts[0].HeadersMS = 9
	*c.Attempts[0].FirstTokenMS = 9
	c.Attempts[0].DroppedParams[0] = "x"
	c.Attempts[1].Outcome = "x"
	a := orig.Attempts[0]
	if a.Price.InputPerMTokUSD != 1 || *a.HeadersMS != 1 || *a.FirstTokenMS != 2 || a.DroppedParams[0] != "seed" || orig.Attempts[1].Outcome != "" {
		t.Errorf("Clone shares memory with the original: %+v", orig)
	}
	if c.Attempts[1].DroppedParams == nil {
		t.Error("Clone turned an empty DroppedParams into nil")
	}
}

// TestAdmissionEventsBounded: a record keeps MaxAdmissionEvents events and counts the rest in a
// final omitted entry; the JSON form reads back to the same value (the stores keep it as text).
func TestAdmissionEventsBounded(t *testing.T) {
	var es AdmissionEvents
	for i := range MaxAdmissionEvents + 3 {
		es.Add(AdmissionEvent{Kind: EventCircuitOpen, Stage: StageDispatch, Deployment: string(rune('a' + i)), Model: "m", Circuit: CircuitModel})
	}
	if es.Len() != MaxAdmissionEvents || es.Omitted() != 3 {
		t.Fatalf("Len %d Omitted %d", es.Len(), es.Omitted())
	}
	es2 := es
	es2.Reset()
	es2.Add(AdmissionEvent{Kind: EventRefused, ErrorCode: "rate_limited", LimitKind: "rpm"})
	es2.Add(AdmissionEvent{Kind: EventHouseRoutesDropped, Count: 2})
	es2.Add(AdmissionEvent{Kind: EventProviderPaused, Stage: StagePlan, Deployment: "d", Model: "m", Provider: "p",
		Until: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)})
	es2.Add(AdmissionEvent{Kind: EventLimitsChecked, Scopes: ScopeWorkspace, Credit: true, Tokens: 7, ReserveUSD: 0.5})
	for _, v := range []AdmissionEvents{es, es2} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var back AdmissionEvents
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if back != v {
			t.Errorf("round trip of %s:\n got %+v\nwant %+v", b, back, v)
		}
	}
	b, _ := json.Marshal(es)
	if want := `{"kind":"omitted","count":3}]`; string(b[len(b)-len(want):]) != want {
		t.Errorf("no omitted entry: %s", b)
	}
	if n := testing.AllocsPerRun(100, func() {
		var r Record
		r.AdmissionEvents.Add(AdmissionEvent{Kind: EventLimitsChecked, Scopes: ScopeKey, Tokens: 1})
		r.AdmissionEvents.Add(AdmissionEvent{Kind: EventReserveTaken, ReserveUSD: 1})
		sink = r.AdmissionEvents.Len()
	}); n != 0 {
		t.Errorf("Add allocates %v times", n)
	}
}

var sink int

// TestCostLinesWebSearch: web searches are a cost line of their own, after the token lines:
// the count at the price per call (docs/pricing.md "Server-tool calls"), shown even at no price
// (so that an unbilled search is visible); the tokens carry the count only when there is one.
func TestCostLinesWebSearch(t *testing.T) {
	p := &PriceSnapshot{InputPerMTokUSD: 3, OutputPerMTokUSD: 15, CacheReadPerMTokUSD: 3, CacheWritePerMTokUSD: 3, CacheWrite1hPerMTokUSD: 3, WebSearchUSD: 0.01}
	got := CostLines(Tokens{Input: 1000, Output: 100, WebSearchRequests: 3}, p)
	want := []CostLine{{Kind: "input", Count: 1000, PerMTokUSD: 3, USD: 0.003}, {Kind: "output", Count: 100, PerMTokUSD: 15, USD: 0.0015},
		{Kind: "web_search", Count: 3, PerCallUSD: 0.01, USD: 0.03}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("lines %+v, want %+v", got, want)
	}
	p.WebSearchUSD = 0
	if got := CostLines(Tokens{WebSearchRequests: 2}, p); len(got) != 1 || got[0] != (CostLine{Kind: "web_search", Count: 2}) {
		t.Errorf("unpriced searches: %+v", got)
	}
	for tk, want := range map[Tokens]string{
		{Input: 1}:                       `{"input":1,"cached":0,"cache_write":0,"output":0,"reasoning":0}`,
		{Input: 1, WebSearchRequests: 2}: `{"input":1,"cached":0,"cache_write":0,"output":0,"reasoning":0,"web_search_requests":2}`,
	} {
		if b, _ := json.Marshal(tk); string(b) != want {
			t.Errorf("tokens JSON %s, want %s", b, want)
		}
	}
	b, _ := json.Marshal(CostLine{Kind: "web_search", Count: 2, PerCallUSD: 0.01, USD: 0.02})
	if string(b) != `{"kind":"web_search","count":2,"usd_per_mtok":0,"usd_per_call":0.01,"usd":0.02}` {
		t.Errorf("line JSON %s", b)
	}
}
