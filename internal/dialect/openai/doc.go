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
//
// Translation to and from the canonical types (R-DIALECT-1, R-DIALECT-2; docs/translation.md):
// translate_request.go (DecodeRequest) and translate_encode.go (AppendRequest) decode an OpenAI
// caller's request once and encode an OpenAI upstream request, dropping (Request.Dropped) or
// refusing with a typed 400 what cannot be carried; translate_response.go decodes and encodes
// non-stream chat.completion bodies; stream_decode.go (StreamDecoder) and stream_encode.go
// (StreamEncoder) translate chunks per event without allocating, copying text as raw JSON
// literals (rawjson.go), with one constant chunk id and the usage chunk exactly when asked.
package openai
