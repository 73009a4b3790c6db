// Package responses is the OpenAI Responses API codec (POST /v1/responses, wire.md §2): the
// gateway serves this surface FROM chat-completions and messages deployments, so a Responses
// request is always translated. It owns:
//
//   - request.go: ParseRequest (the light read routing needs, R-DIALECT-3) and DecodeRequest
//     (the full decode into the canonical dialect.Request, R-DIALECT-2): input items, flat function
//     tools, tool_choice, text.format, reasoning. Parameters with no canonical equivalent are
//     listed in Request.Dropped; those whose loss would change the meaning of the request
//     (hosted tools, previous_response_id, conversation, background, stored prompts, file ids,
//     item references) are refused with a typed 400 (invalid_request).
//   - response.go: AppendResponse (a canonical Response as a Responses-API Response object, with
//     the additive usage of dialect.Usage mapped to input_tokens including cached tokens) and
//     AppendErrorBody (the OpenAI-surface error body, R-ERR).
//   - stream_encode.go: StreamEncoder (canonical events as typed `event:`+`data:` SSE frames with
//     a strictly increasing sequence_number, ending in response.completed or response.incomplete;
//     no [DONE]) and the terminal failure frame of a committed stream (R-FAIL-4), shaped so that
//     openai-go, openai-node and openai-python all surface it as a stream error (wire.md §7.4).
//
// It imports only internal/dialect, internal/dialect/openai (for the shared error body),
// internal/failure, gjson and the standard library. docs/responses-api.md has the mapping table.
package responses
