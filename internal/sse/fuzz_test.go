package sse

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// refEvent is one event of the reference parser, with Raw as offsets into the input.
type refEvent struct {
	name, data, id []byte
	rawStart       int
	rawEnd         int
}

// refParse is a deliberately naive, whole-input implementation of the framing rules the Reader
// documents, used as the fuzz oracle. It ignores MaxEventBytes.
func refParse(in []byte) ([]refEvent, error) {
	var (
		out             []refEvent
		cur             refEvent
		inEvent, isData bool
		hasName, hasID  bool
		dataLines       [][]byte
	)
	pos := 0
	for first := true; ; first = false {
		// Find the next line and its terminator.
		i := pos
		for i < len(in) && in[i] != '\r' && in[i] != '\n' {
			i++
		}
		lineStart := pos
		if first && bytes.HasPrefix(in[pos:i], []byte(bom)) {
			lineStart += len(bom)
		}
		line := in[lineStart:i]
		if i == len(in) { // no terminator: partial line at EOF
			if inEvent || (len(line) > 0 && line[0] != ':') {
				return out, io.ErrUnexpectedEOF
			}
			return out, io.EOF
		}
		next := i + 1
		if in[i] == '\r' && next < len(in) && in[next] == '\n' {
			next++
		}
		pos = next

		switch {
		case len(line) == 0:
			if inEvent && (isData || hasName || hasID) {
				if isData {
					cur.data = append([]byte{}, bytes.Join(dataLines, []byte("\n"))...) // never nil
				}
				cur.rawEnd = next
				out = append(out, cur)
			}
			cur, inEvent, isData, hasName, hasID, dataLines = refEvent{}, false, false, false, false, nil
		case line[0] == ':':
		default:
			if !inEvent {
				inEvent, cur.rawStart = true, lineStart
			}
			field, value := string(line), []byte{}
			if c := bytes.IndexByte(line, ':'); c >= 0 {
				field, value = string(line[:c]), bytes.TrimPrefix(line[c+1:], []byte(" "))
			}
			switch field {
			case "data":
				isData = true
				dataLines = append(dataLines, value)
			case "event":
				hasName, cur.name = true, value
			case "id":
				if bytes.IndexByte(value, 0) < 0 {
					hasID, cur.id = true, value
				}
			}
		}
	}
}

type fuzzResult struct {
	events []Event // copied
	err    error
}

func collect(src io.Reader, max int) fuzzResult {
	r := NewReader(src)
	r.MaxEventBytes = max
	var res fuzzResult
	for {
		e, err := r.Next()
		if err != nil {
			res.err = err
			return res
		}
		res.events = append(res.events, Event{
			Name: bytes.Clone(e.Name), Data: bytes.Clone(e.Data),
			ID: bytes.Clone(e.ID), Raw: bytes.Clone(e.Raw),
		})
	}
}

func sameEvent(a, b Event) bool {
	eq := func(x, y []byte) bool { return (x == nil) == (y == nil) && bytes.Equal(x, y) }
	return eq(a.Name, b.Name) && eq(a.Data, b.Data) && eq(a.ID, b.ID) && bytes.Equal(a.Raw, b.Raw)
}

func FuzzReader(f *testing.F) {
	for _, tc := range framingCases {
		in := strings.Join(tc.chunks, "")
		if len(in) > 4<<10 {
			in = in[:4<<10] // keep seeds small; the cut big cases still exercise long lines
		}
		f.Add([]byte(in), uint16(tc.max))
	}
	f.Add([]byte(openAIStream), uint16(0))
	f.Add([]byte(strings.ReplaceAll(anthropicStream, "\n", "\r\n")), uint16(0))
	f.Add([]byte(": keep-alive\r\rdata: a\r\r\n"), uint16(9))

	f.Fuzz(checkReader)
}

// checkReader is the body of FuzzReader.
func checkReader(t *testing.T, in []byte, max16 uint16) {
	max := int(max16) // 0 means the default
	whole := collect(bytes.NewReader(in), max)
	one := collect(iotest.OneByteReader(bytes.NewReader(in)), max)
	half := collect(iotest.DataErrReader(iotest.HalfReader(bytes.NewReader(in))), max)

	for name, other := range map[string]fuzzResult{"one-byte": one, "half": half} {
		if other.err != whole.err || len(other.events) != len(whole.events) {
			t.Fatalf("%s reader: %d events, %v; whole-buffer reader: %d events, %v",
				name, len(other.events), other.err, len(whole.events), whole.err)
		}
		for i := range whole.events {
			if !sameEvent(whole.events[i], other.events[i]) {
				t.Fatalf("%s reader event %d = %s, whole-buffer = %s",
					name, i, fmtEvent(other.events[i]), fmtEvent(whole.events[i]))
			}
		}
	}

	ref, refErr := refParse(in)
	if whole.err == ErrEventTooLarge {
		if len(whole.events) > len(ref) {
			t.Fatalf("%d events before ErrEventTooLarge, reference has only %d", len(whole.events), len(ref))
		}
		ref = ref[:len(whole.events)]
	} else if whole.err != refErr || len(whole.events) != len(ref) {
		t.Fatalf("got %d events, %v; reference %d events, %v", len(whole.events), whole.err, len(ref), refErr)
	}

	pos := 0
	for i, e := range whole.events {
		want := Event{Name: ref[i].name, Data: ref[i].data, ID: ref[i].id, Raw: in[ref[i].rawStart:ref[i].rawEnd]}
		if !sameEvent(e, want) {
			t.Fatalf("event %d = %s, reference %s", i, fmtEvent(e), fmtEvent(want))
		}
		// Raw is the input's bytes, in order, and at most MaxEventBytes long.
		j := bytes.Index(in[pos:], e.Raw)
		if j < 0 {
			t.Fatalf("event %d Raw %q is not in the input after offset %d", i, e.Raw, pos)
		}
		pos += j + len(e.Raw)
		if max > 0 && len(e.Raw) > max {
			t.Fatalf("event %d Raw is %d bytes, over MaxEventBytes %d", i, len(e.Raw), max)
		}
		// Raw starts with a field line and re-parses to the same event: no comment line
		// became data.
		if len(e.Raw) == 0 || e.Raw[0] == ':' {
			t.Fatalf("event %d Raw %q starts with a comment", i, e.Raw)
		}
		again, err := refParse(append([]byte("\n"), e.Raw...)) // "\n": a BOM-like prefix stays a field
		if err != io.EOF || len(again) != 1 || !bytes.Equal(again[0].data, e.Data) {
			t.Fatalf("event %d Raw %q does not re-parse to its own Data %q", i, e.Raw, e.Data)
		}
		// Every Data line, one starting with ':' included, is the value of a data field line of
		// Raw, in order: none came from a comment line.
		if vals := dataValues(e.Raw); e.Data != nil {
			lines := bytes.Split(e.Data, []byte("\n"))
			if len(lines) != len(vals) {
				t.Fatalf("event %d has %d Data lines, Raw %q has %d data fields", i, len(lines), e.Raw, len(vals))
			}
			for k := range lines {
				if !bytes.Equal(lines[k], vals[k]) {
					t.Fatalf("event %d Data line %q is not Raw's data field %q", i, lines[k], vals[k])
				}
			}
		}
	}
}

// dataValues returns the values of the `data` field lines of raw, in order, by a line split
// independent of the Reader and of refParse.
func dataValues(raw []byte) [][]byte {
	var vals [][]byte
	for len(raw) > 0 {
		i := bytes.IndexAny(raw, "\r\n")
		if i < 0 {
			i = len(raw)
		}
		if rest, ok := bytes.CutPrefix(raw[:i], []byte("data")); ok && (len(rest) == 0 || rest[0] == ':') {
			vals = append(vals, bytes.TrimPrefix(bytes.TrimPrefix(rest, []byte(":")), []byte(" ")))
		}
		if i < len(raw) && raw[i] == '\r' && i+1 < len(raw) && raw[i+1] == '\n' {
			i++
		}
		raw = raw[min(i+1, len(raw)):]
	}
	return vals
}
