package accounts

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/switchyard-gw/switchyard/internal/audit"
)

// JournalSegmentBytes is the size past which a FileJournal starts its other segment file,
// once every reserve that segment holds is in the store: a journal stays within about twice
// this (2 MiB) while the store keeps up.
const JournalSegmentBytes = 1 << 20

// journalExt names the segment files: <replica>.<0|1>.jnl.
const journalExt = ".jnl"

// FileJournal is the crash journal of one process's reserves (Journal; issue 24 item 1): the
// reserve entries that reached their commit (the first byte to the caller) before the ledger
// writer's batch holding them was committed, one line each, appended to one of two segment
// files in a directory next to the embedded database. A write(2) survives the process (kill
// -9, an OOM): at the next start ReplayJournals writes every reserve of a journal left behind
// to the ledger, where the crash reconciliation closes it (Reconciler). Segment k is emptied
// and reused only when the store holds every entry it names. Its methods are safe for
// concurrent use.
type FileJournal struct {
	mu   sync.Mutex
	path [2]string
	f    [2]*os.File
	size [2]int64
	max  [2]uint64 // the highest entry number logged in each segment
	torn [2]bool   // a failed write left a fragment at the segment's end
	cur  int
	buf  []byte
}

// OpenJournal creates the journal of replica in dir (created with mode 0700 when missing):
// two empty segment files, mode 0600, each locked (flock, exclusive) for as long as the journal
// is open, so that another process replaying the directory (ReplayJournals) leaves them alone
// while this one lives. A segment is created under a temporary name, locked, and only then
// renamed to the name a replay looks for: no replay ever sees it unlocked.
func OpenJournal(dir, replica string) (*FileJournal, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("accounts: ledger journal: %w", err)
	}
	j := &FileJournal{}
	for k := range j.f {
		j.path[k] = filepath.Join(dir, replica+"."+strconv.Itoa(k)+journalExt)
		f, err := openLockedSegment(j.path[k])
		if err != nil {
			j.Close(false)
			return nil, fmt.Errorf("accounts: ledger journal: %w", err)
		}
		j.f[k] = f
	}
	return j, nil
}

// openLockedSegment creates the empty segment file path, locked, through a temporary name.
func openLockedSegment(path string) (*os.File, error) {
	tmp := path + ".new"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	ok, err := lockJournal(f)
	if err == nil && !ok {
		err = errors.New("locked by another process")
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		f.Close()
		os.Remove(tmp)
		return nil, err
	}
	return f, nil
}

// Log implements Journal: one line (appendJournalLine), in one write(2).
func (j *FileJournal) Log(e LedgerEntry, seq, done uint64) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f[0] == nil {
		return errors.New("accounts: ledger journal is closed")
	}
	if o := 1 - j.cur; j.size[j.cur] >= JournalSegmentBytes && j.max[o] <= done {
		if err := j.f[o].Truncate(0); err == nil { // O_APPEND: the next write lands at 0
			j.cur, j.size[o], j.max[o], j.torn[o] = o, 0, 0, false
		}
	}
	b := j.buf[:0]
	if j.torn[j.cur] { // a write that failed part way left a fragment: end it first
		b = append(b, '\n')
	}
	b = appendJournalLine(b, &e)
	j.buf = b
	n, err := j.f[j.cur].Write(b)
	if err != nil && n > 0 {
		// Take the fragment back (O_APPEND: the next write lands at the new end), or else
		// end it with the next line's newline, so that no later line is glued to it.
		if j.f[j.cur].Truncate(j.size[j.cur]) == nil {
			n = 0
		} else {
			j.torn[j.cur] = true
		}
	} else if err == nil {
		j.torn[j.cur] = false
	}
	j.size[j.cur] += int64(n)
	j.max[j.cur] = max(j.max[j.cur], seq)
	if err != nil {
		return fmt.Errorf("accounts: ledger journal: %w", err)
	}
	return nil
}

// appendJournalLine appends e's journal line to b, newline-terminated, its fields
// tab-separated and its strings Go-quoted; parseJournalLine reads it. A reserve is
// `at amount "account" "key" "request" "model"`; a settle adds
// `settle "deployment" input cached cache_write output reasoning "mark" "provenance"`.
// Any other kind is written as a reserve: Log is given reserves and settles only.
func appendJournalLine(b []byte, e *LedgerEntry) []byte {
	b = strconv.AppendInt(b, e.At.UnixNano(), 10)
	b = append(b, '\t')
	b = strconv.AppendInt(b, e.AmountMicroUSD, 10)
	for _, s := range [...]string{e.AccountID, e.KeyID, e.RequestID, e.Model} {
		b = append(b, '\t')
		b = strconv.AppendQuote(b, s)
	}
	if e.Kind == KindSettle {
		b = append(b, "\tsettle\t"...)
		b = strconv.AppendQuote(b, e.Deployment)
		t := &e.Tokens
		for _, n := range [...]int64{t.Input, t.Cached, t.CacheWrite, t.Output, t.Reasoning} {
			b = append(b, '\t')
			b = strconv.AppendInt(b, n, 10)
		}
		for _, s := range [...]string{e.Mark, e.UsageProvenance} {
			b = append(b, '\t')
			b = strconv.AppendQuote(b, s)
		}
	}
	return append(b, '\n')
}

// Close implements Journal: clean removes the segment files (the store holds every entry).
func (j *FileJournal) Close(clean bool) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	var errs []error
	for k, f := range j.f {
		if f == nil {
			continue
		}
		errs = append(errs, f.Close())
		if clean {
			errs = append(errs, os.Remove(j.path[k]))
		}
		j.f[k] = nil
	}
	return errors.Join(errs...)
}

// ReplayJournals writes to st every reserve and settle of the journals in dir that no live
// process holds, other than those of the replica except (this process's), then removes their
// files: a journal left by a process that ended without draining its writer (kill -9, an OOM,
// a drain that timed out). A journal whose lock (flock) another process holds is that
// process's, alive, and is skipped: replicas may share a directory (on one host, or a volume
// whose file system honours flock), and each replays the journals of those that died (the
// Reconciler calls it every heartbeat, and a process at its start). Each reserve names the
// replica whose file it came from; a reserve (or its settle or release) already stored is skipped by the store
// (AppendLedger's unique indexes), and a reserve whose request has ended is not reopened, so
// replaying twice changes nothing. It returns how many entries it wrote (with a store that is
// not a LedgerReporter: gave the store, which skips what it has). A line that cannot be read (a
// torn last write) is skipped. A missing dir replays nothing.
func ReplayJournals(ctx context.Context, dir, except string, st Store) (int, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*"+journalExt))
	if err != nil {
		return 0, err
	}
	total := 0
	var errs []error
	for _, path := range files {
		name := filepath.Base(path)
		replica, _, _ := strings.Cut(strings.TrimSuffix(name, journalExt), ".")
		if replica == except {
			continue
		}
		n, err := replayJournal(ctx, path, replica, st)
		total += n
		if err != nil { // this file stays for the next replay; the others go on
			errs = append(errs, fmt.Errorf("accounts: replaying ledger journal %s: %w", name, err))
		}
	}
	// A segment of a process that died between creating it and renaming it into place
	// (OpenJournal) is empty and unlocked: removed once it is a minute old. (A young one may be
	// a starting process's, created and not yet locked.)
	stale, _ := filepath.Glob(filepath.Join(dir, "*"+journalExt+".new"))
	for _, path := range stale {
		if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() || time.Since(fi.ModTime()) < staleSegmentAge {
			continue
		}
		if f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
			if ok, _ := lockJournal(f); ok {
				os.Remove(path)
			}
			f.Close()
		}
	}
	return total, errors.Join(errs...)
}

// replayJournal replays the segment file path of replica unless a live process holds it, and
// removes it; it returns how many entries it wrote.
func replayJournal(ctx context.Context, path, replica string, st Store) (int, error) {
	// Only a regular file is a journal: a FIFO would block the open, a device or a symlink
	// to one would never end the read. O_NONBLOCK keeps even a file swapped in after the
	// Lstat from blocking the open.
	if li, err := os.Lstat(path); errors.Is(err, os.ErrNotExist) {
		return 0, nil // replayed and removed by another process since the glob
	} else if err != nil {
		return 0, err
	} else if !li.Mode().IsRegular() {
		return 0, fmt.Errorf("not a regular file (%s): left alone", li.Mode().Type())
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close() // after the remove: the lock is held until the file is gone
	if ok, err := lockJournal(f); err != nil || !ok {
		return 0, err // a live process's journal, or another replay's
	}
	// The file may have been replayed and removed between the open and the lock: then path
	// names no file, or another one.
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	if pi, err := os.Lstat(path); err != nil || !os.SameFile(fi, pi) || !fi.Mode().IsRegular() {
		return 0, nil
	}
	es, err := readJournal(io.LimitReader(f, maxJournalBytes), replica)
	if err != nil {
		return 0, err
	}
	// A journal holds the reserves committed since its segment was last reused, and their
	// settles: most of them stored already, many as a settle that took the reserve's place.
	// Those stay one row: a reserve is dropped when its request has an end stored or a settle
	// in the journal, a settle when one is stored. A settle whose request has only a release
	// stored (the crash reconciliation's, when this journal was not replayed in time) is
	// written: it bills what was served. (Without an EndReader the store skips what it has.)
	settled := map[string]bool{}
	ids := make([]string, 0, len(es))
	for i := range es {
		if es[i].Kind == KindSettle {
			settled[es[i].RequestID] = true
		}
		ids = append(ids, es[i].RequestID)
	}
	var ended map[string]Kind
	if er, ok := st.(EndReader); ok && len(ids) > 0 {
		slices.Sort(ids)
		var err error
		if ended, err = er.EndedRequests(ctx, slices.Compact(ids)); err != nil {
			return 0, err
		}
	}
	es = slices.DeleteFunc(es, func(e LedgerEntry) bool {
		if e.Kind == KindSettle {
			return ended[e.RequestID] == KindSettle
		}
		return settled[e.RequestID] || ended[e.RequestID] != ""
	})
	total := 0
	for rest := es; len(rest) > 0; {
		n := min(len(rest), 512)
		written, err := appendReport(ctx, st, rest[:n])
		if err != nil {
			return 0, err
		}
		for _, w := range written {
			if w {
				total++
			}
		}
		rest = rest[n:]
	}
	return total, os.Remove(path)
}

// EndReader is a store that says which requests have a settle or a release stored
// (ReplayJournals then skips their reserves, and the settles already stored); the SQL stores
// implement it.
type EndReader interface {
	// EndedRequests returns the ids among ids that have a settle or a release stored, each
	// with the kind of its end: KindSettle when it has a settle (with or without a release),
	// else KindRelease.
	EndedRequests(ctx context.Context, ids []string) (map[string]Kind, error)
}

// staleSegmentAge is how old a temporary segment must be before a replay removes it.
const staleSegmentAge = time.Minute

// maxJournalBytes is the most of one segment file a replay reads: a segment is reused past
// JournalSegmentBytes, and while the store is down the writer's queue bounds what it holds
// (about 32,768 reserves of about 130 bytes); what lies beyond is not the writer's.
const maxJournalBytes = 256 << 20

// maxJournalLine is the longest journal line read; a longer one (never written by Log, whose
// fields are ids and a model name) is skipped, as a torn or foreign line is.
const maxJournalLine = 64 << 10

// readJournal reads the reserves and settles of one segment file of replica, skipping every
// line that is not one Log wrote.
func readJournal(f io.Reader, replica string) ([]LedgerEntry, error) {
	var out []LedgerEntry
	r := bufio.NewReaderSize(f, maxJournalLine)
	for {
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) { // too long: skip to the end of the line
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = r.ReadSlice('\n')
			}
			line = nil
		}
		if e, ok := parseJournalLine(bytes.TrimSuffix(line, []byte{'\n'})); ok {
			if e.Kind == KindReserve {
				e.Replica = replica
			}
			out = append(out, e)
		}
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
	}
}

// parseJournalLine reads one line written by Log (appendJournalLine): a reserve or a settle;
// false for a line that is not one.
func parseJournalLine(line []byte) (LedgerEntry, bool) {
	fields := bytes.Split(line, []byte{'\t'})
	if len(fields) != 6 && len(fields) != 15 {
		return LedgerEntry{}, false
	}
	at, err1 := strconv.ParseInt(string(fields[0]), 10, 64)
	amount, err2 := strconv.ParseInt(string(fields[1]), 10, 64)
	if err1 != nil || err2 != nil || amount < 0 || amount > MaxEntryMicroUSD || at < minJournalAt {
		return LedgerEntry{}, false
	}
	var s [4]string
	for i := range s {
		v, ok := journalString(fields[2+i])
		if !ok {
			return LedgerEntry{}, false
		}
		s[i] = v
	}
	if s[0] == "" || s[2] == "" {
		return LedgerEntry{}, false
	}
	e := LedgerEntry{At: time.Unix(0, at).UTC(), AccountID: s[0], KeyID: s[1], RequestID: s[2], Model: s[3],
		Kind: KindReserve, AmountMicroUSD: amount}
	if len(fields) == 6 {
		return e, true
	}
	if string(fields[6]) != string(KindSettle) {
		return LedgerEntry{}, false
	}
	var ok bool
	if e.Deployment, ok = journalString(fields[7]); !ok {
		return LedgerEntry{}, false
	}
	var n [5]int64
	for i := range n {
		v, err := strconv.ParseInt(string(fields[8+i]), 10, 64)
		if err != nil || v < 0 || v > MaxEntryTokens {
			return LedgerEntry{}, false
		}
		n[i] = v
	}
	e.Tokens = Tokens{Input: n[0], Cached: n[1], CacheWrite: n[2], Output: n[3], Reasoning: n[4]}
	if e.Mark, ok = journalString(fields[13]); !ok || !slices.Contains(journalMarks, e.Mark) {
		return LedgerEntry{}, false
	}
	if e.UsageProvenance, ok = journalString(fields[14]); !ok || !slices.Contains(journalProvenances, e.UsageProvenance) {
		return LedgerEntry{}, false
	}
	e.Kind = KindSettle
	return e, true
}

// What a settle line may say beside its numbers: the marks and usage provenances the request
// path writes (a journal holds no reconciliation's entry).
var (
	journalMarks       = []string{"", MarkUpstreamTruncated, MarkClientCancelled}
	journalProvenances = []string{"", audit.ProvenanceObserved, audit.ProvenanceEstimated}
)

// minJournalAt is the earliest time a journal line may carry (2000-01-01, in Unix ns): an
// earlier one is not one Log wrote.
const minJournalAt = 946684800 * int64(time.Second)

// journalString reads one Go-quoted field; false for one Log never wrote (a store would
// refuse the batch: invalid UTF-8, a NUL).
func journalString(field []byte) (string, bool) {
	v, err := strconv.Unquote(string(field))
	if err != nil || !utf8.ValidString(v) || strings.IndexByte(v, 0) >= 0 {
		return "", false
	}
	return v, true
}
