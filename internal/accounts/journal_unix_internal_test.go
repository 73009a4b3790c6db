//go:build unix

package accounts

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReplaySkipsWhatIsNotAFile: a FIFO, a symlink to an endless device and a dangling symlink
// named like journals are reported and left alone, without blocking the replay (a FIFO's open
// would wait for a writer forever, /dev/zero's read never ends); the real journal beside them
// is replayed.
func TestReplaySkipsWhatIsNotAFile(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "rep_fifo.0.jnl"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "rep_zero.0.jnl")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "nowhere"), filepath.Join(dir, "rep_dangling.0.jnl")); err != nil {
		t.Fatal(err)
	}
	line := appendJournalLine(nil, &LedgerEntry{At: time.Unix(1700000000, 0).UTC(), AmountMicroUSD: 5, AccountID: "a", RequestID: "r1"})
	if err := os.WriteFile(filepath.Join(dir, "rep_dead.0.jnl"), line, 0o600); err != nil {
		t.Fatal(err)
	}
	st := &recordingStore{}
	done := make(chan struct{})
	var n int
	var err error
	go func() {
		defer close(done)
		n, err = ReplayJournals(context.Background(), dir, "rep_self", st)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("ReplayJournals blocked on a file that is not a journal")
	}
	for _, name := range []string{"rep_fifo.0.jnl", "rep_zero.0.jnl", "rep_dangling.0.jnl"} {
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("err = %v, want it to name %s", err, name)
		}
		if _, lerr := os.Lstat(filepath.Join(dir, name)); lerr != nil {
			t.Errorf("%s was removed: %v", name, lerr)
		}
	}
	if n != 1 || len(st.es) != 1 || st.es[0].RequestID != "r1" {
		t.Fatalf("replayed %d: %+v; want r1", n, st.es)
	}
}
