package accounts_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/switchyard-gw/switchyard/internal/accounts"
)

func (f *fakeStore) kinds() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, e := range f.written {
		out = append(out, e.RequestID+":"+string(e.Kind))
	}
	return out
}

// TestWriterEndTakesTheReservesPlace (issue 27 item 2): a settle or release whose reserve is
// still queued takes the reserve's place, so one row is written for the request; a reserve
// already written (Secure waited for its commit: no journal) is ended by a second row; Secure
// returns at once for a reserve already in the store.
func TestWriterEndTakesTheReservesPlace(t *testing.T) {
	st := &fakeStore{}
	w := accounts.NewWriter(st, accounts.WriterOptions{FlushInterval: time.Hour, Replica: "rep_1"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	defer func() { cancel(); <-done }()

	e1 := accounts.LedgerEntry{AccountID: "a", RequestID: "r1", Model: "m", AmountMicroUSD: 500}
	t1, ok := w.Reserve(e1)
	if !ok {
		t.Fatal("reserve shed")
	}
	w.Append(accounts.LedgerEntry{AccountID: "a", RequestID: "other", Kind: accounts.KindRelease})
	if !w.End(t1, accounts.LedgerEntry{AccountID: "a", RequestID: "r1", Kind: accounts.KindSettle, AmountMicroUSD: 120}) {
		t.Fatal("settle shed")
	}
	if w.Queued() != 2 || w.Pending("a") != 120 {
		t.Fatalf("queued %d, pending %d; want 2 entries (the settle in the reserve's place), 120 pending", w.Queued(), w.Pending("a"))
	}

	e2 := accounts.LedgerEntry{AccountID: "a", RequestID: "r2", Model: "m", AmountMicroUSD: 500}
	t2, _ := w.Reserve(e2)
	if err := w.Secure(context.Background(), t2, &e2, false); err != nil { // waits for the commit: no journal
		t.Fatal(err)
	}
	if got, want := st.kinds(), []string{"r1:settle", "other:release", "r2:reserve"}; !slices.Equal(got, want) {
		t.Fatalf("written %v, want %v (one row for r1)", got, want)
	}
	if w.Pending("a") != 0 {
		t.Errorf("pending %d after the commit", w.Pending("a"))
	}
	if err := w.Secure(context.Background(), t2, &e2, false); err != nil {
		t.Fatal(err)
	}
	w.End(t2, accounts.LedgerEntry{AccountID: "a", RequestID: "r2", Kind: accounts.KindRelease, AmountMicroUSD: 500})
	if err := w.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, want := st.kinds(), []string{"r1:settle", "other:release", "r2:reserve", "r2:release"}; !slices.Equal(got, want) {
		t.Errorf("written %v, want %v (the reserve in the store is ended by a second row)", got, want)
	}
}

// TestWriterEndSparesABatchInFlight: a reserve taken into the batch being written is not
// replaced by its end (the batch would drop the end with the reserve): the end is appended.
func TestWriterEndSparesABatchInFlight(t *testing.T) {
	// in holds one signal: AppendLedger may start before the test waits for it.
	st := &blockingStore{fakeStore: &fakeStore{}, in: make(chan struct{}, 1), out: make(chan struct{})}
	w := accounts.NewWriter(st, accounts.WriterOptions{FlushInterval: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	defer func() { cancel(); <-done }()
	e := accounts.LedgerEntry{AccountID: "a", RequestID: "r1"}
	tk, _ := w.Reserve(e)
	flushed := make(chan error, 1)
	go func() { flushed <- w.Flush(context.Background()) }()
	<-st.in // the batch holding the reserve is being written
	w.End(tk, accounts.LedgerEntry{AccountID: "a", RequestID: "r1", Kind: accounts.KindSettle, AmountMicroUSD: 7})
	close(st.out)
	if err := <-flushed; err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, want := st.kinds(), []string{"r1:reserve", "r1:settle"}; !slices.Equal(got, want) {
		t.Errorf("written %v, want %v", got, want)
	}
}

// blockingStore signals in when AppendLedger starts and waits for out to be closed.
type blockingStore struct {
	*fakeStore
	in, out chan struct{}
}

func (b *blockingStore) AppendLedger(ctx context.Context, es []accounts.LedgerEntry) error {
	select {
	case b.in <- struct{}{}:
	default:
	}
	<-b.out
	return b.fakeStore.AppendLedger(ctx, es)
}

// TestWriterJournal (issue 24 item 1): with a journal, Secure appends the reserve to the
// journal file and waits for no commit; a process that dies before its batch is written leaves
// the reserve in the journal, and ReplayJournals writes it to the ledger (with the dead
// replica's id) and removes the file, skipping the live replica's own journal; a drained
// writer removes its journal.
func TestWriterJournal(t *testing.T) {
	dir := t.TempDir()
	st := &fakeStore{}
	j, err := accounts.OpenJournal(dir, "rep_dead")
	if err != nil {
		t.Fatal(err)
	}
	w := accounts.NewWriter(st, accounts.WriterOptions{FlushInterval: time.Hour, Replica: "rep_dead", Journal: j})
	// Run is not running: nothing reaches the store, as after a kill -9.
	e := accounts.LedgerEntry{At: time.Unix(1700000000, 5).UTC(), AccountID: "acct\t1", KeyID: "k", RequestID: "req_1", Model: "gpt \"x\"", AmountMicroUSD: 900}
	tk, _ := w.Reserve(e)
	sctx, scancel := context.WithTimeout(context.Background(), time.Second)
	defer scancel()
	if err := w.Secure(sctx, tk, &e, false); err != nil {
		t.Fatalf("Secure with a journal and no writer running: %v, want nil at once", err)
	}
	tk2, _ := w.Reserve(accounts.LedgerEntry{AccountID: "a", RequestID: "req_unsecured"})
	_ = tk2        // never reached its commit: not journaled
	j.Close(false) // the process dies: its files stay, the kernel drops its locks

	live, err := accounts.OpenJournal(dir, "rep_live")
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close(true)
	if err := live.Log(accounts.LedgerEntry{AccountID: "a", RequestID: "req_live"}, 1, 0); err != nil {
		t.Fatal(err)
	}
	replay := &fakeStore{}
	n, err := accounts.ReplayJournals(context.Background(), dir, "rep_live", replay)
	if err != nil || n != 1 {
		t.Fatalf("ReplayJournals = %d, %v; want the 1 secured reserve", n, err)
	}
	want := e
	want.Kind, want.Replica = accounts.KindReserve, "rep_dead"
	if len(replay.written) != 1 || replay.written[0] != want {
		t.Fatalf("replayed %+v, want %+v", replay.written, want)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 2 {
		t.Errorf("files left %v, want the live replica's two", left)
	}

	// A writer that drains removes its journal.
	dir2 := t.TempDir()
	j2, _ := accounts.OpenJournal(dir2, "rep_2")
	w2 := accounts.NewWriter(&fakeStore{}, accounts.WriterOptions{Journal: j2, Replica: "rep_2"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w2.Run(ctx) }()
	e3 := accounts.LedgerEntry{AccountID: "a", RequestID: "r3"}
	tk3, _ := w2.Reserve(e3)
	if err := w2.Secure(context.Background(), tk3, &e3, false); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(dir2); len(left) != 0 {
		t.Errorf("a drained writer left %d journal files", len(left))
	}
}

// TestJournalSegments: a segment past JournalSegmentBytes hands over to the other one only once
// the store holds every entry the other names; the journal's files stay within about two
// segments while the store keeps up.
func TestJournalSegments(t *testing.T) {
	dir := t.TempDir()
	j, err := accounts.OpenJournal(dir, "rep")
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close(true)
	e := accounts.LedgerEntry{AccountID: "acct_0123456789", KeyID: "key_0123456789", RequestID: "req_0123456789abcdef01234567", Model: "gpt-4o-mini"}
	size := func() int64 {
		var n int64
		fs, _ := os.ReadDir(dir)
		for _, f := range fs {
			fi, _ := f.Info()
			n += fi.Size()
		}
		return n
	}
	seq := uint64(0)
	for size() < 3*accounts.JournalSegmentBytes { // nothing committed: the journal keeps it all
		seq++
		if err := j.Log(e, seq, 0); err != nil {
			t.Fatal(err)
		}
	}
	for range 100000 { // the store keeps up: done trails by 10 entries
		seq++
		if err := j.Log(e, seq, seq-10); err != nil {
			t.Fatal(err)
		}
	}
	if got := size(); got > 2*accounts.JournalSegmentBytes+4096 {
		t.Errorf("journal %d bytes with the store keeping up, want <= 2 segments", got)
	}
}

// TestJournalSharedDirectory: processes may share a journal directory. A replay skips the
// journal of a live process (its lock is held), however it is named, and replays that of one
// that died (its lock is gone); replays running at once write each entry once.
func TestJournalSharedDirectory(t *testing.T) {
	dir := t.TempDir()
	entry := func(rid string) accounts.LedgerEntry {
		return accounts.LedgerEntry{At: time.Unix(1700000000, 0).UTC(), AccountID: "a", RequestID: rid, AmountMicroUSD: 7}
	}
	live, err := accounts.OpenJournal(dir, "rep_live")
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close(true)
	if err := live.Log(entry("req_live"), 1, 0); err != nil {
		t.Fatal(err)
	}
	dead, err := accounts.OpenJournal(dir, "rep_dead")
	if err != nil {
		t.Fatal(err)
	}
	if err := dead.Log(entry("req_dead"), 1, 0); err != nil {
		t.Fatal(err)
	}
	dead.Close(false) // the process died: its files stay, its locks are gone

	st := &fakeStore{}
	var wg sync.WaitGroup
	for range 8 { // eight replicas of one host replaying at once
		wg.Go(func() {
			if _, err := accounts.ReplayJournals(context.Background(), dir, "rep_other", st); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	var rids []string
	for _, e := range st.written {
		rids = append(rids, e.RequestID+"@"+e.Replica)
	}
	if !slices.Equal(rids, []string{"req_dead@rep_dead"}) {
		t.Fatalf("replayed %v, want the dead process's reserve once, and nothing of the live one's", rids)
	}
	left, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(left) != 2 {
		t.Fatalf("files left %v, want the live journal's two segments", left)
	}

	// The live process dies too: the next replay writes its reserve.
	live.Close(false)
	if n, err := accounts.ReplayJournals(context.Background(), dir, "rep_other", st); err != nil || n != 1 {
		t.Fatalf("after the live process died: replayed %d, %v; want 1", n, err)
	}
}

// TestWriterJournalsSettles: a settle is journaled as it is queued, whole (deployment, tokens,
// mark, provenance), whether it takes its reserve's place or is appended; a process that dies
// before the batch is written leaves it in the journal, and the replay writes it in place of
// its reserve (one row), at its cost. A release is not journaled: its reserve stays for the
// reconciliation to close.
func TestWriterJournalsSettles(t *testing.T) {
	dir := t.TempDir()
	j, err := accounts.OpenJournal(dir, "rep_dead")
	if err != nil {
		t.Fatal(err)
	}
	w := accounts.NewWriter(&fakeStore{}, accounts.WriterOptions{FlushInterval: time.Hour, Replica: "rep_dead", Journal: j})
	at := time.Unix(1700000000, 7).UTC()
	reserve := func(rid string) accounts.Ticket {
		e := accounts.LedgerEntry{At: at, AccountID: "a", KeyID: "k", RequestID: rid, Model: "m", AmountMicroUSD: 900}
		tk, ok := w.Reserve(e)
		if !ok {
			t.Fatal("reserve shed")
		}
		if err := w.Secure(context.Background(), tk, &e, false); err != nil {
			t.Fatal(err)
		}
		return tk
	}
	settle := func(rid string, cost int64) accounts.LedgerEntry {
		return accounts.LedgerEntry{At: at.Add(time.Second), AccountID: "a", KeyID: "k", RequestID: rid, Model: "m\t\"2\"",
			Deployment: "oa-east", Kind: accounts.KindSettle, AmountMicroUSD: cost,
			Tokens: accounts.Tokens{Input: 1200, Cached: 1000, CacheWrite: 7, Output: 33, Reasoning: 5},
			Mark:   accounts.MarkClientCancelled, UsageProvenance: "observed"}
	}
	t1 := reserve("served")
	reserve("open")
	t3 := reserve("failed")
	s1 := settle("served", 321)
	if !w.End(t1, s1) { // takes the reserve's place
		t.Fatal("settle shed")
	}
	s2 := settle("shed-reserve", 45)
	w.Append(s2) // a settle whose reserve was shed
	w.End(t3, accounts.LedgerEntry{At: at, AccountID: "a", KeyID: "k", RequestID: "failed", Model: "m", Kind: accounts.KindRelease, AmountMicroUSD: 900})
	j.Close(false) // kill -9: nothing reached the store

	replay := &fakeStore{}
	n, err := accounts.ReplayJournals(context.Background(), dir, "", replay)
	if err != nil || n != 4 {
		t.Fatalf("ReplayJournals = %d, %v; want 4 (2 settles, 2 reserves)", n, err)
	}
	byReq := map[string]accounts.LedgerEntry{}
	for _, e := range replay.written {
		byReq[e.RequestID+":"+string(e.Kind)] = e
	}
	if got := replay.kinds(); !slices.Equal(got, []string{"open:reserve", "failed:reserve", "served:settle", "shed-reserve:settle"}) {
		t.Fatalf("replayed %v; want the settles, and the reserves without one", got)
	}
	if got := byReq["served:settle"]; got != s1 {
		t.Errorf("replayed settle %+v, want %+v", got, s1)
	}
	if got := byReq["shed-reserve:settle"]; got != s2 {
		t.Errorf("replayed settle %+v, want %+v", got, s2)
	}
	if got := byReq["open:reserve"]; got.Replica != "rep_dead" {
		t.Errorf("replayed reserve %+v, want the dead replica's id", got)
	}
}
