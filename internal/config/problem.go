package config

import (
	"fmt"
	"strconv"
	"strings"
)

// Problem is one thing wrong with a configuration. Load, Parse and Validate return every
// problem found, joined with errors.Join; each one is a *Problem, so callers may recover the
// position with errors.As on the joined error's Unwrap() []error.
type Problem struct {
	// File is the file name given to Load or Parse; "" for a Config built in Go.
	File string
	// Line is the 1-based line of the offending value (or of its nearest enclosing entry when
	// the value itself is absent); 0 when unknown.
	Line int
	// Path names the offending value, e.g. "deployments[2].routes[0].model"; "" when unknown.
	Path string
	// Msg says what is wrong. It never contains a credential or a URL's value.
	Msg string
}

// Error formats the problem as "FILE:LINE: PATH: MSG", leaving out the parts that are unknown.
func (p *Problem) Error() string {
	var b strings.Builder
	if p.File != "" {
		b.WriteString(p.File)
		b.WriteByte(':')
		if p.Line > 0 {
			b.WriteString(strconv.Itoa(p.Line))
			b.WriteByte(':')
		}
		b.WriteByte(' ')
	}
	if p.Path != "" {
		b.WriteString(p.Path)
		b.WriteString(": ")
	}
	b.WriteString(p.Msg)
	return b.String()
}

// positions remembers, for a Config read from YAML, the line of every value by path, and the
// environment variable behind a credential left empty because it was unset.
type positions struct {
	file string
	// lines maps a path ("server.listen", "deployments[0]") to the 1-based line of its value.
	// Only values written in the file (not null) are present.
	lines map[string]int
	// byLine maps a line to the one scalar path on it ("" when several share the line).
	byLine map[int]string
	// unsetVars maps the path of a credential written exactly as "${VAR}" to VAR, when VAR
	// was unset and the credential was left empty.
	unsetVars map[string]string
	// emptyVars maps the path of a credential written exactly as "${VAR}" to VAR, when VAR was
	// set but empty (exported as ""): the credential is empty all the same.
	emptyVars map[string]string
}

func newPositions(file string) *positions {
	return &positions{
		file:      file,
		lines:     make(map[string]int),
		byLine:    make(map[int]string),
		unsetVars: make(map[string]string),
		emptyVars: make(map[string]string),
	}
}

// has reports whether path was written (non-null) in the file. A nil receiver has nothing.
func (p *positions) has(path string) bool {
	if p == nil {
		return false
	}
	_, ok := p.lines[path]
	return ok
}

// line returns the line of path or, when path was not written, of its nearest written
// ancestor ("deployments[1].provider" falls back to "deployments[1]"); 0 when none is known.
func (p *positions) line(path string) int {
	if p == nil {
		return 0
	}
	for path != "" {
		if l, ok := p.lines[path]; ok {
			return l
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			break
		}
		path = path[:i]
	}
	return 0
}

func (p *positions) fileName() string {
	if p == nil {
		return ""
	}
	return p.file
}

// record notes that the value at path is on line. Scalars also index byLine, so that yaml's
// "line N: cannot unmarshal" messages can be given a path.
func (p *positions) record(path string, line int, scalar bool) {
	p.lines[path] = line
	if !scalar {
		return
	}
	if prev, ok := p.byLine[line]; ok && prev != path {
		p.byLine[line] = ""
		return
	}
	p.byLine[line] = path
}

// problem builds a Problem at path, with its line looked up.
func (p *positions) problem(path, format string, args ...any) *Problem {
	return &Problem{File: p.fileName(), Line: p.line(path), Path: path, Msg: fmt.Sprintf(format, args...)}
}
