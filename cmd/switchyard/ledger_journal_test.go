package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchyard-gw/switchyard/internal/config"
)

// TestLedgerJournalDefault: store.ledger_journal as given; on postgres an empty one is
// switchyard-ledger in the working directory (created), or "off" with a log line when it cannot
// be made; on sqlite an empty one leaves the choice to the store (next to its file).
func TestLedgerJournalDefault(t *testing.T) {
	var logged []string
	logf := func(format string, args ...any) { logged = append(logged, format) }
	pg := config.Store{URL: "postgres://u@127.0.0.1:5432/db"}

	wd := t.TempDir()
	t.Chdir(wd)
	got := ledgerJournal(pg, logf)
	if want := filepath.Join(wd, DefaultSharedLedgerJournal); got != want {
		t.Fatalf("postgres, no ledger_journal: %q, want %q", got, want)
	}
	if fi, err := os.Stat(got); err != nil || !fi.IsDir() {
		t.Fatalf("the default journal directory was not made: %v", err)
	}
	if got := ledgerJournal(config.Store{URL: "sqlite://x.db"}, logf); got != "" {
		t.Errorf("sqlite, no ledger_journal: %q, want \"\" (the store's own)", got)
	}
	for _, st := range []config.Store{{URL: pg.URL, LedgerJournal: "off"}, {URL: "sqlite://x.db", LedgerJournal: "/j"}} {
		if got := ledgerJournal(st, logf); got != st.LedgerJournal {
			t.Errorf("ledger_journal %q on %s: %q, want it as given", st.LedgerJournal, st.URL, got)
		}
	}
	if len(logged) != 0 {
		t.Errorf("logged %q with a writable working directory", logged)
	}

	// A working directory where the journal directory cannot be made (a file holds its name;
	// a read-only directory fails the same way, except for root).
	blocked := t.TempDir()
	if err := os.WriteFile(filepath.Join(blocked, DefaultSharedLedgerJournal), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(blocked)
	if got := ledgerJournal(pg, logf); got != "off" {
		t.Errorf("postgres where the directory cannot be made: %q, want off", got)
	}
	if len(logged) != 1 || !strings.Contains(logged[0], "ledger journal off") {
		t.Errorf("logged %q, want one line saying the journal is off and why", logged)
	}
}
