package dialect

import (
	"strings"

	"github.com/tidwall/gjson"

	"github.com/switchyard-gw/switchyard/internal/failure"
)

// Answer is what ScanAnswer read from a provider's non-stream 200 body: the top-level members
// the gateway needs, each a gjson.Result over the body's own bytes (Index is its offset in the
// body, Raw its text; a member that is absent does not Exist).
type Answer struct {
	// Model is the first top-level `model` member: the id echoed back as the caller's (R-MODEL-6).
	Model gjson.Result
	// Usage is the first top-level `usage` member: the provider-reported usage (R-BILL-2).
	Usage gjson.Result
	// Member is the answer member named in the call (`choices`, `content`, `data`,
	// `input_tokens`); the last one when the body repeats it.
	Member gjson.Result
}

// errUnreadable is a provider answer that is not valid JSON.
func errUnreadable() *failure.Error {
	return &failure.Error{Class: failure.UpstreamError, Msg: "the provider sent an unreadable response"}
}

// ScanAnswer checks a provider's non-stream 200 body before it is passed through, in one pass
// over its bytes, and returns its top-level members model, usage and answer. It validates,
// limits the depth and checks the answer in one linear scan, without recursion past MaxDepth,
// allocation or decoding: body must be valid JSON (RFC 8259 grammar; string bytes are not
// checked for UTF-8, as no JSON validator of the gateway does for provider bytes) nested at most
// MaxDepth levels, and a JSON object with no non-null top-level `error` whose member answer is
// an array, non-empty unless emptyOK (`choices` of a chat completion, `data` of an embeddings or
// images list, `content` of a message), or a number when answer is `input_tokens` (a
// count_tokens answer). Anything else is an upstream_error *failure.Error naming the depth
// limit (ResponseTooDeep), an unreadable response, an error object sent with status 200, or the
// answer that is missing: the attempt fails over before anything reached the caller, and no
// empty success is relayed (R-FAIL-2; "nothing ends in an empty 200").
func ScanAnswer(body []byte, answer string, emptyOK bool) (Answer, error) {
	var a Answer
	sc := answerScan{s: View(body), answer: answer}
	sc.ws()
	if sc.i >= len(sc.s) || sc.s[sc.i] != '{' { // not an object: unreadable, valid or not
		sc.i = len(sc.s)
		return a, sc.failure()
	}
	if !sc.object(0, true) {
		return a, sc.failure()
	}
	if sc.ws(); sc.i != len(sc.s) {
		return a, sc.failure()
	}
	a.Model, a.Usage, a.Member = sc.member(sc.model), sc.member(sc.usage), sc.member(sc.found)
	return a, checkMembers(sc.isError, a.Member, answer, emptyOK)
}

// checkMembers is ScanAnswer's verdict on a JSON object's top-level members: isError says it
// has a non-null `error`, found is its member answer.
func checkMembers(isError bool, found gjson.Result, answer string, emptyOK bool) error {
	ok := false
	switch {
	case isError:
	case answer == "input_tokens":
		ok = found.Type == gjson.Number
	case found.IsArray():
		ok = emptyOK || !EmptyArray(found)
	}
	if ok {
		return nil
	}
	msg := "the provider answered 200 without `" + answer + "`"
	if isError {
		msg = "the provider answered 200 with an error object"
	}
	return &failure.Error{Class: failure.UpstreamError, Msg: msg}
}

// span is a member value's [start, end) in the body; end 0: absent.
type span struct{ start, end int }

// answerScan is ScanAnswer's scanner: a recursive descent over s whose depth is bounded by
// MaxDepth (the Go stack it takes is bounded too), recording the spans of the top-level members
// it is asked for.
type answerScan struct {
	s      string
	i      int
	answer string
	deep   bool // the scan stopped at a container nested deeper than MaxDepth
	// the top-level members: model and usage first seen, the answer member last seen
	model, usage, found span
	isError             bool
}

// failure is the error of a scan that stopped: too deep, or not valid JSON.
func (sc *answerScan) failure() *failure.Error {
	if sc.deep || TooDeepString(sc.s) { // a body both invalid and too deep is named too deep, as before
		return ResponseTooDeep()
	}
	return errUnreadable()
}

// member is the gjson.Result of a recorded span (its Index the offset in the body).
func (sc *answerScan) member(sp span) gjson.Result {
	if sp.end == 0 {
		return gjson.Result{}
	}
	r := gjson.Parse(sc.s[sp.start:sp.end])
	r.Index = sp.start
	return r
}

// ws skips JSON whitespace.
func (sc *answerScan) ws() {
	for sc.i < len(sc.s) {
		switch sc.s[sc.i] {
		case ' ', '\t', '\n', '\r':
			sc.i++
		default:
			return
		}
	}
}

// value scans one JSON value at sc.i (whitespace skipped before it); depth counts the
// containers around it.
func (sc *answerScan) value(depth int) bool {
	sc.ws()
	if sc.i >= len(sc.s) {
		return false
	}
	switch c := sc.s[sc.i]; {
	case c == '{':
		return sc.object(depth, false)
	case c == '[':
		return sc.array(depth)
	case c == '"':
		return sc.str()
	case c == 't':
		return sc.lit("true")
	case c == 'f':
		return sc.lit("false")
	case c == 'n':
		return sc.lit("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return sc.num()
	}
	return false
}

// object scans the object at sc.i ('{'); top records the members ScanAnswer returns.
func (sc *answerScan) object(depth int, top bool) bool {
	if depth++; depth > MaxDepth {
		sc.deep = true
		return false
	}
	sc.i++ // '{'
	sc.ws()
	if sc.i < len(sc.s) && sc.s[sc.i] == '}' {
		sc.i++
		return true
	}
	for {
		sc.ws()
		if sc.i >= len(sc.s) || sc.s[sc.i] != '"' {
			return false
		}
		ks := sc.i
		if !sc.str() {
			return false
		}
		key := sc.s[ks+1 : sc.i-1]
		if top && strings.IndexByte(key, '\\') >= 0 { // an escaped name: compare it unescaped
			key = gjson.Parse(sc.s[ks:sc.i]).Str
		}
		sc.ws()
		if sc.i >= len(sc.s) || sc.s[sc.i] != ':' {
			return false
		}
		sc.i++
		sc.ws()
		vs := sc.i
		if !sc.value(depth) {
			return false
		}
		if top {
			sc.record(key, span{vs, sc.i})
		}
		if more, ok := sc.next('}'); !more {
			return ok
		}
	}
}

// next reads what follows a member or an element: a comma (more true: another follows) or the
// container's closing byte (more false, ok true); anything else is invalid (both false).
func (sc *answerScan) next(closing byte) (more, ok bool) {
	sc.ws()
	if sc.i >= len(sc.s) {
		return false, false
	}
	switch sc.s[sc.i] {
	case ',':
		sc.i++
		return true, true
	case closing:
		sc.i++
		return false, true
	}
	return false, false
}

// record notes a top-level member: model and usage as gjson.Get finds them (the first), the
// answer member as the former member check did (the last), and any non-null error.
func (sc *answerScan) record(key string, v span) {
	switch key {
	case "model":
		if sc.model.end == 0 {
			sc.model = v
		}
	case "usage":
		if sc.usage.end == 0 {
			sc.usage = v
		}
	case "error":
		if !(v.end-v.start == 4 && sc.s[v.start:v.end] == "null") {
			sc.isError = true
		}
	}
	if key == sc.answer {
		sc.found = v
	}
}

// array scans the array at sc.i ('[').
func (sc *answerScan) array(depth int) bool {
	if depth++; depth > MaxDepth {
		sc.deep = true
		return false
	}
	sc.i++ // '['
	sc.ws()
	if sc.i < len(sc.s) && sc.s[sc.i] == ']' {
		sc.i++
		return true
	}
	for {
		if !sc.value(depth) {
			return false
		}
		if more, ok := sc.next(']'); !more {
			return ok
		}
	}
}

// plainString marks the bytes a JSON string holds as they are: not the quote, the backslash or a
// control character.
var plainString = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// str scans the string at sc.i ('"'): escapes as RFC 8259 §7 lists them, no raw control
// character.
func (sc *answerScan) str() bool {
	s := sc.s
	i := sc.i + 1
	for {
		for i < len(s) && plainString[s[i]] {
			i++
		}
		if i >= len(s) {
			return false
		}
		switch s[i] {
		case '"':
			sc.i = i + 1
			return true
		case '\\':
			if i+1 >= len(s) {
				return false
			}
			switch s[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(s) || !isHex(s[i+2]) || !isHex(s[i+3]) || !isHex(s[i+4]) || !isHex(s[i+5]) {
					return false
				}
				i += 6
			default:
				return false
			}
		default: // a control character
			return false
		}
	}
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// lit scans the literal w (true, false, null).
func (sc *answerScan) lit(w string) bool {
	if !strings.HasPrefix(sc.s[sc.i:], w) {
		return false
	}
	sc.i += len(w)
	return true
}

// num scans a number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (sc *answerScan) num() bool {
	s, i := sc.s, sc.i
	if s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		d := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == d {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		d := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == d {
			return false
		}
	}
	sc.i = i
	return true
}

// KeepFirst stores v in dst unless dst already holds a value: in a one-pass read of an object's
// members, the first of repeated members wins, as a gjson path lookup finds it.
func KeepFirst(dst *gjson.Result, v gjson.Result) {
	if !dst.Exists() {
		*dst = v
	}
}
