package upstream

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/dialect/form"
	"github.com/switchyard-gw/switchyard/internal/failure"
)

// azure carries an openai-dialect deployment's attempts to Azure OpenAI (contract.md, round 3:
// platform azure). Azure speaks the OpenAI wire (bodies, SSE framing, error shapes, its
// content_filter codes included, which openai.NormalizeError reads as content_policy), so only
// the URL and the credential header differ:
//   - with azure.api_version, the deployments API:
//     {base_url}/openai/deployments/{deployment}/chat/completions?api-version=V (also
//     /embeddings, /images/generations, /images/edits), where {deployment} is the body's model,
//     i.e. the route's upstream_model (the relay has already rewritten it), path-escaped; the
//     body's model is left as is (Azure ignores it there);
//   - without it, Azure's v1 API: {base_url}/openai/v1/chat/completions etc.;
//   - a Responses pass-through (OpResponses, for a deployment with responses: true) has no
//     deployment in its path on either API: {base_url}/openai/v1/responses, or
//     {base_url}/openai/responses?api-version=V (a preview version from 2025-03-01-preview
//     on); the body's model, the route's upstream_model, names the Azure deployment, as
//     openai-go/v3/azure sends it.
//
// The key goes in the `api-key` header, as openai-go/v3/azure's WithAPIKey sends it. Entra ID
// tokens are not supported (docs/platforms.md).
type azure struct {
	// prefix is {base_url}/openai/deployments/ (deployments API) or {base_url}/openai/v1 (v1
	// API), query the "api-version=V" query of the deployments API ("" for v1).
	prefix, query string
	// responses is the URL of a Responses pass-through (see azure).
	responses string
	v1        bool
	key       []string // the api-key header's value, nil when the deployment has no key
}

func newAzure(dep *catalog.Deployment, _ *http.Transport) adapter {
	a := &azure{}
	base := strings.TrimRight(dep.BaseURL, "/")
	if dep.Azure.APIVersion == "" {
		a.v1, a.prefix = true, base+"/openai/v1"
		a.responses = a.prefix + "/responses"
	} else {
		a.prefix = base + "/openai/deployments/"
		a.query = "api-version=" + url.QueryEscape(dep.Azure.APIVersion)
		a.responses = base + "/openai/responses?" + a.query
	}
	if dep.APIKey != "" {
		a.key = []string{dep.APIKey}
	}
	return a
}

// azureSuffix is the path of op after the deployment (or after /openai/v1), "" when Azure
// serves no such operation.
func azureSuffix(op catalog.Protocol) string {
	switch op {
	case catalog.ProtocolModel:
		return "/chat/completions"
	case catalog.ProtocolEmbeddings:
		return "/embeddings"
	case catalog.ProtocolImages:
		return "/images/generations"
	case catalog.ProtocolImageEdits:
		return "/images/edits"
	}
	return ""
}

// azureEndpoint is EndpointOf for platform azure; the deployments API shows the deployment as
// {model} (it is the route's upstream_model).
func azureEndpoint(dep *catalog.Deployment, op catalog.Protocol) string {
	if op == OpResponses {
		base := strings.TrimRight(dep.BaseURL, "/")
		if dep.Azure.APIVersion == "" {
			return base + "/openai/v1/responses"
		}
		return base + "/openai/responses?api-version=" + url.QueryEscape(dep.Azure.APIVersion)
	}
	suffix := azureSuffix(op)
	if suffix == "" {
		return ""
	}
	base := strings.TrimRight(dep.BaseURL, "/")
	if dep.Azure.APIVersion == "" {
		return base + "/openai/v1" + suffix
	}
	return base + "/openai/deployments/{model}" + suffix + "?api-version=" + url.QueryEscape(dep.Azure.APIVersion)
}

func (a *azure) request(ctx context.Context, op catalog.Protocol, body []byte, _ bool, _ string, h http.Header) (*http.Request, error) {
	suffix := azureSuffix(op)
	if suffix == "" && op != OpResponses {
		return nil, failure.New(failure.UpstreamError, "the deployment has no endpoint for this operation")
	}
	var u string
	switch {
	case op == OpResponses:
		u = a.responses
	case a.v1:
		u = a.prefix + suffix
	default:
		model := azureDeployment(op, body, h)
		if model == "" {
			return nil, failure.New(failure.InvalidRequest, "the request names no model, which Azure's deployments API needs as the deployment name")
		}
		u = a.prefix + url.PathEscape(model) + suffix + "?" + a.query
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, nil)
	if err != nil {
		return nil, failure.Wrap(failure.UpstreamError, "the deployment's Azure URL is not valid", err)
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.ContentLength = int64(len(body))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	if a.key != nil {
		h["Api-Key"] = a.key
	}
	req.Header = h
	return req, nil
}

// azureDeployment is the Azure deployment an attempt goes to: the model the relay wrote into
// the body (the route's upstream_model), read from the JSON body or, for image edits, from the
// multipart form's model field. "" when there is none.
func azureDeployment(op catalog.Protocol, body []byte, h http.Header) string {
	if op != catalog.ProtocolImageEdits {
		return gjson.GetBytes(body, "model").Str
	}
	var ct string
	if v := h["Content-Type"]; len(v) > 0 {
		ct = v[0]
	}
	boundary, err := form.Boundary(ct)
	if err != nil {
		return ""
	}
	var model string
	_ = form.Scan(body, boundary, form.Limits{}, func(p *form.Part) error { // a malformed form leaves model ""
		if p.Name == "model" && !p.IsFile() && !p.Encoded {
			model = string(body[p.ValueStart:p.ValueEnd])
			return errStopScan
		}
		return nil
	})
	return model
}

// errStopScan ends a form.Scan early once the field looked for has been found.
var errStopScan = failure.New(failure.InvalidRequest, "stop")

// answer has nothing to adapt: Azure answers in the OpenAI wire, and its content-filter
// refusals (400 code content_filter, innererror ResponsibleAIPolicyViolation) are already
// content_policy for openai.NormalizeError.
func (a *azure) answer(*http.Response, bool) {}
