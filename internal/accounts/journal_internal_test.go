package accounts

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzJournalRoundTrip: every reserve and settle Log can write reads back as the same entry.
func FuzzJournalRoundTrip(f *testing.F) {
	f.Add(int64(1700000000000000005), int64(900), "acct\t1", "k", "req_1", "gpt \"x\"", false, "", int64(0), int64(0), "", "")
	f.Add(int64(1700000000000000005), int64(MaxEntryMicroUSD), "a", "k", "r", "m", true, "d", int64(MaxEntryTokens), int64(0), "upstream-truncated", "estimated")
	f.Add(int64(-1), int64(0), "a", "", "r", "", false, "", int64(0), int64(0), "", "")
	f.Add(int64(0), int64(1)<<62, "é\n\x00", "\\", "r\r", "💥", true, "dep\t", int64(-3), int64(1)<<40, "client-cancelled", "estimated")
	f.Add(int64(5), int64(77), "a", "k", "r", "m", true, "oa", int64(1200), int64(33), "", "observed")
	f.Fuzz(func(t *testing.T, at, amount int64, account, key, request, model string, settle bool, deployment string,
		input, output int64, mark, provenance string) {
		e := LedgerEntry{At: time.Unix(0, at).UTC(), AmountMicroUSD: amount, AccountID: account, KeyID: key, RequestID: request,
			Model: model, Kind: KindReserve}
		strs := []string{account, key, request, model}
		if settle {
			e.Kind, e.Deployment, e.Mark, e.UsageProvenance = KindSettle, deployment, mark, provenance
			e.Tokens = Tokens{Input: input, Cached: input / 2, CacheWrite: -input, Output: output, Reasoning: output / 3}
			strs = append(strs, deployment, mark, provenance)
		}
		line := appendJournalLine(nil, &e)
		if bytes.Count(line, []byte{'\n'}) != 1 || line[len(line)-1] != '\n' {
			t.Fatalf("line %q is not one line", line)
		}
		got, ok := parseJournalLine(line[:len(line)-1])
		storable := at >= minJournalAt && amount >= 0 && amount <= MaxEntryMicroUSD
		for _, v := range strs {
			storable = storable && utf8.ValidString(v) && !strings.ContainsRune(v, 0)
		}
		if settle {
			t := e.Tokens
			for _, n := range []int64{t.Input, t.Cached, t.CacheWrite, t.Output, t.Reasoning} {
				storable = storable && n >= 0 && n <= MaxEntryTokens
			}
			storable = storable && slices.Contains(journalMarks, mark) && slices.Contains(journalProvenances, provenance)
		}
		if want := account != "" && request != "" && storable; ok != want {
			t.Fatalf("parsed ok=%v for %+v, want %v", ok, e, want)
		}
		if ok && got != e {
			t.Fatalf("read back %+v, wrote %+v", got, e)
		}
	})
}

// FuzzParseJournalLine: any bytes are either not a line (false) or a reserve or settle with an
// account, a request and an amount that is not negative; nothing panics.
func FuzzParseJournalLine(f *testing.F) {
	f.Add([]byte("1\t2\t\"a\"\t\"k\"\t\"r\"\t\"m\""))
	f.Add([]byte("1\t2\t\"a\"\t\"k\"\t\"r\"\t\"m\"\tsettle\t\"d\"\t1\t2\t3\t4\t5\t\"\"\t\"observed\""))
	f.Add([]byte("1\t2\t\"a\"\t\"k\"\t\"r\"\t\"m\"\trelease\t\"d\"\t1\t2\t3\t4\t5\t\"\"\t\"\""))
	f.Add([]byte("1\t-2\t\"a\"\t\"k\"\t\"r\"\t\"m\""))
	f.Add([]byte("\t\t\t\t\t"))
	f.Add([]byte("1\t2\t\"a\t\"k\"\t\"r\"\t\"m\""))
	f.Fuzz(func(t *testing.T, line []byte) {
		e, ok := parseJournalLine(line)
		if !ok {
			return
		}
		if e.AccountID == "" || e.RequestID == "" || e.AmountMicroUSD < 0 || e.AmountMicroUSD > MaxEntryMicroUSD ||
			e.At.UnixNano() < minJournalAt || e.Kind != KindReserve && e.Kind != KindSettle {
			t.Fatalf("accepted %q as %+v", line, e)
		}
		for _, n := range []int64{e.Tokens.Input, e.Tokens.Cached, e.Tokens.CacheWrite, e.Tokens.Output, e.Tokens.Reasoning} {
			if n < 0 || n > MaxEntryTokens {
				t.Fatalf("accepted %q with a token count of %d", line, n)
			}
		}
	})
}

// TestReadJournalSkipsBadLines: a torn last line, garbage, and a line longer than
// maxJournalLine are skipped; the lines around them are read.
func TestReadJournalSkipsBadLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rep_x.0.jnl")
	good := func(rid string) []byte {
		return appendJournalLine(nil, &LedgerEntry{At: time.Unix(1700000000, 0).UTC(), AmountMicroUSD: 5, AccountID: "a", RequestID: rid})
	}
	var b bytes.Buffer
	b.Write(good("r1"))
	b.WriteString("garbage\n\n\t\t\t\t\t\n")
	b.WriteString(strings.Repeat("x", 3*maxJournalLine) + "\n")
	b.Write(good("r2"))
	torn := good("r3")
	b.Write(torn[:len(torn)/2])
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	es, err := readJournal(f, "rep_x")
	if err != nil {
		t.Fatal(err)
	}
	var rids []string
	for _, e := range es {
		rids = append(rids, e.RequestID+"@"+e.Replica)
	}
	if strings.Join(rids, ",") != "r1@rep_x,r2@rep_x" {
		t.Fatalf("read %v, want r1 and r2 of rep_x", rids)
	}
}

// TestReplayGoesPastABadFile: a journal that cannot be read (here a directory with a journal's
// name) is reported and left; the others are replayed and removed; a stale temporary segment
// of a process that died while opening its journal is removed.
func TestReplayGoesPastABadFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "rep_bad.0.jnl"), 0o700); err != nil {
		t.Fatal(err)
	}
	line := appendJournalLine(nil, &LedgerEntry{At: time.Unix(1700000000, 0).UTC(), AmountMicroUSD: 5, AccountID: "a", RequestID: "r1"})
	if err := os.WriteFile(filepath.Join(dir, "rep_dead.0.jnl"), line, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rep_gone.1.jnl.new"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * staleSegmentAge)
	if err := os.Chtimes(filepath.Join(dir, "rep_gone.1.jnl.new"), old, old); err != nil {
		t.Fatal(err)
	}
	// A young one may be a starting process's, not yet locked: left alone.
	if err := os.WriteFile(filepath.Join(dir, "rep_starting.0.jnl.new"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	st := &recordingStore{}
	n, err := ReplayJournals(context.Background(), dir, "rep_self", st)
	if err == nil || !strings.Contains(err.Error(), "rep_bad.0.jnl") {
		t.Errorf("err = %v, want one naming the unreadable journal", err)
	}
	if n != 1 || len(st.es) != 1 || st.es[0].RequestID != "r1" || st.es[0].Replica != "rep_dead" {
		t.Fatalf("replayed %d: %+v; want r1 of rep_dead", n, st.es)
	}
	left, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(left) != 2 || filepath.Base(left[0]) != "rep_bad.0.jnl" || filepath.Base(left[1]) != "rep_starting.0.jnl.new" {
		t.Fatalf("left %v, want only the unreadable one and the young temporary segment", left)
	}
}

// recordingStore records AppendLedger's entries; its other methods are not used.
type recordingStore struct {
	Store
	es []LedgerEntry
}

func (r *recordingStore) AppendLedger(_ context.Context, es []LedgerEntry) error {
	r.es = append(r.es, es...)
	return nil
}

// TestParseJournalLineBounds: the lines an adversarial run crafted into a dead replica's
// journal are not read: two settles whose sum wraps an int64 (which credited the account 2^64
// micro-USD when stored), negative or absurd token counts, a time before 2000, a mark or a
// provenance the request path never writes. The largest line Log may write is read.
func TestParseJournalLineBounds(t *testing.T) {
	line := func(at, amount, input string, mark, prov string) []byte {
		return []byte(at + "\t" + amount + "\t\"acct\"\t\"k\"\t\"req\"\t\"m\"\tsettle\t\"d\"\t" + input + "\t0\t0\t1\t0\t" +
			strconv.Quote(mark) + "\t" + strconv.Quote(prov))
	}
	const now = "1764900000000000000"
	for name, l := range map[string][]byte{
		"max int64 amount":      line(now, "9223372036854775807", "1", "", "observed"),
		"wrapping amount":       line(now, "9223372035854775809", "1", "", "observed"),
		"amount over the cap":   line(now, strconv.FormatInt(MaxEntryMicroUSD+1, 10), "1", "", "observed"),
		"negative tokens":       line(now, "100", "-1000", "", "observed"),
		"absurd tokens":         line(now, "100", "9223372036854775807", "", "observed"),
		"min int64 time":        line("-9223372036854775808", "100", "1", "", "observed"),
		"a reconciliation mark": line(now, "100", "1", MarkAuditSettled, "observed"),
		"unknown provenance":    line(now, "100", "1", "", "nonsense"),
	} {
		if e, ok := parseJournalLine(l); ok {
			t.Errorf("%s: read %q as %+v", name, l, e)
		}
	}
	if _, ok := parseJournalLine(line(now, strconv.FormatInt(MaxEntryMicroUSD, 10), strconv.FormatInt(MaxEntryTokens, 10),
		MarkClientCancelled, "estimated")); !ok {
		t.Error("the largest line Log may write was not read")
	}
}
