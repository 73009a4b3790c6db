// Package anthropic is the Anthropic Messages wire dialect: it reads and writes
// Anthropic-shaped requests, responses, stream events and errors, to and from the canonical
// forms of package dialect. It imports only internal/dialect, internal/failure, internal/sse,
// gjson and the standard library, never another dialect.
//
// errors.go owns the Anthropic side of failure handling:
//   - NormalizeError and NormalizeStreamError classify an upstream's error response or
//     `event: error` into a canonical failure class, once (R-FAIL-5, R-FAIL-6, R-FAIL-7, R-ERR):
//     content policy before every status rule, context overflow by message text ("prompt is
//     too long", "exceed context limit"), 529 overloaded_error as upstream_error, the
//     gateway's own credentials and balance as upstream_auth. The caller-facing message is
//     fixed per class; provider text never reaches a caller or a log.
//   - AppendErrorBody and AppendStreamError encode a *failure.Error as the Anthropic-surface
//     error body and as the terminal `event: error` of a committed stream (R-FAIL-4), with the
//     native type strings of R-ERR so that SDK retry logic works.
//
// translate_request*.go, translate_response.go, stream_decode.go and stream_encode.go own the
// translation between this dialect and the canonical types (R-DIALECT-2, wire.md §5; the table
// is docs/translation.md): DecodeRequest/AppendRequest, DecodeResponse/AppendResponse
// and the allocation-free StreamDecoder/StreamEncoder.
package anthropic
