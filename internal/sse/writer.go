package sse

import (
	"bytes"
	"errors"
	"io"
	"strings"
)

// Framing pieces written as is; never modified.
var (
	eventPrefix = []byte("event: ")
	dataPrefix  = []byte("data: ")
	commentPrfx = []byte(": ")
	newline     = []byte("\n")
)

var errNameBreak = errors.New("sse: event name contains a line break")

// WriteEvent writes one event to w: `event: NAME\n` (omitted when name is nil), then one
// `data: LINE\n` per line of data, then the blank line `\n`. Data is split on LF, CR and CRLF,
// since an SSE data value cannot carry a line break: a reader gets the lines back joined with
// "\n" (so a CR in data comes back as LF). A nil data writes no data line at all (the event then
// has only its name); an empty non-nil data writes one `data: ` line, which reads back as empty
// data.
//
// It writes the pieces directly, without allocating, so w should be buffered (an
// http.ResponseWriter is). It does not flush. It returns the first error from w, or an error
// without writing anything when name contains CR or LF.
func WriteEvent(w io.Writer, name, data []byte) error {
	if name != nil {
		if bytes.ContainsAny(name, "\r\n") {
			return errNameBreak
		}
		if err := write3(w, eventPrefix, name, newline); err != nil {
			return err
		}
	}
	if data != nil {
		for {
			i := indexEOL(data)
			if i < 0 {
				if err := write3(w, dataPrefix, data, newline); err != nil {
					return err
				}
				break
			}
			if err := write3(w, dataPrefix, data[:i], newline); err != nil {
				return err
			}
			if data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n' {
				i++
			}
			data = data[i+1:]
		}
	}
	_, err := w.Write(newline)
	return err
}

// WriteComment writes a comment block `: text\n\n` to w, the keep-alive form every SDK ignores
// (wire.md §6). A text with line breaks (LF, CR or CRLF) is written as one `: ` line per line
// of text. It does not allocate when w implements io.StringWriter, and does not flush. It returns
// the first error from w.
func WriteComment(w io.Writer, text string) error {
	for {
		i := strings.IndexAny(text, "\r\n")
		line := text
		if i >= 0 {
			line = text[:i]
		}
		if _, err := w.Write(commentPrfx); err != nil {
			return err
		}
		if _, err := io.WriteString(w, line); err != nil {
			return err
		}
		if _, err := w.Write(newline); err != nil {
			return err
		}
		if i < 0 {
			break
		}
		if text[i] == '\r' && i+1 < len(text) && text[i+1] == '\n' {
			i++
		}
		text = text[i+1:]
	}
	_, err := w.Write(newline)
	return err
}

func write3(w io.Writer, a, b, c []byte) error {
	if _, err := w.Write(a); err != nil {
		return err
	}
	if len(b) > 0 {
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	_, err := w.Write(c)
	return err
}
