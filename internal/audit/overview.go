package audit

import (
	"context"
	"errors"
	"time"
)

// Summary is what the overview adds up of one record (Summarize), stored beside it by the SQL
// stores (migration 0014): the call log's figures of the request.
type Summary struct {
	CostUSD      float64  // billed cost of all its attempts, USD
	InputTokens  int64    // prompt tokens of all its attempts: input + cached + cache writes
	OutputTokens int64    // output tokens of all its attempts
	Deployment   string   // the last attempt's deployment; "" without attempts
	TTFTMS       *float64 // the last attempt's dispatch to first output, ms; nil when none
}

// Summarize returns r's Summary.
func Summarize(r *Record) Summary {
	var s Summary
	for i := range r.Attempts {
		a := &r.Attempts[i]
		s.CostUSD += a.CostUSD
		s.InputTokens += a.Tokens.Input + a.Tokens.Cached + a.Tokens.CacheWrite
		s.OutputTokens += a.Tokens.Output
	}
	if n := len(r.Attempts); n > 0 {
		s.Deployment, s.TTFTMS = r.Attempts[n-1].Deployment, r.Attempts[n-1].FirstTokenMS
	}
	return s
}

// OverviewQuery asks for the overview of the records created in [Since, Until): time series in
// buckets of Bucket (aligned to Unix time), and the top Top of each dimension.
type OverviewQuery struct {
	Since, Until time.Time
	Bucket       time.Duration
	Top          int
}

// Overview is the aggregate of the audit over a window (docs/admin-api.md "Overview").
type Overview struct {
	Since  time.Time `json:"since"`
	Until  time.Time `json:"until"`
	Bucket int64     `json:"bucket_seconds"`
	Totals Totals    `json:"totals"`
	// Series has one point per bucket of the window, oldest first, empty buckets included.
	Series []Point `json:"series"`
	// Classes counts the failed requests by final failure class, most first.
	Classes []Count `json:"classes"`
	// Top lists, most requests first (ties by cost, then name).
	TopModels      []Top `json:"top_models"`
	TopDeployments []Top `json:"top_deployments"`
	TopKeys        []Top `json:"top_keys"`
	TopAccounts    []Top `json:"top_accounts"`
}

// Totals are a window's sums. Errors are the requests with a final failure class.
type Totals struct {
	Requests     int64   `json:"requests"`
	Errors       int64   `json:"errors"`
	CostUSD      float64 `json:"cost_usd"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
}

// Point is one bucket: its totals, errors by class, and the latency quantiles of its requests
// (duration, arrival to last byte) and of its streamed first outputs (TTFT), in milliseconds,
// null when the bucket has none. Quantiles are read from a histogram of 5% wide bins: within
// 5% of the exact value.
type Point struct {
	Start time.Time `json:"start"`
	Totals
	Classes map[string]int64 `json:"classes"`
	P50MS   *float64         `json:"latency_p50_ms"`
	P99MS   *float64         `json:"latency_p99_ms"`
	TTFTP50 *float64         `json:"ttft_p50_ms"`
	TTFTP99 *float64         `json:"ttft_p99_ms"`
}

// Count is a class and its number of requests.
type Count struct {
	Class    string `json:"class"`
	Requests int64  `json:"requests"`
}

// Top is one entry of a top list: the model, deployment, key id or account id, its requests,
// failed requests, cost and tokens.
type Top struct {
	Name string `json:"name"`
	Totals
}

// Overviewer is an audit Store that aggregates. The SQL stores implement it.
type Overviewer interface {
	Overview(ctx context.Context, q OverviewQuery) (*Overview, error)
}

// ErrNoOverview is the error of Recorder.Overview when its store cannot aggregate.
var ErrNoOverview = errors.New("audit: the store cannot aggregate records")

// Overview returns the overview of the stored records (Overviewer), after writing the records
// queued so far (within a second), as List does.
func (r *Recorder) Overview(ctx context.Context, q OverviewQuery) (*Overview, error) {
	o, ok := r.st.(Overviewer)
	if !ok {
		return nil, ErrNoOverview
	}
	if r.running.Load() {
		fctx, cancel := context.WithTimeout(ctx, time.Second)
		_ = r.Flush(fctx)
		cancel()
	}
	return o.Overview(ctx, q)
}
