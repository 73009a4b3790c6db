package auditsql

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/switchyard-gw/switchyard/internal/audit"
)

// binWidth is the relative width of the latency histogram's bins: bin k holds the milliseconds
// ms with floor(ln(ms+1) / ln(binWidth)) = k, so a quantile read at a bin's middle is within
// 2.5% of the exact value (ms well above 1).
const binWidth = 1.05

// Overview aggregates the records created in [q.Since, q.Until) over the requests table's
// summary columns (migration 0014), each query a range of the covering index requests_overview:
// totals and errors by class per bucket, latency and TTFT histograms per bucket, and the top
// q.Top models, deployments, keys and accounts. postgres selects $n placeholders, else ?.
// q.Since is aligned down to a multiple of q.Bucket.
func Overview(ctx context.Context, db *sql.DB, q audit.OverviewQuery, postgres bool) (*audit.Overview, error) {
	if q.Bucket <= 0 || !q.Until.After(q.Since) {
		return nil, fmt.Errorf("store: overview: empty window or bucket")
	}
	bucket := int64(q.Bucket)
	since := q.Since.UnixNano() / bucket * bucket
	until := q.Until.UnixNano()
	n := int((until - since + bucket - 1) / bucket)
	o := &audit.Overview{Since: time.Unix(0, since).UTC(), Until: q.Until.UTC(), Bucket: bucket / int64(time.Second),
		Series: make([]audit.Point, n)}
	for i := range o.Series {
		o.Series[i].Start = time.Unix(0, since+int64(i)*bucket).UTC()
		o.Series[i].Classes = map[string]int64{}
	}
	ph := func(s string) string { return placeholders(s, postgres) }
	// created_at > 0 is the covering index's own WHERE term (migration 0014): a planner uses a
	// partial index only for a query that has it, so the call log and the pruning never do.
	window := " FROM requests WHERE created_at > 0 AND created_at >= ? AND created_at < ?"
	bexpr := "(created_at - ?) / ?"
	if postgres {
		bexpr = "(created_at - ?::bigint) / ?::bigint"
	}

	// Totals and classes per bucket.
	rows, err := db.QueryContext(ctx, ph("SELECT "+bexpr+" AS b, error_code, COUNT(*), COALESCE(SUM(cost_usd), 0), "+
		"COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0)"+window+" GROUP BY 1, 2"), since, bucket, since, until)
	if err != nil {
		return nil, fmt.Errorf("store: overview: %w", err)
	}
	classes := map[string]int64{}
	for rows.Next() {
		var b int64
		var code string
		var t audit.Totals
		if err := rows.Scan(&b, &code, &t.Requests, &t.CostUSD, &t.InputTokens, &t.OutputTokens); err != nil {
			rows.Close()
			return nil, fmt.Errorf("store: overview: %w", err)
		}
		if b < 0 || b >= int64(n) {
			continue
		}
		p := &o.Series[b]
		if code != "" {
			t.Errors = t.Requests
			p.Classes[code] += t.Requests
			classes[code] += t.Requests
		}
		add(&p.Totals, t)
		add(&o.Totals, t)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: overview: %w", err)
	}
	for c, k := range classes {
		o.Classes = append(o.Classes, audit.Count{Class: c, Requests: k})
	}
	slices.SortFunc(o.Classes, func(a, b audit.Count) int {
		return cmp.Or(cmp.Compare(b.Requests, a.Requests), strings.Compare(a.Class, b.Class))
	})
	if o.Classes == nil {
		o.Classes = []audit.Count{}
	}

	// Latency (every request) and TTFT (streams with a first output) histograms per bucket.
	lw := fmt.Sprintf("%v", math.Log(binWidth))
	for _, h := range []struct {
		col, cond string
		p50, p99  func(*audit.Point) **float64
	}{
		{"duration_ms", "", func(p *audit.Point) **float64 { return &p.P50MS }, func(p *audit.Point) **float64 { return &p.P99MS }},
		{"ttft_ms", " AND ttft_ms IS NOT NULL AND stream = " + boolLit(postgres), func(p *audit.Point) **float64 { return &p.TTFTP50 },
			func(p *audit.Point) **float64 { return &p.TTFTP99 }},
	} {
		bins := make([]map[int64]int64, n)
		rows, err := db.QueryContext(ctx, ph("SELECT "+bexpr+" AS b, floor(ln("+h.col+" + 1) / "+lw+") AS k, COUNT(*)"+
			window+h.cond+" GROUP BY 1, 2"), since, bucket, since, until)
		if err != nil {
			return nil, fmt.Errorf("store: overview: %w", err)
		}
		for rows.Next() {
			var b int64
			var k float64
			var c int64
			if err := rows.Scan(&b, &k, &c); err != nil {
				rows.Close()
				return nil, fmt.Errorf("store: overview: %w", err)
			}
			if b < 0 || b >= int64(n) {
				continue
			}
			if bins[b] == nil {
				bins[b] = map[int64]int64{}
			}
			bins[b][int64(k)] += c
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("store: overview: %w", err)
		}
		for i, m := range bins {
			if m != nil {
				*h.p50(&o.Series[i]) = quantile(m, 0.5)
				*h.p99(&o.Series[i]) = quantile(m, 0.99)
			}
		}
	}

	// Top lists.
	top := max(q.Top, 1)
	for _, d := range []struct {
		col string
		dst *[]audit.Top
	}{{"model", &o.TopModels}, {"deployment", &o.TopDeployments}, {"key_id", &o.TopKeys}, {"account", &o.TopAccounts}} {
		rows, err := db.QueryContext(ctx, ph("SELECT "+d.col+", COUNT(*), SUM(CASE WHEN error_code <> '' THEN 1 ELSE 0 END), "+
			"COALESCE(SUM(cost_usd), 0), COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0)"+window+
			" AND "+d.col+" <> '' GROUP BY 1 ORDER BY 2 DESC, 4 DESC, 1 LIMIT ?"), since, until, top)
		if err != nil {
			return nil, fmt.Errorf("store: overview: %w", err)
		}
		*d.dst = []audit.Top{}
		for rows.Next() {
			var t audit.Top
			if err := rows.Scan(&t.Name, &t.Requests, &t.Errors, &t.CostUSD, &t.InputTokens, &t.OutputTokens); err != nil {
				rows.Close()
				return nil, fmt.Errorf("store: overview: %w", err)
			}
			*d.dst = append(*d.dst, t)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("store: overview: %w", err)
		}
	}
	return o, nil
}

func add(dst *audit.Totals, t audit.Totals) {
	dst.Requests += t.Requests
	dst.Errors += t.Errors
	dst.CostUSD += t.CostUSD
	dst.InputTokens += t.InputTokens
	dst.OutputTokens += t.OutputTokens
}

func boolLit(postgres bool) string {
	if postgres {
		return "TRUE"
	}
	return "1"
}

// quantile reads the q-quantile of a histogram of bins (bin -> count): the middle of the bin
// holding it, in milliseconds.
func quantile(bins map[int64]int64, q float64) *float64 {
	keys := make([]int64, 0, len(bins))
	var total int64
	for k, c := range bins {
		keys = append(keys, k)
		total += c
	}
	slices.Sort(keys)
	rank := int64(math.Ceil(q * float64(total)))
	var seen int64
	for _, k := range keys {
		seen += bins[k]
		if seen >= rank {
			v := math.Exp((float64(k)+0.5)*math.Log(binWidth)) - 1
			v = math.Round(v*10) / 10
			return &v
		}
	}
	return nil
}

// placeholders turns the ? of q into $1, $2, ... for Postgres.
func placeholders(q string, postgres bool) string {
	if !postgres {
		return q
	}
	var b strings.Builder
	n := 0
	for _, part := range strings.SplitAfter(q, "?") {
		if p, ok := strings.CutSuffix(part, "?"); ok {
			n++
			part = p + "$" + fmt.Sprint(n)
		}
		b.WriteString(part)
	}
	return b.String()
}
