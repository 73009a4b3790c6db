package config

import (
	"errors"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func mustRead(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// env returns a lookupFunc over m.
func env(m map[string]string) lookupFunc {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// problems returns the *Problems joined in err; it fails the test on anything else.
func problems(t testing.TB, err error) []*Problem {
	t.Helper()
	if err == nil {
		return nil
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	out := make([]*Problem, 0, len(errs))
	for _, e := range errs {
		var p *Problem
		if !errors.As(e, &p) {
			t.Fatalf("error %q (%T) is not a *Problem", e, e)
		}
		out = append(out, p)
	}
	return out
}

// wants reads the `# want: `re` `re“ annotations of a YAML file, by line.
func wants(t testing.TB, data []byte) map[int][]*regexp.Regexp {
	t.Helper()
	out := make(map[int][]*regexp.Regexp)
	for i, line := range strings.Split(string(data), "\n") {
		_, rest, ok := strings.Cut(line, "# want: ")
		if !ok {
			continue
		}
		for rest = strings.TrimSpace(rest); rest != ""; rest = strings.TrimSpace(rest) {
			q, err := strconv.QuotedPrefix(rest)
			if err != nil {
				t.Fatalf("line %d: bad want %q: %v", i+1, rest, err)
			}
			s, _ := strconv.Unquote(q)
			out[i+1] = append(out[i+1], regexp.MustCompile(s))
			rest = rest[len(q):]
		}
	}
	return out
}
