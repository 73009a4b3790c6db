package anthropic

import (
	"strings"

	"github.com/tidwall/gjson"

	"github.com/switchyard-gw/switchyard/internal/dialect"
	"github.com/switchyard-gw/switchyard/internal/failure"
)

// ParseCountTokensRequest reads a POST /v1/messages/count_tokens body without decoding it: the
// messages body without max_tokens or stream (wire.md §4.8): a JSON object with a non-empty
// string `model` and a `messages` array, no duplicate keys. It is forwarded to Anthropic-dialect
// deployments with only `model` rewritten; the answer {"input_tokens": N} passes through.
func ParseCountTokensRequest(body []byte) (dialect.RequestInfo, error) {
	var info dialect.RequestInfo
	var m, msgs gjson.Result
	if err := dialect.ScanBody(body, func(k string, v gjson.Result) {
		switch k {
		case "model":
			m = v
		case "messages":
			msgs = v
		}
	}); err != nil {
		return info, err
	}
	if m.Type != gjson.String || m.Str == "" {
		return info, &failure.Error{Class: failure.InvalidRequest, Param: "model", Msg: "model: a non-empty string is required"}
	}
	if !msgs.IsArray() {
		return info, &failure.Error{Class: failure.InvalidRequest, Param: "messages", Msg: "messages: an array is required"}
	}
	if dialect.EmptyArray(msgs) {
		return info, errNoMessages
	}
	info.Model = strings.Clone(m.Str)
	info.ModelStart, info.ModelEnd = m.Index, m.Index+len(m.Raw)
	return info, nil
}

// RewriteCountTokensResponse is RewriteResponse for a count_tokens answer: it must be a JSON
// object with a numeric `input_tokens` (else an upstream_error that fails over).
func RewriteCountTokensResponse(dst, body []byte, requestedModel string) ([]byte, dialect.Usage, bool, error) {
	a, err := dialect.ScanAnswer(body, "input_tokens", false)
	if err != nil {
		return dst, dialect.Usage{}, false, err
	}
	return rewriteChecked(dst, body, a, requestedModel)
}
