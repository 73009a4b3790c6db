package upstream

import (
	"strings"

	"github.com/switchyard-gw/switchyard/internal/catalog"
)

// OpResponses is the operation of a Responses API pass-through (POST {base_url}/responses), for
// Send and SendTyped: not a catalog protocol (a Responses request is a model call,
// catalog.ProtocolModel, for plans and admission), only the endpoint it is sent to.
const OpResponses = catalog.NumProtocols

// responsesEndpoint is the Responses API URL of an openai-dialect deployment that serves it
// (catalog.Deployment.Responses), "" otherwise.
func responsesEndpoint(dep *catalog.Deployment) string {
	if dep.Dialect == catalog.Anthropic || !dep.Responses {
		return ""
	}
	return strings.TrimRight(dep.BaseURL, "/") + "/responses"
}

// ServesResponses reports whether the client can pass a Responses request through to its
// deployment: an openai-dialect deployment with responses: true on its own API. A deployment
// behind a platform adapter (Azure) is not passed through yet: its Responses requests are
// translated to chat completions.
func (c *Client) ServesResponses() bool { return c.tmpl[OpResponses] != nil }
