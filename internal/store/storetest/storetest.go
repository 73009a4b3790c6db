package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchyard-gw/switchyard/internal/accounts"
	"github.com/switchyard-gw/switchyard/internal/audit"
)

// Open returns a fresh, empty store for t, closed and removed by a t.Cleanup it registers. It
// calls t.Fatal (or t.Skip) when it cannot.
type Open func(t testing.TB) audit.Store

func ptr[T any](v T) *T { return &v }

// FullRecord returns a record with id that sets every field of R-AUDIT-2: one failed attempt
// (nulls: no price, no latencies; empty dropped params) and one completed attempt (every
// optional field set).
func FullRecord(id string) *audit.Record {
	r := &audit.Record{
		RequestID: id, Model: "rp-sonnet-4-5:anthropic", Surface: "anthropic.messages", Account: "acct_1", KeyID: "key_1",
		CallerRequestID: "caller-" + id,
		Status:          200, ErrorCode: "", Stream: true,
		CreatedAt:  time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC),
		DurationMS: 1234.5,
		Attempts: []audit.Attempt{{
			Attempt: 1, Deployment: "anthropic", Provider: "anthropic", Model: "claude-sonnet-4-5",
			UpstreamModel: "claude-sonnet-4-5-20250929", Outcome: audit.OutcomeFailed, ErrorCode: "upstream_timeout",
			UsageProvenance: audit.ProvenanceUnknown, ReservedMaxUSD: 0.96, BillingSource: "unpriced",
			DispatchedAt:  time.Date(2026, 3, 1, 12, 0, 0, 200000001, time.UTC),
			DroppedParams: []string{}, Strategy: "latency",
		}, {
			Attempt: 2, Deployment: "bedrock-east", Provider: "aws", Model: "claude-sonnet-4-5",
			UpstreamModel: "anthropic.claude-sonnet-4-5", Outcome: audit.OutcomeCompleted,
			Tokens:          audit.Tokens{Input: 11, Cached: 22, CacheWrite: 33, Output: 44, Reasoning: 5},
			UsageProvenance: audit.ProvenanceObserved, ReservedMaxUSD: 0.96, CostUSD: 0.000789,
			BillingSource: "route_price", Price: &audit.PriceSnapshot{InputPerMTokUSD: 3, OutputPerMTokUSD: 15},
			DispatchedAt: time.Date(2026, 3, 1, 12, 0, 20, 999, time.UTC),
			HeadersMS:    ptr(120.25), FirstTokenMS: ptr(301.5),
			DroppedParams: []string{"logprobs", "seed"}, UpstreamStatus: 200,
			Band: 2, Score: audit.ScoreOf(412.5), Strategy: "latency", Region: "us-east-1", Platform: "bedrock",
		}},
	}
	r.AdmissionEvents.Add(audit.AdmissionEvent{Kind: audit.EventCircuitOpen, Stage: audit.StagePlan,
		Deployment: "vertex", Model: "claude-sonnet-4-5", Circuit: audit.CircuitModel,
		Until: time.Date(2026, 3, 1, 12, 0, 30, 5, time.UTC)})
	r.AdmissionEvents.Add(audit.AdmissionEvent{Kind: audit.EventLimitsChecked, Scopes: audit.ScopeKey | audit.ScopeAccount,
		Credit: true, Tokens: 4196, ReserveUSD: 0.96})
	r.AdmissionEvents.Add(audit.AdmissionEvent{Kind: audit.EventReserveTaken, Scopes: audit.ScopeAccount, Credit: true, ReserveUSD: 0.96})
	return r
}

// Run runs the behaviour suite against fresh stores from open, one per subtest.
func Run(t *testing.T, open Open) {
	tests := []struct {
		name string
		test func(t *testing.T, st audit.Store)
	}{
		{"RoundTrip", testRoundTrip},
		{"EmptyValues", testEmptyValues},
		{"Extremes", testExtremes},
		{"NonFiniteEventReserve", testNonFiniteEventReserve},
		{"NotFound", testNotFound},
		{"Replace", testReplace},
		{"ReplaceInOneBatch", testReplaceInOneBatch},
		{"BatchIsOneTransaction", testBatchIsOneTransaction},
		{"CancelledContext", testCancelledContext},
		{"DoesNotRetain", testDoesNotRetain},
		{"ConcurrentWritersAndReaders", testConcurrent},
		{"ConcurrentReplace", testConcurrentReplace},
		{"WithRecorder", testWithRecorder},
		{"Prune", testPrune},
		{"PruneWhileWriting", testPruneWhileWriting},
		{"ListPaging", testAuditListPaging},
		{"ListFilters", testAuditListFilters},
		{"Overview", testOverview},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.test(t, open(t)) })
	}
}

func write(t *testing.T, st audit.Store, recs ...*audit.Record) {
	t.Helper()
	if err := st.WriteRecords(context.Background(), recs); err != nil {
		t.Fatal(err)
	}
}

// check fails t unless the stored record for want.RequestID equals want.
func check(t *testing.T, st audit.Store, want *audit.Record) {
	t.Helper()
	got, err := st.Record(context.Background(), want.RequestID)
	if err != nil {
		t.Fatalf("Record(%q): %v", want.RequestID, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Record(%q) mismatch\n got %+v\nwant %+v", want.RequestID, got, want)
	}
}

func checkNotFound(t *testing.T, st audit.Store, id string) {
	t.Helper()
	if got, err := st.Record(context.Background(), id); !errors.Is(err, audit.ErrNotFound) {
		t.Errorf("Record(%q) = %+v, %v; want an error wrapping audit.ErrNotFound", id, got, err)
	}
}

// testRoundTrip: every field of R-AUDIT-2 reads back as written, and the JSON of GET
// /v1/generation has nulls for absent latencies and price and [] for no dropped params.
func testRoundTrip(t *testing.T, st audit.Store) {
	want := FullRecord("req_rt")
	write(t, st, want)
	check(t, st, want)
	got, err := st.Record(context.Background(), "req_rt")
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	for _, frag := range []string{
		`"price":null,"dispatched_at":"2026-03-01T12:00:00.200000001Z","headers_ms":null,"first_token_ms":null,"dropped_params":[],"upstream_status":0,"error_origin":"gateway",`,
		`"price":{"input":3,"output":15,"cache_read":3,"cache_write":3,"cache_write_1h":3,"lines":[`, `"dropped_params":["logprobs","seed"],"upstream_status":200,"error_origin":""`,
		`"tokens":{"input":11,"cached":22,"cache_write":33,"output":44,"reasoning":5}`,
		`"created_at":"2026-03-01T12:00:00.123456789Z"`, `"headers_ms":120.25,"first_token_ms":301.5`,
		`"band":0,"score":null,"strategy":"latency","region":"","platform":""}`, `"band":2,"score":412.5,"strategy":"latency","region":"us-east-1","platform":"bedrock"}`,
		`"admission_events":[{"kind":"circuit_open","stage":"plan","deployment":"vertex","model":"claude-sonnet-4-5","circuit":"model","until":"2026-03-01T12:00:30.000000005Z"},` +
			`{"kind":"limits_checked","scopes":["key","account"],"credit":true,"tokens":4196,"reserve_usd":0.96},` +
			`{"kind":"reserve_taken","scopes":["account"],"credit":true,"reserve_usd":0.96}],"attempts"`,
	} {
		if !strings.Contains(string(b), frag) {
			t.Errorf("JSON lacks %s\n%s", frag, b)
		}
	}
}

// testEmptyValues: nil DroppedParams and nil Attempts read back as empty, not nil; zero times
// stay zero.
func testEmptyValues(t *testing.T, st audit.Store) {
	bare := &audit.Record{RequestID: "req_bare", Attempts: []audit.Attempt{{Attempt: 1}}}
	write(t, st, bare, &audit.Record{RequestID: "req_none"})
	wantBare := &audit.Record{RequestID: "req_bare", Attempts: []audit.Attempt{{Attempt: 1, DroppedParams: []string{}}}}
	check(t, st, wantBare)
	check(t, st, &audit.Record{RequestID: "req_none", Attempts: []audit.Attempt{}})
}

// testExtremes: quoting and non-ASCII text, large counts, times before 1970 and with odd
// nanoseconds, and an error-outcome record survive unchanged.
func testExtremes(t *testing.T, st audit.Store) {
	r := FullRecord(`req_'quote"\ü`)
	r.Model = `o'neil "x" ü 模型 \n; DROP TABLE requests; --`
	r.Status, r.ErrorCode, r.Stream = 429, "rate_limited", false
	r.CreatedAt = time.Date(1969, 12, 31, 23, 59, 59, 1, time.UTC)
	r.Attempts[1].Tokens = audit.Tokens{Input: 1 << 40, Cached: 1<<62 - 1, Output: 7}
	r.Attempts[1].DroppedParams = []string{`a"b`, "ü", ""}
	r.Attempts[1].HeadersMS = ptr(0.0) // zero is not null
	r.Attempts[1].Price = &audit.PriceSnapshot{InputPerMTokUSD: 0.075, OutputPerMTokUSD: 1e-9}
	r.Attempts[1].CostUSD = 1.0 / 3
	write(t, st, r)
	check(t, st, r)
}

// testNonFiniteEventReserve: an admission event whose reserve is not finite (never produced
// by the gateway) does not fail its batch, as json.Marshal's error did: it reads back as 0, and
// the batch's other records are written.
func testNonFiniteEventReserve(t *testing.T, st audit.Store) {
	r := FullRecord("req_nan")
	r.AdmissionEvents.Reset()
	r.AdmissionEvents.Add(audit.AdmissionEvent{Kind: audit.EventReserveTaken, Scopes: audit.ScopeAccount, ReserveUSD: math.NaN()})
	r.AdmissionEvents.Add(audit.AdmissionEvent{Kind: audit.EventLimitsChecked, Tokens: 3, ReserveUSD: math.Inf(-1)})
	write(t, st, FullRecord("req_other"), r)
	want := *r
	want.AdmissionEvents.Reset()
	want.AdmissionEvents.Add(audit.AdmissionEvent{Kind: audit.EventReserveTaken, Scopes: audit.ScopeAccount})
	want.AdmissionEvents.Add(audit.AdmissionEvent{Kind: audit.EventLimitsChecked, Tokens: 3})
	check(t, st, &want)
	check(t, st, FullRecord("req_other"))
}

func testNotFound(t *testing.T, st audit.Store) {
	checkNotFound(t, st, "req_missing")
	checkNotFound(t, st, "")
	write(t, st, FullRecord("req_a"))
	checkNotFound(t, st, "req_A")
	checkNotFound(t, st, "req_")
}

// testReplace: writing a request id again replaces the record and all its attempts, with
// fewer or more attempts; other records are untouched.
func testReplace(t *testing.T, st audit.Store) {
	write(t, st, FullRecord("r"), FullRecord("other"))
	fewer := FullRecord("r")
	fewer.Status, fewer.ErrorCode, fewer.Account = 502, "upstream_error", "acct_2"
	fewer.Attempts = fewer.Attempts[:1]
	write(t, st, fewer)
	check(t, st, fewer)
	more := FullRecord("r")
	more.Attempts = append(more.Attempts, more.Attempts[1])
	more.Attempts[2].Attempt = 3
	write(t, st, more)
	check(t, st, more)
	none := &audit.Record{RequestID: "r", Status: 499, Attempts: []audit.Attempt{}}
	write(t, st, none)
	check(t, st, none)
	check(t, st, FullRecord("other"))
}

// testReplaceInOneBatch: when a batch holds the same request id twice, the later one wins.
func testReplaceInOneBatch(t *testing.T, st audit.Store) {
	first, second := FullRecord("dup"), FullRecord("dup")
	second.Status = 503
	second.Attempts = second.Attempts[1:]
	second.Attempts[0].Attempt = 1
	write(t, st, FullRecord("a"), first, FullRecord("b"), second)
	check(t, st, second)
	check(t, st, FullRecord("a"))
	check(t, st, FullRecord("b"))
}

// testBatchIsOneTransaction: a bad record fails the whole batch and nothing of it is written,
// not even the replacement of a record stored before.
func testBatchIsOneTransaction(t *testing.T, st audit.Store) {
	ctx := context.Background()
	write(t, st, FullRecord("kept"))
	changed := FullRecord("kept")
	changed.Status = 500
	changed.Attempts = nil
	if err := st.WriteRecords(ctx, []*audit.Record{FullRecord("ok"), changed, {RequestID: ""}}); err == nil {
		t.Fatal("a batch with an empty request id was accepted")
	}
	checkNotFound(t, st, "ok")
	check(t, st, FullRecord("kept"))

	dup := FullRecord("dup")
	dup.Attempts[1].Attempt = 1 // duplicate (request_id, attempt)
	if err := st.WriteRecords(ctx, []*audit.Record{FullRecord("ok"), changed, dup}); err == nil {
		t.Error("duplicate attempt numbers were accepted")
	}
	checkNotFound(t, st, "dup")
	checkNotFound(t, st, "ok")
	check(t, st, FullRecord("kept"))

	if err := st.WriteRecords(ctx, nil); err != nil {
		t.Errorf("empty batch: %v", err)
	}
}

// testCancelledContext: a write under a cancelled context fails and writes nothing.
func testCancelledContext(t *testing.T, st audit.Store) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := st.WriteRecords(ctx, []*audit.Record{FullRecord("c")}); err == nil {
		t.Error("write under a cancelled context succeeded")
	}
	if _, err := st.Record(ctx, "c"); err == nil {
		t.Error("read under a cancelled context succeeded")
	}
	checkNotFound(t, st, "c")
}

// testDoesNotRetain: changing records after WriteRecords returns changes nothing stored.
func testDoesNotRetain(t *testing.T, st audit.Store) {
	r := FullRecord("r")
	write(t, st, r)
	r.Status = 0
	r.Attempts[1].DroppedParams[0] = "changed"
	*r.Attempts[1].Price = audit.PriceSnapshot{}
	check(t, st, FullRecord("r"))
}

// testConcurrent: writers and readers at once (run with -race); readers see a record whole or
// not at all; every record written is then readable and intact.
func testConcurrent(t *testing.T, st audit.Store) {
	ctx := context.Background()
	const writers, batches, perBatch = 4, 10, 20
	id := func(w, b, i int) string { return fmt.Sprintf("w%d-b%d-%d", w, b, i) }
	var wg sync.WaitGroup
	errc := make(chan error, writers*2)
	for w := range writers {
		wg.Go(func() {
			for b := range batches {
				recs := make([]*audit.Record, perBatch)
				for i := range recs {
					recs[i] = FullRecord(id(w, b, i))
				}
				if err := st.WriteRecords(ctx, recs); err != nil {
					errc <- err
					return
				}
			}
		})
		wg.Go(func() { // reader: polls ids of its writer, found or not found, never an error
			for b := range batches {
				for i := range perBatch {
					r, err := st.Record(ctx, id(w, b, i))
					if err != nil && !errors.Is(err, audit.ErrNotFound) {
						errc <- err
						return
					}
					if err == nil && len(r.Attempts) != 2 {
						errc <- fmt.Errorf("torn read: %d attempts", len(r.Attempts))
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	for w := range writers {
		for b := range batches {
			for i := range perBatch {
				check(t, st, FullRecord(id(w, b, i)))
			}
		}
	}
}

// testConcurrentReplace: two writers replace the same records at once, in opposite orders;
// neither fails (no deadlock escapes), and readers always see one version whole: its status
// and its attempts together.
func testConcurrentReplace(t *testing.T, st audit.Store) {
	ctx := context.Background()
	const ids, rounds = 20, 15
	version := func(i int, short bool) *audit.Record {
		r := FullRecord("c" + strconv.Itoa(i))
		if short {
			r.Status = 502
			r.Attempts = r.Attempts[:1]
		}
		return r
	}
	var wg sync.WaitGroup
	errc := make(chan error, 4)
	for _, short := range []bool{false, true} {
		wg.Go(func() {
			for range rounds {
				recs := make([]*audit.Record, ids)
				for i := range recs {
					if short {
						recs[i] = version(ids-1-i, true) // descending
					} else {
						recs[i] = version(i, false)
					}
				}
				if err := st.WriteRecords(ctx, recs); err != nil {
					errc <- err
					return
				}
			}
		})
	}
	for range 2 {
		wg.Go(func() {
			for range rounds {
				for i := range ids {
					r, err := st.Record(ctx, "c"+strconv.Itoa(i))
					if errors.Is(err, audit.ErrNotFound) {
						continue
					}
					if err != nil {
						errc <- err
						return
					}
					if !reflect.DeepEqual(r, version(i, false)) && !reflect.DeepEqual(r, version(i, true)) {
						errc <- fmt.Errorf("torn read of c%d: status %d with %d attempts", i, r.Status, len(r.Attempts))
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
}

// testWithRecorder: the recorder and the store together; a record is found while queued and
// after it is written.
func testWithRecorder(t *testing.T, st audit.Store) {
	r := audit.NewRecorder(st, audit.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	for i := range 600 {
		r.Record(FullRecord(fmt.Sprintf("req_%d", i)))
	}
	if got, err := r.Lookup(ctx, "req_599"); err != nil || got.RequestID != "req_599" {
		t.Errorf("Lookup right after Record: %+v, %v", got, err)
	}
	if err := r.Flush(ctx); err != nil {
		t.Error(err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	check(t, st, FullRecord("req_599"))
	check(t, st, FullRecord("req_0"))
}

// aged returns FullRecord(id) created at t.
func aged(id string, t time.Time) *audit.Record {
	r := FullRecord(id)
	r.CreatedAt = t
	return r
}

// testPrune (issue 15 item 2): audit.Prune deletes the records created before the retention,
// in batches, and keeps the recent ones, the one created exactly at the limit, and a record
// without a creation time; the ledger (when the store has one) is untouched.
func testPrune(t *testing.T, st audit.Store) {
	p, ok := st.(audit.Pruner)
	if !ok {
		t.Skip("the store does not prune")
	}
	ctx := context.Background()
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	const retention = 30 * 24 * time.Hour
	limit := now.Add(-retention)
	var old, recent []*audit.Record
	for i := range 23 {
		old = append(old, aged(fmt.Sprintf("old%d", i), limit.Add(-time.Duration(i+1)*time.Hour)))
	}
	old = append(old, aged("just-old", limit.Add(-time.Nanosecond)))
	for i := range 5 {
		recent = append(recent, aged(fmt.Sprintf("new%d", i), now.Add(-time.Duration(i)*time.Hour)))
	}
	recent = append(recent, aged("at-limit", limit), aged("no-time", time.Time{}))
	write(t, st, append(append([]*audit.Record{}, old...), recent...)...)
	if ls, ok := st.(interface {
		AppendLedger(context.Context, []accounts.LedgerEntry) error
	}); ok {
		if err := ls.AppendLedger(ctx, []accounts.LedgerEntry{{At: limit.Add(-time.Hour), AccountID: "acct_1", KeyID: "k",
			RequestID: "old0", Kind: accounts.KindSettle, AmountMicroUSD: 5}}); err != nil {
			t.Fatal(err)
		}
	}

	var batches []int
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	audit.Prune(pctx, p, audit.PruneOptions{Retention: retention, BatchSize: 5, Now: func() time.Time { return now },
		AfterBatch: func(n int) {
			batches = append(batches, n)
			if n < 5 {
				cancel() // the end of the first round
			}
		}})
	if want := []int{5, 5, 5, 5, 4}; !reflect.DeepEqual(batches, want) {
		t.Errorf("batches deleted %v, want %v", batches, want)
	}
	for _, r := range old {
		checkNotFound(t, st, r.RequestID)
	}
	for _, r := range recent {
		check(t, st, r)
	}
	if ls, ok := st.(interface {
		Ledger(context.Context, string, int) ([]accounts.LedgerEntry, error)
	}); ok {
		if es, err := ls.Ledger(ctx, "acct_1", 0); err != nil || len(es) != 1 || es[0].RequestID != "old0" {
			t.Errorf("ledger after pruning: %+v, %v; want the entry of old0 kept", es, err)
		}
	}
	if n, err := p.PruneRecords(ctx, limit, 100); err != nil || n != 0 {
		t.Errorf("pruning again: %d, %v; want 0", n, err)
	}
}

// testPruneWhileWriting: pruning runs beside a writer without an error for either (no
// SQLITE_BUSY, no deadlock) and never stalls it: after every batch deleted, the writer
// commits another batch of new records before the next one is deleted.
func testPruneWhileWriting(t *testing.T, st audit.Store) {
	p, ok := st.(audit.Pruner)
	if !ok {
		t.Skip("the store does not prune")
	}
	ctx := context.Background()
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	const olds, batch = 120, 10
	recs := make([]*audit.Record, olds)
	for i := range recs {
		recs[i] = aged(fmt.Sprintf("old%d", i), now.AddDate(0, -2, 0).Add(time.Duration(i)*time.Second))
	}
	write(t, st, recs...)

	written := make(chan int, 1) // batches the writer committed so far (latest value)
	stop := make(chan struct{})
	werr := make(chan error, 1)
	go func() {
		defer close(werr)
		for b := 0; ; b++ {
			select {
			case <-stop:
				return
			default:
			}
			rs := make([]*audit.Record, 20)
			for i := range rs {
				rs[i] = aged(fmt.Sprintf("w%d-%d", b, i), now)
			}
			if err := st.WriteRecords(ctx, rs); err != nil {
				werr <- err
				return
			}
			select {
			case <-written:
			default:
			}
			written <- b + 1
		}
	}()
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	deleted, seen := 0, 0
	audit.Prune(pctx, p, audit.PruneOptions{Retention: 30 * 24 * time.Hour, BatchSize: batch, Now: func() time.Time { return now },
		AfterBatch: func(n int) {
			deleted += n
			if n < batch {
				cancel()
				return
			}
			// The writer gets in between two batches.
			select {
			case w := <-written:
				for w <= seen {
					w = <-written
				}
				seen = w
			case err := <-werr:
				t.Errorf("writer failed while pruning: %v", err)
				cancel()
			case <-time.After(30 * time.Second):
				t.Error("the writer committed nothing between two pruned batches in 30 s: pruning stalls it")
				cancel()
			}
		}})
	close(stop)
	if err := <-werr; err != nil {
		t.Errorf("writer: %v", err)
	}
	if deleted != olds {
		t.Errorf("pruned %d records, want %d", deleted, olds)
	}
	if seen < olds/batch {
		t.Errorf("the writer committed %d batches during %d pruned batches", seen, olds/batch)
	}
	checkNotFound(t, st, "old0")
	check(t, st, aged("w0-0", now))
}

// BenchmarkWriteRecords measures batched writes of two-attempt records into st, in batches of
// the recorder's default size, and reports records/s. Only the request ids change between
// batches.
func BenchmarkWriteRecords(b *testing.B, st audit.Store) {
	ctx := context.Background()
	const batch = audit.DefaultBatchSize
	recs := make([]*audit.Record, batch)
	for i := range recs {
		recs[i] = FullRecord("")
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		for _, r := range recs {
			r.RequestID = "req_" + strconv.Itoa(n)
			n++
		}
		if err := st.WriteRecords(ctx, recs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64(batch), "records/op")
}
