package sse

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestWriteEvent(t *testing.T) {
	tests := []struct {
		name      string
		evName    []byte
		data      []byte
		want      string
		readName  string // "-" for nil
		readData  string // "-" for nil
		noDispach bool
	}{
		{"data only", nil, []byte(`{"a":1}`), "data: {\"a\":1}\n\n", "-", `{"a":1}`, false},
		{"name and data", []byte("message_stop"), []byte(`{"type":"message_stop"}`),
			"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n", "message_stop", `{"type":"message_stop"}`, false},
		{"multi-line data", []byte("e"), []byte("a\nb\n"), "event: e\ndata: a\ndata: b\ndata: \n\n", "e", "a\nb\n", false},
		{"CR and CRLF split too", nil, []byte("a\rb\r\nc"), "data: a\ndata: b\ndata: c\n\n", "-", "a\nb\nc", false},
		{"empty data", []byte("ping"), []byte{}, "event: ping\ndata: \n\n", "ping", "", false},
		{"nil data", []byte("ping"), nil, "event: ping\n\n", "ping", "-", false},
		{"empty name", []byte{}, []byte("x"), "event: \ndata: x\n\n", "", "x", false},
		{"nothing", nil, nil, "\n", "-", "-", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteEvent(&buf, tc.evName, tc.data); err != nil {
				t.Fatal(err)
			}
			if buf.String() != tc.want {
				t.Fatalf("wrote %q, want %q", buf.String(), tc.want)
			}
			// Round trip through the Reader.
			r := NewReader(&buf)
			e, err := r.Next()
			if tc.noDispach {
				if err != io.EOF {
					t.Fatalf("read back %s, %v; want io.EOF", fmtEvent(e), err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got, want := fmtEvent(e), ev(tc.readName, tc.readData, "-", tc.want); got != want {
				t.Errorf("read back %s, want %s", got, want)
			}
		})
	}
}

func TestWriteEventRejectsLineBreakInName(t *testing.T) {
	for _, name := range []string{"a\nb", "a\r", "\r\n"} {
		var buf bytes.Buffer
		if err := WriteEvent(&buf, []byte(name), []byte("x")); err == nil || buf.Len() != 0 {
			t.Errorf("name %q: err %v, wrote %q; want an error and nothing written", name, err, buf.String())
		}
	}
}

func TestWriteComment(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"keep-alive", ": keep-alive\n\n"},
		{"", ": \n\n"},
		{"a\nb\r\nc\rd", ": a\n: b\n: c\n: d\n\n"},
	} {
		var buf bytes.Buffer
		if err := WriteComment(&buf, tc.text); err != nil {
			t.Fatal(err)
		}
		if buf.String() != tc.want {
			t.Errorf("WriteComment(%q) wrote %q, want %q", tc.text, buf.String(), tc.want)
		}
		// A comment must never read back as an event.
		buf.WriteString("data: x\n\n")
		e, err := NewReader(&buf).Next()
		if err != nil || string(e.Data) != "x" || string(e.Raw) != "data: x\n\n" {
			t.Errorf("after comment %q: read %s, %v", tc.text, fmtEvent(e), err)
		}
	}
}

// failWriter fails on the n-th Write.
type failWriter struct{ n int }

var errWrite = errors.New("broken pipe")

func (f *failWriter) Write(p []byte) (int, error) {
	f.n--
	if f.n == 0 {
		return 0, errWrite
	}
	return len(p), nil
}

func TestWriteErrorsPropagate(t *testing.T) {
	// event: e\n is 3 writes, each data line 3, then the final newline: 3+3+3+1 = 10 writes.
	for n := 1; n <= 10; n++ {
		if err := WriteEvent(&failWriter{n: n}, []byte("e"), []byte("a\nb")); err != errWrite {
			t.Errorf("WriteEvent with write %d failing: %v, want the write error", n, err)
		}
	}
	for n := 1; n <= 7; n++ {
		if err := WriteComment(&failWriter{n: n}, "a\nb"); err != errWrite {
			t.Errorf("WriteComment with write %d failing: %v, want the write error", n, err)
		}
	}
}

// plainWriter hides bytes.Buffer's WriteString so WriteComment takes the io.Writer path.
type plainWriter struct{ w io.Writer }

func (p *plainWriter) Write(b []byte) (int, error) { return p.w.Write(b) }

func TestWriteAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under -race")
	}
	var buf bytes.Buffer
	buf.Grow(1 << 10)
	name, data := []byte("content_block_delta"), []byte("{\"a\":\n1}")
	var pw io.Writer = &plainWriter{&buf} // converted once, outside the measured function
	if a := testing.AllocsPerRun(100, func() {
		buf.Reset()
		_ = WriteEvent(&buf, name, data)
		_ = WriteEvent(pw, name, data)
		_ = WriteComment(&buf, "keep-alive")
	}); a != 0 {
		t.Errorf("WriteEvent/WriteComment allocate %v times, want 0", a)
	}
	if !strings.Contains(buf.String(), ": keep-alive\n\n") {
		t.Fatal("nothing written")
	}
}
