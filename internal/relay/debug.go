package relay

import (
	"encoding/json"
	"net/http"

	"github.com/switchyard-gw/switchyard/internal/audit"
	"github.com/switchyard-gw/switchyard/internal/failure"
	"github.com/switchyard-gw/switchyard/internal/plan"
)

// debugRouting is the "routing" category of a request's debug member (extra.debug, issue 11
// item 4; docs/routing.md "Debug mode"): the plans the request ran on and what came of them,
// exactly what the caller's key can read in the audit (GET /v1/generation) and POST /v1/route,
// never prompt text, credentials or provider error bodies.
type debugRouting struct {
	RequestID       string                `json:"request_id"`
	Plan            *plan.Plan            `json:"plan"`
	Fallbacks       []*plan.Plan          `json:"fallbacks"`
	AdmissionEvents audit.AdmissionEvents `json:"admission_events"`
	Attempts        []audit.Attempt       `json:"attempts"`
}

// AppendDebug appends the JSON of a request's debug member to dst: {"routing": {"request_id",
// "plan" (the requested model's plan as POST /v1/route shows it; null when none was built),
// "fallbacks" (the fallback models' plans, in order), "admission_events" and "attempts" (as
// GET /v1/generation shows them, so far)}}. It allocates; it runs only for a request that
// asked for debug.
func AppendDebug(dst []byte, requestID string, p *plan.Plan, fbs []Fallback, events *audit.AdmissionEvents, attempts []audit.Attempt) []byte {
	v := debugRouting{RequestID: requestID, Plan: p, Fallbacks: make([]*plan.Plan, 0, len(fbs)), Attempts: attempts}
	for i := range fbs {
		v.Fallbacks = append(v.Fallbacks, fbs[i].Plan)
	}
	if events != nil {
		v.AdmissionEvents = *events
	}
	if v.Attempts == nil {
		v.Attempts = []audit.Attempt{}
	}
	b, err := json.Marshal(struct {
		Routing *debugRouting `json:"routing"`
	}{&v})
	if err != nil { // no value here fails to encode; keep the response well-formed regardless
		return append(dst, `{"routing":null}`...)
	}
	return append(dst, b...)
}

// debugOf is AppendDebug for the relay's request and result so far.
func (req *Request) debugOf(res *Result) []byte {
	return AppendDebug(nil, req.ID, req.plan, req.Fallbacks, req.Events, res.Attempts)
}

// AppendMember splices "name": value (raw JSON) into the JSON object body as its last member;
// a body that does not end in '}' (after trailing whitespace) is returned as it is. Every other
// byte is body's.
func AppendMember(body []byte, name string, value []byte) []byte {
	end := len(body)
	for end > 0 && isSpace(body[end-1]) {
		end--
	}
	if end == 0 || body[end-1] != '}' {
		return body
	}
	tail := string(body[end-1:])
	body = body[:end-1]
	i := len(body) - 1
	for i >= 0 && isSpace(body[i]) {
		i--
	}
	if i >= 0 && body[i] != '{' {
		body = append(body, ',')
	}
	body = append(body, '"')
	body = append(body, name...)
	body = append(body, `":`...)
	body = append(body, value...)
	return append(body, tail...)
}

func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\r' || c == '\t' }

// writeDebugComment ends a committed stream that asked for debug with one SSE comment line,
// `: debug {...}` and a blank line, after the dialect's terminal frame: the SSE grammar makes
// every line starting with ':' a comment, which both official SDKs skip (and they stop reading
// at their terminal frame anyway). The JSON is one line: encoding/json escapes every control
// character inside strings.
func writeDebugComment(w http.ResponseWriter, req *Request, res *Result) {
	b := append([]byte(": debug "), req.debugOf(res)...)
	b = append(b, '\n', '\n')
	if _, err := w.Write(b); err == nil {
		_ = http.NewResponseController(w).Flush()
	}
}

// writeError is WriteError with the request's debug member in the error body when it asked
// for one.
func (req *Request) writeError(w http.ResponseWriter, fe *failure.Error, res *Result, buf []byte) {
	if !req.Debug {
		WriteError(w, req.Codec, req.ID, fe, len(res.Attempts), buf)
		return
	}
	WriteErrorDebug(w, req.Codec, req.ID, fe, len(res.Attempts), req.debugOf(res))
}

// WriteErrorDebug is WriteError with a debug member (AppendDebug's JSON) spliced into the error
// body (both dialects' error bodies are JSON objects whose SDKs ignore unknown members).
func WriteErrorDebug(w http.ResponseWriter, codec Codec, requestID string, fe *failure.Error, attempts int, debug []byte) {
	h := w.Header()
	writeErrorHeaders(h, fe, attempts)
	status := fe.HTTPStatus()
	if status == failure.StatusClientClosedRequest {
		return
	}
	w.WriteHeader(status)
	_, _ = w.Write(AppendMember(codec.AppendErrorBody(nil, fe, requestID), "debug", debug))
}
