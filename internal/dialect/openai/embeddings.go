package openai

import (
	"strings"

	"github.com/tidwall/gjson"

	"github.com/switchyard-gw/switchyard/internal/dialect"
	"github.com/switchyard-gw/switchyard/internal/failure"
)

// ParseEmbeddingsRequest reads the fields routing needs from a POST /v1/embeddings body without
// decoding it: a JSON object with a non-empty string `model` and an `input` (a string or an
// array), no duplicate keys. Embeddings are never streamed. The body is forwarded with only
// `model` rewritten (AppendUpstreamBody), and the response's `model` is echoed as the caller's
// (RewriteResponse); its usage.prompt_tokens is the input-token count.
func ParseEmbeddingsRequest(body []byte) (dialect.RequestInfo, error) {
	var info dialect.RequestInfo
	var m, input gjson.Result
	if err := dialect.ScanBody(body, func(k string, v gjson.Result) {
		switch k {
		case "model":
			m = v
		case "input":
			input = v
		}
	}); err != nil {
		return info, err
	}
	if m.Type != gjson.String || m.Str == "" {
		return info, &failure.Error{Class: failure.InvalidRequest, Param: "model", Msg: "`model` is required and must be a non-empty string"}
	}
	if input.Type != gjson.String && !input.IsArray() {
		return info, &failure.Error{Class: failure.InvalidRequest, Param: "input", Msg: "`input` is required and must be a string or an array"}
	}
	info.Model = strings.Clone(m.Str)
	info.ModelStart, info.ModelEnd = m.Index, m.Index+len(m.Raw)
	return info, nil
}
