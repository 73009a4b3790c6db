// Package openai is the OpenAI wire dialect (Chat Completions, Responses, Embeddings): it reads
// and writes OpenAI-shaped requests, responses, stream frames and errors, to and from the
// canonical forms of package dialect. It imports only internal/dialect, internal/failure,
// internal/sse, gjson and the standard library, never another dialect.
//
// errors.go owns the OpenAI side of failure handling:
//   - NormalizeError and NormalizeStreamError classify an upstream's error response or in-stream
//     error event into a canonical failure class, once (R-FAIL-5, R-FAIL-6, R-FAIL-7, R-ERR):
//     content policy before every status rule, context overflow by code or message, the
//     gateway's own credentials and quota as upstream_auth. The caller-facing message is fixed
//     per class; provider text never reaches a caller or a log.
//   - AppendErrorBody and AppendStreamError encode a *failure.Error as the OpenAI-surface error
//     body and as the terminal in-stream error frame of a committed stream (R-FAIL-4), with the
//     native type and code strings of R-ERR so that SDK retry logic works.
package openai
