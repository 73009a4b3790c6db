package storetest

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/switchyard-gw/switchyard/internal/audit"
)

func auditLister(t *testing.T, st audit.Store) audit.Lister {
	t.Helper()
	l, ok := st.(audit.Lister)
	if !ok {
		t.Fatalf("%T does not implement audit.Lister", st)
	}
	return l
}

// listIDs pages through the records f selects, limit at a time, calling between after each
// page, and returns the request ids in order.
func listIDs(t *testing.T, l audit.Lister, f audit.Filter, limit int, between func()) []string {
	t.Helper()
	var ids []string
	var after audit.Position
	for range 1000 {
		recs, err := l.ListRecords(context.Background(), f, after, limit)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			ids = append(ids, r.RequestID)
		}
		if len(recs) < limit {
			return ids
		}
		last := recs[len(recs)-1]
		after = audit.Position{CreatedAt: last.CreatedAt, RequestID: last.RequestID}
		if between != nil {
			between()
		}
	}
	t.Fatal("paging does not end")
	return nil
}

// testAuditListPaging (docs/admin-api.md "The call log"): records list newest first by
// created_at then request id (ties across a page boundary included), each whole with its
// attempts as Record reads it; paging returns every record once while newer ones are written
// between pages; a record without a creation time is never listed; an empty store lists none.
func testAuditListPaging(t *testing.T, st audit.Store) {
	l := auditLister(t, st)
	if ids := listIDs(t, l, audit.Filter{}, 10, nil); len(ids) != 0 {
		t.Fatalf("empty store lists %v", ids)
	}
	base := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	var want []string
	for i := range 17 {
		r := FullRecord(fmt.Sprintf("req_%02d", i))
		r.CreatedAt = base.Add(time.Duration(i/4) * time.Millisecond) // ties of four
		write(t, st, r)
		want = append(want, r.RequestID)
	}
	slices.SortFunc(want, func(a, b string) int {
		var ia, ib int
		fmt.Sscanf(a, "req_%d", &ia)
		fmt.Sscanf(b, "req_%d", &ib)
		if ia/4 != ib/4 {
			return ib/4 - ia/4
		}
		return ib - ia
	})
	undated := FullRecord("req_undated")
	undated.CreatedAt = time.Time{}
	write(t, st, undated)
	for _, limit := range []int{1, 3, 4, 5, 17, 18, 500} {
		if got := listIDs(t, l, audit.Filter{}, limit, nil); !slices.Equal(got, want) {
			t.Fatalf("limit %d: %v, want %v", limit, got, want)
		}
	}
	n := 0
	got := listIDs(t, l, audit.Filter{}, 3, func() {
		n++
		r := FullRecord(fmt.Sprintf("req_new_%02d", n))
		r.CreatedAt = base.Add(time.Hour + time.Duration(n)*time.Second)
		write(t, st, r)
	})
	if !slices.Equal(got, want) {
		t.Fatalf("paging while writing: %v, want %v", got, want)
	}
	recs, err := l.ListRecords(context.Background(), audit.Filter{}, audit.Position{}, 1)
	if err != nil || len(recs) != 1 {
		t.Fatalf("first record: %v %v", recs, err)
	}
	w := FullRecord(fmt.Sprintf("req_new_%02d", n))
	w.CreatedAt = base.Add(time.Hour + time.Duration(n)*time.Second)
	if !reflect.DeepEqual(recs[0], w) {
		t.Errorf("listed record\n got %+v\nwant %+v", recs[0], w)
	}
}

// testAuditListFilters: account, key, model, deployment (any attempt), status range, final
// class (successes with ""), and the [since, until) range each select, and combine with AND.
func testAuditListFilters(t *testing.T, st audit.Store) {
	l := auditLister(t, st)
	base := time.Date(2026, 6, 2, 0, 0, 0, 0, time.UTC)
	mk := func(id string, i int, acct, key, model string, status int, class string, deps ...string) {
		r := &audit.Record{RequestID: id, Account: acct, KeyID: key, Model: model, Surface: "openai.chat", Status: status,
			ErrorCode: class, CreatedAt: base.Add(time.Duration(i) * time.Minute)}
		for j, d := range deps {
			r.Attempts = append(r.Attempts, audit.Attempt{Attempt: j + 1, Deployment: d, Provider: "p", Model: model,
				UpstreamModel: model, Outcome: audit.OutcomeFailed, UsageProvenance: audit.ProvenanceUnknown, BillingSource: "unpriced",
				DroppedParams: []string{}})
		}
		r.CallerRequestID = map[string]string{"r1": "trace-1", "r2": "r3", "r4": "trace-1"}[id]
		write(t, st, r)
	}
	mk("r1", 1, "a1", "k1", "gpt", 200, "", "oa")
	mk("r2", 2, "a1", "k2", "gpt", 502, "upstream_error", "oa", "az")
	mk("r3", 3, "a2", "k3", "claude", 429, "rate_limited")
	mk("r4", 4, "a1", "k1", "claude", 200, "", "az")
	mk("r5", 5, "", "", "gpt", 401, "authentication")
	for _, tc := range []struct {
		f    audit.Filter
		want []string
	}{
		{audit.Filter{}, []string{"r5", "r4", "r3", "r2", "r1"}},
		{audit.Filter{Account: "a1"}, []string{"r4", "r2", "r1"}},
		{audit.Filter{KeyID: "k1"}, []string{"r4", "r1"}},
		{audit.Filter{Account: "a1", KeyID: "k2"}, []string{"r2"}},
		{audit.Filter{Model: "claude"}, []string{"r4", "r3"}},
		{audit.Filter{Deployment: "oa"}, []string{"r2", "r1"}},
		{audit.Filter{Deployment: "az", Model: "gpt"}, []string{"r2"}},
		{audit.Filter{StatusMin: 200, StatusMax: 200}, []string{"r4", "r1"}},
		{audit.Filter{StatusMin: 400, StatusMax: 499}, []string{"r5", "r3"}},
		{audit.Filter{StatusMin: 500, StatusMax: 599}, []string{"r2"}},
		{audit.Filter{HasErrorCode: true}, []string{"r4", "r1"}},
		{audit.Filter{ErrorCode: "rate_limited", HasErrorCode: true}, []string{"r3"}},
		{audit.Filter{Since: base.Add(2 * time.Minute)}, []string{"r5", "r4", "r3", "r2"}},
		{audit.Filter{Until: base.Add(2 * time.Minute)}, []string{"r1"}},
		{audit.Filter{Since: base.Add(2 * time.Minute), Until: base.Add(4 * time.Minute), Account: "a1"}, []string{"r2"}},
		{audit.Filter{Account: "nope"}, nil},
		// By request id: the gateway's, or the caller's own (migration 0015); r2's caller
		// named its request r3, so "r3" finds both.
		{audit.Filter{RequestID: "r5"}, []string{"r5"}},
		{audit.Filter{RequestID: "trace-1"}, []string{"r4", "r1"}},
		{audit.Filter{RequestID: "r3"}, []string{"r3", "r2"}},
		{audit.Filter{RequestID: "trace-1", Account: "a1", Model: "gpt"}, []string{"r1"}},
		{audit.Filter{RequestID: "trace"}, nil},
		{audit.Filter{Deployment: "nope"}, nil},
	} {
		if got := listIDs(t, l, tc.f, 2, nil); !slices.Equal(got, tc.want) {
			t.Errorf("%+v: %v, want %v", tc.f, got, tc.want)
		}
	}
}
