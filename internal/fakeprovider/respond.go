package fakeprovider

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/tidwall/gjson"
	"math"
	"net"
	"net/http"
	"strconv"

	"github.com/switchyard-gw/switchyard/internal/catalog"
)

// html502 is the page a proxy in front of a provider answers with (nginx's wording).
const html502 = "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"

// garbageBody and garbageLine are what KindGarbage sends instead of JSON and instead of an event.
const (
	garbageBody = "upstream sent something that is not JSON {\"choices\": ["
	garbageLine = "data: {\"id\": this is not json\n\n"
)

// serveModel answers one model request with its scripted behavior. When the request context
// ended first (the caller went away, or Serve is shutting down) it reports the request on Closed
// and aborts the handler, so that the server drops the connection instead of completing an empty
// 200 response.
func (p *Provider) serveModel(w http.ResponseWriter, r *http.Request) {
	req, b, ok := p.admit(w, r)
	if !ok {
		return
	}
	if (isEmbeddingsPath(req.Path) || req.Path == countTokensPath || isImagesPath(req.Path)) && (b.Kind == KindOK || b.Kind == KindSlowHeaders) {
		if err := wait(r.Context(), b.Delay); err != nil {
			p.reportClosed(req)
			panic(http.ErrAbortHandler)
		}
		w.Header().Set("Content-Type", "application/json")
		if isImagesPath(req.Path) {
			_, _ = w.Write(p.imagesAnswer(req))
			return
		}
		_, _ = w.Write(p.auxAnswer(req))
		return
	}
	if err := p.respond(w, r, req, b); errors.Is(err, errCallerGone) {
		p.reportClosed(req)
		panic(http.ErrAbortHandler)
	}
}

// respond carries out behavior b for req. It returns errCallerGone when the caller went away
// before the answer was complete.
func (p *Provider) respond(w http.ResponseWriter, r *http.Request, req Request, b Behavior) error {
	ctx := r.Context()
	rid := requestID(req.Seq)
	fail := func(e apiError) error {
		return writeError(w, p.dialect, e.override(p.dialect, b), rid, b.RetryAfter)
	}
	if handled, err := p.respondLifecycle(w, r, req, b); handled { // lifecycle.go
		return err
	}
	switch b.Kind {
	case KindStatus:
		status := b.Status
		if status == 0 {
			status = http.StatusInternalServerError
		}
		e := statusError(p.dialect, status, req.Model)
		if status == http.StatusTooManyRequests && p.dialect == catalog.OpenAI && b.RetryAfter > 0 {
			e.message = fmt.Sprintf("Rate limit reached for %s in organization org-fake on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in %ds.", req.Model, b.RetryAfter)
		}
		return fail(e)
	case KindContentPolicy:
		return fail(contentPolicyError(p.dialect))
	case KindContextOverflow:
		return fail(contextOverflowError(p.dialect, promptTokens(req.Body)))
	case KindHTML502:
		h := w.Header()
		h.Set("Content-Type", "text/html")
		h.Set("Content-Length", strconv.Itoa(len(html502)))
		if b.RetryAfter > 0 {
			h.Set("Retry-After", strconv.Itoa(b.RetryAfter))
		}
		w.WriteHeader(http.StatusBadGateway)
		_, err := w.Write([]byte(html502))
		return err
	case KindReset:
		reset(w)
		return nil
	case KindHang:
		<-ctx.Done()
		return errCallerGone
	case KindHeadersHang:
		if err := newSSEWriter(ctx, w, b).start(); err != nil {
			return err
		}
		<-ctx.Done()
		return errCallerGone
	case KindSlowHeaders:
		if err := wait(ctx, b.Delay); err != nil {
			return err
		}
		b.Delay = 0
	case KindOK, KindPreambleError, KindCut, KindTruncate, KindStreamError, KindGarbage:
	default:
		e := serverError(p.dialect)
		e.message = fmt.Sprintf("fakeprovider: unknown behavior kind %q", b.Kind)
		return writeError(w, p.dialect, e, rid, 0)
	}
	a := buildAnswer(p.dialect, p.name, req.Seq, req.At.Unix(), req.Body, b)
	if req.Stream {
		return p.stream(w, r, a, b, rid)
	}
	return p.nonStream(w, r, a, b, rid)
}

// nonStream answers a non-streaming request: the whole body after Behavior.Delay, or the
// fallbacks of the stream-only kinds.
func (p *Provider) nonStream(w http.ResponseWriter, r *http.Request, a *answer, b Behavior, rid string) error {
	fail := func(e apiError) error {
		return writeError(w, p.dialect, e.override(p.dialect, b), rid, b.RetryAfter)
	}
	switch b.Kind {
	case KindPreambleError:
		return fail(overloadError(p.dialect))
	case KindStreamError:
		return fail(serverError(p.dialect))
	}
	if err := wait(r.Context(), b.Delay); err != nil {
		return err
	}
	body := []byte(garbageBody)
	if b.Kind != KindGarbage {
		if p.dialect == catalog.Anthropic {
			body = anthropicMessage(a)
		} else if isResponsesPath(r.URL.Path) {
			body = responsesBody(a)
		} else {
			body = openAICompletion(a)
		}
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if b.Kind == KindCut || b.Kind == KindTruncate {
		if _, err := w.Write(body[:len(body)/2]); err != nil {
			return errCallerGone
		}
		if err := http.NewResponseController(w).Flush(); err != nil {
			return errCallerGone
		}
		panic(http.ErrAbortHandler) // drop the connection: the caller reads an unexpected EOF
	}
	if _, err := w.Write(body); err != nil {
		return errCallerGone
	}
	return nil
}

// stream answers a streaming request frame by frame.
func (p *Provider) stream(w http.ResponseWriter, r *http.Request, a *answer, b Behavior, rid string) error {
	sw := newSSEWriter(r.Context(), w, b)
	if b.Kind == KindGarbage {
		if err := sw.start(); err != nil {
			return err
		}
		return sw.frame([]byte(garbageLine))
	}
	var fs frames
	responses := p.dialect == catalog.OpenAI && isResponsesPath(r.URL.Path)
	switch {
	case p.dialect == catalog.Anthropic:
		fs = anthropicFrames(a)
	case responses:
		fs = responsesFrames(a)
	default:
		fs = openAIFrames(a)
	}
	limit := -1
	switch b.Kind {
	case KindPreambleError:
		limit = 0
	case KindCut, KindTruncate, KindStreamError:
		limit = min(b.After, a.deltaCount())
	}
	if err := sw.start(); err != nil {
		return err
	}
	stopped, err := sw.streamUntil(fs, b.Delay, limit)
	if err != nil || !stopped {
		return err
	}
	switch b.Kind {
	case KindCut:
		panic(http.ErrAbortHandler) // drop the connection with no terminal frame
	case KindTruncate:
		return nil // end the response cleanly with no terminal frame
	}
	e := serverError(p.dialect)
	if b.Kind == KindPreambleError {
		e = overloadError(p.dialect)
	}
	e = e.override(p.dialect, b)
	if p.dialect == catalog.Anthropic {
		return sw.frame(anthropicStreamError(e, rid))
	}
	if responses {
		return sw.frame(responsesStreamError(e))
	}
	return sw.frame(openAIStreamError(e))
}

// reset closes the connection before any byte of the response: on HTTP/1 it hijacks the
// connection and closes it with SO_LINGER 0 so that the caller sees a reset; where hijacking is
// not supported (HTTP/2) it aborts the handler, which resets the stream.
func reset(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0) // best effort: without it the caller sees EOF instead of a reset
	}
	_ = conn.Close() // the connection is ours to drop; its close error carries nothing
}

// mustJSON encodes v, which callers guarantee is encodable.
func mustJSON(v any) []byte {
	out, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("fakeprovider: encoding %T: %v", v, err))
	}
	return out
}

// embeddingPattern is the emulated embedding: dimension i of every vector is
// embeddingPattern[i%3] (the default 3 dimensions are exactly these values).
var embeddingPattern = [3]float32{0.125, -0.25, 0.5}

// maxEmbeddingDimensions is the largest dimensions a request may ask for (OpenAI's largest
// embedding model, text-embedding-3-large, has 3072).
const maxEmbeddingDimensions = 3072

// embeddingOptions checks an embeddings request's encoding_format ("float", the default, or
// "base64") and dimensions (an integer from 1 to maxEmbeddingDimensions), answering the 400
// OpenAI gives otherwise; nil when they are fine.
func embeddingOptions(body []byte) *apiError {
	bad := func(param, msg string) *apiError {
		e := statusError(catalog.OpenAI, http.StatusBadRequest, "")
		e.message, e.param = msg, param
		return &e
	}
	if f := gjson.GetBytes(body, "encoding_format"); f.Exists() && f.Type != gjson.Null {
		if f.Type != gjson.String || (f.Str != "float" && f.Str != "base64") {
			return bad("encoding_format", "Invalid value for 'encoding_format': expected 'float' or 'base64'.")
		}
	}
	if d := gjson.GetBytes(body, "dimensions"); d.Exists() && d.Type != gjson.Null {
		if d.Type != gjson.Number || d.Num != float64(int64(d.Num)) || d.Num < 1 || d.Num > maxEmbeddingDimensions {
			return bad("dimensions", "Invalid value for 'dimensions': expected an integer from 1 to "+strconv.Itoa(maxEmbeddingDimensions)+".")
		}
	}
	return nil
}

// auxAnswer is the answer of the embeddings and count_tokens endpoints: per input a
// deterministic embedding of `dimensions` values (default 3; embeddingPattern repeated), as
// JSON floats or, for encoding_format "base64", as the base64 of little-endian float32s the
// way OpenAI sends them (what the Node and Python SDKs request by default), with
// usage.prompt_tokens = P (the prompt-token formula); or {"input_tokens": P}.
func (p *Provider) auxAnswer(req Request) []byte {
	pt := promptTokens(req.Body)
	if req.Path == countTokensPath {
		return []byte(`{"input_tokens":` + strconv.Itoa(pt) + `}`)
	}
	n := 1
	if in := gjson.GetBytes(req.Body, "input"); in.IsArray() {
		n = len(in.Array())
	}
	dims := len(embeddingPattern)
	if d := gjson.GetBytes(req.Body, "dimensions"); d.Type == gjson.Number {
		dims = int(d.Int()) // checked by embeddingOptions
	}
	vector := make([]byte, 0, dims*8)
	if gjson.GetBytes(req.Body, "encoding_format").Str == "base64" {
		raw := make([]byte, 4*dims)
		for i := range dims {
			binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(embeddingPattern[i%len(embeddingPattern)]))
		}
		vector = append(vector, '"')
		vector = base64.StdEncoding.AppendEncode(vector, raw)
		vector = append(vector, '"')
	} else {
		vector = append(vector, '[')
		for i := range dims {
			if i > 0 {
				vector = append(vector, ',')
			}
			vector = strconv.AppendFloat(vector, float64(embeddingPattern[i%len(embeddingPattern)]), 'g', -1, 32)
		}
		vector = append(vector, ']')
	}
	out := []byte(`{"object":"list","data":[`)
	for i := range n {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"object":"embedding","index":`...)
		out = strconv.AppendInt(out, int64(i), 10)
		out = append(out, `,"embedding":`...)
		out = append(out, vector...)
		out = append(out, '}')
	}
	out = append(out, `],"model":`...)
	m, _ := json.Marshal(req.Model)
	out = append(out, m...)
	out = append(out, `,"usage":{"prompt_tokens":`...)
	out = strconv.AppendInt(out, int64(pt), 10)
	out = append(out, `,"total_tokens":`...)
	out = strconv.AppendInt(out, int64(pt), 10)
	return append(out, "}}"...)
}
