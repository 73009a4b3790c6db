package relay

import (
	"strconv"

	"github.com/switchyard-gw/switchyard/internal/dialect"
)

// closedEndpoint reports whether the attempt serves a closed dedicated endpoint (R-KEY-6 with
// public_fallback false): seed 000 "a closed endpoint names RouterPlus as the provider,
// whichever route served" (issue 11 item 7).
func (r *attemptRun) closedEndpoint() bool {
	e := r.model.Endpoint
	return e != nil && !e.PublicFallback && len(r.req.GatewayProvider) > 0
}

// providerHeader is the x-switchyard-provider value: the gateway's own name for a closed
// endpoint, else the deployment's provider.
func (r *attemptRun) providerHeader() []string {
	if r.closedEndpoint() {
		return r.req.GatewayProvider
	}
	return r.headers.provider
}

// appendProviderMetadata adds the served-by member to a non-stream JSON body (R-AUDIT-1, seed
// 002; issue 11 item 8): "provider_metadata": {"provider", "actual_model", "deployment",
// "attempts"}, as the last member of the top-level object. provider is the gateway's name for
// a closed endpoint (item 7); actual_model is the id sent upstream; attempts counts the physical
// attempts of the request so far, this one included. Both official SDKs ignore members they do
// not know. A body that does not end in '}' (after trailing whitespace) is left as it is. The
// body is not decoded: the member is spliced before the closing brace.
func (r *attemptRun) appendProviderMetadata(out []byte) []byte {
	end := len(out)
	for end > 0 && (out[end-1] == ' ' || out[end-1] == '\n' || out[end-1] == '\r' || out[end-1] == '\t') {
		end--
	}
	if end == 0 || out[end-1] != '}' {
		return out
	}
	tail := string(out[end-1:]) // "}" and any trailing whitespace, re-appended after the member
	out = out[:end-1]
	// An empty object gets no leading comma.
	i := len(out) - 1
	for i >= 0 && (out[i] == ' ' || out[i] == '\n' || out[i] == '\r' || out[i] == '\t') {
		i--
	}
	if i >= 0 && out[i] != '{' {
		out = append(out, ',')
	}
	out = append(out, `"provider_metadata":`...)
	out = r.appendServedBy(out)
	return append(out, tail...)
}

// appendServedBy appends the served-by object of the attempt, {"provider", "actual_model",
// "deployment", "attempts"} (see appendProviderMetadata), to out.
func (r *attemptRun) appendServedBy(out []byte) []byte {
	provider := r.headers.provider
	if r.closedEndpoint() {
		provider = r.req.GatewayProvider
	}
	p := ""
	if len(provider) > 0 {
		p = provider[0]
	}
	out = append(out, `{"provider":`...)
	out = dialect.AppendJSONString(out, p)
	out = append(out, `,"actual_model":`...)
	out = dialect.AppendJSONString(out, r.upName)
	out = append(out, `,"deployment":`...)
	dep := ""
	if len(r.headers.name) > 0 {
		dep = r.headers.name[0]
	}
	out = dialect.AppendJSONString(out, dep)
	out = append(out, `,"attempts":`...)
	out = strconv.AppendInt(out, int64(r.total), 10)
	return append(out, '}')
}

// streamMetadataPrefix starts the served-by comment of a stream.
const streamMetadataPrefix = ": provider_metadata "

// appendStreamMetadata appends the served-by SSE comment of a committed stream (R-AUDIT-1, seed
// 002; issue 25 item 3): one line `: provider_metadata {"provider", "actual_model",
// "deployment", "attempts"}` (the appendServedBy object) and a blank line, the first bytes of the
// body on every stream surface (chat completions, messages, Responses). The SSE grammar makes a
// line starting with ':' a comment: both official SDKs skip it, and a blank line with no data
// dispatches nothing. The JSON is one line (AppendJSONString escapes control characters).
func (r *attemptRun) appendStreamMetadata(out []byte) []byte {
	out = append(out, streamMetadataPrefix...)
	out = r.appendServedBy(out)
	return append(out, '\n', '\n')
}
