package fakeprovider

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxControlBytes caps a control API request body.
const maxControlBytes = 1 << 20

// scriptRequest is the body of POST /_fake/script.
type scriptRequest struct {
	// Behaviors are appended to the script queue.
	Behaviors []Behavior `json:"behaviors"`
	// Default, when present, replaces the default behavior.
	Default *Behavior `json:"default"`
	// Replace empties the queue before appending Behaviors.
	Replace bool `json:"replace"`
}

// scriptState is the answer of GET and POST /_fake/script.
type scriptState struct {
	Queued    int        `json:"queued"`
	Behaviors []Behavior `json:"behaviors"`
	Default   Behavior   `json:"default"`
}

// requestView is one recorded request in GET /_fake/requests. Credentials are masked.
type requestView struct {
	Seq      int64               `json:"seq"`
	At       time.Time           `json:"at"`
	Method   string              `json:"method"`
	Path     string              `json:"path"`
	Model    string              `json:"model"`
	Stream   bool                `json:"stream"`
	Kind     Kind                `json:"kind"`
	Rejected string              `json:"rejected,omitempty"`
	Header   map[string][]string `json:"header"`
	Body     json.RawMessage     `json:"body,omitempty"`
}

// serveControl serves the control API: POST /_fake/script, GET /_fake/script, GET
// /_fake/requests[?body=1], POST /_fake/reset. It needs no key. Errors are plain JSON
// {"error": "..."} with status 400, 404 or 405.
func (p *Provider) serveControl(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/_fake/script":
		switch r.Method {
		case http.MethodPost:
			p.controlScript(w, r)
		case http.MethodGet:
			controlJSON(w, http.StatusOK, p.scriptState())
		default:
			controlError(w, http.StatusMethodNotAllowed, "use GET or POST")
		}
	case "/_fake/requests":
		if r.Method != http.MethodGet {
			controlError(w, http.StatusMethodNotAllowed, "use GET")
			return
		}
		withBody, _ := strconv.ParseBool(r.URL.Query().Get("body"))
		p.controlRequests(w, withBody)
	case "/_fake/reset":
		if r.Method != http.MethodPost {
			controlError(w, http.StatusMethodNotAllowed, "use POST")
			return
		}
		p.Reset()
		controlJSON(w, http.StatusOK, p.scriptState())
	default:
		controlError(w, http.StatusNotFound, "unknown control path; see docs/fake-provider.md")
	}
}

// controlScript applies a POST /_fake/script body: every behavior is validated before any is
// queued.
func (p *Provider) controlScript(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxControlBytes))
	if err != nil {
		controlError(w, http.StatusBadRequest, "reading body: "+err.Error())
		return
	}
	var sr scriptRequest
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&sr); err != nil {
		controlError(w, http.StatusBadRequest, fmt.Sprintf("decoding script: %v", err))
		return
	}
	p.mu.Lock()
	if sr.Replace {
		p.queue = nil
	}
	p.queue = append(p.queue, sr.Behaviors...)
	if sr.Default != nil {
		p.def = *sr.Default
	}
	p.mu.Unlock()
	controlJSON(w, http.StatusOK, p.scriptState())
}

// scriptState snapshots the queue and the default.
func (p *Provider) scriptState() scriptState {
	p.mu.Lock()
	defer p.mu.Unlock()
	return scriptState{Queued: len(p.queue), Behaviors: append([]Behavior{}, p.queue...), Default: p.def}
}

// controlRequests answers GET /_fake/requests.
func (p *Provider) controlRequests(w http.ResponseWriter, withBody bool) {
	reqs := p.Requests()
	out := struct {
		Hits     int           `json:"hits"`
		Requests []requestView `json:"requests"`
	}{Hits: p.Hits(), Requests: make([]requestView, 0, len(reqs))}
	for _, q := range reqs {
		v := requestView{Seq: q.Seq, At: q.At, Method: q.Method, Path: q.Path, Model: q.Model,
			Stream: q.Stream, Kind: q.Kind, Rejected: q.Rejected, Header: maskHeaders(q.Header)}
		if withBody {
			if json.Valid(q.Body) {
				v.Body = q.Body
			} else {
				v.Body = mustJSON(string(q.Body))
			}
		}
		out.Requests = append(out.Requests, v)
	}
	controlJSON(w, http.StatusOK, out)
}

// credentialHeaders are masked in GET /_fake/requests.
var credentialHeaders = []string{"Authorization", "X-Api-Key", "Api-Key", "Proxy-Authorization"}

// maskHeaders copies h with credential values reduced to their last 4 characters.
func maskHeaders(h http.Header) http.Header {
	out := h.Clone()
	for _, k := range credentialHeaders {
		for i, v := range out[k] {
			out[k][i] = mask(v)
		}
	}
	return out
}

// mask keeps a credential's scheme ("Bearer ") and its last 4 characters.
func mask(v string) string {
	scheme := ""
	if s, rest, ok := strings.Cut(v, " "); ok {
		scheme, v = s+" ", rest
	}
	if len(v) <= 8 {
		return scheme + "****"
	}
	return scheme + "****" + v[len(v)-4:]
}

// controlJSON writes v as an indented JSON answer.
func controlJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		controlError(w, http.StatusInternalServerError, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n')) // a failed write only means the caller left
}

// controlError writes a control API error.
func controlError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(mustJSON(map[string]string{"error": msg}), '\n')) // a failed write only means the caller left
}
