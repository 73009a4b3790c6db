package dialect

import (
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Helpers both dialects' error code shares: retry-after parsing, case-insensitive search of a
// provider message (classification only: the text itself never reaches a caller), and JSON
// string encoding.

// MaxRetryAfter bounds a parsed retry-after only against overflow; clamping to 1..60 s is the
// circuit's business (R-CIRCUIT-4).
const MaxRetryAfter = 24 * time.Hour

// retryAfter reads `retry-after-ms` (milliseconds), then `retry-after` (seconds or HTTP-date).
func ParseRetryAfter(header func(string) string, now func() time.Time) time.Duration {
	if header == nil {
		return 0
	}
	if v := header("retry-after-ms"); v != "" {
		if d, ok := parseRetryNumber(v, float64(time.Millisecond)); ok {
			return d
		}
	}
	v := strings.TrimSpace(header("retry-after"))
	if v == "" {
		return 0
	}
	if d, ok := parseRetryNumber(v, float64(time.Second)); ok {
		return d
	}
	for _, layout := range [...]string{
		"Mon, 02 Jan 2006 15:04:05 GMT",  // RFC 9110 IMF-fixdate
		"Monday, 02-Jan-06 15:04:05 GMT", // RFC 850
		"Mon Jan _2 15:04:05 2006",       // ANSI C asctime
	} {
		if t, err := time.Parse(layout, v); err == nil {
			return min(max(t.Sub(now()), 0), MaxRetryAfter)
		}
	}
	return 0
}

// parseRetryNumber reads a non-negative decimal number of units, saturating at MaxRetryAfter.
func parseRetryNumber(v string, unit float64) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	for i := 0; i < len(v); i++ {
		if (v[i] < '0' || v[i] > '9') && v[i] != '.' {
			return 0, false
		}
	}
	x, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return 0, false
	}
	if x*unit >= float64(MaxRetryAfter) {
		return MaxRetryAfter, true
	}
	return time.Duration(x * unit), true
}

func IndexFold(s, substr string) int {
	for i := 0; i+len(substr) <= len(s); i++ {
		j := 0
		for ; j < len(substr); j++ {
			c := s[i+j]
			if c >= 'A' && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != substr[j] {
				break
			}
		}
		if j == len(substr) {
			return i
		}
	}
	return -1
}

func AppendJSONStringOrNull(dst []byte, s string) []byte {
	if s == "" {
		return append(dst, "null"...)
	}
	return AppendJSONString(dst, s)
}

// AppendJSONString appends s as a JSON string: quotes, backslashes and control characters are
// escaped, U+2028/U+2029 too (for JavaScript readers), and invalid UTF-8 becomes U+FFFD.
func AppendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
