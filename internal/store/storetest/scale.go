package storetest

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-gw/switchyard/internal/audit"
	"github.com/switchyard-gw/switchyard/internal/store/auditsql"
)

// ScaleRecords is how many records the stores' overview scale tests insert: 1,000,000 when
// SWITCHYARD_TEST_MILLION is set (minutes of a loaded CI machine: the bulk insert, migration
// 0015's backfill and the direct aggregate), else 100,000.
func ScaleRecords() int {
	if os.Getenv("SWITCHYARD_TEST_MILLION") != "" {
		return 1_000_000
	}
	return 100_000
}

// BulkRecordsSQL is one statement that inserts n requests rows with the columns of migration
// 0014 (summary columns set, no attempts), ids req_000000000000 up, spread evenly over the 7
// days from its one parameter (Unix nanoseconds; one every 604.8 ms for a million). Each
// field is drawn from a hash of the row's number: 8 models, 12 deployments (” for 2%), 300
// keys and 60 accounts (” for 2.5%), four failure classes (20% of the rows), half of them
// streams, a TTFT on 90% of the rows (streams or not), costs up to 0.001 USD.
func BulkRecordsSQL(postgres bool, n int) string {
	step := 7 * 24 * int64(time.Hour) / int64(n)
	r := func(salt int) string { return fmt.Sprintf("((i * 2654435761 + %d * 40503) %% 1000003)", salt) }
	id, stream, start := "'req_' || printf('%012d', i)", r(5)+" % 2", "?"
	if postgres {
		id, stream, start = "'req_' || lpad(i::text, 12, '0')", "("+r(5)+" % 2 = 1)", "$1::bigint"
	}
	str := func(prefix string, salt, mod int) string {
		if postgres {
			return fmt.Sprintf("'%s' || (%s %% %d)::text", prefix, r(salt), mod)
		}
		return fmt.Sprintf("'%s' || (%s %% %d)", prefix, r(salt), mod)
	}
	cols := []string{
		id,
		"CASE WHEN " + r(3) + " % 40 = 0 THEN '' ELSE " + str("acct-", 3, 60) + " END", // account
		str("model-", 1, 8), // model
		"'openai.chat'",     // surface
		"CASE " + r(4) + " % 20 WHEN 0 THEN 429 WHEN 1 THEN 502 WHEN 2 THEN 504 WHEN 3 THEN 502 WHEN 4 THEN 400 ELSE 200 END",
		"CASE " + r(4) + " % 20 WHEN 0 THEN 'rate_limited' WHEN 1 THEN 'upstream_error' WHEN 2 THEN 'timeout' WHEN 3 THEN 'upstream_error' " +
			"WHEN 4 THEN 'invalid_request' ELSE '' END",
		stream,
		fmt.Sprintf("%s + i * %d", start, step), // created_at
		"20 + (" + r(6) + " % 30000) / 3.0",     // duration_ms
		"'[]'",                                  // admission_events
		"'[]'",                                  // attempts_json
		"CASE WHEN " + r(3) + " % 40 = 0 THEN '' ELSE " + str("key-", 3, 300) + " END", // key_id
		"(" + r(8) + " % 100000) / 100000000.0",                                        // cost_usd
		r(9) + " % 5000",                                                               // input_tokens
		r(10) + " % 1000",                                                              // output_tokens
		"CASE WHEN " + r(2) + " % 50 = 0 THEN '' ELSE " + str("dep-", 2, 12) + " END",        // deployment
		"CASE WHEN " + r(7) + " % 10 = 0 THEN NULL ELSE 5 + (" + r(7) + " % 2000) / 2.0 END", // ttft_ms
	}
	insert := "INSERT INTO requests (request_id, account, model, surface, status, error_code, stream, created_at, duration_ms, " +
		"admission_events, attempts_json, key_id, cost_usd, input_tokens, output_tokens, deployment, ttft_ms) "
	seq := fmt.Sprintf("WITH RECURSIVE seq(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM seq WHERE i < %d) ", n-1)
	from := " FROM seq"
	if postgres {
		seq, from = "", fmt.Sprintf(" FROM generate_series(0, %d) AS i", n-1)
	}
	return insert + seq + "SELECT " + strings.Join(cols, ", ") + from
}

// scaleStore is what CheckOverviewAtScale needs of a store.
type scaleStore interface {
	audit.Store
	audit.Overviewer
	audit.Pruner
}

// CheckOverviewAtScale (issue 23) writes 3,000 records through st on top of n
// BulkRecordsSQL rows ending at end (1,000 new, 1,000 replacing bulk rows with other
// values, 1,000 in one batch that names some ids twice), prunes the oldest 5,000, then
// compares st's overview with direct (the aggregate over the records) for the console's three
// windows ending at end: totals, every bucket's sums, classes and latency quantiles, and the
// top lists. It logs each overview's time; it asserts no time.
func CheckOverviewAtScale(t *testing.T, st scaleStore, n int, end time.Time, direct func(audit.OverviewQuery) (*audit.Overview, error)) {
	t.Helper()
	ctx := context.Background()
	ms := func(v float64) *float64 { return &v }
	rec := func(id string, i int, at time.Time) *audit.Record {
		r := &audit.Record{RequestID: id, Model: fmt.Sprintf("model-%d", i%9), Surface: "openai.chat",
			Account: fmt.Sprintf("acct-%d", i%61), KeyID: fmt.Sprintf("key-%d", i%301), Status: 200, Stream: i%3 == 0,
			CreatedAt: at, DurationMS: float64(10 + i%7000), CallerRequestID: fmt.Sprintf("caller-%d", i)}
		if i%7 == 0 {
			r.Status, r.ErrorCode = 503, "overloaded"
		}
		r.Attempts = []audit.Attempt{{Attempt: 1, Deployment: fmt.Sprintf("dep-%d", i%13), Provider: "p", Model: r.Model,
			UpstreamModel: r.Model, Outcome: audit.OutcomeCompleted, CostUSD: float64(i%1000) * 1.3e-7,
			Tokens:       audit.Tokens{Input: int64(i % 3000), Cached: int64(i % 7), Output: int64(i % 800)},
			FirstTokenMS: ms(float64(3 + i%900)), UsageProvenance: audit.ProvenanceObserved}}
		return r
	}
	t0 := time.Now()
	var batch []*audit.Record
	for i := range 1000 { // new records in the last 30 minutes
		batch = append(batch, rec(fmt.Sprintf("req_new_%04d", i), i, end.Add(-30*time.Minute+time.Duration(i)*time.Second)))
	}
	step := 7 * 24 * time.Hour / time.Duration(n)
	for i := range 1000 { // replacing the last 1,000 bulk rows, with their times
		k := n - 1 - i
		batch = append(batch, rec(fmt.Sprintf("req_%012d", k), i+7, end.Add(-7*24*time.Hour+time.Duration(k)*step)))
	}
	for len(batch) > 0 {
		k := min(len(batch), 256)
		if err := st.WriteRecords(ctx, batch[:k]); err != nil {
			t.Fatal(err)
		}
		batch = batch[k:]
	}
	for i := range 1000 { // one batch naming ids twice: the later record counts
		batch = append(batch, rec(fmt.Sprintf("req_dup_%04d", i%600), i+3, end.Add(-20*time.Hour+time.Duration(i)*time.Minute)))
	}
	if err := st.WriteRecords(ctx, batch); err != nil {
		t.Fatal(err)
	}
	if n, err := st.PruneRecords(ctx, end.Add(-6*24*time.Hour), 5000); err != nil || n != 5000 {
		t.Fatalf("prune: %d, %v", n, err)
	}
	t.Logf("3,000 records written and 5,000 pruned: %v", time.Since(t0).Round(time.Millisecond))

	for _, w := range []struct {
		name         string
		span, bucket time.Duration
	}{{"1h", time.Hour, time.Minute}, {"24h", 24 * time.Hour, 15 * time.Minute}, {"7d", 7 * 24 * time.Hour, 3 * time.Hour}} {
		q := audit.OverviewQuery{Since: end.Add(-w.span), Until: end, Bucket: w.bucket, Top: 10}
		t0 := time.Now()
		got, err := st.Overview(ctx, q)
		took := time.Since(t0)
		if err != nil {
			t.Fatal(err)
		}
		t0 = time.Now()
		want, err := direct(q)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("window %s: %d requests; overview from the rollup %v, the same aggregate over the records %v",
			w.name, got.Totals.Requests, took.Round(100*time.Microsecond), time.Since(t0).Round(time.Millisecond))
		compareOverviews(t, w.name, got, want)
	}
}

// compareOverviews fails t unless got equals want, costs within the rollup's rounding to
// nano-USD (0.5e-9 USD per record).
func compareOverviews(t *testing.T, name string, got, want *audit.Overview) {
	t.Helper()
	near := func(what string, g, w audit.Totals) {
		if g.Requests != w.Requests || g.Errors != w.Errors || g.InputTokens != w.InputTokens || g.OutputTokens != w.OutputTokens ||
			math.Abs(g.CostUSD-w.CostUSD) > 0.5e-9*float64(w.Requests)+1e-9 {
			t.Errorf("%s: %s %+v, the records add up to %+v", name, what, g, w)
		}
	}
	near("totals", got.Totals, want.Totals)
	if want.Totals.Requests < 1000 {
		t.Errorf("%s: only %d records in the window", name, want.Totals.Requests)
	}
	if len(got.Series) != len(want.Series) {
		t.Fatalf("%s: %d buckets, want %d", name, len(got.Series), len(want.Series))
	}
	eq := func(a, b *float64) bool { return a == nil && b == nil || a != nil && b != nil && *a == *b }
	for i := range got.Series {
		g, w := got.Series[i], want.Series[i]
		what := fmt.Sprintf("bucket %d (%s)", i, w.Start.Format(time.RFC3339))
		near(what, g.Totals, w.Totals)
		if !g.Start.Equal(w.Start) || fmt.Sprint(g.Classes) != fmt.Sprint(w.Classes) || !eq(g.P50MS, w.P50MS) ||
			!eq(g.P99MS, w.P99MS) || !eq(g.TTFTP50, w.TTFTP50) || !eq(g.TTFTP99, w.TTFTP99) {
			t.Errorf("%s: %s: %v %v p50 %s p99 %s ttft %s %s; the records: %v %v p50 %s p99 %s ttft %s %s", name, what,
				g.Start, g.Classes, fmtp(g.P50MS), fmtp(g.P99MS), fmtp(g.TTFTP50), fmtp(g.TTFTP99),
				w.Start, w.Classes, fmtp(w.P50MS), fmtp(w.P99MS), fmtp(w.TTFTP50), fmtp(w.TTFTP99))
		}
	}
	if fmt.Sprint(got.Classes) != fmt.Sprint(want.Classes) {
		t.Errorf("%s: classes %v, the records %v", name, got.Classes, want.Classes)
	}
	for _, l := range []struct {
		what      string
		got, want []audit.Top
	}{{"top models", got.TopModels, want.TopModels}, {"top deployments", got.TopDeployments, want.TopDeployments},
		{"top keys", got.TopKeys, want.TopKeys}, {"top accounts", got.TopAccounts, want.TopAccounts}} {
		if len(l.got) != len(l.want) || len(l.want) == 0 {
			t.Errorf("%s: %s %+v, the records %+v", name, l.what, l.got, l.want)
			continue
		}
		for i := range l.got {
			if l.got[i].Name != l.want[i].Name {
				t.Errorf("%s: %s[%d] %+v, the records %+v", name, l.what, i, l.got[i], l.want[i])
			}
			near(l.what+" "+l.want[i].Name, l.got[i].Totals, l.want[i].Totals)
		}
	}
}

// DirectOverview is the overview of the records created in [q.Since, q.Until) computed from
// the records themselves: every requests row of the window read once (its overview columns,
// migration 0014) and added up here, its latencies binned and its quantiles read as
// docs/admin-api.md says, without the rollup. q.Until must be on a minute (the rollup's
// finest span). postgres selects $n placeholders.
func DirectOverview(ctx context.Context, db *sql.DB, q audit.OverviewQuery, postgres bool) (*audit.Overview, error) {
	bucket := int64(q.Bucket / time.Second)
	since := q.Since.Unix() / bucket * bucket
	until := q.Until.Unix()
	n := int((until - since + bucket - 1) / bucket)
	o := &audit.Overview{Since: time.Unix(since, 0).UTC(), Until: q.Until.UTC(), Bucket: bucket, Series: make([]audit.Point, n),
		Classes: []audit.Count{}}
	for i := range o.Series {
		o.Series[i].Start = time.Unix(since+int64(i)*bucket, 0).UTC()
		o.Series[i].Classes = map[string]int64{}
	}
	query := "SELECT " + auditsql.RowColumns + " FROM requests WHERE created_at >= ? AND created_at < ?"
	if postgres {
		query = strings.Replace(strings.Replace(query, "?", "$1", 1), "?", "$2", 1)
	}
	rows, err := db.QueryContext(ctx, query, since*1e9, until*1e9)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	lat, ttft := make([]map[int64]int64, n), make([]map[int64]int64, n)
	classes := map[string]int64{}
	tops := [4]map[string]*audit.Totals{{}, {}, {}, {}}
	bin := func(ms float64) int64 { return int64(math.Floor(math.Log(max(ms, 0)+1) / math.Log(1.05))) }
	for rows.Next() {
		r, err := auditsql.ScanRow(rows)
		if err != nil {
			return nil, err
		}
		t := audit.Totals{Requests: 1, CostUSD: r.CostUSD, InputTokens: r.InputTokens, OutputTokens: r.OutputTokens}
		if r.ErrorCode != "" {
			t.Errors = 1
			classes[r.ErrorCode]++
		}
		b := (r.CreatedAt/1e9 - since) / bucket
		p := &o.Series[b]
		for _, dst := range []*audit.Totals{&o.Totals, &p.Totals} {
			addTotals(dst, t)
		}
		if r.ErrorCode != "" {
			p.Classes[r.ErrorCode]++
		}
		for i, name := range []string{r.Model, r.Deployment, r.KeyID, r.Account} {
			if name != "" {
				if tops[i][name] == nil {
					tops[i][name] = &audit.Totals{}
				}
				addTotals(tops[i][name], t)
			}
		}
		if lat[b] == nil {
			lat[b] = map[int64]int64{}
		}
		lat[b][bin(r.DurationMS)]++
		if r.HasTTFT && r.Stream {
			if ttft[b] == nil {
				ttft[b] = map[int64]int64{}
			}
			ttft[b][bin(r.TTFTMS)]++
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for i := range o.Series {
		o.Series[i].P50MS, o.Series[i].P99MS = nearestRank(lat[i], 0.5), nearestRank(lat[i], 0.99)
		o.Series[i].TTFTP50, o.Series[i].TTFTP99 = nearestRank(ttft[i], 0.5), nearestRank(ttft[i], 0.99)
	}
	for c, k := range classes {
		o.Classes = append(o.Classes, audit.Count{Class: c, Requests: k})
	}
	slices.SortFunc(o.Classes, func(a, b audit.Count) int {
		return cmp.Or(cmp.Compare(b.Requests, a.Requests), strings.Compare(a.Class, b.Class))
	})
	for i, dst := range []*[]audit.Top{&o.TopModels, &o.TopDeployments, &o.TopKeys, &o.TopAccounts} {
		*dst = []audit.Top{}
		for name, t := range tops[i] {
			*dst = append(*dst, audit.Top{Name: name, Totals: *t})
		}
		slices.SortFunc(*dst, func(a, b audit.Top) int {
			return cmp.Or(cmp.Compare(b.Requests, a.Requests), cmp.Compare(b.CostUSD, a.CostUSD), strings.Compare(a.Name, b.Name))
		})
		*dst = (*dst)[:min(len(*dst), max(q.Top, 1))]
	}
	return o, nil
}

func addTotals(dst *audit.Totals, t audit.Totals) {
	dst.Requests += t.Requests
	dst.Errors += t.Errors
	dst.CostUSD += t.CostUSD
	dst.InputTokens += t.InputTokens
	dst.OutputTokens += t.OutputTokens
}

// nearestRank is the q-quantile (nearest rank) of a histogram of 5% bins, read at the bin's
// geometric middle and rounded to 0.1 ms; nil for no values.
func nearestRank(bins map[int64]int64, q float64) *float64 {
	var total int64
	keys := []int64{}
	for k, c := range bins {
		total += c
		keys = append(keys, k)
	}
	if total == 0 {
		return nil
	}
	slices.Sort(keys)
	rank := int64(math.Ceil(q * float64(total)))
	var seen int64
	for _, k := range keys {
		if seen += bins[k]; seen >= rank {
			v := math.Round((math.Exp((float64(k)+0.5)*math.Log(1.05))-1)*10) / 10
			return &v
		}
	}
	return nil
}
