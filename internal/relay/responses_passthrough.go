package relay

import (
	"bytes"
	"strconv"

	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/dialect"
	"github.com/switchyard-gw/switchyard/internal/dialect/responses"
	"github.com/switchyard-gw/switchyard/internal/sse"
)

// Responses pass-through (docs/responses-api.md "Pass-through"): a /v1/responses request whose
// candidate is an openai-dialect deployment with responses: true goes upstream as it came, only
// `model` rewritten (and, for a metered request without a cap, max_output_tokens added). The
// answer is scanned by the Responses codec (responses.ScanFrame, responses.RewriteResponse):
// the commit gate, usage from response.completed, the model echoed. Errors are normalized by
// the OpenAI codec, which reads Responses error events too.

// passesResponses reports whether a Responses request passes through to dep.
func (rl *Relay) passesResponses(dep *catalog.Deployment) bool {
	if dep.Dialect != catalog.OpenAI || !dep.Responses {
		return false
	}
	c, _ := rl.client(dep.Name)
	return c != nil && c.ServesResponses()
}

// appendResponsesBody appends the upstream body of a pass-through: the caller's body with the
// upstream model, and max_output_tokens: capOut first when capOut > 0 and the caller set none.
func appendResponsesBody(dst []byte, req *Request, upstreamModel string, capOut int64) []byte {
	if capOut <= 0 || dialect.Get(req.Body, "max_output_tokens").Exists() {
		return responses.AppendUpstreamBody(dst, req.Body, &req.Info, upstreamModel)
	}
	open := bytes.IndexByte(req.Body, '{')
	if open < 0 {
		return responses.AppendUpstreamBody(dst, req.Body, &req.Info, upstreamModel)
	}
	dst = append(dst, req.Body[:open+1]...)
	dst = append(dst, `"max_output_tokens":`...)
	dst = strconv.AppendInt(dst, capOut, 10)
	dst = append(dst, ',')
	info := req.Info
	info.ModelStart, info.ModelEnd = info.ModelStart-open-1, info.ModelEnd-open-1
	return responses.AppendUpstreamBody(dst, req.Body[open+1:], &info, upstreamModel)
}

func (responsesCodec) AppendUpstreamBody(dst, b []byte, i *dialect.RequestInfo, m string) []byte {
	return responses.AppendUpstreamBody(dst, b, i, m)
}
func (responsesCodec) ScanFrame(dst []byte, ev sse.Event, st *dialect.StreamState) ([]byte, dialect.FrameKind) {
	return responses.ScanFrame(dst, ev, st)
}
func (responsesCodec) RewriteResponse(dst, b []byte, m string) ([]byte, dialect.Usage, bool, error) {
	return responses.RewriteResponse(dst, b, m)
}

// appendStreamDone writes nothing: a Responses stream ends with response.completed, which the
// provider sent (ScanFrame marks the finish only there).
func (responsesCodec) appendStreamDone(dst []byte) []byte { return dst }
