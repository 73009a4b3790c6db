package storetest

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/switchyard-gw/switchyard/internal/audit"
)

// testOverview (issue 23): the overview's totals, buckets, classes, latency quantiles and top
// lists equal what the written records add up to; a record outside the window, a replaced
// record's old values and a non-stream first output are not counted.
func testOverview(t *testing.T, st audit.Store) {
	ctx := context.Background()
	ov, ok := st.(audit.Overviewer)
	if !ok {
		t.Fatalf("%T does not implement audit.Overviewer", st)
	}
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	ms := func(v float64) *float64 { return &v }
	rec := func(id string, at time.Time, model, dep, key, acct, code string, status int, cost float64, in, out int64, dur float64, ttft *float64, stream bool) *audit.Record {
		r := &audit.Record{RequestID: id, Model: model, Surface: "openai.chat", Account: acct, KeyID: key, Status: status,
			ErrorCode: code, Stream: stream, CreatedAt: at, DurationMS: dur}
		if dep != "" {
			// a failed first attempt with a cost of its own, then the last attempt
			r.Attempts = []audit.Attempt{
				{Attempt: 1, Deployment: "other", Provider: "p", Model: model, UpstreamModel: model, Outcome: audit.OutcomeFailed,
					ErrorCode: "upstream_error", CostUSD: 0.001, Tokens: audit.Tokens{Input: 1}, UsageProvenance: audit.ProvenanceObserved},
				{Attempt: 2, Deployment: dep, Provider: "p", Model: model, UpstreamModel: model, Outcome: audit.OutcomeCompleted,
					CostUSD: cost - 0.001, Tokens: audit.Tokens{Input: in - 1 - 2, Cached: 2, Output: out}, FirstTokenMS: ttft,
					UsageProvenance: audit.ProvenanceObserved},
			}
		}
		return r
	}
	recs := []*audit.Record{
		rec("r1", t0.Add(1*time.Minute), "m-a", "d-1", "k-1", "acct-1", "", 200, 0.010, 100, 10, 100, ms(50), true),
		rec("r2", t0.Add(2*time.Minute), "m-a", "d-1", "k-1", "acct-1", "", 200, 0.020, 200, 20, 200, ms(60), true),
		rec("r3", t0.Add(2*time.Minute+time.Second), "m-b", "d-2", "k-2", "acct-2", "rate_limited", 429, 0, 0, 0, 5, nil, false),
		rec("r4", t0.Add(61*time.Minute), "m-a", "d-2", "k-2", "acct-1", "", 200, 0.030, 300, 30, 1000, ms(400), false),
		rec("r5", t0.Add(62*time.Minute), "m-b", "", "", "", "upstream_error", 502, 0, 0, 0, 3000, nil, true),
		rec("old", t0.Add(-time.Minute), "m-a", "d-1", "k-1", "acct-1", "", 200, 5, 5000, 500, 1, nil, false), // before the window
		rec("late", t0.Add(2*time.Hour), "m-a", "d-1", "k-1", "acct-1", "", 200, 5, 5000, 500, 1, nil, false), // at its end
	}
	// r2 first written with other values, then replaced: only the replacement counts.
	first := rec("r2", t0.Add(2*time.Minute), "m-z", "d-9", "k-9", "acct-9", "", 200, 9, 9000, 900, 9, nil, false)
	if err := st.WriteRecords(ctx, []*audit.Record{first}); err != nil {
		t.Fatal(err)
	}
	if err := st.WriteRecords(ctx, recs); err != nil {
		t.Fatal(err)
	}
	o, err := ov.Overview(ctx, audit.OverviewQuery{Since: t0, Until: t0.Add(2 * time.Hour), Bucket: time.Hour, Top: 5})
	if err != nil {
		t.Fatal(err)
	}
	want := audit.Totals{Requests: 5, Errors: 2, CostUSD: 0.06, InputTokens: 600, OutputTokens: 60}
	if !totalsEqual(o.Totals, want) {
		t.Errorf("totals %+v, want %+v", o.Totals, want)
	}
	if len(o.Series) != 2 || !o.Series[0].Start.Equal(t0) || o.Bucket != 3600 {
		t.Fatalf("series %d from %v, bucket %d: want 2 hourly from %v", len(o.Series), o.Series[0].Start, o.Bucket, t0)
	}
	if s := o.Series[0]; s.Requests != 3 || s.Errors != 1 || s.Classes["rate_limited"] != 1 || math.Abs(s.CostUSD-0.03) > 1e-9 {
		t.Errorf("bucket 0 %+v", s)
	}
	if s := o.Series[1]; s.Requests != 2 || s.Errors != 1 || s.Classes["upstream_error"] != 1 || s.InputTokens != 300 {
		t.Errorf("bucket 1 %+v", s)
	}
	// Quantiles within the histogram's 5%: bucket 0 durations 100, 200, 5 ms; TTFT of its two
	// streams 50 and 60 ms (r4's first output is not a stream's; r5 has none).
	near := func(what string, got *float64, want float64) {
		if got == nil || math.Abs(*got-want) > 0.05*want+1 {
			t.Errorf("%s = %v, want about %v", what, fmtp(got), want)
		}
	}
	near("bucket 0 p50", o.Series[0].P50MS, 100)
	near("bucket 0 p99", o.Series[0].P99MS, 200)
	near("bucket 0 ttft p50", o.Series[0].TTFTP50, 50)
	near("bucket 0 ttft p99", o.Series[0].TTFTP99, 60)
	near("bucket 1 p99", o.Series[1].P99MS, 3000)
	if o.Series[1].TTFTP50 != nil {
		t.Errorf("bucket 1 ttft %v: no stream in it had a first output", *o.Series[1].TTFTP50)
	}
	if len(o.Classes) != 2 {
		t.Errorf("classes %+v", o.Classes)
	}
	tops := func(what string, got []audit.Top, want ...string) {
		t.Helper()
		var names []string
		for _, x := range got {
			names = append(names, fmt.Sprintf("%s:%d", x.Name, x.Requests))
		}
		if fmt.Sprint(names) != fmt.Sprint(want) {
			t.Errorf("%s = %v, want %v", what, names, want)
		}
	}
	tops("top models", o.TopModels, "m-a:3", "m-b:2")
	tops("top deployments", o.TopDeployments, "d-1:2", "d-2:2") // tied on requests and cost: by name
	tops("top keys", o.TopKeys, "k-1:2", "k-2:2")
	tops("top accounts", o.TopAccounts, "acct-1:3", "acct-2:1")
	if m := o.TopModels[0]; math.Abs(m.CostUSD-0.06) > 1e-9 || m.InputTokens != 600 || m.Errors != 0 {
		t.Errorf("top model %+v", m)
	}
	// An empty window: zero totals, empty buckets.
	o, err = ov.Overview(ctx, audit.OverviewQuery{Since: t0.Add(24 * time.Hour), Until: t0.Add(25 * time.Hour), Bucket: time.Minute, Top: 5})
	if err != nil || o.Totals.Requests != 0 || len(o.Series) != 60 || len(o.TopModels) != 0 || o.Series[0].P50MS != nil {
		t.Errorf("empty window: %+v, %v", o, err)
	}
}

func totalsEqual(a, b audit.Totals) bool {
	return a.Requests == b.Requests && a.Errors == b.Errors && math.Abs(a.CostUSD-b.CostUSD) < 1e-9 &&
		a.InputTokens == b.InputTokens && a.OutputTokens == b.OutputTokens
}

func fmtp(v *float64) string {
	if v == nil {
		return "null"
	}
	return fmt.Sprint(*v)
}

// CheckOverviewBackfill fails t unless the overview of ov, over the hour around recs (written
// before migration 0014 in the caller's test), adds up to their summaries (audit.Summarize):
// the migration summed their attempts.
func CheckOverviewBackfill(t *testing.T, ov audit.Overviewer, recs []*audit.Record) {
	t.Helper()
	var want audit.Totals
	since, until := recs[0].CreatedAt, recs[0].CreatedAt
	for _, r := range recs {
		s := audit.Summarize(r)
		want.Requests++
		if r.ErrorCode != "" {
			want.Errors++
		}
		want.CostUSD += s.CostUSD
		want.InputTokens += s.InputTokens
		want.OutputTokens += s.OutputTokens
		if r.CreatedAt.Before(since) {
			since = r.CreatedAt
		}
		if r.CreatedAt.After(until) {
			until = r.CreatedAt
		}
	}
	o, err := ov.Overview(context.Background(), audit.OverviewQuery{Since: since, Until: until.Add(time.Second), Bucket: time.Hour, Top: 10})
	if err != nil {
		t.Fatal(err)
	}
	if !totalsEqual(o.Totals, want) || want.CostUSD == 0 || want.InputTokens == 0 {
		t.Errorf("overview of the records written before 0014: %+v, want %+v", o.Totals, want)
	}
}
