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

// segment is a range [from, to) of bucket starts (Unix seconds) of one span of the rollup.
type segment struct{ span, from, to int64 }

// segments covers [since, until) (Unix seconds on a minute) with the fewest rollup rows: the
// whole hours from the hour rows when hours, the minutes before and after them from the minute
// rows.
func segments(since, until int64, hours bool) []segment {
	h0 := (since + SpanHour - 1) / SpanHour * SpanHour
	h1 := until / SpanHour * SpanHour
	if !hours || h0 >= h1 {
		return []segment{{SpanMinute, since, until}}
	}
	var out []segment
	if since < h0 {
		out = append(out, segment{SpanMinute, since, h0})
	}
	out = append(out, segment{SpanHour, h0, h1})
	if h1 < until {
		out = append(out, segment{SpanMinute, h1, until})
	}
	return out
}

// The rollup's queries, each a range of a primary key (span, dim or kind, start, ...): the
// classes of each bucket (totals and failures by class), the latency histograms per bucket,
// and the top lists' sums of a window.
const (
	overviewClasses = `SELECT start, name, requests, errors, cost_nusd, input_tokens, output_tokens FROM audit_rollup
    WHERE span = ? AND dim = 'class' AND start >= ? AND start < ?`
	overviewLatency = `SELECT (start - ?) / ? AS b, bin, SUM(count) FROM audit_rollup_latency
    WHERE span = ? AND kind = ? AND start >= ? AND start < ? GROUP BY 1, 2`
	overviewTops = `SELECT dim, name, SUM(requests), SUM(errors), SUM(cost_nusd), SUM(input_tokens), SUM(output_tokens)
    FROM audit_rollup WHERE span = ? AND dim IN ('account', 'deployment', 'key', 'model') AND start >= ? AND start < ?
    GROUP BY dim, name`
)

// OverviewSQL returns the statements Overview runs (for the stores' query plan tests).
func OverviewSQL(postgres bool) []string {
	lat := overviewLatency
	if postgres {
		lat = strings.Replace(lat, "(start - ?) / ?", "(start - ?::bigint) / ?::bigint", 1)
	}
	return []string{placeholders(overviewClasses, postgres), placeholders(lat, postgres), placeholders(overviewTops, postgres)}
}

// Overview aggregates the records created in [q.Since, q.Until) from the rollup (migration
// 0015; rollup.go), never the requests table: totals and errors by class per bucket, latency
// and TTFT histograms per bucket, and the top q.Top models, deployments, keys and accounts.
// q.Bucket must be a whole number of minutes; q.Since is aligned down to a multiple of it and
// q.Until up to a minute (the rollup's finest span: a record created after Until in Until's
// minute, which only a clock ahead of this one writes, is counted). A bucket of whole hours
// reads hour rows (and the minutes after the last whole hour); the top lists read hour rows
// for the window's whole hours and minute rows for the rest. postgres selects $n
// placeholders, else ?.
func Overview(ctx context.Context, db *sql.DB, q audit.OverviewQuery, postgres bool) (*audit.Overview, error) {
	if q.Bucket <= 0 || !q.Until.After(q.Since) || q.Bucket%time.Minute != 0 {
		return nil, fmt.Errorf("store: overview: empty window, or a bucket that is not whole minutes")
	}
	bucket := int64(q.Bucket / time.Second)
	since := floorDiv(q.Since.Unix(), bucket) * bucket
	const minuteNS = int64(time.Minute)
	until := (floorDiv(q.Until.UnixNano()-1, minuteNS) + 1) * SpanMinute // seconds, up to a minute
	n := int((until - since + bucket - 1) / bucket)
	o := &audit.Overview{Since: time.Unix(since, 0).UTC(), Until: q.Until.UTC(), Bucket: bucket,
		Series: make([]audit.Point, n)}
	for i := range o.Series {
		o.Series[i].Start = time.Unix(since+int64(i)*bucket, 0).UTC()
		o.Series[i].Classes = map[string]int64{}
	}
	stmts := OverviewSQL(postgres)
	series := segments(since, until, bucket%SpanHour == 0)

	// Totals and classes per bucket.
	classes := map[string]int64{}
	for _, sg := range series {
		rows, err := db.QueryContext(ctx, stmts[0], sg.span, sg.from, sg.to)
		if err != nil {
			return nil, fmt.Errorf("store: overview: %w", err)
		}
		for rows.Next() {
			var start int64
			var class string
			var s Sums
			if err := rows.Scan(&start, &class, &s.Requests, &s.Errors, &s.CostNUSD, &s.InputTokens, &s.OutputTokens); err != nil {
				rows.Close()
				return nil, fmt.Errorf("store: overview: %w", err)
			}
			b := (start - since) / bucket
			if b < 0 || b >= int64(n) || s.Requests == 0 {
				continue
			}
			p := &o.Series[b]
			if class != "" {
				p.Classes[class] += s.Requests
				classes[class] += s.Requests
			}
			add(&p.Totals, totals(s))
			add(&o.Totals, totals(s))
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("store: overview: %w", err)
		}
	}
	for c, k := range classes {
		if k != 0 {
			o.Classes = append(o.Classes, audit.Count{Class: c, Requests: k})
		}
	}
	slices.SortFunc(o.Classes, func(a, b audit.Count) int {
		return cmp.Or(cmp.Compare(b.Requests, a.Requests), strings.Compare(a.Class, b.Class))
	})
	if o.Classes == nil {
		o.Classes = []audit.Count{}
	}

	// Latency (every request) and TTFT (streams with a first output) histograms per bucket.
	for _, h := range []struct {
		kind     int64
		p50, p99 func(*audit.Point) **float64
	}{
		{KindDuration, func(p *audit.Point) **float64 { return &p.P50MS }, func(p *audit.Point) **float64 { return &p.P99MS }},
		{KindTTFT, func(p *audit.Point) **float64 { return &p.TTFTP50 }, func(p *audit.Point) **float64 { return &p.TTFTP99 }},
	} {
		bins := make([]map[int64]int64, n)
		for _, sg := range series {
			rows, err := db.QueryContext(ctx, stmts[1], since, bucket, sg.span, h.kind, sg.from, sg.to)
			if err != nil {
				return nil, fmt.Errorf("store: overview: %w", err)
			}
			for rows.Next() {
				var b, k, c int64
				if err := rows.Scan(&b, &k, &c); err != nil {
					rows.Close()
					return nil, fmt.Errorf("store: overview: %w", err)
				}
				if b < 0 || b >= int64(n) || c == 0 {
					continue
				}
				if bins[b] == nil {
					bins[b] = map[int64]int64{}
				}
				bins[b][k] += c
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return nil, fmt.Errorf("store: overview: %w", err)
			}
		}
		for i, m := range bins {
			if m != nil {
				*h.p50(&o.Series[i]) = quantile(m, 0.5)
				*h.p99(&o.Series[i]) = quantile(m, 0.99)
			}
		}
	}

	// Top lists.
	tops := map[string]map[string]Sums{DimModel: {}, DimDeployment: {}, DimKey: {}, DimAccount: {}}
	for _, sg := range segments(since, until, true) {
		rows, err := db.QueryContext(ctx, stmts[2], sg.span, sg.from, sg.to)
		if err != nil {
			return nil, fmt.Errorf("store: overview: %w", err)
		}
		for rows.Next() {
			var dim, name string
			var s Sums
			if err := rows.Scan(&dim, &name, &s.Requests, &s.Errors, &s.CostNUSD, &s.InputTokens, &s.OutputTokens); err != nil {
				rows.Close()
				return nil, fmt.Errorf("store: overview: %w", err)
			}
			if m := tops[dim]; m != nil {
				t := m[name]
				t.Requests += s.Requests
				t.Errors += s.Errors
				t.CostNUSD += s.CostNUSD
				t.InputTokens += s.InputTokens
				t.OutputTokens += s.OutputTokens
				m[name] = t
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("store: overview: %w", err)
		}
	}
	top := max(q.Top, 1)
	for _, d := range []struct {
		dim string
		dst *[]audit.Top
	}{{DimModel, &o.TopModels}, {DimDeployment, &o.TopDeployments}, {DimKey, &o.TopKeys}, {DimAccount, &o.TopAccounts}} {
		list := []audit.Top{}
		for name, s := range tops[d.dim] {
			if s.Requests > 0 {
				list = append(list, audit.Top{Name: name, Totals: totals(s)})
			}
		}
		slices.SortFunc(list, func(a, b audit.Top) int {
			return cmp.Or(cmp.Compare(b.Requests, a.Requests), cmp.Compare(b.CostUSD, a.CostUSD), strings.Compare(a.Name, b.Name))
		})
		*d.dst = list[:min(len(list), top)]
	}
	return o, nil
}

// totals are s in the overview's units.
func totals(s Sums) audit.Totals {
	return audit.Totals{Requests: s.Requests, Errors: s.Errors, CostUSD: float64(s.CostNUSD) / 1e9,
		InputTokens: s.InputTokens, OutputTokens: s.OutputTokens}
}

// floorDiv is a / b rounded down (b > 0).
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

func add(dst *audit.Totals, t audit.Totals) {
	dst.Requests += t.Requests
	dst.Errors += t.Errors
	dst.CostUSD += t.CostUSD
	dst.InputTokens += t.InputTokens
	dst.OutputTokens += t.OutputTokens
}

// quantile reads the q-quantile (nearest rank) of a histogram of bins (bin -> count): the
// geometric middle of the bin holding it (binValue), in milliseconds.
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
			v := binValue(k)
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
