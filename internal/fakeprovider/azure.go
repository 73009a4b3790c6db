package fakeprovider

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/switchyard-gw/switchyard/internal/catalog"
)

// Azure is an emulated Azure OpenAI resource: it wraps an OpenAI-dialect Provider (scripted
// with the same Behaviors, through Script, SetDefault or the /_fake/ control API) behind Azure's
// paths, credential and error shapes, closely enough for openai-go/v3/azure:
//   - the deployments API, POST /openai/deployments/{deployment}/chat/completions (and
//     /embeddings, /images/generations, /images/edits) with an api-version query parameter
//     (missing: 404 "Resource not found", as Azure answers);
//   - the v1 API, POST /openai/v1/chat/completions etc., and GET /openai/v1/models;
//   - the Responses API, where the body's model names the deployment (SetDeployments applies to
//     it on both APIs): POST /openai/v1/responses, and POST /openai/responses with a preview
//     api-version from 2025-03-01-preview on (a GA version such as 2024-10-21, or none, is
//     Azure's 404 "Resource not found"); there is no /openai/deployments/{d}/responses. Its
//     answers and streams are OpenAI's (no prompt_filter_results chunk), its errors Azure's;
//   - the key in the `api-key` header: a missing one, or another than RequireKey's, is Azure's
//     401 (an Authorization header, Entra ID, is not accepted by the emulator);
//   - Azure's error bodies: {"error":{"code":"429","message":...}} with retry-after and
//     retry-after-ms, "401", "DeploymentNotFound" (404, or an unknown deployment once
//     SetDeployments is called), "InternalServerError" (500), "ServiceUnavailable" (503);
//     KindContentPolicy is Azure's prompt filter, 400 code content_filter with innererror
//     ResponsibleAIPolicyViolation; the caller's other 400s keep OpenAI's shape, as on Azure;
//   - streams begin with Azure's prompt_filter_results chunk (empty choices), and non-stream
//     answers carry prompt_filter_results. KindContentPolicy with After > 0 on a streaming
//     request is Azure's output filter instead: After content deltas, then the finish chunk
//     with finish_reason "content_filter".
//
// Calls lists the requests as Azure saw them (path, deployment, api-version, key).
type Azure struct {
	*Provider
	mu          sync.Mutex
	key         string
	deployments map[string]bool
	calls       []AzureCall
}

// AzureCall is one request an Azure emulator received on a model path.
type AzureCall struct {
	// Path is the request's path (/openai/deployments/gpt-4o/chat/completions).
	Path string
	// Deployment is the deployment named: the path's on the deployments API, the body's model on
	// the Responses API, "" on the v1 API's other paths.
	Deployment string
	// APIVersion is the api-version query parameter ("" when absent).
	APIVersion string
	// APIKey and Authorization are the credential headers that arrived.
	APIKey, Authorization string
}

// NewAzure returns an Azure OpenAI emulator named name that accepts any non-empty api-key and
// every deployment until RequireKey and SetDeployments say otherwise.
func NewAzure(name string) *Azure {
	return &Azure{Provider: New(name, catalog.OpenAI)}
}

// RequireKey makes the emulator answer Azure's 401 to requests whose api-key header is not k
// (an empty k accepts any non-empty key).
func (a *Azure) RequireKey(k string) {
	a.mu.Lock()
	a.key = k
	a.mu.Unlock()
}

// SetDeployments limits the deployments API to these deployment names: others get Azure's 404
// DeploymentNotFound. No names (the default) accepts every deployment.
func (a *Azure) SetDeployments(names ...string) {
	a.mu.Lock()
	a.deployments = nil
	if len(names) > 0 {
		a.deployments = map[string]bool{}
		for _, n := range names {
			a.deployments[n] = true
		}
	}
	a.mu.Unlock()
}

// Calls returns a copy of the model requests received, in arrival order.
func (a *Azure) Calls() []AzureCall {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]AzureCall(nil), a.calls...)
}

// azureOps are the operations served after a deployment or /openai/v1.
var azureOps = map[string]bool{"chat/completions": true, "embeddings": true, "images/generations": true, "images/edits": true, "responses": true}

// azureBodyModel is the model of r's JSON body (the Azure deployment a Responses request names),
// "" when there is none; r.Body is restored for the wrapped Provider.
func azureBodyModel(r *http.Request) string {
	b, err := io.ReadAll(io.LimitReader(r.Body, maxBodyBytes+1))
	r.Body = io.NopCloser(bytes.NewReader(b))
	if err != nil {
		return ""
	}
	return gjson.GetBytes(b, "model").Str
}

// ServeHTTP serves Azure's paths (see Azure) and the wrapped Provider's control API under
// /_fake/.
func (a *Azure) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	if strings.HasPrefix(path, "/_fake/") {
		a.Provider.ServeHTTP(w, r)
		return
	}
	var deployment, op string
	v1, rs := false, false
	version := r.URL.Query().Get("api-version")
	if rest, ok := strings.CutPrefix(path, "/openai/deployments/"); ok {
		deployment, op, _ = strings.Cut(rest, "/")
		if op == "responses" {
			op = "" // the deployments API has no Responses route
		}
	} else if rest, ok := strings.CutPrefix(path, "/openai/v1/"); ok {
		v1, op = true, rest
		rs = op == "responses"
	} else if path == "/openai/responses" && strings.HasSuffix(version, "-preview") && version >= "2025-03-01-preview" {
		op, rs = "responses", true
	}
	if rs && r.Method == http.MethodPost {
		deployment = azureBodyModel(r)
	}
	call := AzureCall{Path: path, Deployment: deployment, APIVersion: version,
		APIKey: r.Header.Get("Api-Key"), Authorization: r.Header.Get("Authorization")}
	switch {
	case v1 && op == "models" && r.Method == http.MethodGet:
		if !a.authorized(call.APIKey) {
			azureError(w, http.StatusUnauthorized, "401", azureUnauthorized)
			return
		}
		r.URL.Path = "/v1/models"
		a.Provider.ServeHTTP(w, r)
		return
	case !azureOps[op] || (!v1 && !rs && (deployment == "" || version == "")):
		azureError(w, http.StatusNotFound, "404", "Resource not found")
		return
	case r.Method != http.MethodPost:
		azureError(w, http.StatusMethodNotAllowed, "405", "Method Not Allowed")
		return
	}
	a.mu.Lock()
	a.calls = append(a.calls, call)
	known := a.deployments == nil || a.deployments[deployment] || (v1 && !rs)
	a.mu.Unlock()
	switch {
	case !a.authorized(call.APIKey):
		azureError(w, http.StatusUnauthorized, "401", azureUnauthorized)
		return
	case !known:
		azureError(w, http.StatusNotFound, "DeploymentNotFound", azureNoDeployment)
		return
	}
	r.URL.Path, r.URL.RawPath, r.URL.RawQuery = "/v1/"+op, "", ""
	pw := &platformWriter{w: w, prefix: azurePromptFilterChunk}
	if rs {
		pw.prefix = nil
	}
	if op == "chat/completions" && a.outputFilter() {
		pw.edit = func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"finish_reason":"stop"`), []byte(`"finish_reason":"content_filter"`), 1)
		}
	}
	serveWrapped(a.Provider, pw, r, azureAnswer)
}

// authorized reports whether key is the api-key the emulator accepts.
func (a *Azure) authorized(key string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return key != "" && (a.key == "" || key == a.key)
}

// outputFilter turns the next behavior, when it is KindContentPolicy with After > 0 (Azure's
// output filter on a stream), into a normal answer of After deltas whose finish the writer
// rewrites to content_filter. It reports whether it did. Concurrent requests may take the
// behavior first; the script stays FIFO.
func (a *Azure) outputFilter() bool {
	p := a.Provider
	p.mu.Lock()
	defer p.mu.Unlock()
	b := p.def
	if len(p.queue) > 0 {
		b = p.queue[0]
	}
	if b.Kind != KindContentPolicy || b.After <= 0 {
		return false
	}
	nb := b
	nb.Kind, nb.Deltas = KindOK, b.After
	if len(p.queue) > 0 {
		p.queue[0] = nb
	} else {
		p.queue = append(p.queue, nb)
	}
	return true
}

// Azure's fixed error texts.
const (
	azureUnauthorized = "Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource."
	azureNoDeployment = "The API deployment for this resource does not exist. If you created the deployment within the last 5 minutes, please wait a moment and try again."
	azureFiltered     = "The response was filtered due to the prompt triggering Azure OpenAI's content management policy. Please modify your prompt and retry. To learn more about our content filtering policies please read our documentation: https://go.microsoft.com/fwlink/?linkid=2198766"
)

// azureFilterResults is a content_filter_results object where nothing (or, with hit, the
// violence category) was filtered.
func azureFilterResults(hit bool) map[string]any {
	safe := map[string]any{"filtered": false, "severity": "safe"}
	violence := safe
	if hit {
		violence = map[string]any{"filtered": true, "severity": "medium"}
	}
	return map[string]any{"hate": safe, "self_harm": safe, "sexual": safe, "violence": violence}
}

// azurePromptFilterChunk is the chunk that opens every Azure stream: no choices, the prompt's
// filter results.
var azurePromptFilterChunk = sseData(map[string]any{"choices": []any{}, "created": 0, "id": "", "model": "", "object": "",
	"prompt_filter_results": []any{map[string]any{"prompt_index": 0, "content_filter_results": azureFilterResults(false)}}})

// azureError answers Azure's error body {"error":{"code":C,"message":M}}.
func azureError(w http.ResponseWriter, status int, code, msg string) {
	body := mustJSON(map[string]any{"error": map[string]any{"code": code, "message": msg}})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body) // a failed write only means the caller left
}

// azureAnswer rewrites a held answer of the wrapped Provider into Azure's: errors in Azure's
// shapes (see Azure), a non-stream success with prompt_filter_results added.
func azureAnswer(status int, h http.Header, body []byte) (int, []byte) {
	if status == http.StatusOK {
		if gjson.ValidBytes(body) && gjson.GetBytes(body, "choices").Exists() {
			if out, err := sjson.SetBytes(body, "prompt_filter_results", []any{map[string]any{"prompt_index": 0,
				"content_filter_results": azureFilterResults(false)}}); err == nil {
				return status, out
			}
		}
		return status, body
	}
	if !strings.HasPrefix(h.Get("Content-Type"), "application/json") {
		return status, body // a proxy's HTML page stays one
	}
	code := gjson.GetBytes(body, "error.code").Str
	var e map[string]any
	switch {
	case code == "content_policy_violation":
		e = map[string]any{"message": azureFiltered, "type": nil, "param": "prompt", "code": "content_filter", "status": 400,
			"innererror": map[string]any{"code": "ResponsibleAIPolicyViolation", "content_filter_result": azureFilterResults(true)}}
	case status == http.StatusTooManyRequests:
		wait := h.Get("Retry-After")
		if wait == "" {
			wait = "1"
			h.Set("Retry-After", wait)
		}
		if n, err := strconv.Atoi(wait); err == nil {
			h.Set("Retry-After-Ms", strconv.Itoa(n*1000))
		}
		e = map[string]any{"code": "429", "message": "Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-10-21 have exceeded token rate limit of your current AIServices S0 pricing tier. Please retry after " + wait + " second. Please contact Azure support service if you would like to further increase the default rate limit."}
	case status == http.StatusUnauthorized:
		e = map[string]any{"code": "401", "message": azureUnauthorized}
	case status == http.StatusNotFound:
		e = map[string]any{"code": "DeploymentNotFound", "message": azureNoDeployment}
	case status == http.StatusServiceUnavailable:
		e = map[string]any{"code": "ServiceUnavailable", "message": "The service is temporarily unable to process your request. Please try again later."}
	case status >= 500:
		e = map[string]any{"code": "InternalServerError", "message": "The server had an error processing your request. Sorry about that! You can retry your request, or contact us through an Azure support request at: https://go.microsoft.com/fwlink/?linkid=2213926 if you keep seeing this error."}
	default:
		return status, body // the caller's own errors keep OpenAI's shape on Azure
	}
	out, _ := json.Marshal(map[string]any{"error": e}) // maps of strings and numbers always marshal
	return status, out
}
