package sse

import (
	"bytes"
	"errors"
	"io"
)

// DefaultMaxEventBytes is the MaxEventBytes that NewReader sets and that a Reader uses when its
// MaxEventBytes is zero or negative: 32 MiB, the line cap of the official Go SDKs (wire.md §6).
const DefaultMaxEventBytes = 32 << 20

// ErrEventTooLarge is returned by Reader.Next when one event (or one line outside an event)
// exceeds Reader.MaxEventBytes.
var ErrEventTooLarge = errors.New("sse: event too large")

// ErrUnexpectedEOF is returned by Reader.Next when the stream ends inside an event. It is
// io.ErrUnexpectedEOF itself, so errors.Is works with either name.
var ErrUnexpectedEOF = io.ErrUnexpectedEOF

const (
	// initialBufSize is the first buffer, allocated on the first read: what one or two stream
	// frames of a chat completion need (~200-600 bytes each), since every held stream keeps one
	// (issue 15: memory per held stream). A larger event grows it by doubling.
	initialBufSize = 1 << 10
	minRead        = 512 // smallest free space offered to one Read
	maxEmptyReads  = 100 // consecutive (0, nil) reads before io.ErrNoProgress, as bufio
)

// bom is the UTF-8 byte order mark, stripped from the start of a stream per the spec.
const bom = "\xef\xbb\xbf"

// Event is one dispatched SSE event. Byte slices alias the Reader's buffer and are valid only
// until the next Next (or Reset) call; copy what must outlive it.
type Event struct {
	// Name is the value of the last `event:` field; nil when the event had none, empty (not nil)
	// for a bare `event:`.
	Name []byte
	// Data is the values of the event's `data:` lines joined with "\n" (spec); nil when the
	// event had no data field, empty (not nil) for a single empty `data:`.
	Data []byte
	// ID is the value of the last `id:` field; nil when absent. An id value containing U+0000
	// is ignored, as the spec requires.
	ID []byte
	// Raw is the event's exact bytes as received, for pass-through: from the first non-comment
	// line of the event through its terminating blank line inclusive, with the original line
	// terminators. Comment lines before that first line (keep-alives between events) are not
	// included; comment lines after it are, since they sit inside the bytes. A leading UTF-8
	// BOM at the start of the stream is never included.
	Raw []byte
}

// Reader splits a text/event-stream into events. It is not safe for concurrent use. The zero
// value is not usable; create one with NewReader.
type Reader struct {
	// MaxEventBytes caps the size of one event's Raw bytes, and of any single line (terminator
	// included) outside an event, such as a comment. Exceeding it makes Next return
	// ErrEventTooLarge. Zero or negative means DefaultMaxEventBytes. Set it before the first
	// Next call. The buffer grows up to about MaxEventBytes plus one read.
	MaxEventBytes int

	src io.Reader
	buf []byte

	// buf[head:end] are the bytes held. head is the start of the current event's Raw when
	// inEvent, otherwise the start of the next unprocessed line (== scan).
	head, end int
	// scan is the start of the next line not yet processed; head <= scan <= end.
	scan int
	// seen counts the bytes from scan known to hold no line terminator; when the last of them
	// is followed by a CR at end, that CR waits for the next byte to tell CR from CRLF.
	seen int

	readErr error // error (io.EOF included) from src, returned once the buffer is drained
	err     error // sticky error returned by Next
	started bool  // the first line of the stream has been processed (BOM check done)

	// State of the event being parsed. Offsets are relative to head, so compaction keeps them.
	inEvent        bool
	hasName, hasID bool
	nData          int
	nameOff, nameEnd,
	idOff, idEnd,
	dataOff, dataEnd int
	data []byte // join buffer for events with more than one data line
}

// NewReader returns a Reader reading from r with MaxEventBytes set to DefaultMaxEventBytes. The
// buffer is allocated on the first Next call.
func NewReader(r io.Reader) *Reader {
	return &Reader{MaxEventBytes: DefaultMaxEventBytes, src: r}
}

// Reset discards all state, including a sticky error, and makes the Reader read from src. The
// buffer and the data join buffer are kept for reuse (pooling); MaxEventBytes is unchanged.
func (r *Reader) Reset(src io.Reader) {
	*r = Reader{
		MaxEventBytes: r.MaxEventBytes,
		src:           src,
		buf:           r.buf,
		data:          r.data[:0],
	}
}

// Next returns the next event. Comment lines (`:` ...) are skipped and never returned as data;
// `retry:` and unknown fields are ignored. An event is dispatched at a blank line when it had at
// least one data, event or id field; a block of only comments or only ignored fields dispatches
// nothing and reading goes on.
//
// Errors:
//   - io.EOF at a clean end: EOF right after a blank line, or with only comments or blank lines
//     since the last event.
//   - io.ErrUnexpectedEOF (ErrUnexpectedEOF) when the stream ends inside an event, that is after
//     a non-comment line with no terminating blank line; the partial event is discarded per spec.
//   - ErrEventTooLarge when an event exceeds MaxEventBytes.
//   - any other error from the underlying reader, as is, after the events fully buffered
//     before it; io.ErrNoProgress after 100 consecutive empty reads.
//
// Errors are sticky: once Next has returned one, every later call returns it again until Reset.
//
// A CR that ends the last buffered byte is resolved (CR or CRLF) only when the next byte or EOF
// arrives, so an event whose blank line ends in a bare CR is dispatched one byte late; this keeps
// Raw exact whatever the read boundaries.
func (r *Reader) Next() (Event, error) {
	if r.err != nil {
		return Event{}, r.err
	}
	ev, err := r.next()
	if err != nil {
		r.err = err
	}
	return ev, err
}

func (r *Reader) next() (Event, error) {
	for {
		for {
			from := r.scan + r.seen
			i := indexEOL(r.buf[from:r.end])
			if i < 0 {
				r.seen = r.end - r.scan
				break
			}
			eol := from + i
			next := eol + 1
			if r.buf[eol] == '\r' {
				if next < r.end {
					if r.buf[next] == '\n' {
						next++
					}
				} else if r.readErr == nil {
					// CR is the last byte held: wait for the next one to see if it is CRLF.
					r.seen = eol - r.scan
					break
				}
			}
			start := r.scan
			r.scan, r.seen = next, 0
			if ev, ok, err := r.line(start, eol, next); ok || err != nil {
				return ev, err
			}
		}
		// No complete line left in the buffer.
		if r.end-r.head > r.maxBytes() {
			return Event{}, ErrEventTooLarge
		}
		if r.readErr != nil {
			if r.readErr == io.EOF {
				return Event{}, r.eof()
			}
			return Event{}, r.readErr
		}
		r.fill()
	}
}

// line processes buf[start:eol], a complete line whose terminator ends before next. It reports
// whether an event is dispatched.
func (r *Reader) line(start, eol, next int) (Event, bool, error) {
	base := start
	if r.inEvent {
		base = r.head
	}
	if next-base > r.maxBytes() {
		return Event{}, false, ErrEventTooLarge
	}
	if !r.started {
		r.started = true
		if bytes.HasPrefix(r.buf[start:eol], []byte(bom)) {
			start += len(bom)
		}
	}
	line := r.buf[start:eol]

	if len(line) == 0 { // blank line: dispatch
		if !r.inEvent {
			r.head = next
			return Event{}, false, nil
		}
		ev, ok := r.dispatch(next)
		r.resetEvent()
		r.head = next
		return ev, ok, nil
	}
	if line[0] == ':' { // comment
		if !r.inEvent {
			r.head = next
		}
		return Event{}, false, nil
	}
	if !r.inEvent {
		r.inEvent = true
		r.head = start
	}

	name, value := line, line[len(line):]
	vstart := eol
	if c := bytes.IndexByte(line, ':'); c >= 0 {
		name = line[:c]
		v := c + 1
		if v < len(line) && line[v] == ' ' {
			v++
		}
		value = line[v:]
		vstart = start + v
	}
	off, endOff := vstart-r.head, eol-r.head
	switch string(name) {
	case "data":
		switch r.nData {
		case 0:
			r.dataOff, r.dataEnd = off, endOff
		case 1:
			r.data = append(r.data[:0], r.buf[r.head+r.dataOff:r.head+r.dataEnd]...)
			fallthrough
		default:
			r.data = append(r.data, '\n')
			r.data = append(r.data, value...)
		}
		r.nData++
	case "event":
		r.hasName, r.nameOff, r.nameEnd = true, off, endOff
	case "id":
		if bytes.IndexByte(value, 0) < 0 {
			r.hasID, r.idOff, r.idEnd = true, off, endOff
		}
	}
	return Event{}, false, nil
}

// dispatch builds the event whose Raw is buf[head:next]. It reports false when the event had no
// data, event or id field.
func (r *Reader) dispatch(next int) (Event, bool) {
	if r.nData == 0 && !r.hasName && !r.hasID {
		return Event{}, false
	}
	b := r.buf[r.head:next:next] // capped: appending to Raw must not clobber buffered bytes
	ev := Event{Raw: b}
	if r.hasName {
		ev.Name = b[r.nameOff:r.nameEnd:r.nameEnd]
	}
	if r.hasID {
		ev.ID = b[r.idOff:r.idEnd:r.idEnd]
	}
	switch r.nData {
	case 0:
	case 1:
		ev.Data = b[r.dataOff:r.dataEnd:r.dataEnd]
	default:
		ev.Data = r.data
	}
	return ev, true
}

func (r *Reader) resetEvent() {
	r.inEvent, r.hasName, r.hasID, r.nData = false, false, false, 0
}

// eof decides between a clean end and a truncation once src is exhausted and every complete
// line has been processed.
func (r *Reader) eof() error {
	if r.inEvent {
		return io.ErrUnexpectedEOF
	}
	partial := r.buf[r.scan:r.end]
	if !r.started {
		partial = bytes.TrimPrefix(partial, []byte(bom))
	}
	if len(partial) > 0 && partial[0] != ':' {
		return io.ErrUnexpectedEOF // an unterminated field line: a cut event
	}
	return io.EOF
}

func (r *Reader) maxBytes() int {
	if r.MaxEventBytes <= 0 {
		return DefaultMaxEventBytes
	}
	return r.MaxEventBytes
}

// fill makes room and reads once from src, recording a read error in readErr.
func (r *Reader) fill() {
	if r.head == r.end { // nothing held: start over at the front, no copy
		r.head, r.scan, r.end = 0, 0, 0
	}
	if len(r.buf)-r.end < minRead {
		if r.head > 0 {
			n := copy(r.buf, r.buf[r.head:r.end])
			r.scan -= r.head
			r.end = n
			r.head = 0
		}
		if len(r.buf)-r.end < minRead {
			r.grow()
		}
	}
	for range maxEmptyReads {
		n, err := r.src.Read(r.buf[r.end:])
		if n < 0 || n > len(r.buf)-r.end {
			r.readErr = errors.New("sse: reader returned invalid count from Read")
			return
		}
		r.end += n
		if err != nil {
			r.readErr = err
			return
		}
		if n > 0 {
			return
		}
	}
	r.readErr = io.ErrNoProgress
}

// grow enlarges buf so that at least minRead bytes are free after end, doubling but not much
// beyond what MaxEventBytes can need. head is 0 when it is called.
func (r *Reader) grow() {
	size := 2 * len(r.buf)
	if size < initialBufSize {
		size = initialBufSize
	}
	if limit := r.maxBytes() + minRead + 1; size > limit {
		size = limit
	}
	if size < r.end+minRead {
		size = r.end + minRead
	}
	nb := make([]byte, size)
	copy(nb, r.buf[:r.end])
	r.buf = nb
}

// indexEOL returns the index of the first CR or LF in b, or -1.
func indexEOL(b []byte) int {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return bytes.IndexByte(b, '\r')
	}
	if j := bytes.IndexByte(b[:i], '\r'); j >= 0 {
		return j
	}
	return i
}
