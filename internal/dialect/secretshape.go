package dialect

import "strings"

// secretPrefixes are the leading bytes of common credentials: OpenAI, Anthropic and Stripe-style
// keys (sk-, sk_live_, rk_, pk_), AWS access key ids, GitHub and Slack tokens, Google API keys.
var secretPrefixes = [...]string{"sk-", "sk_", "rk_", "pk_live", "pk_test", "AKIA", "ASIA", "ghp_", "gho_", "ghs_", "github_pat_", "xox", "AIza"}

// LooksSecret reports whether a provider token (an error type or code, already reduced to an
// identifier) has the shape of a credential: it starts with a known key prefix, or it is 24
// bytes or longer and holds a run of 16 or more letters and digits mixing both (a random id or
// key, never one of the providers' word-shaped codes such as context_length_exceeded). Such a
// token is redacted from logs and withheld from callers: a provider may echo a key in a code.
func LooksSecret(s string) bool {
	for _, p := range secretPrefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	if len(s) < 24 {
		return false
	}
	run, letters, digits := 0, false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			run, digits = run+1, true
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			run, letters = run+1, true
		default:
			run, letters, digits = 0, false, false
		}
		if run >= 16 && letters && digits {
			return true
		}
	}
	return false
}

// RedactedToken is what a log line shows in place of a token for which LooksSecret holds.
const RedactedToken = "[redacted]"
