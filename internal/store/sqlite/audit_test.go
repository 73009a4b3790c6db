package sqlite

import (
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/switchyard-gw/switchyard/internal/audit"
	"github.com/switchyard-gw/switchyard/internal/store/migrate"
	"github.com/switchyard-gw/switchyard/internal/store/storetest"
)

// version returns the record of id numbered v: its status and its number of attempts (0 to 2)
// tell the versions apart.
func version(id string, v int) *audit.Record {
	r := storetest.FullRecord(id)
	r.Status = 200 + v
	r.Attempts = r.Attempts[:v%3] // never nil, as Record returns it
	return r
}

// TestWriteRecordsChunks: batches that span several multi-row statements (64, 32, ... rows)
// give the same result as writing their records one at a time: with every id new, with ids
// stored before, and with an id twice in one statement's rows or in two of them. The last
// record of an id wins with exactly its attempts; no attempts row is left over.
func TestWriteRecordsChunks(t *testing.T) {
	tests := []struct {
		name   string
		stored int      // ids id0..id(stored-1) are written first, as version 1
		ids    []string // the batch, in order; the i-th record is version i+2 of its id
	}{
		{"one", 0, ids(0, 1)},
		{"63 new", 0, ids(0, 63)},
		{"64 new", 0, ids(0, 64)},
		{"65 new", 0, ids(0, 65)},
		{"256 new", 0, ids(0, 256)},
		{"100 stored", 100, ids(0, 100)},
		{"99, one stored, in the 2-row chunk", 1, append(ids(1, 97), "id0", "id97", "id98")},
		{"61, twice in the 32-row chunk", 0, append(append(ids(0, 10), "id3"), ids(10, 60)...)},
		{"65, in the 64-row and the 1-row chunks", 0, append(ids(0, 64), "id63")},
		{"96, two in the 64-row and the 32-row chunks", 0, append(ids(0, 64), append([]string{"id0", "id5"}, ids(64, 94)...)...)},
		{"72, stored, then twice in the 8-row chunk", 1, append(ids(0, 70), "id0", "id0")},
		{"257 new", 0, ids(0, 257)},
		{"300, twice in the 256-row chunk and in the 32-row one", 10, append(append(ids(0, 255), "id7"), append(ids(255, 285), "id300", "id300", "id9")...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := open(t, "sqlite://:memory:")
			ctx := context.Background()
			want := map[string]*audit.Record{}
			if tt.stored > 0 {
				var recs []*audit.Record
				for i := range tt.stored {
					r := version(fmt.Sprintf("id%d", i), 1)
					recs = append(recs, r)
					want[r.RequestID] = r
				}
				if err := db.WriteRecords(ctx, recs); err != nil {
					t.Fatal(err)
				}
			}
			var batch []*audit.Record
			for i, id := range tt.ids {
				r := version(id, i+2)
				batch = append(batch, r)
				want[id] = r
			}
			if err := db.WriteRecords(ctx, batch); err != nil {
				t.Fatal(err)
			}
			attempts := 0
			for id, w := range want {
				got, err := db.Record(ctx, id)
				if err != nil {
					t.Fatalf("Record(%q): %v", id, err)
				}
				if !reflect.DeepEqual(got, w) {
					t.Errorf("Record(%q): status %d with %d attempts, want status %d with %d", id,
						got.Status, len(got.Attempts), w.Status, len(w.Attempts))
				}
				attempts += len(w.Attempts)
			}
			var nreq, natt int
			if err := db.db.QueryRowContext(ctx, "SELECT (SELECT COUNT(*) FROM requests), (SELECT COUNT(*) FROM attempts)").
				Scan(&nreq, &natt); err != nil {
				t.Fatal(err)
			}
			if nreq != len(want) || natt != attempts {
				t.Errorf("%d requests rows and %d attempts rows, want %d and %d", nreq, natt, len(want), attempts)
			}
		})
	}
}

// ids returns "id<from>" ... "id<to-1>".
func ids(from, to int) []string {
	var s []string
	for i := from; i < to; i++ {
		s = append(s, fmt.Sprintf("id%d", i))
	}
	return s
}

// TestWriteRecordsReusesStatements: the multi-row statements are prepared once per database,
// not per batch, and Close releases them.
func TestWriteRecordsReusesStatements(t *testing.T) {
	db, err := Open(context.Background(), fileURL(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := db.WriteRecords(ctx, []*audit.Record{storetest.FullRecord("a")}); err != nil {
		t.Fatal(err)
	}
	first := db.auditStmts
	if first == nil || first[0] == nil || first[rowLevels-1] == nil {
		t.Fatalf("statements not prepared: %v", first)
	}
	if err := db.WriteRecords(ctx, []*audit.Record{storetest.FullRecord("b")}); err != nil {
		t.Fatal(err)
	}
	if db.auditStmts != first {
		t.Error("the second batch prepared the statements again")
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if db.auditStmts != nil {
		t.Error("Close kept the statements")
	}
}

// BenchmarkWriteRecordsIDs writes batches shaped like the recorder's at 1000 req/s (100
// non-stream records of one attempt, one batch every 100 ms) into a file database, with request
// ids of "req_" + 24 hex digits:
//
//   - random: 24 random digits, as the server minted them before issue 15; every row lands on
//     a random page of the request_id index, so a batch dirties about one page per record;
//   - time-ordered: 12 digits of the time, then 12 random ones, as the server mints them now
//     (newRequestID); rows append to the indexes;
//   - time-ordered-anonymous: the same with an empty account and key, as every record has with
//     authentication off (the other cases have both, as storetest.FullRecord).
//
// Besides ns/record (wall time, noisy on a shared machine) it reports cpu-ns/record: the
// process's user and system CPU time per record, which other processes' load barely moves.
// Making the ids costs one allocation per record.
func BenchmarkWriteRecordsIDs(b *testing.B) {
	for _, mode := range []string{"random", "time-ordered", "time-ordered-anonymous"} {
		b.Run(mode, func(b *testing.B) {
			db := open(b, fileURL(b))
			ctx := context.Background()
			const batch = 100
			recs := make([]*audit.Record, batch)
			for i := range recs {
				r := storetest.FullRecord("")
				r.Attempts = r.Attempts[1:]
				if mode == "time-ordered-anonymous" {
					r.Account, r.KeyID = "", ""
				}
				recs[i] = r
			}
			rng := rand.New(rand.NewPCG(1, 2))
			var raw [12]byte
			var id [4 + 24]byte
			copy(id[:], "req_")
			b.ReportAllocs()
			n := 0
			cpu0 := cpuTime()
			for b.Loop() {
				for _, r := range recs {
					for j := range raw {
						raw[j] = byte(rng.Uint32())
					}
					if mode != "random" { // a counter standing for the time, big-endian
						var c [8]byte
						binary.BigEndian.PutUint64(c[:], uint64(n))
						copy(raw[:6], c[2:])
					}
					hex.Encode(id[4:], raw[:])
					r.RequestID = string(id[:])
					n++
				}
				if err := db.WriteRecords(ctx, recs); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(n), "cpu-ns/record")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/record")
		})
	}
}

// TestCompactMigrationKeepsOldRecords (migration 0010): records written by a binary before
// the compact form read back unchanged after the upgrade, beside new ones; the attempts view
// has the former table's columns and values over both kinds; a record replaced after the
// upgrade shows only its new attempts, to the call log's deployment filter too; deleting a
// record deletes its former attempts rows.
func TestCompactMigrationKeepsOldRecords(t *testing.T) {
	url := fileURL(t)
	path, _ := parseURL(url)
	ctx := context.Background()
	ms, err := migrate.Load(migrationFS, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	var before []migrate.Migration
	for _, m := range ms {
		if m.Name == "audit_compact" {
			break
		}
		before = append(before, m)
	}
	old, err := sql.Open("sqlite", dsn(path, busyTimeout, dsnParams+writerParams))
	if err != nil {
		t.Fatal(err)
	}
	if err := migrate.Apply(ctx, old, before, migrate.Options{}); err != nil {
		t.Fatal(err)
	}
	// The former writer's rows, as its statements wrote them.
	for _, id := range []string{"old", "old2"} {
		r := storetest.FullRecord(id)
		if _, err := old.ExecContext(ctx, `INSERT INTO requests (request_id, account, model, surface, status, error_code, stream, created_at, duration_ms, admission_events)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, r.RequestID, r.Account, r.Model, r.Surface, r.Status, r.ErrorCode, r.Stream,
			r.CreatedAt.UnixNano(), r.DurationMS, mustJSON(r.AdmissionEvents)); err != nil {
			t.Fatal(err)
		}
		for _, a := range r.Attempts {
			var price any
			if a.Price != nil {
				b, _ := json.Marshal(a.Price)
				price = string(b)
			}
			dropped, _ := json.Marshal(a.DroppedParams)
			if _, err := old.ExecContext(ctx, `INSERT INTO attempts (request_id, attempt, deployment, provider, model, upstream_model,
				outcome, error_code, input_tokens, cached_tokens, cache_write_tokens, output_tokens, reasoning_tokens,
				usage_provenance, reserved_max_usd, cost_usd, billing_source, price, dispatched_at, headers_ms, first_token_ms,
				dropped_params, upstream_status, band, score, strategy, region) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				r.RequestID, a.Attempt, a.Deployment, a.Provider, a.Model, a.UpstreamModel, a.Outcome, a.ErrorCode,
				a.Tokens.Input, a.Tokens.Cached, a.Tokens.CacheWrite, a.Tokens.Output, a.Tokens.Reasoning,
				a.UsageProvenance, a.ReservedMaxUSD, a.CostUSD, a.BillingSource, price, nanos(a.DispatchedAt),
				nullFloat(a.HeadersMS), nullFloat(a.FirstTokenMS), string(dropped), a.UpstreamStatus,
				a.Band, scoreArg(a.Score), a.Strategy, a.Region); err != nil {
				t.Fatal(err)
			}
		}
	}
	old.Close()

	db := open(t, url)
	for _, id := range []string{"old", "old2"} {
		want := storetest.FullRecord(id)
		want.KeyID = ""           // written before migration 0011: no calling key was stored
		want.CallerRequestID = "" // nor, before 0015, the caller's request id
		for i := range want.Attempts {
			want.Attempts[i].Platform = "" // the former attempts table had no platform
		}
		if got, err := db.Record(ctx, id); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("record %s after the upgrade: %+v, %v", id, got, err)
		}
	}
	if err := db.WriteRecords(ctx, []*audit.Record{storetest.FullRecord("new")}); err != nil {
		t.Fatal(err)
	}
	view := func(id string) (rows []string) {
		t.Helper()
		q, err := db.rdb.QueryContext(ctx, `SELECT attempt, deployment, outcome, error_code, input_tokens, output_tokens, usage_provenance,
			reserved_max_usd, cost_usd, billing_source, price, dispatched_at, headers_ms, first_token_ms, dropped_params, upstream_status,
			typeof(price), typeof(headers_ms), band, score, strategy, region FROM attempts WHERE request_id = ? ORDER BY attempt`, id)
		if err != nil {
			t.Fatal(err)
		}
		defer q.Close()
		for q.Next() {
			var v [22]any
			ptrs := make([]any, len(v))
			for i := range v {
				ptrs[i] = &v[i]
			}
			if err := q.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			rows = append(rows, fmt.Sprint(v))
		}
		return rows
	}
	oldRows, newRows := view("old"), view("new")
	if len(oldRows) != 2 || !reflect.DeepEqual(oldRows, newRows) {
		t.Errorf("attempts view:\nformer %v\ncompact %v", oldRows, newRows)
	}
	byDeployment := func(dep string) []string {
		t.Helper()
		got, err := db.ListRecords(ctx, audit.Filter{Deployment: dep}, audit.Position{}, 10)
		if err != nil {
			t.Fatal(err)
		}
		ids := []string{}
		for _, r := range got {
			ids = append(ids, r.RequestID)
		}
		return ids
	}
	// The call log's deployment filter sees the former attempts rows and the compact ones.
	if got := byDeployment("anthropic"); !slices.Equal(got, []string{"old2", "old", "new"}) {
		t.Errorf("deployment filter after the upgrade: %v", got)
	}
	replaced := storetest.FullRecord("old")
	replaced.Attempts = replaced.Attempts[1:]
	if err := db.WriteRecords(ctx, []*audit.Record{replaced}); err != nil {
		t.Fatal(err)
	}
	if got, err := db.Record(ctx, "old"); err != nil || !reflect.DeepEqual(got, replaced) {
		t.Errorf("replaced former record: %+v, %v", got, err)
	}
	if rows := view("old"); len(rows) != 1 || rows[0] != newRows[1] {
		t.Errorf("attempts view of the replaced record: %v", rows)
	}
	// A replaced former record's attempts are its new ones only, for the filter too.
	if got := byDeployment("anthropic"); !slices.Equal(got, []string{"old2", "new"}) {
		t.Errorf("deployment filter after the replace: %v", got)
	}
	if got := byDeployment("bedrock-east"); !slices.Equal(got, []string{"old2", "old", "new"}) {
		t.Errorf("deployment filter after the replace: %v", got)
	}
	if got := byDeployment("nowhere"); len(got) != 0 {
		t.Errorf("deployment filter of no attempt: %v", got)
	}
	if _, err := db.db.ExecContext(ctx, "DELETE FROM requests WHERE request_id = 'old2'"); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := db.rdb.QueryRowContext(ctx, "SELECT COUNT(*) FROM attempts_v1 WHERE request_id = 'old2'").Scan(&left); err != nil || left != 0 {
		t.Errorf("attempts_v1 rows of a deleted record: %d, %v", left, err)
	}
}

// mustJSON is v's JSON text.
func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// scoreArg is s as a parameter: NULL when not Valid.
func scoreArg(s audit.Score) any {
	if !s.Valid {
		return nil
	}
	return s.Value
}
