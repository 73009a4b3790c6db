package config

import (
	"errors"
	"fmt"
	"strings"
)

// lookupFunc returns the value of an environment variable and whether it is set
// (os.LookupEnv; tests pass a map).
type lookupFunc func(name string) (string, bool)

// errUnset is returned by expand for a ${VAR} whose variable is unset and has no default.
type errUnset struct{ name string }

func (e *errUnset) Error() string {
	return fmt.Sprintf("environment variable %s is not set (write ${%s:-default} to give a default)", e.name, e.name)
}

// expand interpolates environment variables in s:
//
//   - ${NAME} is NAME's value; it is an error (*errUnset) when NAME is unset. A set but empty
//     NAME gives "".
//   - ${NAME:-DEFAULT} is NAME's value when set and non-empty, else DEFAULT (taken literally up
//     to the first '}'; it may be empty).
//   - $${ is a literal "${".
//   - any other '$' is literal.
//
// NAME is [A-Za-z_][A-Za-z0-9_]*. A "${" without a closing '}' or with a bad NAME is an error.
// Every unset variable is reported, joined, in order of appearance.
func expand(s string, lookup lookupFunc) (string, error) {
	if !strings.Contains(s, "$") {
		return s, nil
	}
	var (
		b    strings.Builder
		errs []error
	)
	b.Grow(len(s))
	for i := 0; i < len(s); {
		c := s[i]
		if c != '$' {
			b.WriteByte(c)
			i++
			continue
		}
		if strings.HasPrefix(s[i:], "$${") {
			b.WriteString("${")
			i += 3
			continue
		}
		if !strings.HasPrefix(s[i:], "${") {
			b.WriteByte(c)
			i++
			continue
		}
		end := strings.IndexByte(s[i+2:], '}')
		if end < 0 {
			return "", errors.New(`unterminated "${" (write "$${" for a literal "${")`)
		}
		expr := s[i+2 : i+2+end]
		i += 2 + end + 1
		name, def, hasDef := strings.Cut(expr, ":-")
		if !validVarName(name) {
			return "", fmt.Errorf("invalid variable reference %q: want ${NAME} or ${NAME:-default}", "${"+expr+"}")
		}
		v, ok := lookup(name)
		switch {
		case hasDef && (!ok || v == ""):
			b.WriteString(def)
		case !ok:
			errs = append(errs, &errUnset{name: name})
		default:
			b.WriteString(v)
		}
	}
	if len(errs) > 0 {
		return "", errors.Join(errs...)
	}
	return b.String(), nil
}

// wholeVar reports the NAME of s when s is exactly "${NAME}" (no default, nothing around it).
func wholeVar(s string) (string, bool) {
	if len(s) < 4 || !strings.HasPrefix(s, "${") || s[len(s)-1] != '}' {
		return "", false
	}
	name := s[2 : len(s)-1]
	return name, validVarName(name)
}

func validVarName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '_', 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
