// Package auditjson is the compact stored form of an audit record's attempts (issue 15 item
// 1), shared by the SQLite and Postgres stores (column requests.attempts_json, migration
// 0010): one JSON array holding one positional array per attempt, in dispatch order:
//
//	[attempt, deployment, provider, model, upstream_model, outcome, error_code,
//	 input_tokens, cached_tokens, cache_write_tokens, output_tokens, reasoning_tokens,
//	 usage_provenance, reserved_max_usd, cost_usd, billing_source, price, dispatched_at,
//	 headers_ms, first_token_ms, dropped_params, upstream_status, band, score, strategy,
//	 region, platform, web_search_requests]
//
// with the types and units of the former attempts table: token counts integers, USD and
// milliseconds JSON numbers, price null or {"input": USD/Mtok, "output": USD/Mtok, "image":
// USD (when > 0), "web_search": USD per call (when > 0), "cache_read", "cache_write",
// "cache_write_1h": USD/Mtok, "tier_above_input_tokens" (when > 0), "source" (when set),
// "cache_write_1h_tokens" (when > 0)}
// (audit.PriceSnapshot; the cost lines are derived, not stored),
// dispatched_at Unix nanoseconds (null for the zero time), headers_ms and first_token_ms null
// when absent, dropped_params an array of strings, band an integer, score a number or null
// (no metric), strategy, region and platform strings, web_search_requests an integer written
// only when > 0 (the last element, so that its absence reads as 0). A reader takes a shorter
// array's missing trailing elements as zero (elements added later go at the end; one added
// after web_search_requests makes it always written).
//
// [Append] writes it without reflection or allocation beyond dst's growth: it runs for every
// record the gateway serves.
package auditjson

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/switchyard-gw/switchyard/internal/audit"
	"github.com/switchyard-gw/switchyard/internal/dialect"
)

// Append appends the compact form of as to dst and returns it. It is valid JSON for any
// input: strings are escaped (invalid UTF-8 becomes U+FFFD, as encoding/json does), and a
// non-finite float (never produced by the gateway) is written as null, which reads back as 0.
func Append(dst []byte, as []audit.Attempt) []byte {
	dst = append(dst, '[')
	for i := range as {
		if i > 0 {
			dst = append(dst, ',')
		}
		a := &as[i]
		dst = append(dst, '[')
		dst = strconv.AppendInt(dst, int64(a.Attempt), 10)
		for _, s := range [...]string{a.Deployment, a.Provider, a.Model, a.UpstreamModel, a.Outcome, a.ErrorCode} {
			dst = append(dst, ',')
			dst = dialect.AppendJSONString(dst, s)
		}
		for _, n := range [...]int64{a.Tokens.Input, a.Tokens.Cached, a.Tokens.CacheWrite, a.Tokens.Output, a.Tokens.Reasoning} {
			dst = append(dst, ',')
			dst = strconv.AppendInt(dst, n, 10)
		}
		dst = append(dst, ',')
		dst = dialect.AppendJSONString(dst, a.UsageProvenance)
		dst = append(dst, ',')
		dst = appendFloat(dst, a.ReservedMaxUSD)
		dst = append(dst, ',')
		dst = appendFloat(dst, a.CostUSD)
		dst = append(dst, ',')
		dst = dialect.AppendJSONString(dst, a.BillingSource)
		if a.Price == nil {
			dst = append(dst, ",null"...)
		} else {
			dst = append(dst, `,{"input":`...)
			dst = appendFloat(dst, a.Price.InputPerMTokUSD)
			dst = append(dst, `,"output":`...)
			dst = appendFloat(dst, a.Price.OutputPerMTokUSD)
			dst = appendPriceRest(dst, a.Price)
			dst = append(dst, '}')
		}
		dst = append(dst, ',')
		if a.DispatchedAt.IsZero() {
			dst = append(dst, "null"...)
		} else {
			dst = strconv.AppendInt(dst, a.DispatchedAt.UnixNano(), 10)
		}
		for _, p := range [...]*float64{a.HeadersMS, a.FirstTokenMS} {
			dst = append(dst, ',')
			if p == nil {
				dst = append(dst, "null"...)
			} else {
				dst = appendFloat(dst, *p)
			}
		}
		dst = append(dst, ",["...)
		for j, s := range a.DroppedParams {
			if j > 0 {
				dst = append(dst, ',')
			}
			dst = dialect.AppendJSONString(dst, s)
		}
		dst = append(dst, "],"...)
		dst = strconv.AppendInt(dst, int64(a.UpstreamStatus), 10)
		dst = append(dst, ',')
		dst = strconv.AppendInt(dst, int64(a.Band), 10)
		dst = append(dst, ',')
		if a.Score.Valid {
			dst = appendFloat(dst, a.Score.Value)
		} else {
			dst = append(dst, "null"...)
		}
		dst = append(dst, ',')
		dst = dialect.AppendJSONString(dst, a.Strategy)
		dst = append(dst, ',')
		dst = dialect.AppendJSONString(dst, a.Region)
		dst = append(dst, ',')
		dst = dialect.AppendJSONString(dst, a.Platform)
		if a.Tokens.WebSearchRequests > 0 {
			dst = append(dst, ',')
			dst = strconv.AppendInt(dst, a.Tokens.WebSearchRequests, 10)
		}
		dst = append(dst, ']')
	}
	return append(dst, ']')
}

func appendFloat(dst []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(dst, "null"...)
	}
	return strconv.AppendFloat(dst, f, 'g', -1, 64)
}

// Parse decodes the compact form b into attempts, never nil: DroppedParams is never nil,
// times are UTC. It returns an error for anything that is not an array of arrays of the
// types above.
func Parse(b []byte) ([]audit.Attempt, error) {
	var rows [][]json.RawMessage
	if err := json.Unmarshal(b, &rows); err != nil {
		return nil, fmt.Errorf("audit attempts: %w", err)
	}
	out := make([]audit.Attempt, len(rows))
	for i, row := range rows {
		if err := parseAttempt(row, &out[i]); err != nil {
			return nil, fmt.Errorf("audit attempt %d: %w", i+1, err)
		}
	}
	return out, nil
}

var errNull = errors.New("null where a value is required")

func parseAttempt(row []json.RawMessage, a *audit.Attempt) error {
	el := func(i int) json.RawMessage {
		if i < len(row) {
			return row[i]
		}
		return nil
	}
	// into decodes element i into v; a missing element leaves v zero, a null too unless required.
	into := func(i int, v any) error {
		e := el(i)
		if e == nil || string(e) == "null" {
			return nil
		}
		if err := json.Unmarshal(e, v); err != nil {
			return fmt.Errorf("element %d: %w", i, err)
		}
		return nil
	}
	var price *audit.PriceSnapshot
	var dispatched *int64
	var headers, firstToken *float64
	var dropped []string
	var score *float64
	for i, v := range []any{&a.Attempt, &a.Deployment, &a.Provider, &a.Model, &a.UpstreamModel, &a.Outcome, &a.ErrorCode,
		&a.Tokens.Input, &a.Tokens.Cached, &a.Tokens.CacheWrite, &a.Tokens.Output, &a.Tokens.Reasoning,
		&a.UsageProvenance, &a.ReservedMaxUSD, &a.CostUSD, &a.BillingSource, &price, &dispatched,
		&headers, &firstToken, &dropped, &a.UpstreamStatus, &a.Band, &score, &a.Strategy, &a.Region, &a.Platform,
		&a.Tokens.WebSearchRequests} {
		if err := into(i, v); err != nil {
			return err
		}
	}
	if e := el(0); e == nil || string(e) == "null" {
		return fmt.Errorf("attempt number: %w", errNull)
	}
	a.Price, a.HeadersMS, a.FirstTokenMS = price, headers, firstToken
	if score != nil {
		a.Score = audit.ScoreOf(*score)
	}
	if dispatched != nil {
		a.DispatchedAt = time.Unix(0, *dispatched).UTC()
	}
	if dropped == nil {
		dropped = []string{}
	}
	a.DroppedParams = dropped
	return nil
}

// appendPriceRest appends the members of p after input and output (see the package comment).
func appendPriceRest(dst []byte, p *audit.PriceSnapshot) []byte {
	if p.PerImageUSD > 0 {
		dst = append(dst, `,"image":`...)
		dst = appendFloat(dst, p.PerImageUSD)
	}
	if p.WebSearchUSD > 0 {
		dst = append(dst, `,"web_search":`...)
		dst = appendFloat(dst, p.WebSearchUSD)
	}
	dst = append(dst, `,"cache_read":`...)
	dst = appendFloat(dst, p.CacheReadPerMTokUSD)
	dst = append(dst, `,"cache_write":`...)
	dst = appendFloat(dst, p.CacheWritePerMTokUSD)
	dst = append(dst, `,"cache_write_1h":`...)
	dst = appendFloat(dst, p.CacheWrite1hPerMTokUSD)
	if p.TierAboveInputTokens > 0 {
		dst = append(dst, `,"tier_above_input_tokens":`...)
		dst = strconv.AppendInt(dst, p.TierAboveInputTokens, 10)
	}
	if p.Source != "" {
		dst = append(dst, `,"source":`...)
		dst = dialect.AppendJSONString(dst, p.Source)
	}
	if p.CacheWrite1hTokens > 0 {
		dst = append(dst, `,"cache_write_1h_tokens":`...)
		dst = strconv.AppendInt(dst, p.CacheWrite1hTokens, 10)
	}
	return dst
}
