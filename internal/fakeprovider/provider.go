package fakeprovider

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/dialect"
)

// maxBodyBytes caps the request bodies the provider reads (Anthropic's own limit is 32 MB).
const maxBodyBytes = 32 << 20

// maxRecorded is how many of the most recent model requests Requests keeps, so that a long soak
// run does not grow without bound.
const maxRecorded = 10000

// closedBuffer is the capacity of the Closed channel; further reports are dropped while it is
// full.
const closedBuffer = 64

// Provider is a scriptable emulated provider of one dialect. It is an http.Handler, safe for
// concurrent use; the zero value is not usable, call New.
type Provider struct {
	name    string
	dialect catalog.Dialect
	closed  chan Request
	// noControl turns the /_fake/ control API off (DisableControl).
	noControl bool

	mu       sync.Mutex // guards the following fields
	queue    []Behavior
	def      Behavior
	key      string
	models   []string
	requests []Request // a ring of at most maxRecorded, oldest at requests[first]
	first    int
	hits     int
	seq      int64
}

// Interface guard.
var _ http.Handler = (*Provider)(nil)

// New returns a provider named name (used in the default answer "Hello from <name>." and the
// default model list) speaking dialect d (catalog.OpenAI or catalog.Anthropic; any other value
// is served as OpenAI). It answers every request normally until scripted, and requires no key.
func New(name string, d catalog.Dialect) *Provider {
	if d != catalog.Anthropic {
		d = catalog.OpenAI
	}
	return &Provider{name: name, dialect: d, closed: make(chan Request, closedBuffer),
		models: []string{name + "-model"}}
}

// DisableControl turns the /_fake/ control API off: it then answers 404 like any unknown path.
// Providers that a gateway embeds (serve without API keys) disable it, so that nothing else on
// the machine can script failures into a running gateway. Call it before serving.
func (p *Provider) DisableControl() { p.noControl = true }

// Name is the provider's name as given to New.
func (p *Provider) Name() string { return p.name }

// Dialect is the wire dialect the provider speaks.
func (p *Provider) Dialect() catalog.Dialect { return p.dialect }

// Script queues behaviors, consumed one per accepted model request in FIFO order; when the queue
// is empty the default (SetDefault) applies. Requests rejected before a behavior is chosen (a
// missing key, a body that is not JSON) consume nothing.
func (p *Provider) Script(bs ...Behavior) {
	p.mu.Lock()
	p.queue = append(p.queue, bs...)
	p.mu.Unlock()
}

// SetDefault sets the behavior used when the script queue is empty. The initial default,
// Behavior{}, is a normal successful answer.
func (p *Provider) SetDefault(b Behavior) {
	p.mu.Lock()
	p.def = b
	p.mu.Unlock()
}

// RequireKey makes the provider answer the dialect's 401 to model requests that do not carry key
// k: OpenAI in `Authorization: Bearer k`, Anthropic in `x-api-key: k` or `Authorization:
// Bearer k`. An empty k (the default) accepts every request.
func (p *Provider) RequireKey(k string) {
	p.mu.Lock()
	p.key = k
	p.mu.Unlock()
}

// SetModels sets the model ids that GET /v1/models lists (default: "<name>-model"). Model
// requests echo whatever model they name, listed or not.
func (p *Provider) SetModels(ids ...string) {
	p.mu.Lock()
	p.models = append([]string(nil), ids...)
	p.mu.Unlock()
}

// Reset empties the script queue and the recorded requests and restores the default behavior and
// the hit count to zero. The required key and the model list are kept.
func (p *Provider) Reset() {
	p.mu.Lock()
	p.queue, p.def, p.requests, p.first, p.hits = nil, Behavior{}, nil, 0, 0
	p.mu.Unlock()
}

// Requests returns a copy of the model requests received since New or Reset, in arrival order:
// all of them, or the most recent 10,000 once Hits exceeds that.
func (p *Provider) Requests() []Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Request, 0, len(p.requests))
	for i := range p.requests {
		r := p.requests[(p.first+i)%len(p.requests)]
		r.Header = r.Header.Clone()
		out = append(out, r)
	}
	return out
}

// Hits is the number of model requests received since New or Reset, rejected ones included.
func (p *Provider) Hits() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.hits
}

// record keeps req in the ring of recent requests; p.mu must be held.
func (p *Provider) record(req Request) {
	p.hits++
	if len(p.requests) < maxRecorded {
		p.requests = append(p.requests, req)
		return
	}
	p.requests[p.first] = req
	p.first = (p.first + 1) % maxRecorded
}

// Closed returns a channel that receives a request each time its connection or context ended
// before the provider finished writing its answer (the caller went away): during a hang, a
// delay, or a stream. Connections the provider drops itself (KindReset, KindCut) are not
// reported. The channel is buffered (64); reports are dropped while it is full. It is never
// closed.
func (p *Provider) Closed() <-chan Request { return p.closed }

// Request is one model request as the provider received it.
type Request struct {
	// Seq numbers the provider's model requests from 1; the response ids contain it.
	Seq int64
	// Method and Path are the request's method and URL path.
	Method, Path string
	// Header is a copy of the request headers.
	Header http.Header
	// Body is the raw request body.
	Body []byte
	// Model and Stream are the request body's "model" and "stream" fields.
	Model  string
	Stream bool
	// Authorization and APIKey are the values of the Authorization and x-api-key headers that
	// arrived ("" when absent), so that tests can assert which credential reached the provider.
	Authorization, APIKey string
	// Kind is the behavior applied; meaningful only when Rejected is "".
	Kind Kind
	// Rejected is "" when a behavior was applied, else why the request was refused before one
	// was chosen: "unauthorized" or "invalid_request".
	Rejected string
	// At is when the request arrived.
	At time.Time
}

// ServeHTTP serves the dialect's model endpoint (OpenAI POST /v1/chat/completions or
// /chat/completions; Anthropic POST /v1/messages), GET /v1/models, and the control API under
// /_fake/. Anything else gets the dialect's 404 body.
func (p *Provider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	switch {
	case strings.HasPrefix(path, "/_fake/") && !p.noControl:
		p.serveControl(w, r)
	case path == "/v1/models" || (p.dialect == catalog.OpenAI && path == "/models"):
		if r.Method != http.MethodGet {
			p.simpleError(w, http.StatusMethodNotAllowed)
			return
		}
		p.serveModels(w)
	case p.isModelPath(path):
		if r.Method != http.MethodPost {
			p.simpleError(w, http.StatusMethodNotAllowed)
			return
		}
		p.serveModel(w, r)
	default:
		p.notFound(w, r)
	}
}

// isModelPath reports whether path is the dialect's model endpoint.
func (p *Provider) isModelPath(path string) bool {
	if p.dialect == catalog.Anthropic {
		return path == "/v1/messages" || path == countTokensPath
	}
	return path == "/v1/chat/completions" || path == "/chat/completions" || isResponsesPath(path) || isEmbeddingsPath(path) || isImagesPath(path)
}

// countTokensPath is Anthropic's token-count endpoint; the embeddings endpoints are OpenAI's.
const countTokensPath = "/v1/messages/count_tokens"

func isEmbeddingsPath(path string) bool { return path == "/v1/embeddings" || path == "/embeddings" }

// simpleError answers status with the dialect's body for it and a fresh request id.
func (p *Provider) simpleError(w http.ResponseWriter, status int) {
	e := statusError(p.dialect, status, "")
	if status == http.StatusNotFound || status == http.StatusMethodNotAllowed {
		e.code, e.message = "", http.StatusText(status)
	}
	rid := "req_fake0"
	setRequestID(w, rid)
	_ = writeError(w, p.dialect, e, rid, 0) // a failed write only means the caller left
}

// notFound answers a path the provider does not serve as the real APIs do: OpenAI's
// `Invalid URL (POST /wrong/v1/chat/completions)` of type invalid_request_error with a null
// code and param, Anthropic's not_found_error. A deployment with a wrong base path meets it.
func (p *Provider) notFound(w http.ResponseWriter, r *http.Request) {
	if p.dialect == catalog.Anthropic {
		p.simpleError(w, http.StatusNotFound)
		return
	}
	e := apiError{status: http.StatusNotFound, typ: "invalid_request_error",
		message: "Invalid URL (" + r.Method + " " + r.URL.Path + ")"}
	rid := "req_fake0"
	setRequestID(w, rid)
	_ = writeError(w, p.dialect, e, rid, 0) // a failed write only means the caller left
}

// setRequestID sets both request id headers (OpenAI SDKs read x-request-id, Anthropic SDKs
// request-id).
func setRequestID(w http.ResponseWriter, rid string) {
	w.Header().Set("X-Request-Id", rid)
	w.Header().Set("Request-Id", rid)
}

// serveModels answers GET /v1/models in the dialect's list shape.
func (p *Provider) serveModels(w http.ResponseWriter) {
	p.mu.Lock()
	ids := append([]string(nil), p.models...)
	p.mu.Unlock()
	var body []byte
	if p.dialect == catalog.Anthropic {
		type model struct {
			Type        string `json:"type"`
			ID          string `json:"id"`
			DisplayName string `json:"display_name"`
			CreatedAt   string `json:"created_at"`
		}
		list := struct {
			Data    []model `json:"data"`
			HasMore bool    `json:"has_more"`
			FirstID *string `json:"first_id"`
			LastID  *string `json:"last_id"`
		}{Data: []model{}}
		for _, id := range ids {
			list.Data = append(list.Data, model{Type: "model", ID: id, DisplayName: id, CreatedAt: "2026-01-01T00:00:00Z"})
		}
		if len(ids) > 0 {
			list.FirstID, list.LastID = &ids[0], &ids[len(ids)-1]
		}
		body = mustJSON(list)
	} else {
		type model struct {
			ID      string `json:"id"`
			Object  string `json:"object"`
			Created int64  `json:"created"`
			OwnedBy string `json:"owned_by"`
		}
		list := struct {
			Object string  `json:"object"`
			Data   []model `json:"data"`
		}{Object: "list", Data: []model{}}
		for _, id := range ids {
			list.Data = append(list.Data, model{ID: id, Object: "model", Created: 1767225600, OwnedBy: p.name})
		}
		body = mustJSON(list)
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body) // a failed write only means the caller left
}

// admit reads and records a model request, checks its key and body, and chooses its behavior.
// ok is false when the request was rejected (the answer is then already written).
func (p *Provider) admit(w http.ResponseWriter, r *http.Request) (req Request, b Behavior, ok bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	req = Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body,
		Authorization: r.Header.Get("Authorization"), APIKey: r.Header.Get("X-Api-Key"), At: time.Now()}
	var e *apiError
	var edit imageForm
	var valid bool
	switch {
	case err != nil:
	case isImageEditsPath(r.URL.Path):
		edit, valid = readImageForm(r.Header.Get("Content-Type"), body)
		req.Model = edit.model
	default:
		valid = dialect.Valid(body) // depth-capped: gjson's validator recurses
		if valid {
			req.Model = gjson.GetBytes(body, "model").String()
			req.Stream = gjson.GetBytes(body, "stream").Bool()
		}
	}

	p.mu.Lock()
	p.seq++
	req.Seq = p.seq
	switch {
	case p.key != "" && !p.authorized(r.Header):
		req.Rejected = "unauthorized"
		se := statusError(p.dialect, http.StatusUnauthorized, req.Model)
		e = &se
	case !valid:
		req.Rejected = "invalid_request"
		e = p.invalidBody(err, r.URL.Path)
	case isImageEditsPath(r.URL.Path):
		if e = editMissing(edit); e != nil {
			req.Rejected = "invalid_request"
			break
		}
		b = p.def
		if len(p.queue) > 0 {
			b = p.queue[0]
			p.queue = p.queue[1:]
		}
		req.Kind = b.Kind
	default:
		if e = p.missingField(r.URL.Path, body); e != nil {
			req.Rejected = "invalid_request"
			break
		}
		b = p.def
		if len(p.queue) > 0 {
			b = p.queue[0]
			p.queue = p.queue[1:]
		}
		req.Kind = b.Kind
	}
	p.record(req)
	p.mu.Unlock()

	setRequestID(w, requestID(req.Seq))
	if e != nil {
		_ = writeError(w, p.dialect, *e, requestID(req.Seq), 0) // a failed write only means the caller left
		return req, b, false
	}
	return req, b, true
}

// requestID is the request id of the seq-th model request.
func requestID(seq int64) string { return "req_fake" + strconv.FormatInt(seq, 10) }

// authorized reports whether h carries the required key; p.mu must be held.
func (p *Provider) authorized(h http.Header) bool {
	if bearer, ok := strings.CutPrefix(h.Get("Authorization"), "Bearer "); ok && bearer == p.key {
		return true
	}
	return p.dialect == catalog.Anthropic && h.Get("X-Api-Key") == p.key
}

// invalidBody is the 400 (or 413) for a body that could not be read or is not JSON.
func (p *Provider) invalidBody(readErr error, path string) *apiError {
	if readErr != nil {
		e := statusError(p.dialect, http.StatusRequestEntityTooLarge, "")
		return &e
	}
	e := statusError(p.dialect, http.StatusBadRequest, "")
	e.message = "We could not parse the JSON body of your request."
	if isImageEditsPath(path) {
		e.message = "Invalid multipart/form-data body."
	}
	if p.dialect == catalog.Anthropic {
		e.message = "There was an issue with the format of your request: the body is not valid JSON."
	}
	return &e
}

// missingField is the 400 for a body without the fields the real API requires: model and
// messages, and max_tokens on Anthropic; or with a field over the real API's limits
// (limitError). It returns nil when none is missing and every field fits.
func (p *Provider) missingField(path string, body []byte) *apiError {
	required := []string{"model", "messages"}
	switch {
	case isImagesPath(path):
		required = []string{"prompt"}
	case isEmbeddingsPath(path), isResponsesPath(path):
		required = []string{"model", "input"}
	case p.dialect == catalog.Anthropic && path != countTokensPath:
		required = append(required, "max_tokens")
	}
	if isEmbeddingsPath(path) {
		if e := embeddingOptions(body); e != nil {
			return e
		}
	}
	for _, f := range required {
		if gjson.GetBytes(body, f).Exists() {
			continue
		}
		e := statusError(p.dialect, http.StatusBadRequest, "")
		if p.dialect == catalog.Anthropic {
			e.message = f + ": Field required"
		} else {
			e.message, e.param = "Missing required parameter: '"+f+"'.", f
			e.code = "missing_required_parameter"
		}
		return &e
	}
	return limitError(p.dialect, path, body) // the real APIs' field limits (limits.go)
}

// reportClosed sends req on the Closed channel unless it is full.
func (p *Provider) reportClosed(req Request) {
	select {
	case p.closed <- req:
	default:
	}
}

// editMissing is the 400 of an image edit without a prompt or an image file.
func editMissing(f imageForm) *apiError {
	for _, m := range [...]struct {
		missing bool
		field   string
	}{{f.prompt == "", "prompt"}, {f.images == 0, "image"}} {
		if m.missing {
			e := statusError(catalog.OpenAI, http.StatusBadRequest, "")
			e.message, e.param, e.code = "Missing required parameter: '"+m.field+"'.", m.field, "missing_required_parameter"
			return &e
		}
	}
	return nil
}
