package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchyard-gw/switchyard/internal/config"
)

// TestLedgerJournalDefault: store.ledger_journal "off" as given; a directory (given, or
// switchyard-ledger in the working directory on postgres) gets the store's own subdirectory;
// a default one that cannot be made gives "off" with a log line; on sqlite an empty one leaves
// the choice to the store (next to its file).
func TestLedgerJournalDefault(t *testing.T) {
	var logged []string
	logf := func(format string, args ...any) { logged = append(logged, format) }
	pg := config.Store{URL: "postgres://u:secret@127.0.0.1:5432/db"}

	wd := t.TempDir()
	t.Chdir(wd)
	got := ledgerJournal(pg, logf)
	if want := filepath.Join(wd, DefaultSharedLedgerJournal, storeJournalDir(pg.URL)); got != want {
		t.Fatalf("postgres, no ledger_journal: %q, want %q", got, want)
	}
	if fi, err := os.Stat(got); err != nil || !fi.IsDir() {
		t.Fatalf("the default journal directory was not made: %v", err)
	}
	if left, _ := os.ReadDir(got); len(left) != 0 {
		t.Errorf("the writability probe left %v", left)
	}
	if got := ledgerJournal(config.Store{URL: "sqlite://x.db"}, logf); got != "" {
		t.Errorf("sqlite, no ledger_journal: %q, want \"\" (the store's own)", got)
	}
	if got := ledgerJournal(config.Store{URL: pg.URL, LedgerJournal: "off"}, logf); got != "off" {
		t.Errorf("ledger_journal off: %q", got)
	}
	if got, want := ledgerJournal(config.Store{URL: "sqlite:///var/x.db", LedgerJournal: "/j"}, logf), "/j/"+storeJournalDir("sqlite:///var/x.db"); got != want {
		t.Errorf("ledger_journal /j on sqlite: %q, want %q", got, want)
	}
	if len(logged) != 0 {
		t.Errorf("logged %q with a writable working directory", logged)
	}

	// Gateways of different stores sharing a directory get different subdirectories; replicas
	// of one store, whatever their credentials, the same one, and no credential in its name.
	same := []string{"postgres://u:secret@127.0.0.1:5432/db", "postgres://other:pw@127.0.0.1:5432/db?sslmode=disable"}
	if storeJournalDir(same[0]) != storeJournalDir(same[1]) {
		t.Errorf("one database, two subdirectories: %s, %s", storeJournalDir(same[0]), storeJournalDir(same[1]))
	}
	for _, other := range []string{"postgres://u@127.0.0.1:5432/db2", "postgres://u@10.0.0.2:5432/db", "sqlite:///var/y.db"} {
		if storeJournalDir(other) == storeJournalDir(same[0]) {
			t.Errorf("%s shares %s's subdirectory", other, same[0])
		}
	}
	if d := storeJournalDir(same[0]); strings.Contains(d, "secret") || !strings.HasPrefix(d, "store-") {
		t.Errorf("subdirectory %q", d)
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
