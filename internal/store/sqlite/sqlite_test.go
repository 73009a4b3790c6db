package sqlite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"go.uber.org/goleak"

	"github.com/switchyard-gw/switchyard/internal/audit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func ptr[T any](v T) *T { return &v }

func fileURL(t testing.TB) string {
	return "sqlite://" + filepath.ToSlash(filepath.Join(t.TempDir(), "audit.db"))
}

func open(t testing.TB, url string) *DB {
	t.Helper()
	db, err := Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// fullRecord sets every field of R-AUDIT-2, with one failed attempt (nulls, no dropped
// params) and one completed attempt (every optional field set).
func fullRecord(id string) *audit.Record {
	return &audit.Record{
		RequestID: id, Model: "rp-sonnet-4-5:anthropic", Surface: "anthropic.messages", Account: "acct_1",
		Status: 200, ErrorCode: "", Stream: true,
		CreatedAt:  time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC),
		DurationMS: 1234.5,
		Attempts: []audit.Attempt{{
			Attempt: 1, Deployment: "anthropic", Provider: "anthropic", Model: "claude-sonnet-4-5",
			UpstreamModel: "claude-sonnet-4-5-20250929", Outcome: audit.OutcomeFailed, ErrorCode: "upstream_timeout",
			UsageProvenance: audit.ProvenanceUnknown, ReservedMaxUSD: 0.96, BillingSource: "unpriced",
			DispatchedAt:  time.Date(2026, 3, 1, 12, 0, 0, 200000001, time.UTC),
			DroppedParams: []string{},
		}, {
			Attempt: 2, Deployment: "bedrock-east", Provider: "aws", Model: "claude-sonnet-4-5",
			UpstreamModel: "anthropic.claude-sonnet-4-5", Outcome: audit.OutcomeCompleted,
			Tokens:          audit.Tokens{Input: 11, Cached: 22, CacheWrite: 33, Output: 44, Reasoning: 5},
			UsageProvenance: audit.ProvenanceObserved, ReservedMaxUSD: 0.96, CostUSD: 0.000789,
			BillingSource: "route_price", Price: &audit.PriceSnapshot{InputPerMTokUSD: 3, OutputPerMTokUSD: 15},
			DispatchedAt: time.Date(2026, 3, 1, 12, 0, 20, 999, time.UTC),
			HeadersMS:    ptr(120.25), FirstTokenMS: ptr(301.5),
			DroppedParams: []string{"logprobs", "seed"},
		}},
	}
}

func TestRoundTrip(t *testing.T) {
	db := open(t, "sqlite://:memory:")
	ctx := context.Background()
	want := fullRecord("req_rt")
	if err := db.WriteRecords(ctx, []*audit.Record{want}); err != nil {
		t.Fatal(err)
	}
	got, err := db.Record(ctx, "req_rt")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("round trip mismatch\n got %+v\nwant %+v", got, want)
	}

	// The JSON of GET /v1/generation: nulls for absent latencies and price, [] for no dropped params.
	b, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	for _, frag := range []string{
		`"price":null,"dispatched_at":"2026-03-01T12:00:00.200000001Z","headers_ms":null,"first_token_ms":null,"dropped_params":[]}`,
		`"price":{"input":3,"output":15}`, `"dropped_params":["logprobs","seed"]`,
		`"tokens":{"input":11,"cached":22,"cache_write":33,"output":44,"reasoning":5}`,
		`"created_at":"2026-03-01T12:00:00.123456789Z"`,
	} {
		if !strings.Contains(string(b), frag) {
			t.Errorf("JSON lacks %s\n%s", frag, b)
		}
	}

	// nil DroppedParams and nil Attempts read back as empty, not nil.
	bare := &audit.Record{RequestID: "req_bare", Attempts: []audit.Attempt{{Attempt: 1}}}
	if err := db.WriteRecords(ctx, []*audit.Record{bare, {RequestID: "req_none"}}); err != nil {
		t.Fatal(err)
	}
	if got, err := db.Record(ctx, "req_bare"); err != nil || got.Attempts[0].DroppedParams == nil || !got.CreatedAt.IsZero() || !got.Attempts[0].DispatchedAt.IsZero() {
		t.Errorf("bare record = %+v, %v", got, err)
	}
	if got, err := db.Record(ctx, "req_none"); err != nil || got.Attempts == nil || len(got.Attempts) != 0 {
		t.Errorf("record without attempts = %+v, %v", got, err)
	}

	if _, err := db.Record(ctx, "req_missing"); !errors.Is(err, audit.ErrNotFound) {
		t.Errorf("missing record: err = %v, want audit.ErrNotFound", err)
	}
}

// TestReplace: writing a request id again replaces the record and all its attempts.
func TestReplace(t *testing.T) {
	db := open(t, "sqlite://:memory:")
	ctx := context.Background()
	if err := db.WriteRecords(ctx, []*audit.Record{fullRecord("r")}); err != nil {
		t.Fatal(err)
	}
	again := fullRecord("r")
	again.Status = 502
	again.Attempts = again.Attempts[:1]
	if err := db.WriteRecords(ctx, []*audit.Record{again}); err != nil {
		t.Fatal(err)
	}
	got, err := db.Record(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, again) {
		t.Errorf("after replace\n got %+v\nwant %+v", got, again)
	}
}

// TestBatchIsOneTransaction: a bad record fails the whole batch and nothing of it is written.
func TestBatchIsOneTransaction(t *testing.T) {
	db := open(t, "sqlite://:memory:")
	ctx := context.Background()
	err := db.WriteRecords(ctx, []*audit.Record{fullRecord("ok"), {RequestID: ""}})
	if err == nil {
		t.Fatal("a batch with an empty request id was accepted")
	}
	if _, err := db.Record(ctx, "ok"); !errors.Is(err, audit.ErrNotFound) {
		t.Errorf("record of a failed batch: err = %v, want ErrNotFound", err)
	}
	dup := fullRecord("dup")
	dup.Attempts[1].Attempt = 1 // duplicate (request_id, attempt)
	if err := db.WriteRecords(ctx, []*audit.Record{dup}); err == nil {
		t.Error("duplicate attempt numbers were accepted")
	}
}

func TestWALAndReopen(t *testing.T) {
	url := fileURL(t)
	ctx := context.Background()
	db, err := Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(db.Path()); err != nil {
		t.Error(err)
	} else if fi.Mode().Perm() != 0o600 {
		t.Errorf("new database file mode %v, want 0600", fi.Mode().Perm())
	}
	var mode string
	if err := db.db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode = %q, %v; want wal", mode, err)
	}
	var busy int
	if err := db.db.QueryRowContext(ctx, "PRAGMA busy_timeout").Scan(&busy); err != nil || busy != 5000 {
		t.Errorf("busy_timeout = %d, %v; want 5000", busy, err)
	}
	want := fullRecord("req_keep")
	if err := db.WriteRecords(ctx, []*audit.Record{want}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db = open(t, url) // migrations are not re-applied; data is kept
	got, err := db.Record(ctx, "req_keep")
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("after reopen: %+v, %v", got, err)
	}
	var versions int
	if err := db.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM schema_migrations").Scan(&versions); err != nil || versions != 1 {
		t.Errorf("schema_migrations rows = %d, %v; want 1", versions, err)
	}
	if err := db.Ping(ctx); err != nil {
		t.Errorf("Ping: %v", err)
	}
}

// TestNewerSchemaRefused: a binary does not run on a database migrated by a newer one.
func TestNewerSchemaRefused(t *testing.T) {
	url := fileURL(t)
	db := open(t, url)
	if _, err := db.db.Exec("INSERT INTO schema_migrations (version, name, applied_at) VALUES (99, 'future', 0)"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if db, err := Open(context.Background(), url); err == nil || !strings.Contains(err.Error(), "newer than this binary") {
		if db != nil {
			db.Close()
		}
		t.Errorf("Open of a newer schema: %v, want refusal", err)
	}
}

func TestLoadMigrations(t *testing.T) {
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	tests := []struct {
		name    string
		fs      fstest.MapFS
		want    []int
		wantErr string
	}{
		{"ordered", fstest.MapFS{"m/0002_b.sql": file("B"), "m/0001_a.sql": file("A"), "m/README": file("")}, []int{1, 2}, ""},
		{"gap", fstest.MapFS{"m/0001_a.sql": file(""), "m/0003_c.sql": file("")}, nil, "not numbered"},
		{"duplicate", fstest.MapFS{"m/0001_a.sql": file(""), "m/0001_b.sql": file("")}, nil, "not numbered"},
		{"bad name", fstest.MapFS{"m/first.sql": file("")}, nil, "0001_name.sql"},
	}
	for _, tt := range tests {
		ms, err := loadMigrations(tt.fs, "m")
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: err = %v, want %q", tt.name, err, tt.wantErr)
			}
			continue
		}
		var got []int
		for _, m := range ms {
			got = append(got, m.version)
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: versions %v, %v; want %v", tt.name, got, err, tt.want)
		}
	}
	// The embedded set itself is valid.
	if _, err := loadMigrations(migrationFS, "migrations"); err != nil {
		t.Fatal(err)
	}
}

func TestParseURL(t *testing.T) {
	tests := []struct{ url, want, wantErr string }{
		{"sqlite://switchyard.db", "switchyard.db", ""},
		{"sqlite://data/audit.db", filepath.FromSlash("data/audit.db"), ""},
		{"sqlite:///var/lib/switchyard/s.db", filepath.FromSlash("/var/lib/switchyard/s.db"), ""},
		{"sqlite://:memory:", ":memory:", ""},
		{"sqlite://", "", "names no database file"},
		{"sqlite://a.db?mode=ro", "", "no query"},
		{"sqlite://data/", "", "directory"},
		{"file:a.db", "", "not a sqlite URL"},
		{"sqlite://file:a.db?mode=ro", "", "no query"},
		{"sqlite://file:a.db", "", "not a file: URI"},
	}
	for _, tt := range tests {
		got, err := parseURL(tt.url)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("parseURL(%q) = %q, %v; want error %q", tt.url, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("parseURL(%q) = %q, %v; want %q", tt.url, got, err, tt.want)
		}
	}
}

func TestOpenMissingDirectory(t *testing.T) {
	_, err := Open(context.Background(), "sqlite://"+filepath.ToSlash(filepath.Join(t.TempDir(), "nope", "a.db")))
	if err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("Open in a missing directory: %v", err)
	}
}

// TestConcurrent: writers and readers on one file database at once (run with -race); every
// record written is readable and intact; no SQLITE_BUSY escapes.
func TestConcurrent(t *testing.T) {
	db := open(t, fileURL(t))
	ctx := context.Background()
	const writers, batches, perBatch = 4, 10, 20
	var wg sync.WaitGroup
	errc := make(chan error, writers*2)
	for w := range writers {
		wg.Go(func() {
			for b := range batches {
				recs := make([]*audit.Record, perBatch)
				for i := range recs {
					recs[i] = fullRecord(fmt.Sprintf("w%d-b%d-%d", w, b, i))
				}
				if err := db.WriteRecords(ctx, recs); err != nil {
					errc <- err
					return
				}
			}
		})
		wg.Go(func() { // reader: polls ids of its writer, found or not found, never an error
			for b := range batches {
				for i := range perBatch {
					r, err := db.Record(ctx, fmt.Sprintf("w%d-b%d-%d", w, b, i))
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
	var n int
	if err := db.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM attempts").Scan(&n); err != nil || n != writers*batches*perBatch*2 {
		t.Errorf("attempts rows = %d, %v; want %d", n, err, writers*batches*perBatch*2)
	}
}

// TestWithRecorder: the recorder and the SQLite store together; a record is found while
// queued and after it is written.
func TestWithRecorder(t *testing.T) {
	db := open(t, fileURL(t))
	r := audit.NewRecorder(db, audit.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	for i := range 600 {
		r.Record(fullRecord(fmt.Sprintf("req_%d", i)))
	}
	if got, err := r.Lookup(ctx, "req_599"); err != nil || got.RequestID != "req_599" {
		t.Errorf("Lookup right after Record: %+v, %v", got, err)
	}
	if err := r.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got, err := db.Record(context.Background(), "req_599"); err != nil || !reflect.DeepEqual(got, fullRecord("req_599")) {
		t.Errorf("stored record: %+v, %v", got, err)
	}
}

// BenchmarkWriteRecords measures batched writes of two-attempt records into a file database,
// in batches of the recorder's default size. Only the request ids change between batches.
func BenchmarkWriteRecords(b *testing.B) {
	db := open(b, fileURL(b))
	ctx := context.Background()
	const batch = audit.DefaultBatchSize
	recs := make([]*audit.Record, batch)
	for i := range recs {
		recs[i] = fullRecord("")
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		for _, r := range recs {
			r.RequestID = "req_" + strconv.Itoa(n)
			n++
		}
		if err := db.WriteRecords(ctx, recs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64(batch), "records/op")
}
