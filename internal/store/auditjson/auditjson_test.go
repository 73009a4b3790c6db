package auditjson

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-gw/switchyard/internal/audit"
	"github.com/switchyard-gw/switchyard/internal/store/storetest"
)

// TestRoundTrip: every field of both attempts of storetest.FullRecord, and extreme values,
// read back exactly; the form is valid JSON with the documented positions.
func TestRoundTrip(t *testing.T) {
	as := storetest.FullRecord("r").Attempts
	odd := as[1]
	odd.Attempt = 3
	odd.Deployment = "quote\" back\\ nl\n tab\t ctl\x01 del\x7f ü 模型 \u2028"
	odd.Model = "bad utf8 \xff\xfe end"
	odd.Tokens = audit.Tokens{Input: 1<<62 - 1, Cached: -1, Output: math.MaxInt64}
	odd.CostUSD, odd.ReservedMaxUSD = 1.0/3, 1e-300
	odd.Price = &audit.PriceSnapshot{InputPerMTokUSD: 0.075, OutputPerMTokUSD: math.Copysign(0, -1)}
	odd.DispatchedAt = time.Date(1969, 12, 31, 23, 59, 59, 1, time.UTC)
	odd.DroppedParams = []string{`a"b`, "", "ü"}
	zero := 0.0
	odd.HeadersMS = &zero
	as = append(as, odd)
	b := Append(nil, as)
	if !json.Valid(b) {
		t.Fatalf("not valid JSON: %s", b)
	}
	got, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	want := append([]audit.Attempt(nil), as...)
	want[2].Model = "bad utf8 \ufffd\ufffd end" // as encoding/json would write it
	if !reflect.DeepEqual(got, want) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, want)
	}
	var rows [][]any
	if err := json.Unmarshal(b, &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 || len(rows[0]) != 27 || rows[0][1] != "anthropic" || rows[1][26] != "bedrock" || rows[0][16] != nil || rows[1][20].([]any)[1] != "seed" ||
		rows[1][17].(float64) != float64(as[1].DispatchedAt.UnixNano()) || rows[1][21].(float64) != 200 {
		t.Errorf("positions: %s", b)
	}
	if !strings.Contains(string(b), `{"input":3,"output":15,"cache_read":0,"cache_write":0,"cache_write_1h":0}`) {
		t.Errorf("price not an object: %s", b)
	}
}

// TestEmptyAndShort: no attempts is []; an array shorter than this version writes (an older
// or a hand-written one) reads its missing elements as zero; malformed input is an error.
func TestEmptyAndShort(t *testing.T) {
	if b := Append(nil, nil); string(b) != "[]" {
		t.Errorf("no attempts: %s", b)
	}
	got, err := Parse([]byte(`[[1,"d"]]`))
	if err != nil || !reflect.DeepEqual(got, []audit.Attempt{{Attempt: 1, Deployment: "d", DroppedParams: []string{}}}) {
		t.Errorf("short: %+v, %v", got, err)
	}
	for _, bad := range []string{``, `{}`, `[1]`, `[["x"]]`, `[[null]]`, `[[]]`, `[[1,2]]`, `[[1,"d","p","m","u","o","e","many"]]`} {
		if _, err := Parse([]byte(bad)); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
	if b := Append(nil, []audit.Attempt{{Attempt: 1, CostUSD: math.NaN(), ReservedMaxUSD: math.Inf(1)}}); !json.Valid(b) {
		t.Errorf("non-finite floats: %s", b)
	}
}

// FuzzStrings: any strings encode to valid JSON that reads back as encoding/json reads its own
// encoding of them.
func FuzzStrings(f *testing.F) {
	f.Add("anthropic", "seed", "\x00\"\\\xff")
	f.Fuzz(func(t *testing.T, dep, param, model string) {
		as := []audit.Attempt{{Attempt: 1, Deployment: dep, Model: model, DroppedParams: []string{param}}}
		b := Append(nil, as)
		if !json.Valid(b) {
			t.Fatalf("invalid JSON %q", b)
		}
		got, err := Parse(b)
		if err != nil {
			t.Fatal(err)
		}
		var want [3]string
		for i, s := range []string{dep, param, model} {
			j, _ := json.Marshal(s)
			_ = json.Unmarshal(j, &want[i])
		}
		if got[0].Deployment != want[0] || got[0].DroppedParams[0] != want[1] || got[0].Model != want[2] {
			t.Errorf("got %q %q %q, want %q", got[0].Deployment, got[0].DroppedParams[0], got[0].Model, want)
		}
	})
}

// BenchmarkAppend: the compact form of a two-attempt record, into a reused buffer.
func BenchmarkAppend(b *testing.B) {
	as := storetest.FullRecord("r").Attempts
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf = Append(buf[:0], as)
	}
	b.SetBytes(int64(len(buf)))
}

// TestPriceSnapshotRoundTrip: every member of a price snapshot (cache prices, the tier applied,
// the source, the one-hour write count) reads back as written; the cost lines are derived, not
// stored.
func TestPriceSnapshotRoundTrip(t *testing.T) {
	p := &audit.PriceSnapshot{InputPerMTokUSD: 6, OutputPerMTokUSD: 22.5, PerImageUSD: 0.04, CacheReadPerMTokUSD: 0.6,
		CacheWritePerMTokUSD: 7.5, CacheWrite1hPerMTokUSD: 12, TierAboveInputTokens: 200000, Source: "catalog", CacheWrite1hTokens: 7}
	as := []audit.Attempt{{Attempt: 1, Price: p, DroppedParams: []string{}}}
	got, err := Parse(Append(nil, as))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got[0].Price, p) {
		t.Fatalf("price = %+v, want %+v", got[0].Price, p)
	}
	// The web search price and count (a trailing element, written only when > 0) read back.
	p.WebSearchUSD = 0.01
	as[0].Tokens.WebSearchRequests = 3
	b := Append(nil, as)
	if got, err = Parse(b); err != nil || !reflect.DeepEqual(got[0].Price, p) || got[0].Tokens.WebSearchRequests != 3 {
		t.Fatalf("web search: %+v %+v %v from %s", got[0].Price, got[0].Tokens, err, b)
	}
	as[0].Tokens.WebSearchRequests = 0
	if b2 := Append(nil, as); len(b2) != len(b)-len(",3") {
		t.Fatalf("no web searches still writes the element: %s", b2)
	}
	withLines := *p
	withLines.Lines = []audit.CostLine{{Kind: "input", Count: 1, PerMTokUSD: 6, USD: 6e-6}}
	as[0].Price = &withLines
	if b := Append(nil, as); strings.Contains(string(b), "lines") {
		t.Fatalf("lines stored: %s", b)
	}
}
