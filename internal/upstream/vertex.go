package upstream

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/dialect"
	"github.com/switchyard-gw/switchyard/internal/failure"
)

// VertexVersion is the anthropic_version the gateway puts in the body of every request to
// Claude on Vertex AI (Vertex takes the API version from the body, not from a header).
const VertexVersion = "vertex-2023-10-16"

// vertex carries an anthropic-dialect deployment's attempts to Claude on Google Vertex AI
// (contract.md, round 3: platform vertex), as anthropic-sdk-go/v2/vertex does:
//   - a message is POST {base}/v1/projects/{project}/locations/{location}/publishers/anthropic/
//     models/{model}:rawPredict, or :streamRawPredict for a stream (SSE exactly as Anthropic's),
//     where {model} is the body's model (the route's upstream_model, e.g.
//     claude-sonnet-4-5@20250929), path-escaped; the body loses model and gains
//     "anthropic_version": "vertex-2023-10-16" (stream stays as the relay wrote it);
//   - count_tokens is POST .../models/count-tokens:rawPredict with the model left in the body;
//   - {base} is https://{location}-aiplatform.googleapis.com (global:
//     https://aiplatform.googleapis.com; the multi-regions us and eu:
//     https://aiplatform.{us,eu}.rep.googleapis.com), or base_url's scheme and host when set;
//   - the caller's anthropic-beta header goes as is; no anthropic-version header;
//   - the credential is an OAuth2 access token (Authorization: Bearer) from the service
//     account of vertex.credentials_file, or Application Default Credentials, cached and
//     refreshed in the background before it expires (googleTokens).
//
// On the way back, Google's own error shape ({"error":{"code":429,"message":...,
// "status":"RESOURCE_EXHAUSTED"}}, also as a one-element array) is rewritten into Anthropic's
// (googleToAnthropic), so that anthropic.NormalizeError classifies it: RESOURCE_EXHAUSTED is
// upstream_rate_limited, UNAVAILABLE fails over, PERMISSION_DENIED and UNAUTHENTICATED are
// upstream_auth. Claude's own errors, which Vertex passes in Anthropic's shape, stay as they are.
type vertex struct {
	scheme, host string
	// path and rawPath are /v1/projects/{p}/locations/{l}/publishers/anthropic/models/,
	// unescaped and escaped.
	path, rawPath string
	tokens        *googleTokens
}

// newVertex returns the vertex adapter of dep; its credentials are read on the first attempt.
func newVertex(dep *catalog.Deployment, tr *http.Transport) adapter {
	scheme, host := vertexHost(dep)
	p, l := dep.Vertex.Project, dep.Vertex.Location
	return &vertex{scheme: scheme, host: host,
		path:    "/v1/projects/" + p + "/locations/" + l + "/publishers/anthropic/models/",
		rawPath: "/v1/projects/" + url.PathEscape(p) + "/locations/" + url.PathEscape(l) + "/publishers/anthropic/models/",
		tokens:  newGoogleTokens(dep.Name, dep.Vertex.CredentialsFile, tr)}
}

// vertexHost is the scheme and host of dep's Vertex endpoint.
func vertexHost(dep *catalog.Deployment) (scheme, host string) {
	if dep.BaseURL != "" {
		if u, err := url.Parse(dep.BaseURL); err == nil && u.Host != "" {
			return u.Scheme, u.Host
		}
	}
	switch l := dep.Vertex.Location; l {
	case "global":
		return "https", "aiplatform.googleapis.com"
	case "us", "eu":
		return "https", "aiplatform." + l + ".rep.googleapis.com"
	default:
		return "https", l + "-aiplatform.googleapis.com"
	}
}

// vertexEndpoint is EndpointOf for platform vertex; the model shows as {model} (the route's
// upstream_model).
func vertexEndpoint(dep *catalog.Deployment, op catalog.Protocol) string {
	scheme, host := vertexHost(dep)
	base := scheme + "://" + host + "/v1/projects/" + url.PathEscape(dep.Vertex.Project) + "/locations/" +
		url.PathEscape(dep.Vertex.Location) + "/publishers/anthropic/models/"
	switch op {
	case catalog.ProtocolModel:
		return base + "{model}:rawPredict"
	case catalog.ProtocolCountTokens:
		return base + "count-tokens:rawPredict"
	}
	return ""
}

func (v *vertex) request(ctx context.Context, op catalog.Protocol, body []byte, stream bool, anthropicBeta string, h http.Header) (*http.Request, error) {
	var model, method string
	switch op {
	case catalog.ProtocolModel:
		body, model = vertexBody(body, true)
		if model == "" {
			return nil, failure.New(failure.InvalidRequest, "the request names no model")
		}
		method = ":rawPredict"
		if stream {
			method = ":streamRawPredict"
		}
	case catalog.ProtocolCountTokens:
		body, _ = vertexBody(body, false)
		model, method = "count-tokens", ":rawPredict"
	default:
		return nil, failure.New(failure.UpstreamError, "the deployment has no endpoint for this operation")
	}
	auth, err := v.tokens.header(ctx)
	if err != nil {
		return nil, err
	}
	u := &url.URL{Scheme: v.scheme, Host: v.host, Path: v.path + model + method, RawPath: v.rawPath + url.PathEscape(model) + method}
	req := (&http.Request{Method: http.MethodPost, URL: u, Host: v.host, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}).WithContext(ctx)
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.ContentLength = int64(len(body))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	h["Authorization"] = auth
	if anthropicBeta != "" {
		h["Anthropic-Beta"] = []string{anthropicBeta}
	}
	req.Header = h
	return req, nil
}

// vertexBody is the Anthropic body as Vertex takes it: "anthropic_version" first, then every
// other top-level member of body in order, without "model" when dropModel (a message; the
// model is in the URL). model is the body's model. A body that is not a JSON object is
// returned as is (the relay never builds one).
func vertexBody(body []byte, dropModel bool) (out []byte, model string) {
	root := gjson.ParseBytes(body)
	if !root.IsObject() {
		return body, ""
	}
	out = make([]byte, 0, len(body)+48)
	out = append(out, `{"anthropic_version":"`+VertexVersion+`"`...)
	root.ForEach(func(k, val gjson.Result) bool {
		switch k.Str {
		case "model":
			model = val.Str
			if dropModel {
				return true
			}
		case "anthropic_version":
			return true
		}
		out = append(out, ',')
		out = append(out, k.Raw...)
		out = append(out, ':')
		out = append(out, val.Raw...)
		return true
	})
	return append(out, '}'), model
}

// answer rewrites an error answer in Google's shape into Anthropic's; anything else goes as is.
func (v *vertex) answer(resp *http.Response, _ bool) {
	if resp.StatusCode < 400 {
		return
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxGoogleError))
	resp.Body.Close()
	if out, ok := googleToAnthropic(resp.StatusCode, b); ok {
		resp.StatusCode, b = out.status, out.body
		resp.Header.Set("Content-Type", "application/json")
	}
	resp.ContentLength = int64(len(b))
	var rest io.Reader = bytes.NewReader(b)
	if err != nil { // the read failed midway: the relay sees the same failure after the bytes read
		rest = io.MultiReader(rest, errReader{err})
	}
	resp.Body = io.NopCloser(rest)
}

// maxGoogleError is how much of an error body answer reads (as much as the relay reads).
const maxGoogleError = 64 << 10

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

type anthropicError struct {
	status int
	body   []byte
}

// googleToAnthropic rewrites a Google error body (an {"error":{"code","message","status"}}
// object, or a JSON array whose first element is one) into Anthropic's error body and status:
//
//	RESOURCE_EXHAUSTED -> 429 rate_limit_error       (upstream_rate_limited)
//	UNAVAILABLE -> 503 overloaded_error              (upstream_error: fails over; the caller's 503)
//	ABORTED -> 529 overloaded_error                  (upstream_error: fails over)
//	UNAUTHENTICATED -> 401 authentication_error      (upstream_auth)
//	PERMISSION_DENIED -> 403 permission_error        (upstream_auth)
//	NOT_FOUND -> 404 not_found_error                 (upstream_error: the model is not served there)
//	DEADLINE_EXCEEDED -> 504 timeout_error           (upstream_timeout)
//	INVALID_ARGUMENT, FAILED_PRECONDITION, OUT_OF_RANGE -> 400 invalid_request_error
//	anything else: the HTTP status, with api_error for 5xx
//
// Google's status goes in error.details.error_code (logged), its message in error.message
// (matched for context-overflow and policy text by anthropic.NormalizeError, never shown to a
// caller). ok is false when body is not in Google's shape.
func googleToAnthropic(status int, body []byte) (anthropicError, bool) {
	if dialect.TooDeep(body) {
		return anthropicError{}, false
	}
	root := gjson.ParseBytes(body)
	if root.IsArray() {
		root = root.Get("0")
	}
	e := root.Get("error")
	gs := e.Get("status")
	if !e.IsObject() || gs.Type != gjson.String || gs.Str == "" {
		return anthropicError{}, false
	}
	typ := ""
	switch gs.Str {
	case "RESOURCE_EXHAUSTED":
		status, typ = http.StatusTooManyRequests, "rate_limit_error"
	case "UNAVAILABLE":
		// Google's HTTP 503: kept, so that the caller gets the provider's 503 (docs/errors.md
		// "Upstream 529 and 503"); overloaded_error fails over as a 529 does.
		status, typ = http.StatusServiceUnavailable, "overloaded_error"
	case "ABORTED":
		status, typ = 529, "overloaded_error"
	case "UNAUTHENTICATED":
		status, typ = http.StatusUnauthorized, "authentication_error"
	case "PERMISSION_DENIED":
		status, typ = http.StatusForbidden, "permission_error"
	case "NOT_FOUND":
		status, typ = http.StatusNotFound, "not_found_error"
	case "DEADLINE_EXCEEDED":
		status, typ = http.StatusGatewayTimeout, "timeout_error"
	case "INVALID_ARGUMENT", "FAILED_PRECONDITION", "OUT_OF_RANGE":
		status, typ = http.StatusBadRequest, "invalid_request_error"
	default:
		typ = "invalid_request_error"
		if status >= 500 || status < 400 {
			status, typ = http.StatusInternalServerError, "api_error"
		}
	}
	out := make([]byte, 0, 128+len(e.Get("message").Raw))
	out = append(out, `{"type":"error","error":{"type":"`...)
	out = append(out, typ...)
	out = append(out, `","message":`...)
	msg := e.Get("message")
	if msg.Type == gjson.String {
		out = dialect.AppendJSONString(out, msg.Str)
	} else {
		out = append(out, `""`...)
	}
	out = append(out, `,"details":{"error_code":`...)
	out = dialect.AppendJSONString(out, gs.Str)
	out = append(out, `}}}`...)
	return anthropicError{status: status, body: out}, true
}

// tokenError is a failed access-token fetch as the logs see it: the token endpoint's status,
// OAuth2 error code and description (printable ASCII, at most 200 bytes), or the local cause
// (an unreadable credentials file, a connection error). It never holds a credential.
type tokenError struct {
	deployment string
	status     int
	code, desc string
	cause      error
}

func (e *tokenError) Error() string {
	var b strings.Builder
	b.WriteString("google access token for deployment ")
	b.WriteString(e.deployment)
	b.WriteString(": ")
	if e.cause != nil {
		b.WriteString(e.cause.Error())
		return b.String()
	}
	b.WriteString("the token endpoint answered ")
	b.WriteString(strconv.Itoa(e.status))
	if e.code != "" {
		b.WriteString(" ")
		b.WriteString(e.code)
	}
	if e.desc != "" {
		b.WriteString(" (")
		b.WriteString(e.desc)
		b.WriteString(")")
	}
	return b.String()
}

func (e *tokenError) Unwrap() error { return e.cause }

// printable keeps s's printable ASCII, at most n bytes of it.
func printable(s string, n int) string {
	b := make([]byte, 0, min(len(s), n))
	for i := 0; i < len(s) && len(b) < n; i++ {
		if c := s[i]; c >= 0x20 && c < 0x7f {
			b = append(b, c)
		}
	}
	return string(b)
}

// tokenFailure is the *failure.Error of an attempt that got no access token: upstream_auth
// (the deployment's credentials; fails over, with the log line saying why), or, when ctx
// ended while the fetch ran, the attempt's timeout or the caller's cancellation.
func tokenFailure(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		if errors.Is(context.Cause(ctx), failure.ErrHeadersDeadline) {
			return &failure.Error{Class: failure.UpstreamTimeout, Hang: true, Cause: err,
				Msg: "the provider's token endpoint did not answer in time"}
		}
		return &failure.Error{Class: failure.Cancelled, Msg: "the request was cancelled", Cause: err}
	}
	return &failure.Error{Class: failure.UpstreamAuth, Cause: err,
		Msg: "the gateway could not get an access token for the provider"}
}
