package auditsql

import (
	"cmp"
	"context"
	"database/sql"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/switchyard-gw/switchyard/internal/audit"
)

// The overview's rollup (migration 0015, docs/admin-api.md "Overview"): the audit writer adds
// each batch's records to two tables in the batch's own transaction, and subtracts a replaced or
// pruned record's old row, so that they always equal an aggregate over the requests table:
//
//	audit_rollup          (span, dim, start, name) -> requests, errors, cost_nusd,
//	                      input_tokens, output_tokens
//	audit_rollup_latency  (span, kind, start, bin) -> count
//
// span is the bucket's length in seconds (a minute or an hour: every record is counted in
// both), start the bucket's Unix second (a multiple of span), dim one of the dimensions below
// and name the record's value of it. kind is 0 for the duration and 1 for the time to first
// token; bin is the latency's histogram bin (Bin).
const (
	SpanMinute = 60   // seconds
	SpanHour   = 3600 // seconds
)

// RollupSpans are the spans every record is counted in.
var RollupSpans = [...]int64{SpanMinute, SpanHour}

// The dimensions of audit_rollup (its dim column) and the record field each names. Every
// record is counted once under DimClass (name: its error_code, "" for a success); under the
// others only when the field is not "".
const (
	DimClass      = "class"      // error_code
	DimModel      = "model"      // model
	DimDeployment = "deployment" // the last attempt's deployment
	DimKey        = "key"        // key_id
	DimAccount    = "account"    // account
)

// The kinds of audit_rollup_latency.
const (
	KindDuration = 0 // duration_ms of every record
	KindTTFT     = 1 // ttft_ms of a stream with a first output
)

// binWidth is the relative width of the latency histogram's bins, and lnBinWidth its natural
// logarithm as the migration's backfill writes it: bin k holds the milliseconds ms with
// floor(ln(ms+1) / lnBinWidth) = k. A quantile read at the bin's geometric middle is within
// sqrt(1.05)-1 = 2.47% of the exact (nearest-rank) value in ms+1 (docs/admin-api.md).
const (
	binWidth   = 1.05
	lnBinWidth = 0.04879016416943205
)

// Bin is the histogram bin of a latency in milliseconds; a negative or non-finite latency is
// bin 0.
func Bin(ms float64) int64 {
	if !(ms > 0) || math.IsInf(ms, 1) {
		return 0
	}
	return int64(math.Floor(math.Log(ms+1) / lnBinWidth))
}

// binValue is the milliseconds a quantile that falls in bin k reads: its geometric middle,
// rounded to 0.1 ms.
func binValue(k int64) float64 {
	v := math.Exp((float64(k)+0.5)*lnBinWidth) - 1
	return math.Round(v*10) / 10
}

// NanoUSD is a cost in USD as the rollup sums it: integer nano-USD (1e-9 USD), rounded.
// Sums of integers subtract exactly (a replaced or pruned record leaves no residue); the
// rounding is at most 0.5e-9 USD per record.
func NanoUSD(usd float64) int64 {
	if math.IsNaN(usd) || math.IsInf(usd, 0) {
		return 0
	}
	return int64(math.Round(usd * 1e9))
}

// Row is what the rollup reads of a record: its requests row's overview columns (migrations
// 0014 and 0015).
type Row struct {
	CreatedAt                                    int64 // Unix nanoseconds; <= 0 (no time): in no bucket
	ErrorCode, Model, Deployment, KeyID, Account string
	CostUSD                                      float64
	InputTokens, OutputTokens                    int64
	DurationMS                                   float64
	TTFTMS                                       float64 // meaningful when HasTTFT
	HasTTFT, Stream                              bool
}

// RowOf is rec's Row, as the writer stores it.
func RowOf(rec *audit.Record) Row {
	s := audit.Summarize(rec)
	r := Row{ErrorCode: rec.ErrorCode, Model: rec.Model, Deployment: s.Deployment, KeyID: rec.KeyID,
		Account: rec.Account, CostUSD: s.CostUSD, InputTokens: s.InputTokens, OutputTokens: s.OutputTokens,
		DurationMS: rec.DurationMS, Stream: rec.Stream}
	if !rec.CreatedAt.IsZero() {
		r.CreatedAt = rec.CreatedAt.UnixNano()
	}
	if s.TTFTMS != nil {
		r.TTFTMS, r.HasTTFT = *s.TTFTMS, true
	}
	return r
}

// RowColumns are the columns of requests that ScanRow reads, in its order.
const RowColumns = "created_at, error_code, model, deployment, key_id, account, cost_usd, input_tokens, output_tokens, duration_ms, ttft_ms, stream"

// ScanPruned reads the rows of RowColumns that a prune deletes (DELETE ... RETURNING, or its
// SELECT) and closes them: the rollup to subtract (each row with sign -1), how many rows, and the
// newest created_at among them (Unix ns; 0 for none).
func ScanPruned(rows *sql.Rows) (roll Rollup, n int, newest int64, err error) {
	defer rows.Close()
	for rows.Next() {
		r, err := ScanRow(rows)
		if err != nil {
			return roll, 0, 0, err
		}
		roll.Add(r, -1)
		newest = max(newest, r.CreatedAt)
		n++
	}
	return roll, n, newest, rows.Err()
}

// ScanRow reads one row of RowColumns.
func ScanRow(rows *sql.Rows) (Row, error) {
	var r Row
	var created sql.NullInt64
	var ttft sql.NullFloat64
	err := rows.Scan(&created, &r.ErrorCode, &r.Model, &r.Deployment, &r.KeyID, &r.Account, &r.CostUSD,
		&r.InputTokens, &r.OutputTokens, &r.DurationMS, &ttft, &r.Stream)
	r.CreatedAt, r.TTFTMS, r.HasTTFT = created.Int64, ttft.Float64, ttft.Valid
	return r, err
}

// SumKey is one row of audit_rollup.
type SumKey struct {
	Span  int64
	Dim   string
	Start int64
	Name  string
}

// Sums are audit_rollup's counters. CostNUSD is in nano-USD (NanoUSD).
type Sums struct {
	Requests, Errors, CostNUSD, InputTokens, OutputTokens int64
}

// LatencyKey is one row of audit_rollup_latency.
type LatencyKey struct {
	Span, Kind, Start, Bin int64
}

// Rollup is the change a batch makes to the rollup tables: the sums of its records, minus
// those of the rows they replace (or the rows pruned). The zero value is empty and ready.
type Rollup struct {
	sums    map[SumKey]Sums
	latency map[LatencyKey]int64
}

// Add counts r into u with sign +1 (a record written) or -1 (a row replaced or deleted).
func (u *Rollup) Add(r Row, sign int64) {
	if r.CreatedAt <= 0 {
		return
	}
	if u.sums == nil {
		u.sums, u.latency = map[SumKey]Sums{}, map[LatencyKey]int64{}
	}
	d := Sums{Requests: sign, CostNUSD: sign * NanoUSD(r.CostUSD), InputTokens: sign * r.InputTokens,
		OutputTokens: sign * r.OutputTokens}
	if r.ErrorCode != "" {
		d.Errors = sign
	}
	sec := r.CreatedAt / 1e9
	for _, span := range RollupSpans {
		start := sec / span * span
		for _, dn := range [...][2]string{{DimClass, r.ErrorCode}, {DimModel, r.Model}, {DimDeployment, r.Deployment},
			{DimKey, r.KeyID}, {DimAccount, r.Account}} {
			if dn[1] == "" && dn[0] != DimClass {
				continue
			}
			k := SumKey{Span: span, Dim: dn[0], Start: start, Name: dn[1]}
			s := u.sums[k]
			s.Requests += d.Requests
			s.Errors += d.Errors
			s.CostNUSD += d.CostNUSD
			s.InputTokens += d.InputTokens
			s.OutputTokens += d.OutputTokens
			u.sums[k] = s
		}
		u.latency[LatencyKey{Span: span, Kind: KindDuration, Start: start, Bin: Bin(r.DurationMS)}] += sign
		if r.HasTTFT && r.Stream {
			u.latency[LatencyKey{Span: span, Kind: KindTTFT, Start: start, Bin: Bin(r.TTFTMS)}] += sign
		}
	}
}

// Empty reports whether u changes nothing.
func (u *Rollup) Empty() bool { return len(u.sums) == 0 && len(u.latency) == 0 }

// Reset empties u, keeping its maps.
func (u *Rollup) Reset() {
	clear(u.sums)
	clear(u.latency)
}

// SumRow and LatencyRow are the rows of a Rollup, as SortedSums and SortedLatency list them.
type (
	SumRow struct {
		SumKey
		Sums
	}
	LatencyRow struct {
		LatencyKey
		Count int64
	}
)

// SortedSums lists u's audit_rollup changes in key order (the order in which a Postgres batch
// locks them, so that concurrent batches cannot deadlock), leaving out those that cancel.
func (u *Rollup) SortedSums() []SumRow {
	out := make([]SumRow, 0, len(u.sums))
	for k, s := range u.sums {
		if s != (Sums{}) {
			out = append(out, SumRow{k, s})
		}
	}
	slices.SortFunc(out, func(a, b SumRow) int {
		return cmp.Or(cmp.Compare(a.Span, b.Span), strings.Compare(a.Dim, b.Dim), cmp.Compare(a.Start, b.Start),
			strings.Compare(a.Name, b.Name))
	})
	return out
}

// SortedLatency lists u's audit_rollup_latency changes in key order, leaving out those that
// cancel.
func (u *Rollup) SortedLatency() []LatencyRow {
	out := make([]LatencyRow, 0, len(u.latency))
	for k, c := range u.latency {
		if c != 0 {
			out = append(out, LatencyRow{k, c})
		}
	}
	slices.SortFunc(out, func(a, b LatencyRow) int {
		return cmp.Or(cmp.Compare(a.Span, b.Span), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Start, b.Start),
			cmp.Compare(a.Bin, b.Bin))
	})
	return out
}

// AppendJSON appends u's changes as two JSON arrays of positional arrays, the parameters of
// the SQLite store's UpsertSumsJSON and UpsertLatencyJSON: [[span,dim,start,name,requests,
// errors,cost_nusd,input_tokens,output_tokens],...] and [[span,kind,start,bin,count],...].
func (u *Rollup) AppendJSON(sums, latency []byte) ([]byte, []byte) {
	sums = append(sums, '[')
	for i, r := range u.SortedSums() {
		if i > 0 {
			sums = append(sums, ',')
		}
		sums = append(sums, '[')
		sums = strconv.AppendInt(sums, r.Span, 10)
		sums = append(sums, ',')
		sums = AppendJSONString(sums, r.Dim)
		sums = append(sums, ',')
		sums = strconv.AppendInt(sums, r.Start, 10)
		sums = append(sums, ',')
		sums = AppendJSONString(sums, r.Name)
		for _, v := range [...]int64{r.Requests, r.Errors, r.CostNUSD, r.InputTokens, r.OutputTokens} {
			sums = append(sums, ',')
			sums = strconv.AppendInt(sums, v, 10)
		}
		sums = append(sums, ']')
	}
	sums = append(sums, ']')
	latency = append(latency, '[')
	for i, r := range u.SortedLatency() {
		if i > 0 {
			latency = append(latency, ',')
		}
		latency = append(latency, '[')
		for j, v := range [...]int64{r.Span, r.Kind, r.Start, r.Bin, r.Count} {
			if j > 0 {
				latency = append(latency, ',')
			}
			latency = strconv.AppendInt(latency, v, 10)
		}
		latency = append(latency, ']')
	}
	return sums, append(latency, ']')
}

// AppendJSONString appends s as a JSON string. Invalid UTF-8 is kept byte for byte (SQLite's
// JSON functions return the bytes as they were), so the name equals the record's.
func AppendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}

// SubtractStored subtracts from u the rows that query (a SELECT of RowColumns) returns with
// args: the stored rows a batch replaces, or those a prune deletes.
func SubtractStored(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, query string, u *Rollup, args ...any) error {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		r, err := ScanRow(rows)
		if err != nil {
			return err
		}
		u.Add(r, -1)
	}
	return rows.Err()
}

// Rollup maintenance statements the two stores share (sums added to the stored ones).
const (
	upsertSumsSet = ` ON CONFLICT (span, dim, start, name) DO UPDATE SET
    requests = audit_rollup.requests + excluded.requests, errors = audit_rollup.errors + excluded.errors,
    cost_nusd = audit_rollup.cost_nusd + excluded.cost_nusd,
    input_tokens = audit_rollup.input_tokens + excluded.input_tokens,
    output_tokens = audit_rollup.output_tokens + excluded.output_tokens`
	upsertLatencySet = ` ON CONFLICT (span, kind, start, bin) DO UPDATE SET count = audit_rollup_latency.count + excluded.count`

	// UpsertSumsJSON and UpsertLatencyJSON (SQLite) add the rows of Rollup.AppendJSON's two
	// arrays, each one parameter.
	UpsertSumsJSON = `INSERT INTO audit_rollup (span, dim, start, name, requests, errors, cost_nusd, input_tokens, output_tokens)
    SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5, value ->> 6, value ->> 7, value ->> 8
    FROM json_each(?) WHERE true` + upsertSumsSet
	UpsertLatencyJSON = `INSERT INTO audit_rollup_latency (span, kind, start, bin, count)
    SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4 FROM json_each(?) WHERE true` + upsertLatencySet

	// UpsertSumsArrays and UpsertLatencyArrays (Postgres) add the rows of one array per
	// column, in SortedSums and SortedLatency order.
	UpsertSumsArrays = `INSERT INTO audit_rollup (span, dim, start, name, requests, errors, cost_nusd, input_tokens, output_tokens)
    SELECT * FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::text[], $5::bigint[], $6::bigint[], $7::bigint[],
        $8::bigint[], $9::bigint[])` + upsertSumsSet
	UpsertLatencyArrays = `INSERT INTO audit_rollup_latency (span, kind, start, bin, count)
    SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::bigint[], $5::bigint[])` + upsertLatencySet
)

// PostgresArrays returns u's changes as the parameters of UpsertSumsArrays and
// UpsertLatencyArrays.
func (u *Rollup) PostgresArrays() (sums, latency []any) {
	sr := u.SortedSums()
	var span, start, req, errs, cost, in, out []int64
	var dim, name []string
	for _, r := range sr {
		span, dim, start, name = append(span, r.Span), append(dim, r.Dim), append(start, r.Start), append(name, r.Name)
		req, errs, cost = append(req, r.Requests), append(errs, r.Errors), append(cost, r.CostNUSD)
		in, out = append(in, r.InputTokens), append(out, r.OutputTokens)
	}
	lr := u.SortedLatency()
	var lspan, kind, lstart, bin, count []int64
	for _, r := range lr {
		lspan, kind, lstart = append(lspan, r.Span), append(kind, r.Kind), append(lstart, r.Start)
		bin, count = append(bin, r.Bin), append(count, r.Count)
	}
	return []any{span, dim, start, name, req, errs, cost, in, out}, []any{lspan, kind, lstart, bin, count}
}

// DeleteEmptySQL deletes the rollup rows at or before a Unix second (the parameter) that no
// record counts any longer (after a prune): every span, dimension and kind, read in key order.
func DeleteEmptySQL(postgres bool) []string {
	return []string{
		placeholders(`DELETE FROM audit_rollup WHERE span IN (60, 3600) AND dim IN ('account', 'class', 'deployment', 'key', 'model')
    AND start <= ? AND requests = 0`, postgres),
		placeholders(`DELETE FROM audit_rollup_latency WHERE span IN (60, 3600) AND kind IN (0, 1) AND start <= ? AND count = 0`, postgres),
	}
}
