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
// (catalog.Deployment.Responses) on OpenAI's own API or on Azure (azureEndpoint), "" otherwise:
// the other platforms have no Responses route.
func responsesEndpoint(dep *catalog.Deployment) string {
	if dep.Dialect == catalog.Anthropic || !dep.Responses {
		return ""
	}
	switch dep.Platform {
	case catalog.PlatformOpenAI:
		return strings.TrimRight(dep.BaseURL, "/") + "/responses"
	case catalog.PlatformAzure:
		return azureEndpoint(dep, OpResponses)
	}
	return ""
}

// ServesResponses reports whether the client can pass a Responses request through to its
// deployment: an openai-dialect deployment with responses: true, on OpenAI's own API (or any
// base URL that says it serves /responses) or on Azure (its v1 API's /openai/v1/responses, or
// /openai/responses with a preview api-version).
func (c *Client) ServesResponses() bool { return c.responses }
