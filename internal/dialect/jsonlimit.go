package dialect

import (
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/switchyard-gw/switchyard/internal/failure"
)

// MaxDepth is the deepest nesting of JSON arrays and objects the gateway parses, in caller
// request bodies and in provider bodies, stream events and error bodies alike: 128 levels (a
// top-level object is level 1). Real requests nest a dozen levels at most (a tool schema inside
// a tool inside the request); the cap exists because the recursive parsers behind it (gjson's
// validator, the translators) would otherwise take stack in proportion to the input, and a
// body of 12 million `[` overflows the goroutine stack, which kills the process.
const MaxDepth = 128

// DepthLimit names the limit in error messages: "nested deeper than 128 levels".
const DepthLimit = "nested deeper than 128 levels"

// TooDeep reports whether the JSON text b nests arrays and objects deeper than MaxDepth. It is
// one linear scan of the bytes, without recursion or allocation, that tracks string state
// (quotes, backslash escapes) and bracket depth; it does not validate otherwise (a parser runs
// after it). A closing bracket never takes the depth below zero, so the depth it tracks is at
// least the depth of any parser reading the same bytes while their prefix is still valid JSON.
// It is the gate in front of every recursive parse of caller or provider bytes. Strings are
// skipped with a vectorized search for their closing quote.
func TooDeep(b []byte) bool { return tooDeep(View(b)) }

// TooDeepString is TooDeep for a string.
func TooDeepString(s string) bool { return tooDeep(s) }

// structural marks the bytes the scan stops at outside strings.
var structural = [256]bool{'"': true, '[': true, '{': true, ']': true, '}': true}

func tooDeep(b string) bool {
	depth := 0
	for i := 0; i < len(b); i++ {
		c := b[i]
		if !structural[c] {
			continue
		}
		switch c {
		case '"':
			i = stringEnd(b, i+1)
		case '[', '{':
			if depth++; depth > MaxDepth {
				return true
			}
		default: // ']', '}'
			if depth > 0 {
				depth--
			}
		}
	}
	return false
}

// stringEnd returns the index of the quote that closes the string whose content starts at
// b[i], or len(b) when it is unterminated. A quote is escaped when an odd number of
// backslashes precedes it; the runs of backslashes counted are disjoint, so the whole scan
// stays linear.
func stringEnd(b string, i int) int {
	for {
		j := strings.IndexByte(b[i:], '"')
		if j < 0 {
			return len(b)
		}
		q := i + j
		n := 0
		for k := q - 1; k >= i && b[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			return q
		}
		i = q + 1
	}
}

// Valid reports whether b is valid JSON nested at most MaxDepth levels. Use it, never
// gjson.Valid or gjson.ValidBytes directly: gjson's validator recurses once per level.
func Valid(b []byte) bool { return !TooDeep(b) && gjson.ValidBytes(b) }

// ValidString is Valid for a string.
func ValidString(s string) bool { return !tooDeep(s) && gjson.Valid(s) }

// CheckRequestJSON is the request-side gate, run before any parse of a caller's body: nil when
// body is valid JSON in valid UTF-8 nested at most MaxDepth levels, else an invalid_request
// *failure.Error naming the limit, or saying the body is not UTF-8 or not JSON. JSON text must
// be UTF-8 (RFC 8259 §8.1) and the providers refuse anything else; refusing it here also keeps
// translation exact (the encoders write U+FFFD for invalid bytes, so a decoded request would
// not survive a round trip) and keeps invalid bytes out of logs and the audit.
func CheckRequestJSON(body []byte) error {
	if TooDeep(body) {
		return RequestTooDeep()
	}
	if !utf8.Valid(body) {
		return &failure.Error{Class: failure.InvalidRequest, Msg: "the request body is not valid UTF-8"}
	}
	if !gjson.ValidBytes(body) {
		return &failure.Error{Class: failure.InvalidRequest, Msg: "the request body is not valid JSON"}
	}
	return nil
}

// RequestTooDeep is the caller's answer to a body nested deeper than MaxDepth: 400
// invalid_request in the caller's dialect, naming the limit.
func RequestTooDeep() *failure.Error {
	return &failure.Error{Class: failure.InvalidRequest, Msg: "the request body is " + DepthLimit + " of arrays and objects"}
}

// ResponseTooDeep is a provider answer (a response body or a stream event) nested deeper than
// MaxDepth: an upstream_error, which counts on the deployment's circuit and fails over while
// nothing has reached the caller.
func ResponseTooDeep() *failure.Error {
	return &failure.Error{Class: failure.UpstreamError, Msg: "the provider sent a response " + DepthLimit + " of arrays and objects"}
}
