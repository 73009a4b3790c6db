package relay

import (
	"bytes"
	"unicode/utf8"
)

// replacementChar is U+FFFD in UTF-8, what invalid bytes of a provider answer become.
const replacementChar = "\uFFFD"

// validUTF8 returns b when it is valid UTF-8, else a copy with every run of invalid bytes
// replaced by U+FFFD (issue 25 item 5). A same-dialect answer is relayed without decoding, and
// JSON text must be UTF-8 (RFC 8259 §8.1): a provider's invalid bytes inside a string would
// otherwise reach the caller as invalid JSON, which strict clients refuse. Invalid bytes can
// only stand inside strings of a body that passed the JSON check, so the repair keeps it
// valid JSON. The check is one pass over the bytes; the copy happens only for a broken body.
func validUTF8(b []byte) []byte {
	if utf8.Valid(b) {
		return b
	}
	return bytes.ToValidUTF8(b, []byte(replacementChar))
}
