package openai

import (
	"strings"

	"github.com/tidwall/gjson"
)

// A minimal zero-allocation JSON walker for the stream hot path. gjson unescapes every string
// value it visits (an allocation when the value holds an escape, as most text deltas do); the
// stream codec needs only the raw literals, so it walks objects itself. Malformed input ends the
// walk early; it never panics. Keys are compared raw: an escaped key does not match.

// rawObject calls fn with each key (raw, without quotes) and raw value of the JSON object obj,
// until fn returns false. It reports whether obj was walked to its end without a syntax error.
func rawObject(obj string, fn func(key, val string) bool) bool {
	i := skipWS(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return false
	}
	i = skipWS(obj, i+1)
	if i < len(obj) && obj[i] == '}' {
		return true
	}
	for i < len(obj) {
		if obj[i] != '"' {
			return false
		}
		ke := skipString(obj, i)
		if ke < 0 {
			return false
		}
		key := obj[i+1 : ke-1]
		i = skipWS(obj, ke)
		if i >= len(obj) || obj[i] != ':' {
			return false
		}
		vs := skipWS(obj, i+1)
		ve := skipValue(obj, vs)
		if ve < 0 {
			return false
		}
		if !fn(key, obj[vs:ve]) {
			return true
		}
		i = skipWS(obj, ve)
		if i >= len(obj) {
			return false
		}
		switch obj[i] {
		case ',':
			i = skipWS(obj, i+1)
		case '}':
			return true
		default:
			return false
		}
	}
	return false
}

// rawArray calls fn with each raw element of the JSON array arr, until fn returns false.
func rawArray(arr string, fn func(val string) bool) bool {
	i := skipWS(arr, 0)
	if i >= len(arr) || arr[i] != '[' {
		return false
	}
	i = skipWS(arr, i+1)
	if i < len(arr) && arr[i] == ']' {
		return true
	}
	for i < len(arr) {
		ve := skipValue(arr, i)
		if ve < 0 {
			return false
		}
		if !fn(arr[i:ve]) {
			return true
		}
		i = skipWS(arr, ve)
		if i >= len(arr) {
			return false
		}
		switch arr[i] {
		case ',':
			i = skipWS(arr, i+1)
		case ']':
			return true
		default:
			return false
		}
	}
	return false
}

func skipWS(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string literal starting at s[i] == '"', or -1.
func skipString(s string, i int) int {
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// skipValue returns the index after the JSON value starting at s[i], or -1.
func skipValue(s string, i int) int {
	if i >= len(s) {
		return -1
	}
	switch s[i] {
	case '"':
		return skipString(s, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(s); j++ {
			switch s[j] {
			case '"':
				e := skipString(s, j)
				if e < 0 {
					return -1
				}
				j = e - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(s) && s[j] != ',' && s[j] != '}' && s[j] != ']' && s[j] != ' ' && s[j] != '\n' && s[j] != '\r' && s[j] != '\t' {
		j++
	}
	if j == i {
		return -1
	}
	return j
}

// isNonEmptyString reports whether raw is a string literal with content (not `""`).
func isNonEmptyString(raw string) bool { return len(raw) > 2 && raw[0] == '"' }

// unquote returns the value of the string literal raw as a new string ("" when raw is not a
// string). Used for ids and names, once per stream or tool call.
func unquote(raw string) string {
	if len(raw) < 2 || raw[0] != '"' {
		return ""
	}
	for i := 1; i < len(raw)-1; i++ {
		if raw[i] == '\\' {
			return gjsonString(raw)
		}
	}
	return strings.Clone(raw[1 : len(raw)-1])
}

func gjsonString(raw string) string { return gjson.Parse(raw).Str }
