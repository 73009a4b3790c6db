// Package upstream owns the physical call to one deployment: one tuned http.Transport per
// deployment, the deployment's credentials, the dialect's endpoint and headers, and the
// deadlines of R-FAIL-5 (response headers within 20 s on a stream, 60 s otherwise; an idle
// stream is a hang too, and so is a stream without semantic output 30 s after its headers).
// Errors come back classified as *failure.Error; a missed deadline is an upstream_timeout
// marked as a hang (R-CIRCUIT-5), told apart from a caller's cancellation (R-FAIL-11) through
// context.Cause.
package upstream

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/failure"
)

// AnthropicVersion is the anthropic-version the gateway sends upstream. It is chosen on purpose
// (wire.md §4.1): 2023-06-01 keeps temperature/top_p/top_k working for callers of either SDK
// generation, and the new SDKs' requests are valid under it.
const AnthropicVersion = "2023-06-01"

// Shared header values: net/http only reads request header slices, never writes them.
var (
	jsonValue        = []string{"application/json"}
	eventStreamValue = []string{"text/event-stream"}
	versionValue     = []string{AnthropicVersion}
)

// Deadlines are the per-attempt upstream deadlines; zero values take the defaults.
type Deadlines struct {
	Headers       time.Duration // non-streaming headers deadline (default 60s)
	StreamHeaders time.Duration // streaming headers deadline (default 20s)
	StreamIdle    time.Duration // longest gap between reads of a response body (default 60s)
	// FirstOutput is, on a stream, the longest time from the response headers to the first
	// semantic output, which the caller reports with Call.Output (default 30s): reads of
	// lifecycle frames (pings, comments, unknown events) do not extend it.
	FirstOutput time.Duration
	// Dial, when set, replaces the TCP dialer (in-memory networks in tests, custom proxies).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

func (d *Deadlines) withDefaults() {
	if d.Headers <= 0 {
		d.Headers = 60 * time.Second
	}
	if d.StreamHeaders <= 0 {
		d.StreamHeaders = 20 * time.Second
	}
	if d.StreamIdle <= 0 {
		d.StreamIdle = 60 * time.Second
	}
	if d.FirstOutput <= 0 {
		d.FirstOutput = 30 * time.Second
	}
}

// Client calls one deployment. It is safe for concurrent use.
type Client struct {
	dep  *catalog.Deployment
	auth []string // the credential header's value, built once
	tr   *http.Transport
	// tmpl holds, per operation, the method and parsed URL shared by every attempt (never
	// mutated); nil when the deployment's dialect has no such endpoint or its URL does not parse
	// (configuration validation prevents that).
	tmpl      [OpResponses + 1]*http.Request
	deadlines Deadlines
	// adapter carries the attempts to a platform that hosts the dialect (Bedrock, Vertex,
	// Azure); nil for the dialect's own API, which tmpl and the dialect's headers serve.
	adapter adapter
	// responses: a Responses request passes through (ServesResponses).
	responses bool
}

// adapter carries one attempt to a platform that hosts the deployment's dialect (contract.md,
// round 3): the platform's URL, body shape and credentials on the way out, and the dialect's
// own wire (SSE framing, error shapes) on the way back, so that everything after upstream —
// the relay's commit gate, failover, usage and error classification — sees the dialect it
// knows.
type adapter interface {
	// request builds the attempt of protocol op: URL, body (the dialect's request as the relay
	// built it, with the route's upstream model) and credentials. h already holds Content-Type,
	// Accept and Traceparent; the adapter adds its own headers to it and sets it as the
	// request's Header. An error is a *failure.Error (e.g. upstream_auth when no credential can
	// be had).
	request(ctx context.Context, op catalog.Protocol, body []byte, stream bool, anthropicBeta string, h http.Header) (*http.Request, error)
	// answer adapts resp in place before anything reads it: its Body to the dialect's framing
	// and, on an error status, its status and body to the dialect's error shape.
	answer(resp *http.Response, stream bool)
}

// New returns a client for dep with its own connection pool. The transport decompresses gzip
// itself (the caller's Accept-Encoding is never forwarded, wire.md §6).
func New(dep *catalog.Deployment, d Deadlines) *Client {
	d.withDefaults()
	dial := d.Dial
	if dial == nil {
		dial = (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	}
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           dial,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          1024,
		MaxIdleConnsPerHost:   512,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	c := &Client{dep: dep, tr: tr, deadlines: d, adapter: newAdapter(dep, tr)}
	for op := catalog.ProtocolModel; op < catalog.NumProtocols; op++ {
		if u := EndpointOf(dep, op); u != "" {
			c.tmpl[op], _ = http.NewRequest(http.MethodPost, u, nil)
		}
	}
	if u := responsesEndpoint(dep); u != "" {
		if c.adapter == nil {
			c.tmpl[OpResponses], _ = http.NewRequest(http.MethodPost, u, nil)
		}
		c.responses = c.adapter != nil || c.tmpl[OpResponses] != nil
	}
	if dep.APIKey != "" {
		if dep.Dialect == catalog.Anthropic {
			c.auth = []string{dep.APIKey}
		} else {
			c.auth = []string{"Bearer " + dep.APIKey}
		}
	}
	return c
}

// Endpoint is the URL a deployment's model calls go to (contract.md: the gateway appends
// /chat/completions to an OpenAI base URL and /v1/messages to an Anthropic one).
func Endpoint(dep *catalog.Deployment) string { return EndpointOf(dep, catalog.ProtocolModel) }

// EndpointOf is the URL of protocol op at a deployment, "" when its dialect has none.
func EndpointOf(dep *catalog.Deployment, op catalog.Protocol) string {
	switch dep.Platform {
	case catalog.PlatformVertex:
		return vertexEndpoint(dep, op)
	case catalog.PlatformAzure:
		return azureEndpoint(dep, op)
	}
	base := strings.TrimRight(dep.BaseURL, "/")
	switch {
	case dep.Dialect == catalog.Anthropic && op == catalog.ProtocolModel:
		return base + "/v1/messages"
	case dep.Dialect == catalog.Anthropic && op == catalog.ProtocolCountTokens:
		return base + "/v1/messages/count_tokens"
	case dep.Dialect != catalog.Anthropic && op == catalog.ProtocolModel:
		return base + "/chat/completions"
	case dep.Dialect != catalog.Anthropic && op == catalog.ProtocolEmbeddings:
		return base + "/embeddings"
	case dep.Dialect != catalog.Anthropic && op == catalog.ProtocolImages:
		return base + "/images/generations"
	case dep.Dialect != catalog.Anthropic && op == catalog.ProtocolImageEdits:
		return base + "/images/edits"
	}
	return ""
}

// Deployment returns the deployment this client calls.
func (c *Client) Deployment() *catalog.Deployment { return c.dep }

// Close releases idle connections.
func (c *Client) Close() { c.tr.CloseIdleConnections() }

// Call is one attempt in flight. Its Body reads the response and re-arms the idle deadline on
// every read; Close must be called exactly once, and releases the attempt's timer and context.
type Call struct {
	// Status is the response's HTTP status in the deployment's dialect: a platform adapter
	// (Bedrock, Vertex) has translated the platform's error status into the one the dialect's
	// own API answers for that error (Bedrock's 503 ServiceUnavailableException is Anthropic's
	// 529 overloaded_error), which error classification reads.
	Status int
	// UpstreamStatus is the HTTP status the provider itself answered, before any adapter
	// translated it (Bedrock's 503 above); Status on a dialect's own API. The audit's
	// upstream_status records it (R-AUDIT-2).
	UpstreamStatus int
	Header         http.Header
	Body           io.Reader
	// HeadersAt is when the response headers arrived.
	HeadersAt time.Time

	resp   *http.Response
	timer  *time.Timer
	idle   time.Duration
	cancel context.CancelCauseFunc
	ctx    context.Context
	// firstBy is the first-output deadline of a stream until Output is called; zero after,
	// and on a non-stream call.
	firstBy time.Time
}

// Send performs one attempt of protocol op with body (already rewritten for this route). anthropicBeta is the
// caller's anthropic-beta header, forwarded as is ("" for none). The headers deadline applies
// until the response headers arrive; after that, StreamIdle bounds each gap between reads.
// Errors are *failure.Error: upstream_timeout (Hang) for a missed deadline, cancelled when ctx
// ended, upstream_error for a refused or reset connection.
func (c *Client) Send(ctx context.Context, op catalog.Protocol, body []byte, stream bool, anthropicBeta string) (*Call, error) {
	return c.SendTyped(ctx, op, body, nil, stream, anthropicBeta)
}

// SendTyped is Send with the body's Content-Type header value given: nil is application/json;
// the image edits' multipart/form-data body carries its boundary there.
func (c *Client) SendTyped(ctx context.Context, op catalog.Protocol, body []byte, contentType []string, stream bool, anthropicBeta string) (*Call, error) {
	actx, cancel := context.WithCancelCause(ctx)
	d := c.deadlines.Headers
	if stream {
		d = c.deadlines.StreamHeaders
	}
	timer := time.AfterFunc(d, func() { cancel(failure.ErrHeadersDeadline) })
	h := make(http.Header, 5)
	h["Content-Type"] = jsonValue
	if contentType != nil {
		h["Content-Type"] = contentType
	}
	if stream {
		h["Accept"] = eventStreamValue
	} else {
		h["Accept"] = jsonValue
	}
	if tp := traceparent(ctx, c.dep.Name); tp != "" {
		h["Traceparent"] = []string{tp} // W3C trace context of the attempt's span (trace.go)
	}
	var req *http.Request
	var err error
	if c.adapter != nil {
		req, err = c.adapter.request(actx, op, body, stream, anthropicBeta, h)
	} else {
		req, err = c.dialectRequest(actx, op, body, anthropicBeta, h)
	}
	if err != nil {
		timer.Stop()
		cancel(nil)
		return nil, err
	}
	resp, err := c.tr.RoundTrip(req)
	if err != nil {
		timer.Stop()
		cause := context.Cause(actx)
		cancel(nil)
		return nil, classifyTransport(ctx, cause, err)
	}
	upstreamStatus := resp.StatusCode
	if c.adapter != nil {
		c.adapter.answer(resp, stream)
	}
	idle := c.deadlines.StreamIdle
	if !stream {
		idle = c.deadlines.Headers
	}
	call := &Call{Status: resp.StatusCode, UpstreamStatus: upstreamStatus, Header: resp.Header, HeadersAt: time.Now(), resp: resp, timer: timer, idle: idle, cancel: cancel, ctx: actx}
	if stream {
		// One timer serves both deadlines: it is armed for whichever comes first.
		call.firstBy = call.HeadersAt.Add(c.deadlines.FirstOutput)
		timer.Reset(min(idle, c.deadlines.FirstOutput))
	} else {
		timer.Reset(idle)
	}
	call.Body = (*idleReader)(call)
	return call, nil
}

// dialectRequest builds an attempt at the dialect's own API: the URL parsed once in New, the
// dialect's version and credential headers. The transport is called directly: no redirects (a
// provider's redirect is a failure, not a hop to follow with the house credentials), no header
// copy.
func (c *Client) dialectRequest(ctx context.Context, op catalog.Protocol, body []byte, anthropicBeta string, h http.Header) (*http.Request, error) {
	tmpl := c.tmpl[op]
	if tmpl == nil {
		return nil, failure.New(failure.UpstreamError, "the deployment has no endpoint for this operation")
	}
	req := tmpl.WithContext(ctx)
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.ContentLength = int64(len(body))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	req.Header = h
	switch c.dep.Dialect {
	case catalog.Anthropic:
		h["Anthropic-Version"] = versionValue
		if c.auth != nil {
			h["X-Api-Key"] = c.auth
		}
		if anthropicBeta != "" {
			h["Anthropic-Beta"] = []string{anthropicBeta}
		}
	default:
		if c.auth != nil {
			h["Authorization"] = c.auth
		}
	}
	return req, nil
}

// Output reports the stream's first semantic output: the first-output deadline no longer
// applies, only the idle deadline between reads. Later calls do nothing.
func (c *Call) Output() {
	if c.firstBy.IsZero() {
		return
	}
	c.firstBy = time.Time{}
	c.timer.Reset(c.idle)
}

// Err classifies an error returned by Body.Read.
func (c *Call) Err(ctx context.Context, err error) error {
	if err == nil || err == io.EOF {
		return err
	}
	cause := context.Cause(c.ctx)
	if ctx.Err() == nil && errors.Is(cause, failure.ErrHeadersDeadline) && !c.firstBy.IsZero() && !time.Now().Before(c.firstBy) {
		return &failure.Error{Class: failure.UpstreamTimeout, Hang: true, Cause: err,
			Msg: "the provider sent no output within the first-output deadline"}
	}
	return classifyTransport(ctx, cause, err)
}

// Drain reads what is left of a body whose stream has ended normally (at most 64 KiB, within
// one second), so that the connection goes back to the pool instead of being closed: a stream
// ends at [DONE] or message_stop, a few bytes before the body's own end.
func (c *Call) Drain() {
	c.timer.Reset(time.Second)
	_, _ = io.CopyN(io.Discard, c.resp.Body, 64<<10)
}

// Close ends the attempt: the connection is released (or closed when the body was not
// drained), the timer stopped and the context cancelled.
func (c *Call) Close() {
	c.timer.Stop()
	c.resp.Body.Close()
	c.cancel(nil)
}

type idleReader Call

func (r *idleReader) Read(p []byte) (int, error) {
	n, err := r.resp.Body.Read(p)
	if n > 0 {
		d := r.idle
		if !r.firstBy.IsZero() {
			d = min(d, max(time.Until(r.firstBy), 0))
		}
		r.timer.Reset(d)
	}
	return n, err
}

// classifyTransport turns a transport error into a failure: the caller's own cancellation is
// cancelled (counts against nothing), a deadline this package set is a hang, anything else
// (refused, reset, TLS, EOF before headers) is upstream_error.
func classifyTransport(callerCtx context.Context, cause, err error) error {
	switch {
	case errors.Is(context.Cause(callerCtx), failure.ErrShutdown):
		return &failure.Error{Class: failure.GatewayError, Msg: "the gateway is shutting down", Cause: err}
	case callerCtx.Err() != nil:
		return &failure.Error{Class: failure.Cancelled, Msg: "the request was cancelled", Cause: err}
	case errors.Is(cause, failure.ErrHeadersDeadline):
		return &failure.Error{Class: failure.UpstreamTimeout, Msg: "the provider did not answer in time", Hang: true, Cause: err}
	}
	return &failure.Error{Class: failure.UpstreamError, Msg: "the provider connection failed", Cause: err}
}
