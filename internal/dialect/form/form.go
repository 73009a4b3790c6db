// Package form reads a multipart/form-data body held in memory (RFC 7578) as byte offsets into
// it, without copying any part's content: the gateway routes on a few small fields (model,
// extra) and forwards the body itself, so it needs where the parts are, not their bytes. The
// scanner is strict where the SDKs never stray (CRLF line ends, no preamble, the boundary of
// the Content-Type header on the first line) and bounded everywhere (parts, header bytes):
// hostile bodies are refused with an invalid_request *failure.Error, never a panic or a long
// scan. AppendEdited rewrites a body by those offsets: a part's value replaced, parts cut out.
package form

import (
	"bytes"
	"mime"
	"strconv"
	"strings"

	"github.com/switchyard-gw/switchyard/internal/failure"
)

// Limits of one body; the zero value of a field takes the default below.
type Limits struct {
	// MaxParts is the most parts a body may have (default DefaultMaxParts).
	MaxParts int
	// MaxHeaderBytes is the most bytes one part's header block may take (default
	// DefaultMaxHeaderBytes).
	MaxHeaderBytes int
}

// The defaults of Limits: OpenAI's image edits take up to 16 images and about 15 fields.
const (
	DefaultMaxParts       = 64
	DefaultMaxHeaderBytes = 8 << 10
	// MaxBoundary is RFC 2046's longest boundary (70 characters).
	MaxBoundary = 70
)

// Part is one part of a body, as offsets into it: body[Start:End] is the whole part (its
// "--boundary" line up to the next one's start), body[ValueStart:ValueEnd] its content.
type Part struct {
	// Name and Filename are the Content-Disposition parameters name and filename ("" when
	// absent); Filename set makes the part a file.
	Name, Filename string
	// ContentType is the part's Content-Type header ("" when absent).
	ContentType string
	// Encoded says the part has a Content-Transfer-Encoding other than 7bit, 8bit or binary
	// (its bytes are not its value).
	Encoded              bool
	Start, End           int
	ValueStart, ValueEnd int
}

// IsFile reports whether the part is a file upload (it has a filename).
func (p *Part) IsFile() bool { return p.Filename != "" }

func invalid(msg string) *failure.Error {
	return &failure.Error{Class: failure.InvalidRequest, Msg: "the multipart/form-data body is malformed: " + msg}
}

// Boundary returns the boundary parameter of a multipart/form-data Content-Type header value.
// A missing or other media type, a missing boundary, or one RFC 2046 does not allow (1-70
// characters, no trailing space) is invalid_request.
func Boundary(contentType string) (string, error) {
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil || mt != "multipart/form-data" {
		return "", &failure.Error{Class: failure.InvalidRequest,
			Msg: "this endpoint takes a multipart/form-data body (Content-Type: multipart/form-data; boundary=...)"}
	}
	b := params["boundary"]
	if b == "" || len(b) > MaxBoundary || strings.HasSuffix(b, " ") || strings.ContainsAny(b, "\r\n") {
		return "", &failure.Error{Class: failure.InvalidRequest,
			Msg: "the Content-Type header has no valid multipart boundary (1 to 70 characters)"}
	}
	return b, nil
}

// Scan calls visit for every part of body, in order, with the part's offsets; body must begin
// with "--" + boundary (no preamble) and end with the close delimiter ("--" + boundary + "--",
// optionally followed by CRLF and an epilogue that is ignored). visit's error stops the scan and
// is returned. Every header block must end in CRLF CRLF within lim.MaxHeaderBytes, carry a
// Content-Disposition of form-data with a name, and the parts may number at most lim.MaxParts.
// Scan allocates only the strings of each part's names (the Part is reused between calls).
func Scan(body []byte, boundary string, lim Limits, visit func(p *Part) error) error {
	if lim.MaxParts <= 0 {
		lim.MaxParts = DefaultMaxParts
	}
	if lim.MaxHeaderBytes <= 0 {
		lim.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if boundary == "" || len(boundary) > MaxBoundary {
		return invalid("no valid boundary")
	}
	var dashBuf [2 + 2 + MaxBoundary]byte
	delim := append(append(dashBuf[:0], "\r\n--"...), boundary...) // CRLF "--" boundary
	dash := delim[2:]
	if !bytes.HasPrefix(body, dash) {
		return invalid("the body does not begin with the boundary of its Content-Type")
	}
	var p Part
	pos := 0 // the start of the current "--boundary" line
	for n := 0; ; n++ {
		i := pos + len(dash)
		if bytes.HasPrefix(body[i:], []byte("--")) {
			if n == 0 {
				return invalid("the body has no parts")
			}
			return nil // the close delimiter: what follows is the epilogue
		}
		for i < len(body) && (body[i] == ' ' || body[i] == '\t') { // transport padding
			i++
		}
		if !bytes.HasPrefix(body[i:], []byte("\r\n")) {
			return invalid("a boundary line does not end in CRLF")
		}
		if n == lim.MaxParts {
			return invalid("more than " + strconv.Itoa(lim.MaxParts) + " parts")
		}
		i += 2
		hdrEnd := bytes.Index(body[i:min(len(body), i+lim.MaxHeaderBytes+4)], []byte("\r\n\r\n"))
		switch {
		case bytes.HasPrefix(body[i:], []byte("\r\n")): // no header at all
			hdrEnd = -2
		case hdrEnd < 0:
			return invalid("a part's headers do not end within " + strconv.Itoa(lim.MaxHeaderBytes) + " bytes")
		}
		p = Part{Start: pos}
		if hdrEnd >= 0 {
			if err := readHeaders(body[i:i+hdrEnd], &p); err != nil {
				return err
			}
		}
		if p.Name == "" {
			return invalid("a part has no Content-Disposition: form-data; name=\"...\"")
		}
		p.ValueStart = i + hdrEnd + 4
		if bytes.HasPrefix(body[p.ValueStart:], dash) {
			// The blank line's CRLF would be the delimiter's: an ambiguous empty part that no
			// writer produces (an empty value is CRLF CRLF CRLF "--" boundary).
			return invalid("a part's content begins with the boundary")
		}
		next := bytes.Index(body[p.ValueStart:], delim)
		if next < 0 {
			return invalid("the body ends before the close delimiter")
		}
		p.ValueEnd = p.ValueStart + next
		pos = p.ValueEnd + 2
		p.End = pos
		if err := visit(&p); err != nil {
			return err
		}
	}
}

// readHeaders reads a part's header block (lines separated by CRLF, no final CRLF) into p.
func readHeaders(block []byte, p *Part) error {
	disposition := false
	for len(block) > 0 {
		line := block
		if j := bytes.Index(block, []byte("\r\n")); j >= 0 {
			line, block = block[:j], block[j+2:]
		} else {
			block = nil
		}
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 || !token(line[:colon]) || bytes.IndexByte(line, '\n') >= 0 || bytes.IndexByte(line, '\r') >= 0 {
			return invalid("a part header line is not `Name: value`") // folded lines included
		}
		name := line[:colon]
		value := string(bytes.TrimSpace(line[colon+1:]))
		switch {
		case asciiEqualFold(name, "Content-Disposition"):
			if disposition {
				return invalid("a part has two Content-Disposition headers")
			}
			disposition = true
			d, params, err := mime.ParseMediaType(value)
			if err != nil || d != "form-data" {
				return invalid("a part's Content-Disposition is not form-data")
			}
			p.Name, p.Filename = params["name"], params["filename"]
			if _, ok := params["filename"]; ok && p.Filename == "" {
				p.Filename = "file" // an empty filename is still a file part
			}
		case asciiEqualFold(name, "Content-Type"):
			p.ContentType = value
		case asciiEqualFold(name, "Content-Transfer-Encoding"):
			switch strings.ToLower(value) {
			case "7bit", "8bit", "binary":
			default:
				p.Encoded = true
			}
		}
	}
	return nil
}

// token reports whether b is an RFC 7230 token (a header name).
func token(b []byte) bool {
	for _, c := range b {
		if c <= ' ' || c >= 0x7f || strings.IndexByte("\"(),/:;<=>?@[\\]{}", c) >= 0 {
			return false
		}
	}
	return len(b) > 0
}

func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		c, d := b[i], s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if 'A' <= d && d <= 'Z' {
			d += 'a' - 'A'
		}
		if c != d {
			return false
		}
	}
	return true
}

// Edit is a change AppendEdited makes to one part: its value replaced (Drop false) or the
// whole part cut out (Drop true). Parts are named by their Start offset as Scan gave it.
type Edit struct {
	Start int
	Drop  bool
	// ValueStart, ValueEnd and Value replace body[ValueStart:ValueEnd] with Value.
	ValueStart, ValueEnd int
	Value                string
	// End is the part's end (Part.End), for a drop.
	End int
}

// AppendEdited appends body to dst with edits applied; edits must be in body order and must
// not overlap (one per part). Every byte outside the edits is the caller's: the boundary, the
// other parts and their order are unchanged, so the result is the same multipart body less
// the dropped parts.
func AppendEdited(dst, body []byte, edits []Edit) []byte {
	at := 0
	for _, e := range edits {
		if e.Drop {
			dst = append(dst, body[at:e.Start]...)
			at = e.End
			continue
		}
		dst = append(dst, body[at:e.ValueStart]...)
		dst = append(dst, e.Value...)
		at = e.ValueEnd
	}
	return append(dst, body[at:]...)
}
