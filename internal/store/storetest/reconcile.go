package storetest

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchyard-gw/switchyard/internal/accounts"
)

// hangingReplicas is a replica store whose heartbeat write number hangAt hangs for hang before
// it reaches the store (a store that stops answering, then recovers): the heartbeat it writes
// is the one taken before the hang, so it is already hang old when the write returns.
// recovered is closed at the heartbeat written two passes after the hang.
type hangingReplicas struct {
	accounts.ReplicaStore
	hangAt    int
	hang      time.Duration
	recovered chan struct{}

	mu    sync.Mutex
	beats int
}

func (h *hangingReplicas) Heartbeat(ctx context.Context, id string, started, now time.Time) error {
	h.mu.Lock()
	h.beats++
	n := h.beats
	h.mu.Unlock()
	if n == h.hangAt {
		time.Sleep(h.hang)
	}
	err := h.ReplicaStore.Heartbeat(ctx, id, started, now)
	if n == h.hangAt+2 {
		close(h.recovered)
	}
	return err
}

// testReconcileSparesItself: issue 25 item 5. A live replica whose own heartbeat went stale
// during a store hang (the heartbeat taken, then the store hanging for longer than the replica
// timeout before it answered, so that the reconciliation right after reads a stale heartbeat)
// never takes itself for gone: once the store recovers, its own reserves are still open,
// nothing was written for them, and the only "replicas gone" line is the one of a replica
// that is gone for real (closed in the first pass).
func testReconcileSparesItself(t *testing.T, st accounts.Store) {
	rs, ok := st.(accounts.ReplicaStore)
	if !ok {
		t.Fatal("the store does not implement accounts.ReplicaStore")
	}
	seed(t, st)
	now := time.Now()
	must(t, rs.Heartbeat(bg, "rep_dead", now.Add(-time.Hour), now.Add(-time.Hour)))
	reserve := func(req, replica string, age time.Duration) accounts.LedgerEntry {
		return accounts.LedgerEntry{At: now.Add(-age), AccountID: "a1", KeyID: "k1", RequestID: req, Model: "gpt-4o-mini",
			Kind: accounts.KindReserve, AmountMicroUSD: 900, Replica: replica}
	}
	must(t, st.AppendLedger(bg, []accounts.LedgerEntry{
		reserve("dead-1", "rep_dead", 2*time.Minute),
		reserve("self-1", "rep_self", time.Minute),
		reserve("self-2", "rep_self", 50*time.Second),
	}))

	hung := &hangingReplicas{ReplicaStore: rs, hangAt: 3, hang: 300 * time.Millisecond, recovered: make(chan struct{})}
	var mu sync.Mutex
	var logs, marks []string
	r := accounts.NewReconciler(st, hung, "rep_self", accounts.ReconcilerOptions{
		Heartbeat: 10 * time.Millisecond, ReplicaTimeout: 50 * time.Millisecond,
		Logf:  func(f string, a ...any) { mu.Lock(); logs = append(logs, fmt.Sprintf(f, a...)); mu.Unlock() },
		Count: func(m string) { mu.Lock(); marks = append(marks, m); mu.Unlock() }})
	ctx, cancel := context.WithCancel(bg)
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Run(ctx) }()
	select {
	case <-hung.recovered:
	case <-time.After(60 * time.Second):
		t.Fatal("the reconciler did not write its heartbeat after the hang")
	}
	cancel()
	<-done

	mu.Lock()
	defer mu.Unlock()
	var gone []string
	for _, l := range logs {
		if strings.Contains(l, "replicas gone") {
			gone = append(gone, l)
		}
	}
	if len(gone) != 1 || !strings.Contains(gone[0], "first request dead-1") {
		t.Errorf(`"replicas gone" lines %q, want one, of dead-1 (the replica reconciled itself)`, gone)
	}
	if !reflect.DeepEqual(marks, []string{accounts.MarkUnsettledCrash}) {
		t.Errorf("reconciled entries %v, want one %s (dead-1)", marks, accounts.MarkUnsettledCrash)
	}
	// The replica's own reserves are intact: still open, no settle or release written.
	open, err := rs.OpenReserves(bg, time.Now().Add(time.Hour), "rep_other", 100)
	must(t, err)
	var ids []string
	for _, e := range open {
		ids = append(ids, e.RequestID)
	}
	if want := []string{"self-1", "self-2"}; !reflect.DeepEqual(ids, want) {
		t.Errorf("open reserves after the hang %v, want %v (its own, untouched)", ids, want)
	}
	es, err := st.Ledger(bg, "a1", 0)
	must(t, err)
	for _, e := range es {
		if strings.HasPrefix(e.RequestID, "self-") && e.Kind != accounts.KindReserve {
			t.Errorf("the live replica's own request %s got a %s entry (mark %q)", e.RequestID, e.Kind, e.Mark)
		}
	}
}
