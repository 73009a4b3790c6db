package dialect

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/switchyard-gw/switchyard/internal/failure"
)

func nested(open, close string, n int) []byte {
	return []byte(strings.Repeat(open, n) + strings.Repeat(close, n))
}

func TestTooDeep(t *testing.T) {
	deepObj := func(n int) []byte {
		return []byte(strings.Repeat(`{"a":`, n-1) + `{}` + strings.Repeat(`}`, n-1))
	}
	for _, tc := range []struct {
		name string
		in   []byte
		want bool
	}{
		{"empty", nil, false},
		{"scalar", []byte(`"x"`), false},
		{"arrays at the cap", nested("[", "]", MaxDepth), false},
		{"arrays past the cap", nested("[", "]", MaxDepth+1), true},
		{"objects at the cap", deepObj(MaxDepth), false},
		{"objects past the cap", deepObj(MaxDepth + 1), true},
		{"mixed past the cap", []byte(strings.Repeat(`[{"k":`, 65) + `1` + strings.Repeat(`}]`, 65)), true},
		{"unclosed past the cap", []byte(strings.Repeat("[", MaxDepth+1)), true},
		{"brackets in a string", []byte(`["` + strings.Repeat("[", 1000) + `"]`), false},
		{"escaped quote keeps the string open", []byte(`["\"` + strings.Repeat("[", 1000) + `"]`), false},
		{"escaped backslash ends the string", []byte(`["\\"` + strings.Repeat("[", 1000) + `]`), true},
		{"siblings do not add up", bytes.Repeat(nested("[", "]", 100), 50), false},
		// Closers never take the depth below zero: a leading run of them cannot hide nesting.
		{"leading closers", []byte(strings.Repeat("]", 500) + strings.Repeat("[", MaxDepth+1)), true},
	} {
		if got := TooDeep(tc.in); got != tc.want {
			t.Errorf("%s: TooDeep = %v, want %v", tc.name, got, tc.want)
		}
		if got := TooDeepString(string(tc.in)); got != tc.want {
			t.Errorf("%s: TooDeepString = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// The crash of issue 9: 12 million `[` (24 MB with the closers) used to overflow the goroutine
// stack inside gjson's recursive validator, which kills the process. The gates refuse it
// without recursing and without allocating.
func TestDeepBodyRefused(t *testing.T) {
	body := append([]byte(`{"model":"m","messages":`), nested("[", "]", 12_000_000)...)
	body = append(body, '}')
	err := CheckRequestJSON(body)
	var fe *failure.Error
	if !errors.As(err, &fe) || fe.Class != failure.InvalidRequest || !strings.Contains(fe.Msg, "nested deeper than 128 levels") {
		t.Fatalf("CheckRequestJSON = %v, want invalid_request naming the depth limit", err)
	}
	if err := ScanBody(body, func(string, gjson.Result) {}); err == nil || failure.From(err).Class != failure.InvalidRequest {
		t.Fatalf("ScanBody = %v, want invalid_request", err)
	}
	if Valid(body) || ValidString(string(body)) {
		t.Fatal("Valid accepted a body nested 12 million levels")
	}
	// Worst case for the scan: nesting just under the cap, repeated over megabytes.
	wide := bytes.Repeat(nested("[", "]", MaxDepth), 50_000)
	if allocs := testing.AllocsPerRun(3, func() {
		if TooDeep(wide) {
			t.Fatal("TooDeep: siblings at the cap reported as too deep")
		}
	}); allocs != 0 {
		t.Fatalf("TooDeep allocated %v times", allocs)
	}
	if fe := ResponseTooDeep(); fe.Class != failure.UpstreamError || !strings.Contains(fe.Msg, DepthLimit) {
		t.Fatalf("ResponseTooDeep = %v", fe)
	}
}

func TestValidStillValidates(t *testing.T) {
	for in, want := range map[string]bool{
		`{"a":[1,2,{"b":null}]}`:             true,
		`{"a":[1,2,{"b":nul}]}`:              false,
		`[`:                                  false,
		`{"a":1}}`:                           false,
		string(nested("[", "]", MaxDepth)):   true,
		string(nested("[", "]", MaxDepth+1)): false,
	} {
		if Valid([]byte(in)) != want || ValidString(in) != want {
			t.Errorf("Valid(%.40q) = %v, want %v", in, !want, want)
		}
	}
}

// refDepth is the nesting depth of valid JSON as encoding/json's token stream (a state machine,
// not recursive) sees it.
func refDepth(b []byte) (int, bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	depth, max := 0, 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return max, true
		}
		if err != nil {
			return 0, false
		}
		if d, ok := tok.(json.Delim); ok {
			if d == '[' || d == '{' {
				depth++
				max = maxInt(max, depth)
			} else {
				depth--
			}
		}
	}
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// FuzzTooDeep: on any input TooDeep returns (no panic); on valid JSON it agrees with the depth
// encoding/json's tokenizer reports; Valid never accepts what gjson rejects or what is too deep.
func FuzzTooDeep(f *testing.F) {
	for _, s := range []string{`{}`, `[[["a\"]"]]]`, `{"a":{"b":[1,{"c":"\\"}]}}`, string(nested("[", "]", MaxDepth+1)),
		string(nested("[", "]", MaxDepth)), `"\\\"["`, `]]]][[[[`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		deep := TooDeep(b)
		if deep != TooDeepString(string(b)) {
			t.Fatal("TooDeep and TooDeepString disagree")
		}
		if Valid(b) && (deep || !gjson.ValidBytes(b)) {
			t.Fatal("Valid accepted input that is too deep or not JSON")
		}
		if !json.Valid(b) {
			return
		}
		d, ok := refDepth(b)
		if !ok {
			return
		}
		if (d > MaxDepth) != deep {
			t.Fatalf("TooDeep = %v, encoding/json depth %d", deep, d)
		}
	})
}

// BenchmarkTooDeep: the gate's cost per byte on a body within the limit, next to gjson's own
// validator that runs after it.
func BenchmarkTooDeep(b *testing.B) {
	// A long prompt (prose with a line break now and then) and a tool schema 120 levels deep.
	body := []byte(`{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat(`The quick brown fox jumps over the lazy dog.\n`, 20_000) + `"}],"tools":` +
		strings.Repeat(`[{"a":`, 60) + `1` + strings.Repeat(`}]`, 60) + `}`)
	b.Run("TooDeep", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if TooDeep(body) {
				b.Fatal("too deep")
			}
		}
	})
	b.Run("gjson.Valid", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if !gjson.ValidBytes(body) {
				b.Fatal("invalid")
			}
		}
	})
}
