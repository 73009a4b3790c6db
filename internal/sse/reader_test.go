package sse

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// fmtEvent renders an event for comparison; nil and empty slices print differently.
func fmtEvent(e Event) string {
	q := func(b []byte) string {
		if b == nil {
			return "nil"
		}
		return fmt.Sprintf("%q", b)
	}
	return fmt.Sprintf("name=%s data=%s id=%s raw=%q", q(e.Name), q(e.Data), q(e.ID), e.Raw)
}

// ev builds the expected rendering; a "-" argument stands for nil.
func ev(name, data, id, raw string) string {
	q := func(s string) string {
		if s == "-" {
			return "nil"
		}
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("name=%s data=%s id=%s raw=%q", q(name), q(data), q(id), raw)
}

// readAll drains a Reader and returns the rendered events and the final error.
func readAll(src io.Reader, max int) ([]string, error) {
	r := NewReader(src)
	if max != 0 {
		r.MaxEventBytes = max
	}
	var out []string
	for {
		e, err := r.Next()
		if err != nil {
			return out, err
		}
		out = append(out, fmtEvent(e))
	}
}

// chunkReader returns its chunks one per Read, as separate TCP segments would.
type chunkReader struct{ chunks []string }

func (c *chunkReader) Read(p []byte) (int, error) {
	for len(c.chunks) > 0 && c.chunks[0] == "" {
		c.chunks = c.chunks[1:]
	}
	if len(c.chunks) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.chunks[0])
	c.chunks[0] = c.chunks[0][n:]
	return n, nil
}

// readers returns the same input delivered with different read boundaries.
func readers(chunks []string) map[string]func() io.Reader {
	whole := strings.Join(chunks, "")
	return map[string]func() io.Reader{
		"whole":    func() io.Reader { return strings.NewReader(whole) },
		"chunks":   func() io.Reader { return &chunkReader{chunks: append([]string(nil), chunks...)} },
		"onebyte":  func() io.Reader { return iotest.OneByteReader(strings.NewReader(whole)) },
		"half":     func() io.Reader { return iotest.HalfReader(strings.NewReader(whole)) },
		"data+eof": func() io.Reader { return iotest.DataErrReader(strings.NewReader(whole)) },
	}
}

var big = strings.Repeat("x", 200<<10)

// framingCases are shared by TestReaderFraming and the fuzz seed corpus.
var framingCases = []struct {
	name    string
	chunks  []string // the input, delivered one chunk per Read by the "chunks" reader
	max     int      // MaxEventBytes; 0 keeps the default
	want    []string
	wantErr error
}{
	{"LF", []string{"data: a\n\n"}, 0,
		[]string{ev("-", "a", "-", "data: a\n\n")}, io.EOF},
	{"CR", []string{"event: e\rdata: a\r\r"}, 0,
		[]string{ev("e", "a", "-", "event: e\rdata: a\r\r")}, io.EOF},
	{"CRLF", []string{"data: a\r\n\r\ndata: b\r\n\r\n"}, 0,
		[]string{ev("-", "a", "-", "data: a\r\n\r\n"), ev("-", "b", "-", "data: b\r\n\r\n")}, io.EOF},
	{"mixed terminators", []string{"data: a\r\ndata: b\rdata: c\n\r\n"}, 0,
		[]string{ev("-", "a\nb\nc", "-", "data: a\r\ndata: b\rdata: c\n\r\n")}, io.EOF},
	// If the LF after a read-final CR were a second terminator, "a" would be dispatched alone.
	{"split CRLF", []string{"data: a\r", "\ndata: b\r", "\n\r", "\n"}, 0,
		[]string{ev("-", "a\nb", "-", "data: a\r\ndata: b\r\n\r\n")}, io.EOF},
	{"split CRLF before next event", []string{"data: a\r\n\r", "\ndata: b\r\n\r\n"}, 0,
		[]string{ev("-", "a", "-", "data: a\r\n\r\n"), ev("-", "b", "-", "data: b\r\n\r\n")}, io.EOF},
	{"CR at EOF ends the event", []string{"data: a\r", "\r"}, 0,
		[]string{ev("-", "a", "-", "data: a\r\r")}, io.EOF},
	{"multi-line data", []string{"data: {\"a\":\ndata: 1}\n\n"}, 0,
		[]string{ev("-", "{\"a\":\n1}", "-", "data: {\"a\":\ndata: 1}\n\n")}, io.EOF},
	{"three data lines", []string{"data: a\ndata:\ndata: c\n\n"}, 0,
		[]string{ev("-", "a\n\nc", "-", "data: a\ndata:\ndata: c\n\n")}, io.EOF},
	{"comments between events", []string{": keep-alive\n\n: OPENROUTER PROCESSING\n\ndata: x\n\n:\n\n"}, 0,
		[]string{ev("-", "x", "-", "data: x\n\n")}, io.EOF},
	{"comment inside event", []string{"data: a\n: keep-alive\ndata: b\n\n"}, 0,
		[]string{ev("-", "a\nb", "-", "data: a\n: keep-alive\ndata: b\n\n")}, io.EOF},
	{"comment only then EOF", []string{": keep-alive\n"}, 0, nil, io.EOF},
	{"unterminated comment at EOF", []string{"data: a\n\n: bye"}, 0,
		[]string{ev("-", "a", "-", "data: a\n\n")}, io.EOF},
	{"data-only keep-alive is data", []string{"data: : keep-alive\n\n"}, 0,
		[]string{ev("-", ": keep-alive", "-", "data: : keep-alive\n\n")}, io.EOF},
	{"missing final blank line", []string{"data: a\n\ndata: b\n"}, 0,
		[]string{ev("-", "a", "-", "data: a\n\n")}, io.ErrUnexpectedEOF},
	{"missing final terminator", []string{"data: a\n\ndata: b"}, 0,
		[]string{ev("-", "a", "-", "data: a\n\n")}, io.ErrUnexpectedEOF},
	{"cut after event line", []string{"event: message_stop\n"}, 0, nil, io.ErrUnexpectedEOF},
	{"cut unknown field", []string{"foo"}, 0, nil, io.ErrUnexpectedEOF},
	{"data without space", []string{"data:x\n\ndata:  y\n\n"}, 0,
		[]string{ev("-", "x", "-", "data:x\n\n"), ev("-", " y", "-", "data:  y\n\n")}, io.EOF},
	{"data alone", []string{"data\n\ndata\ndata\n\n"}, 0,
		[]string{ev("-", "", "-", "data\n\n"), ev("-", "\n", "-", "data\ndata\n\n")}, io.EOF},
	{"colon in value", []string{"data: a:b\n\n"}, 0,
		[]string{ev("-", "a:b", "-", "data: a:b\n\n")}, io.EOF},
	{"id and retry", []string{"id: 7\nretry: 1000\ndata: a\n\nretry: 5\n\nid: 8\n\n"}, 0,
		[]string{ev("-", "a", "7", "id: 7\nretry: 1000\ndata: a\n\n"), ev("-", "-", "8", "id: 8\n\n")}, io.EOF},
	{"id with NUL ignored", []string{"id: a\x00b\ndata: x\n\nid: a\x00\n\n"}, 0,
		[]string{ev("-", "x", "-", "id: a\x00b\ndata: x\n\n")}, io.EOF},
	{"empty id", []string{"id\n\n"}, 0, []string{ev("-", "-", "", "id\n\n")}, io.EOF},
	{"event with empty data", []string{"event: ping\ndata:\n\n"}, 0,
		[]string{ev("ping", "", "-", "event: ping\ndata:\n\n")}, io.EOF},
	{"event without data", []string{"event: x\n\nevent:\n\n"}, 0,
		[]string{ev("x", "-", "-", "event: x\n\n"), ev("", "-", "-", "event:\n\n")}, io.EOF},
	{"last event field wins", []string{"event: a\ndata: x\nevent: b\n\n"}, 0,
		[]string{ev("b", "x", "-", "event: a\ndata: x\nevent: b\n\n")}, io.EOF},
	{"unknown fields only", []string{"foo: bar\nData: a\n\ndata: a\n\n"}, 0,
		[]string{ev("-", "a", "-", "data: a\n\n")}, io.EOF},
	{"extra blank lines", []string{"\n\r\n\rdata: a\n\n\n\n"}, 0,
		[]string{ev("-", "a", "-", "data: a\n\n")}, io.EOF},
	{"BOM", []string{"\xef", "\xbb\xbfdata: a\n\n"}, 0,
		[]string{ev("-", "a", "-", "data: a\n\n")}, io.EOF},
	{"BOM only once", []string{"\xef\xbb\xbf\n\xef\xbb\xbfdata: a\n\n"}, 0, nil, io.EOF},
	{"UTF-8 split", []string{"data: \xc3", "\xa9\xe2\x82", "\xac\n\n"}, 0,
		[]string{ev("-", "é€", "-", "data: é€\n\n")}, io.EOF},
	{"empty stream", nil, 0, nil, io.EOF},
	{"200 KiB line", []string{"event: response.completed\ndata: " + big + "\n\n"}, 0,
		[]string{ev("response.completed", big, "-", "event: response.completed\ndata: "+big+"\n\n")}, io.EOF},
	{"event at max", []string{"data: 0123456789\n\n"}, 18,
		[]string{ev("-", "0123456789", "-", "data: 0123456789\n\n")}, io.EOF},
	{"event too large", []string{"data: a\n\ndata: 0123456789\n\n"}, 17,
		[]string{ev("-", "a", "-", "data: a\n\n")}, ErrEventTooLarge},
	{"event too large across lines", []string{"data: 01234\ndata: 56789\n\n"}, 20, nil, ErrEventTooLarge},
	{"line too large never ends", []string{"data: " + big}, 1 << 10, nil, ErrEventTooLarge},
	{"comment line too large", []string{": " + big + "\n\ndata: a\n\n"}, 1 << 10, nil, ErrEventTooLarge},
}

func TestReaderFraming(t *testing.T) {
	for _, tc := range framingCases {
		for rname, mk := range readers(tc.chunks) {
			t.Run(tc.name+"/"+rname, func(t *testing.T) {
				got, err := readAll(mk(), tc.max)
				if err != tc.wantErr {
					t.Errorf("error = %v, want %v", err, tc.wantErr)
				}
				if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
					t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
				}
			})
		}
	}
}

// TestReaderOneByte checks that a realistic stream read one byte per Read gives the very same
// events as when read whole.
func TestReaderOneByte(t *testing.T) {
	for name, stream := range map[string]string{"openai": openAIStream, "anthropic": anthropicStream} {
		crlf := strings.ReplaceAll(stream, "\n", "\r\n")
		for _, in := range []string{stream, crlf, ": keep-alive\n\n" + stream} {
			want, wantErr := readAll(strings.NewReader(in), 0)
			got, err := readAll(iotest.OneByteReader(strings.NewReader(in)), 0)
			if err != io.EOF || wantErr != io.EOF {
				t.Fatalf("%s: errors %v / %v, want io.EOF", name, err, wantErr)
			}
			if len(want) < 7 || strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("%s: one-byte events differ from whole-buffer events (%d vs %d)", name, len(got), len(want))
			}
		}
	}
}

// TestReaderRawPassThrough checks that the Raw bytes of a comment-free stream rebuild it exactly.
func TestReaderRawPassThrough(t *testing.T) {
	for _, in := range []string{openAIStream, anthropicStream, strings.ReplaceAll(anthropicStream, "\n", "\r\n")} {
		r := NewReader(iotest.HalfReader(strings.NewReader(in)))
		var out bytes.Buffer
		for {
			e, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			out.Write(e.Raw)
		}
		if out.String() != in {
			t.Errorf("Raw concatenation differs from the input")
		}
	}
}

type errAfter struct {
	r   io.Reader
	err error
}

func (e *errAfter) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err == io.EOF {
		err = e.err
	}
	return n, err
}

func TestReaderReadErrorIsReturnedAsIsAndSticky(t *testing.T) {
	boom := errors.New("connection reset")
	r := NewReader(&errAfter{strings.NewReader("data: a\n\ndata: b"), boom})
	e, err := r.Next()
	if err != nil || string(e.Data) != "a" {
		t.Fatalf("first Next = %q, %v; want the buffered event a", e.Data, err)
	}
	for range 2 {
		if _, err := r.Next(); err != boom {
			t.Fatalf("Next error = %v, want the read error as is", err)
		}
	}
}

func TestReaderNoProgress(t *testing.T) {
	r := NewReader(iotest.ErrReader(nil)) // always (0, nil)
	if _, err := r.Next(); err != io.ErrNoProgress {
		t.Fatalf("error = %v, want io.ErrNoProgress", err)
	}
}

func TestReaderReset(t *testing.T) {
	r := NewReader(strings.NewReader("data: " + big + "\n"))
	if _, err := r.Next(); err != io.ErrUnexpectedEOF {
		t.Fatalf("error = %v, want io.ErrUnexpectedEOF", err)
	}
	capBefore := cap(r.buf)
	r.MaxEventBytes = 1 << 20
	r.Reset(strings.NewReader("event: e\ndata: x\ndata: y\n\n"))
	e, err := r.Next()
	if err != nil || string(e.Name) != "e" || string(e.Data) != "x\ny" {
		t.Fatalf("after Reset: %s, %v", fmtEvent(e), err)
	}
	if cap(r.buf) != capBefore || r.MaxEventBytes != 1<<20 {
		t.Errorf("Reset dropped the buffer (cap %d, was %d) or MaxEventBytes (%d)", cap(r.buf), capBefore, r.MaxEventBytes)
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("error = %v, want io.EOF", err)
	}
}

func TestReaderZeroMaxMeansDefault(t *testing.T) {
	r := NewReader(strings.NewReader("data: " + big + "\n\n"))
	r.MaxEventBytes = 0
	if e, err := r.Next(); err != nil || len(e.Data) != len(big) {
		t.Fatalf("Next = %d bytes, %v", len(e.Data), err)
	}
}

// loopReader serves frames forever, one frame per Read, like an upstream flushing per event.
type loopReader struct {
	frames [][]byte
	i, off int
}

func (l *loopReader) Read(p []byte) (int, error) {
	f := l.frames[l.i]
	n := copy(p, f[l.off:])
	l.off += n
	if l.off == len(f) {
		l.off = 0
		l.i = (l.i + 1) % len(l.frames)
	}
	return n, nil
}

func splitFrames(stream string) [][]byte {
	var out [][]byte
	for _, f := range strings.SplitAfter(stream, "\n\n") {
		if f != "" {
			out = append(out, []byte(f))
		}
	}
	return out
}

func TestReaderSteadyStateAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under -race")
	}
	for name, stream := range map[string]string{"openai": openAIStream, "anthropic": anthropicStream, "multiline": "data: a\ndata: b\n\n"} {
		r := NewReader(&loopReader{frames: splitFrames(stream)})
		for range 100 { // warm up: buffer and join buffer reach their size
			if _, err := r.Next(); err != nil {
				t.Fatal(err)
			}
		}
		allocs := testing.AllocsPerRun(1000, func() {
			if _, err := r.Next(); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("%s: Next allocates %v times per event in steady state, want 0", name, allocs)
		}
	}
}

// TestReaderSmallFramesSmallBuffer: a stream of chat-completion-sized events (~250 bytes)
// keeps the Reader's buffer at its first size, 1 KiB: every held stream keeps one (issue 15,
// memory per held stream); a large event still grows it.
func TestReaderSmallFramesSmallBuffer(t *testing.T) {
	frame := "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"" +
		strings.Repeat("word ", 30) + "\"}}]}\n\n"
	r := NewReader(strings.NewReader(strings.Repeat(frame, 50)))
	for n := 0; ; n++ {
		_, err := r.Next()
		if err == io.EOF {
			if n != 50 {
				t.Fatalf("%d events, want 50", n)
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if c := r.BufferCap(); c > 1<<10 {
		t.Errorf("buffer %d bytes after small events, want at most 1 KiB", c)
	}
	big := "data: " + strings.Repeat("x", 10<<10) + "\n\n"
	r.Reset(strings.NewReader(big))
	ev, err := r.Next()
	if err != nil || len(ev.Data) != 10<<10 {
		t.Fatalf("large event: %d bytes, %v", len(ev.Data), err)
	}
}
