package fakeprovider

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream/eventstreamapi"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/dialect"
)

// BedrockVersion is the anthropic_version every Bedrock InvokeModel body for Claude carries.
const BedrockVersion = "bedrock-2023-05-31"

// bedrockMaxSkew is how far a SigV4 request's X-Amz-Date may be from the emulator's clock,
// as on AWS.
const bedrockMaxSkew = 5 * time.Minute

// BedrockConfig is what the Bedrock emulator accepts as authentication.
type BedrockConfig struct {
	// Region is the region SigV4 credential scopes must name (default us-east-1).
	Region string
	// AccessKeyID, SecretAccessKey and SessionToken are the one AWS credential whose SigV4
	// signatures verify; SessionToken, when set, must arrive as X-Amz-Security-Token. An empty
	// AccessKeyID accepts no signature.
	AccessKeyID, SecretAccessKey, SessionToken string
	// APIKey is the Bedrock API key accepted as `Authorization: Bearer KEY`; empty accepts none.
	APIKey string
	// Now is the emulator's clock (default time.Now): set it off the caller's to emulate a
	// clock skew.
	Now func() time.Time
}

// Bedrock emulates Amazon Bedrock's runtime for Claude (docs/platforms.md, "Amazon Bedrock") in
// front of an Anthropic-dialect Provider that it wraps: it verifies SigV4 signatures (service
// bedrock) against its one credential with aws-sdk-go-v2's own signer, or a Bedrock API key
// bearer token; it serves POST /model/{modelId}/invoke, /invoke-with-response-stream and
// /count-tokens; it refuses bodies that carry model or stream or lack anthropic_version as
// Bedrock does (ValidationException); and it answers in Bedrock's wire: event-stream `chunk`
// frames with base64 Anthropic events, `exception` frames for in-stream errors, and error
// answers as {"message":…} with x-amzn-ErrorType. The wrapped Provider's script drives every
// answer (Provider.Script, the /_fake/ control API, which Bedrock passes through unsigned).
//
// Error mapping of the scripted behaviors: status 429 is ThrottlingException, 503/529
// ServiceUnavailableException, other 5xx InternalServerException, 408/504
// ModelTimeoutException, 400 ValidationException (context overflow as "Input is too long for
// requested model."), 401 UnrecognizedClientException, 402/403 AccessDeniedException, 404
// ResourceNotFoundException. In a stream, the scripted error event becomes an exception frame:
// throttlingException for a rate limit, serviceUnavailableException for an overload
// (preamble_error), modelStreamErrorException for stream_error, modelTimeoutException,
// validationException. A Behavior.ErrorType ending in "Exception" names the AWS error type (or
// exception) itself.
type Bedrock struct {
	p      *Provider
	cfg    BedrockConfig
	signer *v4.Signer

	mu       sync.Mutex
	requests []BedrockRequest
}

// BedrockRequest is one request as the Bedrock emulator received it, before it reached the
// wrapped Provider.
type BedrockRequest struct {
	// Path is the URL path as sent (escaped); ModelID the unescaped model id in it; Operation
	// "invoke", "invoke-with-response-stream" or "count-tokens".
	Path, ModelID, Operation string
	// Header is a copy of the request headers; Body the raw body.
	Header http.Header
	Body   []byte
	// Auth is "sigv4" or "bearer" for a request that authenticated, "" otherwise.
	Auth string
	// Rejected is the AWS error type the request was refused with before reaching the
	// Provider, "" when it reached it.
	Rejected string
}

// NewBedrock returns a Bedrock emulator in front of p, which must speak catalog.Anthropic.
func NewBedrock(p *Provider, cfg BedrockConfig) *Bedrock {
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Bedrock{p: p, cfg: cfg, signer: v4.NewSigner()}
}

// Provider is the wrapped Anthropic-dialect provider, to script.
func (b *Bedrock) Provider() *Provider { return b.p }

// Requests returns a copy of the requests received on the Bedrock paths, in arrival order (the
// most recent 10,000).
func (b *Bedrock) Requests() []BedrockRequest {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]BedrockRequest(nil), b.requests...)
}

func (b *Bedrock) record(r BedrockRequest) {
	b.mu.Lock()
	if len(b.requests) >= maxRecorded {
		b.requests = b.requests[1:]
	}
	b.requests = append(b.requests, r)
	b.mu.Unlock()
}

// bedrockErr is one Bedrock error answer.
type bedrockErr struct {
	status int
	typ    string // x-amzn-ErrorType
	msg    string
}

// ServeHTTP serves the Bedrock runtime paths and passes /_fake/ to the Provider.
func (b *Bedrock) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/_fake/") {
		b.p.ServeHTTP(w, r)
		return
	}
	model, op, ok := bedrockRoute(r.URL.EscapedPath())
	if !ok || r.Method != http.MethodPost {
		writeBedrockError(w, bedrockErr{http.StatusNotFound, "UnknownOperationException", ""})
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	rec := BedrockRequest{Path: r.URL.EscapedPath(), ModelID: model, Operation: op, Header: r.Header.Clone(), Body: body}
	if err != nil {
		rec.Rejected = "ValidationException"
		b.record(rec)
		writeBedrockError(w, bedrockErr{http.StatusRequestEntityTooLarge, "ValidationException", "Input is too long for requested model."})
		return
	}
	auth, e := b.authenticate(r, body)
	rec.Auth = auth
	var inner []byte
	if e == nil {
		inner, e = bedrockInnerBody(body, model, op)
	}
	if e != nil {
		rec.Rejected = e.typ
		b.record(rec)
		writeBedrockError(w, *e)
		return
	}
	b.record(rec)

	r2 := r.Clone(r.Context())
	r2.URL.Path, r2.URL.RawPath = "/v1/messages", ""
	if op == "count-tokens" {
		r2.URL.Path = countTokensPath
	}
	r2.Body = io.NopCloser(bytes.NewReader(inner))
	r2.ContentLength = int64(len(inner))
	r2.Header.Del("Authorization")
	r2.Header.Set("Anthropic-Version", "2023-06-01")
	if betas := gjson.GetBytes(body, "anthropic_beta"); op != "count-tokens" && betas.IsArray() {
		var flags []string
		for _, f := range betas.Array() {
			flags = append(flags, f.String())
		}
		r2.Header.Set("Anthropic-Beta", strings.Join(flags, ","))
	}
	bw := &bedrockWriter{w: w, stream: op == "invoke-with-response-stream", countTokens: op == "count-tokens", enc: eventstream.NewEncoder()}
	b.p.ServeHTTP(bw, r2)
	bw.finish()
}

// bedrockRoute splits an escaped path /model/{modelId}/{operation}.
func bedrockRoute(escaped string) (model, op string, ok bool) {
	rest, found := strings.CutPrefix(escaped, "/model/")
	if !found {
		return "", "", false
	}
	i := strings.LastIndexByte(rest, '/')
	if i <= 0 {
		return "", "", false
	}
	op = rest[i+1:]
	switch op {
	case "invoke", "invoke-with-response-stream", "count-tokens":
	default:
		return "", "", false
	}
	model, err := url.PathUnescape(rest[:i])
	if err != nil || model == "" {
		return "", "", false
	}
	return model, op, true
}

// authenticate checks the request's credential as Bedrock does: a Bedrock API key bearer
// token, or a SigV4 signature recomputed with aws-sdk-go-v2's signer over the headers the
// request signed, within 5 minutes of the emulator's clock.
func (b *Bedrock) authenticate(r *http.Request, body []byte) (string, *bedrockErr) {
	authz := r.Header.Get("Authorization")
	if key, ok := strings.CutPrefix(authz, "Bearer "); ok {
		if b.cfg.APIKey == "" || subtle.ConstantTimeCompare([]byte(key), []byte(b.cfg.APIKey)) != 1 {
			return "", &bedrockErr{http.StatusForbidden, "AccessDeniedException", "Authentication failed: Please make sure your API Key is valid."}
		}
		return "bearer", nil
	}
	sig, ok := parseSigV4(authz)
	if !ok {
		return "", &bedrockErr{http.StatusForbidden, "MissingAuthenticationTokenException", "Missing Authentication Token"}
	}
	if b.cfg.AccessKeyID == "" || sig.accessKey != b.cfg.AccessKeyID {
		return "", &bedrockErr{http.StatusForbidden, "UnrecognizedClientException", "The security token included in the request is invalid."}
	}
	if sig.region != b.cfg.Region || sig.service != "bedrock" {
		return "", &bedrockErr{http.StatusForbidden, "InvalidSignatureException",
			fmt.Sprintf("Credential should be scoped to a valid region and service (%s, bedrock).", b.cfg.Region)}
	}
	const amzDate = "20060102T150405Z"
	at, err := time.Parse(amzDate, r.Header.Get("X-Amz-Date"))
	if err != nil || at.Format("20060102") != sig.date {
		return "", &bedrockErr{http.StatusForbidden, "IncompleteSignatureException", "Date must be in ISO-8601 'basic format'."}
	}
	now := b.cfg.Now().UTC()
	switch {
	case at.Before(now.Add(-bedrockMaxSkew)):
		return "", &bedrockErr{http.StatusForbidden, "InvalidSignatureException", fmt.Sprintf("Signature expired: %s is now earlier than %s (%s - 5 min.)",
			at.Format(amzDate), now.Add(-bedrockMaxSkew).Format(amzDate), now.Format(amzDate))}
	case at.After(now.Add(bedrockMaxSkew)):
		return "", &bedrockErr{http.StatusForbidden, "InvalidSignatureException", fmt.Sprintf("Signature not yet current: %s is still later than %s (%s + 5 min.)",
			at.Format(amzDate), now.Add(bedrockMaxSkew).Format(amzDate), now.Format(amzDate))}
	}
	if b.cfg.SessionToken != "" && r.Header.Get("X-Amz-Security-Token") != b.cfg.SessionToken {
		return "", &bedrockErr{http.StatusForbidden, "UnrecognizedClientException", "The security token included in the request is invalid."}
	}
	// Recompute the signature over the request as received, with only the headers it signed.
	u := &url.URL{Scheme: "https", Host: r.Host, Path: r.URL.Path, RawPath: r.URL.RawPath, RawQuery: r.URL.RawQuery}
	check := &http.Request{Method: r.Method, URL: u, Host: r.Host, Header: http.Header{}, ContentLength: r.ContentLength}
	for _, name := range strings.Split(sig.signedHeaders, ";") {
		switch name {
		case "host", "content-length":
			continue
		}
		if vs := r.Header.Values(name); vs != nil {
			check.Header[http.CanonicalHeaderKey(name)] = vs
		}
	}
	sum := sha256.Sum256(body)
	creds := aws.Credentials{AccessKeyID: b.cfg.AccessKeyID, SecretAccessKey: b.cfg.SecretAccessKey, SessionToken: b.cfg.SessionToken}
	if err := b.signer.SignHTTP(r.Context(), creds, check, hex.EncodeToString(sum[:]), "bedrock", b.cfg.Region, at); err != nil {
		return "", &bedrockErr{http.StatusInternalServerError, "InternalServerException", "The request could not be verified."}
	}
	want, _ := parseSigV4(check.Header.Get("Authorization"))
	if want.signedHeaders != sig.signedHeaders || subtle.ConstantTimeCompare([]byte(want.signature), []byte(sig.signature)) != 1 {
		return "", &bedrockErr{http.StatusForbidden, "InvalidSignatureException",
			"The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details."}
	}
	return "sigv4", nil
}

// sigV4 is the parts of an `Authorization: AWS4-HMAC-SHA256 Credential=…, SignedHeaders=…,
// Signature=…` header.
type sigV4 struct {
	accessKey, date, region, service string
	signedHeaders, signature         string
}

func parseSigV4(h string) (sigV4, bool) {
	rest, ok := strings.CutPrefix(h, "AWS4-HMAC-SHA256 ")
	if !ok {
		return sigV4{}, false
	}
	var s sigV4
	for part := range strings.SplitSeq(rest, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "Credential":
			scope := strings.Split(v, "/")
			if len(scope) != 5 || scope[4] != "aws4_request" {
				return sigV4{}, false
			}
			s.accessKey, s.date, s.region, s.service = scope[0], scope[1], scope[2], scope[3]
		case "SignedHeaders":
			s.signedHeaders = v
		case "Signature":
			s.signature = v
		}
	}
	return s, s.accessKey != "" && s.signedHeaders != "" && s.signature != ""
}

// bedrockInnerBody checks a Bedrock body as the service does and returns the Anthropic
// Messages body the wrapped Provider reads: model from the path, stream from the operation,
// anthropic_version and anthropic_beta removed. count-tokens reads the InvokeModel body out of
// {"input":{"invokeModel":{"body":"<base64>"}}}.
func bedrockInnerBody(body []byte, model, op string) ([]byte, *bedrockErr) {
	malformed := func(detail string) *bedrockErr {
		msg := "Malformed input request, please reformat your input and try again."
		if detail != "" {
			msg = "Malformed input request: " + detail + ", please reformat your input and try again."
		}
		return &bedrockErr{http.StatusBadRequest, "ValidationException", msg}
	}
	if !dialect.Valid(body) || !gjson.ParseBytes(body).IsObject() {
		return nil, malformed("")
	}
	if op == "count-tokens" {
		enc := gjson.GetBytes(body, "input.invokeModel.body")
		if enc.Type != gjson.String {
			return nil, &bedrockErr{http.StatusBadRequest, "ValidationException", "The input must contain invokeModel or converse."}
		}
		raw, err := base64.StdEncoding.DecodeString(enc.Str)
		if err != nil || !dialect.Valid(raw) || !gjson.ParseBytes(raw).IsObject() {
			return nil, malformed("")
		}
		body = raw
	}
	for _, k := range [...]string{"model", "stream"} {
		if gjson.GetBytes(body, k).Exists() {
			return nil, malformed("#: extraneous key [" + k + "] is not permitted")
		}
	}
	v := gjson.GetBytes(body, "anthropic_version")
	switch {
	case !v.Exists():
		return nil, malformed("#: required key [anthropic_version] not found")
	case v.String() != BedrockVersion && !isAPIVersionDate(v.String()):
		return nil, malformed("#/anthropic_version: " + strconv.Quote(v.String()) + " is not a valid enum value")
	}
	out, _ := sjson.DeleteBytes(body, "anthropic_version") // body is an object: cannot fail
	out, _ = sjson.DeleteBytes(out, "anthropic_beta")
	out, _ = sjson.SetBytes(out, "model", model)
	if op == "invoke-with-response-stream" {
		out, _ = sjson.SetBytes(out, "stream", true)
	}
	return out, nil
}

// isAPIVersionDate reports whether v is a dated Anthropic API version (YYYY-MM-DD), which the
// official SDK's Bedrock adapter moves from its anthropic-version header into the body.
func isAPIVersionDate(v string) bool {
	_, err := time.Parse("2006-01-02", v)
	return err == nil
}

// writeBedrockError answers e in Bedrock's shape: {"message":…} (or {} without one) with
// x-amzn-ErrorType and x-amzn-RequestId.
func writeBedrockError(w http.ResponseWriter, e bedrockErr) {
	body := []byte("{}")
	if e.msg != "" {
		body = mustJSON(struct {
			Message string `json:"message"`
		}{e.msg})
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Amzn-Errortype", e.typ+":http://internal.amazon.com/coral/com.amazon.bedrock/")
	if h.Get("X-Amzn-Requestid") == "" {
		h.Set("X-Amzn-Requestid", "fake-bedrock-request")
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(e.status)
	_, _ = w.Write(body) // a failed write only means the caller left
}

// bedrockHTTPError is the Bedrock error for an Anthropic error answer of the wrapped Provider.
func bedrockHTTPError(status int, body []byte) bedrockErr {
	typ := gjson.GetBytes(body, "error.type").Str
	msg := gjson.GetBytes(body, "error.message").Str
	if strings.HasSuffix(typ, "Exception") {
		return bedrockErr{status, typ, msg}
	}
	switch {
	case status == http.StatusTooManyRequests:
		return bedrockErr{status, "ThrottlingException", "Too many requests, please wait before trying again."}
	case status == http.StatusServiceUnavailable || status == 529:
		return bedrockErr{http.StatusServiceUnavailable, "ServiceUnavailableException", "Bedrock is unable to process your request."}
	case status == http.StatusRequestTimeout || status == http.StatusGatewayTimeout:
		return bedrockErr{http.StatusRequestTimeout, "ModelTimeoutException", "Model has timed out in processing the request. Try your request again."}
	case status >= 500:
		return bedrockErr{status, "InternalServerException", "The system encountered an unexpected error during processing. Try your request again."}
	case status == http.StatusUnauthorized:
		return bedrockErr{http.StatusForbidden, "UnrecognizedClientException", "The security token included in the request is invalid."}
	case status == http.StatusPaymentRequired || status == http.StatusForbidden:
		return bedrockErr{http.StatusForbidden, "AccessDeniedException", "You don't have access to the model with the specified model ID."}
	case status == http.StatusNotFound:
		return bedrockErr{status, "ResourceNotFoundException", "Could not resolve the foundation model from the provided model identifier."}
	case strings.HasPrefix(msg, "prompt is too long"):
		return bedrockErr{http.StatusBadRequest, "ValidationException", "Input is too long for requested model."}
	}
	return bedrockErr{status, "ValidationException", msg}
}

// bedrockException is the event-stream exception type for an Anthropic in-stream error type.
func bedrockException(typ string) string {
	if strings.HasSuffix(typ, "Exception") && typ != "" {
		return strings.ToLower(typ[:1]) + typ[1:]
	}
	switch typ {
	case "rate_limit_error":
		return "throttlingException"
	case "overloaded_error":
		return "serviceUnavailableException"
	case "timeout_error":
		return "modelTimeoutException"
	case "invalid_request_error":
		return "validationException"
	case "api_error":
		return "modelStreamErrorException"
	}
	return "internalServerException"
}

// bedrockWriter sits between Bedrock and the wrapped Provider: a 200 stream's SSE frames are
// re-sent as event-stream messages as they are written, a count-tokens answer and every error
// answer in JSON are held back and rewritten by finish, and anything else (a non-stream
// message, a proxy's HTML page) goes through.
type bedrockWriter struct {
	w           http.ResponseWriter
	stream      bool
	countTokens bool
	enc         *eventstream.Encoder

	status  int
	mode    int // 0 through, 1 event stream, 2 held
	pending []byte
	held    []byte
	// inputTokens and outputTokens are read from message_start and message_delta, for the
	// invocation metrics on message_stop.
	inputTokens, outputTokens int64
	started                   time.Time
}

const (
	bwThrough = iota
	bwEventStream
	bwHeld
)

func (bw *bedrockWriter) Header() http.Header { return bw.w.Header() }

// Unwrap lets http.ResponseController reach the connection (Hijack for KindReset).
func (bw *bedrockWriter) Unwrap() http.ResponseWriter { return bw.w }

func (bw *bedrockWriter) WriteHeader(status int) {
	if bw.status != 0 {
		return
	}
	bw.status = status
	h := bw.w.Header()
	if rid := h.Get("Request-Id"); rid != "" {
		h.Set("X-Amzn-Requestid", rid)
	}
	h.Del("Request-Id")
	h.Del("X-Request-Id")
	ct := h.Get("Content-Type")
	switch {
	case status == http.StatusOK && bw.stream && strings.HasPrefix(ct, "text/event-stream"):
		bw.mode = bwEventStream
		bw.started = time.Now()
		h.Set("Content-Type", "application/vnd.amazon.eventstream")
		h.Set("X-Amzn-Bedrock-Content-Type", "application/json")
		h.Del("Cache-Control")
		h.Del("X-Accel-Buffering")
		bw.w.WriteHeader(status)
	case strings.HasPrefix(ct, "application/json") && (status >= 400 || bw.countTokens):
		bw.mode = bwHeld
	default:
		bw.w.WriteHeader(status)
	}
}

func (bw *bedrockWriter) Write(p []byte) (int, error) {
	if bw.status == 0 {
		bw.WriteHeader(http.StatusOK)
	}
	switch bw.mode {
	case bwHeld:
		bw.held = append(bw.held, p...)
		return len(p), nil
	case bwEventStream:
		bw.pending = append(bw.pending, p...)
		if err := bw.frames(); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return bw.w.Write(p)
}

// FlushError flushes what went through; held answers are sent by finish.
func (bw *bedrockWriter) FlushError() error {
	if bw.mode == bwHeld || bw.status == 0 {
		return nil
	}
	return http.NewResponseController(bw.w).Flush()
}

// frames sends every complete SSE frame of pending as an event-stream message: an Anthropic
// event as a `chunk` event, an `event: error` as an exception; a frame whose data is not JSON
// (KindGarbage) is written raw, which breaks the framing as a corrupt stream would. Comment
// frames (keep-alives) have no Bedrock form and are dropped.
func (bw *bedrockWriter) frames() error {
	for {
		i := bytes.Index(bw.pending, []byte("\n\n"))
		if i < 0 {
			return nil
		}
		f := bw.pending[:i+2]
		var event string
		var data []byte
		for line := range bytes.SplitSeq(f[:i], []byte("\n")) {
			if v, ok := bytes.CutPrefix(line, []byte("event: ")); ok {
				event = string(v)
			} else if v, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
				data = append(data, v...)
			}
		}
		var err error
		switch {
		case data == nil:
		case !json.Valid(data):
			_, err = bw.w.Write(f)
		case event == "error":
			typ := bedrockException(gjson.GetBytes(data, "error.type").Str)
			payload := mustJSON(struct {
				Message string `json:"message"`
			}{gjson.GetBytes(data, "error.message").Str})
			err = bw.enc.Encode(bw.w, eventstream.Message{Headers: eventstream.Headers{
				{Name: eventstreamapi.ExceptionTypeHeader, Value: eventstream.StringValue(typ)},
				{Name: eventstreamapi.ContentTypeHeader, Value: eventstream.StringValue("application/json")},
				{Name: eventstreamapi.MessageTypeHeader, Value: eventstream.StringValue(eventstreamapi.ExceptionMessageType)},
			}, Payload: payload})
		default:
			err = bw.chunk(data)
		}
		bw.pending = bw.pending[i+2:]
		if err != nil {
			return err
		}
	}
}

// chunk sends one Anthropic event as Bedrock's chunk: {"bytes":"<base64>","p":"<padding>"}, the
// message_stop with Bedrock's amazon-bedrock-invocationMetrics.
func (bw *bedrockWriter) chunk(ev []byte) error {
	switch gjson.GetBytes(ev, "type").Str {
	case "message_start":
		bw.inputTokens = gjson.GetBytes(ev, "message.usage.input_tokens").Int()
	case "message_delta":
		bw.outputTokens = gjson.GetBytes(ev, "usage.output_tokens").Int()
	case "message_stop":
		ms := time.Since(bw.started).Milliseconds()
		ev, _ = sjson.SetBytes(ev, "amazon-bedrock-invocationMetrics", map[string]int64{
			"inputTokenCount": bw.inputTokens, "outputTokenCount": bw.outputTokens,
			"invocationLatency": ms, "firstByteLatency": ms})
	}
	payload := mustJSON(struct {
		Bytes string `json:"bytes"`
		P     string `json:"p"`
	}{base64.StdEncoding.EncodeToString(ev), "abcdefghijklmnopqrstuvwxyzABCDEFGHIJ"[:len(ev)%37]})
	return bw.enc.Encode(bw.w, eventstream.Message{Headers: eventstream.Headers{
		{Name: eventstreamapi.EventTypeHeader, Value: eventstream.StringValue("chunk")},
		{Name: eventstreamapi.ContentTypeHeader, Value: eventstream.StringValue("application/json")},
		{Name: eventstreamapi.MessageTypeHeader, Value: eventstream.StringValue(eventstreamapi.EventMessageType)},
	}, Payload: payload})
}

// finish sends a held answer in Bedrock's shape: an error as writeBedrockError, a count-tokens
// answer as {"inputTokens":N}.
func (bw *bedrockWriter) finish() {
	if bw.mode != bwHeld {
		return
	}
	h := bw.w.Header()
	h.Del("Content-Length")
	if bw.status >= 400 {
		h.Del("Retry-After") // Bedrock sends none
		writeBedrockError(bw.w, bedrockHTTPError(bw.status, bw.held))
		return
	}
	body := []byte(`{"inputTokens":` + strconv.FormatInt(gjson.GetBytes(bw.held, "input_tokens").Int(), 10) + `}`)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	bw.w.WriteHeader(bw.status)
	_, _ = bw.w.Write(body)
}

// ListenAndServeBedrock runs a Bedrock emulator (in front of a provider named "fake-bedrock")
// on addr until ctx ends, for `switchyard fake-provider --platform bedrock`; see
// ListenAndServe.
func ListenAndServeBedrock(ctx context.Context, addr string, cfg BedrockConfig, logf func(string, ...any)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("fakeprovider: %w", err)
	}
	if logf != nil {
		logf("listening on %s", ln.Addr())
	}
	return serveHandler(ctx, ln, NewBedrock(New("fake-bedrock", catalog.Anthropic), cfg))
}
