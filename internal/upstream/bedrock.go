package upstream

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream/eventstreamapi"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/dialect"
	"github.com/switchyard-gw/switchyard/internal/failure"
)

// BedrockAnthropicVersion is the anthropic_version a Bedrock InvokeModel body carries for
// Claude (the body field replaces the anthropic-version header, contract.md round 3).
const BedrockAnthropicVersion = "bedrock-2023-05-31"

// bedrockService is the SigV4 signing name of the Bedrock runtime.
const bedrockService = "bedrock"

// Credential refresh timing. A credential that expires within credsRefreshAhead is refreshed in
// the background while requests keep signing with it; one that expires within credsMinValid is
// no longer used, and the request waits for the refresh.
const (
	credsRefreshAhead = 5 * time.Minute
	credsMinValid     = 10 * time.Second
	credsFetchTimeout = 30 * time.Second
)

// maxBedrockErrorBody caps how much of a Bedrock error answer is read to classify it.
const maxBedrockErrorBody = 64 << 10

// Header values of Bedrock attempts.
var (
	bedrockStreamAccept = []string{"application/vnd.amazon.eventstream"}
	bedrockBodyAccept   = []string{"application/json"}
)

// bedrock carries a deployment's attempts to Amazon Bedrock's runtime (contract.md round 3,
// platform bedrock): InvokeModel, InvokeModelWithResponseStream and CountTokens for Claude,
// signed with SigV4 or sent with a Bedrock API key; answers come back as Anthropic's wire
// (SSE, Anthropic error bodies) so that the relay reads them as any Anthropic deployment's.
type bedrock struct {
	base   string // scheme://host, no trailing slash
	region string
	bearer []string // "Bearer KEY" when the deployment has a Bedrock API key; nil for SigV4
	creds  *awsCreds
	signer *v4.Signer
	// credErr is why no credential source could be set up (a shared config or profile that
	// does not load); every attempt then fails upstream_auth with it.
	credErr error
}

// newBedrock returns the bedrock adapter of dep. Without an API key it sets up SigV4
// credentials: the deployment's static keys, or else the AWS SDK's default chain
// (environment, shared config and aws.profile, web identity, container and instance roles),
// loaded once here and refreshed through aws.CredentialsCache. The chain's own HTTP fetches
// (container and instance role endpoints, STS) use the AWS SDK's client (its proxy and CA
// bundle settings), not the deployment's transport tr.
func newBedrock(dep *catalog.Deployment, _ *http.Transport) adapter {
	b := &bedrock{region: dep.AWS.Region, base: bedrockBase(dep)}
	if dep.APIKey != "" {
		b.bearer = []string{"Bearer " + dep.APIKey}
		return b
	}
	b.signer = v4.NewSigner()
	var prov aws.CredentialsProvider
	if dep.AWS.AccessKeyID != "" {
		prov = credentials.NewStaticCredentialsProvider(dep.AWS.AccessKeyID, dep.AWS.SecretAccessKey, dep.AWS.SessionToken)
	} else {
		opts := []func(*awsconfig.LoadOptions) error{awsconfig.WithRegion(dep.AWS.Region),
			awsconfig.WithCredentialsCacheOptions(func(o *aws.CredentialsCacheOptions) { o.ExpiryWindow = credsRefreshAhead })}
		if dep.AWS.Profile != "" {
			opts = append(opts, awsconfig.WithSharedConfigProfile(dep.AWS.Profile))
		}
		ctx, cancel := context.WithTimeout(context.Background(), credsFetchTimeout)
		cfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
		cancel()
		if err != nil {
			b.credErr = err
			return b
		}
		if cfg.Credentials == nil {
			b.credErr = errors.New("the AWS default credential chain found no credential source")
			return b
		}
		prov = cfg.Credentials
	}
	b.creds = newAWSCreds(prov)
	return b
}

// bedrockBase is the runtime endpoint of dep: https://bedrock-runtime.{region}.amazonaws.com,
// or the scheme and host of base_url when set (contract.md: base_url replaces only those).
func bedrockBase(dep *catalog.Deployment) string {
	if dep.BaseURL != "" {
		if u, err := url.Parse(dep.BaseURL); err == nil && u.Host != "" {
			return u.Scheme + "://" + u.Host
		}
	}
	return "https://bedrock-runtime." + dep.AWS.Region + ".amazonaws.com"
}

// request builds a Bedrock attempt: POST {base}/model/{modelId}/invoke (or
// /invoke-with-response-stream, /count-tokens) where modelId is the body's model, path-escaped;
// the body is the Anthropic Messages body without model and stream, with anthropic_version
// bedrock-2023-05-31 and the anthropic-beta header's flags as anthropic_beta. count_tokens
// wraps that body, base64, in CountTokens' {"input":{"invokeModel":{"body":...}}}.
func (b *bedrock) request(ctx context.Context, op catalog.Protocol, body []byte, stream bool, anthropicBeta string, h http.Header) (*http.Request, error) {
	if op != catalog.ProtocolModel && op != catalog.ProtocolCountTokens {
		return nil, failure.New(failure.UpstreamError, "the deployment has no endpoint for this operation")
	}
	model := gjson.GetBytes(body, "model").Str
	if model == "" {
		return nil, failure.New(failure.UpstreamError, "the request names no model for the Bedrock deployment")
	}
	out, err := bedrockBody(body, anthropicBeta, op == catalog.ProtocolCountTokens)
	if err != nil {
		return nil, &failure.Error{Class: failure.UpstreamError, Msg: "the request could not be adapted to Bedrock", Cause: err}
	}
	action := "/invoke"
	switch {
	case op == catalog.ProtocolCountTokens:
		action = "/count-tokens"
		model = bedrockFoundationModel(model)
		out = bedrockCountTokensBody(out)
	case stream:
		action = "/invoke-with-response-stream"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.base+"/model/"+url.PathEscape(model)+action, bytes.NewReader(out))
	if err != nil {
		return nil, &failure.Error{Class: failure.UpstreamError, Msg: "the Bedrock endpoint URL is invalid", Cause: err}
	}
	if stream && op == catalog.ProtocolModel {
		h["Accept"] = bedrockStreamAccept
	} else {
		h["Accept"] = bedrockBodyAccept
	}
	req.Header = h
	if b.bearer != nil {
		h["Authorization"] = b.bearer
		return req, nil
	}
	if b.credErr != nil {
		return nil, &failure.Error{Class: failure.UpstreamAuth, Msg: "no AWS credentials for the Bedrock deployment",
			Cause: &bedrockCredError{err: b.credErr}}
	}
	creds, err := b.creds.get(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, &failure.Error{Class: failure.Cancelled, Msg: "the request was cancelled", Cause: err}
		}
		return nil, &failure.Error{Class: failure.UpstreamAuth, Msg: "no AWS credentials for the Bedrock deployment",
			Cause: &bedrockCredError{err: err}}
	}
	// Trace context stays out of the signature (as in the official SDK): a tracing proxy may
	// rewrite it.
	tp, hasTP := h["Traceparent"]
	delete(h, "Traceparent")
	sum := sha256.Sum256(out)
	err = b.signer.SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), bedrockService, b.region, time.Now())
	if hasTP {
		h["Traceparent"] = tp
	}
	if err != nil {
		return nil, &failure.Error{Class: failure.UpstreamAuth, Msg: "the Bedrock request could not be signed", Cause: &bedrockCredError{err: err}}
	}
	return req, nil
}

// bedrockCredError is the log cause of a credential failure: the AWS SDK's error names the
// source that failed (profile, IMDS, STS), never a key.
type bedrockCredError struct{ err error }

func (e *bedrockCredError) Error() string { return "bedrock: aws credentials: " + e.err.Error() }
func (e *bedrockCredError) Unwrap() error { return e.err }

// bedrockBody turns an Anthropic Messages body into a Bedrock InvokeModel body: model and
// stream removed, anthropic_version set, the beta flags of anthropicBeta (comma-separated) as
// anthropic_beta, and for count_tokens a max_tokens of 1 when the body has none (InvokeModel
// requires one; it does not change the input count). body is never modified.
func bedrockBody(body []byte, anthropicBeta string, countTokens bool) ([]byte, error) {
	out, err := sjson.DeleteBytes(body, "model") // a copy: the relay reuses body across attempts
	if err != nil {
		return nil, err
	}
	if gjson.GetBytes(out, "stream").Exists() {
		if out, err = sjson.DeleteBytes(out, "stream"); err != nil {
			return nil, err
		}
	}
	if gjson.GetBytes(out, "anthropic_version").Exists() {
		if out, err = sjson.SetBytes(out, "anthropic_version", BedrockAnthropicVersion); err != nil {
			return nil, err
		}
	} else if out, err = appendField(out, "anthropic_version", []byte(`"`+BedrockAnthropicVersion+`"`)); err != nil {
		return nil, err
	}
	if betas := betaFlags(anthropicBeta); betas != nil && !gjson.GetBytes(out, "anthropic_beta").Exists() {
		if out, err = appendField(out, "anthropic_beta", betas); err != nil {
			return nil, err
		}
	}
	if countTokens && !gjson.GetBytes(out, "max_tokens").Exists() {
		if out, err = appendField(out, "max_tokens", []byte("1")); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// errNotObject is returned for a request body that is not a JSON object.
var errNotObject = errors.New("the request body is not a JSON object")

// appendField adds "key":raw as the last member of the JSON object obj (which it may modify:
// the caller owns it), without re-encoding the rest.
func appendField(obj []byte, key string, raw []byte) ([]byte, error) {
	end := bytes.LastIndexByte(obj, '}')
	if end < 0 {
		return nil, errNotObject
	}
	prev := bytes.TrimRight(obj[:end], " \t\r\n")
	if len(prev) == 0 {
		return nil, errNotObject
	}
	tail := append([]byte(nil), obj[end:]...)
	obj = obj[:len(prev)]
	if prev[len(prev)-1] != '{' {
		obj = append(obj, ',')
	}
	obj = append(obj, '"')
	obj = append(obj, key...)
	obj = append(obj, '"', ':')
	obj = append(obj, raw...)
	return append(obj, tail...), nil
}

// betaFlags is the JSON array of the comma-separated flags of an anthropic-beta header value,
// nil when it names none.
func betaFlags(header string) []byte {
	var arr []byte
	for flag := range strings.SplitSeq(header, ",") {
		flag = strings.TrimSpace(flag)
		if flag == "" {
			continue
		}
		if arr == nil {
			arr = append(arr, '[')
		} else {
			arr = append(arr, ',')
		}
		arr = dialect.AppendJSONString(arr, flag)
	}
	if arr == nil {
		return nil
	}
	return append(arr, ']')
}

// bedrockCountTokensBody wraps an InvokeModel body in a CountTokens request body:
// {"input":{"invokeModel":{"body":"<base64 of the body>"}}} (the body member is a blob).
func bedrockCountTokensBody(invoke []byte) []byte {
	out := make([]byte, 0, base64.StdEncoding.EncodedLen(len(invoke))+40)
	out = append(out, `{"input":{"invokeModel":{"body":"`...)
	out = base64.StdEncoding.AppendEncode(out, invoke)
	return append(out, `"}}}`...)
}

// bedrockFoundationModel is the foundation-model id of a cross-region inference profile id
// ("us.anthropic.claude-…" is "anthropic.claude-…"): CountTokens accepts only the former. Any
// other id (a foundation model, an ARN) is returned as is.
func bedrockFoundationModel(id string) string {
	if prefix, rest, ok := strings.Cut(id, "."); ok && len(prefix) <= 6 && strings.HasPrefix(rest, "anthropic.") && !strings.Contains(prefix, ":") {
		return rest
	}
	return id
}

// answer adapts a Bedrock response to Anthropic's wire: an event-stream 2xx stream becomes
// SSE (bedrockSSE), a CountTokens answer's inputTokens becomes input_tokens, and an error
// answer becomes Anthropic's error body with the status its AWS error type stands for
// (bedrockErrorClass).
func (b *bedrock) answer(resp *http.Response, stream bool) {
	switch {
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		bedrockError(resp)
	case resp.Request != nil && strings.HasSuffix(resp.Request.URL.Path, "/count-tokens"):
		bedrockCountTokensAnswer(resp)
	case stream && mediaType(resp.Header.Get("Content-Type")) == "application/vnd.amazon.eventstream":
		resp.Body = newBedrockSSE(resp.Body)
		resp.Header.Set("Content-Type", "text/event-stream")
		resp.Header.Del("Content-Length")
		resp.ContentLength = -1
	}
}

// mediaType is a Content-Type value without its parameters, lower-cased.
func mediaType(ct string) string {
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	return strings.ToLower(strings.TrimSpace(ct))
}

// replacedBody is a response body whose bytes were read and replaced; Close closes the
// original.
type replacedBody struct {
	*bytes.Reader
	orig io.Closer
}

func (r replacedBody) Close() error { return r.orig.Close() }

func replaceBody(resp *http.Response, body []byte) {
	resp.Body = replacedBody{Reader: bytes.NewReader(body), orig: resp.Body}
	resp.ContentLength = int64(len(body))
	resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	resp.Header.Set("Content-Type", "application/json")
}

// bedrockCountTokensAnswer turns CountTokens' {"inputTokens":N} into Anthropic's
// {"input_tokens":N}. A body without the count stays as it is.
func bedrockCountTokensAnswer(resp *http.Response) {
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxBedrockErrorBody))
	n := gjson.GetBytes(raw, "inputTokens")
	if err != nil || n.Type != gjson.Number {
		replaceBody(resp, raw)
		return
	}
	replaceBody(resp, append([]byte(`{"input_tokens":`), append([]byte(n.Raw), '}')...))
}

// bedrockErrorKind is what one AWS error type stands for on Anthropic's wire.
type bedrockErrorKind struct {
	status int    // the Anthropic status that NormalizeError classifies as intended
	typ    string // the Anthropic error type
}

// bedrockErrors maps Bedrock runtime error types (x-amzn-ErrorType, or an event-stream
// exception's :exception-type with its first letter upper-cased) to Anthropic's status and
// type, so that anthropic.NormalizeError gives: ThrottlingException (and the quota and
// too-many-requests errors) upstream_rate_limited; ServiceUnavailable, ModelNotReady,
// InternalServer, ModelError and ModelStreamError upstream_error (failover); ModelTimeout
// upstream_timeout; the signature and access errors upstream_auth; ValidationException
// invalid_request (the caller's), or context_overflow by its message; ResourceNotFound
// upstream_error.
var bedrockErrors = map[string]bedrockErrorKind{
	"ThrottlingException":                 {429, "rate_limit_error"},
	"TooManyRequestsException":            {429, "rate_limit_error"},
	"ServiceQuotaExceededException":       {429, "rate_limit_error"},
	"ServiceUnavailableException":         {503, "overloaded_error"},
	"ModelNotReadyException":              {529, "overloaded_error"},
	"InternalServerException":             {500, "api_error"},
	"InternalFailure":                     {500, "api_error"},
	"ModelErrorException":                 {500, "api_error"},
	"ModelStreamErrorException":           {500, "api_error"},
	"ModelTimeoutException":               {504, "timeout_error"},
	"AccessDeniedException":               {403, "permission_error"},
	"UnrecognizedClientException":         {401, "authentication_error"},
	"InvalidSignatureException":           {401, "authentication_error"},
	"IncompleteSignatureException":        {401, "authentication_error"},
	"MissingAuthenticationTokenException": {401, "authentication_error"},
	"ExpiredTokenException":               {401, "authentication_error"},
	"InvalidClientTokenId":                {401, "authentication_error"},
	"SignatureDoesNotMatch":               {401, "authentication_error"},
	"ValidationException":                 {400, "invalid_request_error"},
	"ResourceNotFoundException":           {404, "not_found_error"},
}

// bedrockErrorType is the AWS error type of an error answer: x-amzn-ErrorType up to its first
// ':' ("ThrottlingException:http://internal.amazon.com/coral/..."), else the body's __type after
// its '#' or its code. Only identifier characters pass (errToken rules: it reaches logs).
func bedrockErrorType(header string, body []byte) string {
	t := header
	if t == "" {
		t = gjson.GetBytes(body, "__type").Str
		if t == "" {
			t = gjson.GetBytes(body, "code").Str
		}
	}
	if i := strings.IndexByte(t, ':'); i >= 0 {
		t = t[:i]
	}
	if i := strings.LastIndexByte(t, '#'); i >= 0 {
		t = t[i+1:]
	}
	if len(t) > 64 {
		return ""
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			return ""
		}
	}
	return t
}

// bedrockClockSkew reports whether a signature error's message says the request's date is
// outside AWS's 5-minute window ("Signature expired: …", "Signature not yet current: …").
func bedrockClockSkew(msg string) bool {
	return strings.HasPrefix(msg, "Signature expired") || strings.HasPrefix(msg, "Signature not yet current")
}

// bedrockError rewrites a Bedrock error answer ({"message":"…"} with x-amzn-ErrorType) into
// Anthropic's error body {"type":"error","error":{"type":T,"message":M,"details":
// {"error_code":AWS_TYPE}}} with the status of bedrockErrors, so that NormalizeError gives the
// class and its log cause names the AWS type (a clock skew as InvalidSignatureException:
// clock_skew), never the message. An answer without an AWS type (a proxy's HTML page) is left
// as it is and classified by its status.
func bedrockError(resp *http.Response) {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxBedrockErrorBody))
	typ := bedrockErrorType(resp.Header.Get("X-Amzn-Errortype"), raw)
	if typ == "" {
		replacedStatusBody(resp, raw)
		return
	}
	msg := gjson.GetBytes(raw, "message").Str
	if msg == "" {
		msg = gjson.GetBytes(raw, "Message").Str
	}
	kind, known := bedrockErrors[typ]
	if !known {
		kind = bedrockErrorKind{status: resp.StatusCode, typ: anthropicTypeOfStatus(resp.StatusCode)}
	}
	code := typ
	if typ == "InvalidSignatureException" && bedrockClockSkew(msg) {
		code += ":clock_skew"
	}
	resp.StatusCode = kind.status
	resp.Status = strconv.Itoa(kind.status) + " " + http.StatusText(kind.status)
	replaceBody(resp, appendAnthropicError(nil, kind.typ, msg, code))
}

// replacedStatusBody puts back an error body already read, unchanged.
func replacedStatusBody(resp *http.Response, raw []byte) {
	ct := resp.Header.Get("Content-Type")
	replaceBody(resp, raw)
	resp.Header.Set("Content-Type", ct)
}

// anthropicTypeOfStatus is Anthropic's error type for an HTTP status (wire.md §4.6).
func anthropicTypeOfStatus(status int) string {
	switch {
	case status == 401:
		return "authentication_error"
	case status == 403:
		return "permission_error"
	case status == 404:
		return "not_found_error"
	case status == 413:
		return "request_too_large"
	case status == 429:
		return "rate_limit_error"
	case status >= 400 && status < 500:
		return "invalid_request_error"
	}
	return "api_error"
}

// appendAnthropicError appends Anthropic's error object for an adapted platform error.
func appendAnthropicError(dst []byte, typ, msg, code string) []byte {
	dst = append(dst, `{"type":"error","error":{"type":`...)
	dst = dialect.AppendJSONString(dst, typ)
	dst = append(dst, `,"message":`...)
	dst = dialect.AppendJSONString(dst, msg)
	if code != "" {
		dst = append(dst, `,"details":{"error_code":`...)
		dst = dialect.AppendJSONString(dst, code)
		dst = append(dst, '}')
	}
	return append(dst, "}}"...)
}

// bedrockSSE reads an InvokeModelWithResponseStream body (AWS event-stream framing) as
// Anthropic SSE, one message at a time as the caller reads: a `chunk` event's base64 bytes
// become "event: TYPE\ndata: JSON\n\n" (message_stop without Bedrock's
// amazon-bedrock-invocationMetrics); an `exception` (or `error`) message becomes Anthropic's
// `event: error` with the type its exception stands for (bedrockErrors) and the exception type
// as details.error_code, so that the relay fails over before the commit and ends the caller's
// stream after it. Messages are bounded by the decoder (16 MiB payload, 128 KiB headers); a
// malformed message ends the body with an error, which the relay classifies upstream_error.
type bedrockSSE struct {
	rc      io.ReadCloser
	in      countingReader // rc, counted: an EOF inside a message is a cut, not the end
	dec     *eventstream.Decoder
	payload []byte // reused by the decoder
	scratch []byte // reused for the decoded chunk
	out     []byte // SSE bytes not yet read
	off     int
	err     error
}

func newBedrockSSE(rc io.ReadCloser) *bedrockSSE {
	s := &bedrockSSE{rc: rc, dec: eventstream.NewDecoder()}
	s.in.r = rc
	return s
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// errBedrockFrame is returned for an event-stream message that is not what Bedrock sends.
var errBedrockFrame = errors.New("bedrock: malformed event-stream message")

func (s *bedrockSSE) Read(p []byte) (int, error) {
	for s.off == len(s.out) {
		if s.err != nil {
			return 0, s.err
		}
		s.out, s.off = s.out[:0], 0
		start := s.in.n
		msg, err := s.dec.Decode(&s.in, s.payload[:0])
		if err != nil {
			switch {
			case errors.Is(err, io.EOF) && s.in.n == start:
				err = io.EOF // the stream ended between messages
			case errors.Is(err, io.EOF):
				err = io.ErrUnexpectedEOF // inside a message
			}
			s.err = err
			continue
		}
		s.payload = msg.Payload
		if err := s.translate(msg); err != nil {
			s.err = err
		}
	}
	n := copy(p, s.out[s.off:])
	s.off += n
	return n, nil
}

func (s *bedrockSSE) Close() error { return s.rc.Close() }

func headerString(m *eventstream.Message, name string) string {
	if v := m.Headers.Get(name); v != nil {
		return v.String()
	}
	return ""
}

// translate appends the SSE form of one event-stream message to s.out.
func (s *bedrockSSE) translate(m eventstream.Message) error {
	switch headerString(&m, eventstreamapi.MessageTypeHeader) {
	case eventstreamapi.EventMessageType:
		if headerString(&m, eventstreamapi.EventTypeHeader) != "chunk" {
			return nil // other event types carry nothing Anthropic's wire has
		}
		if dialect.TooDeep(m.Payload) {
			return errBedrockFrame
		}
		enc := gjson.GetBytes(m.Payload, "bytes")
		if enc.Type != gjson.String {
			return errBedrockFrame
		}
		var err error
		s.scratch, err = base64.StdEncoding.AppendDecode(s.scratch[:0], []byte(enc.Str))
		if err != nil {
			return errBedrockFrame
		}
		ev := s.scratch
		typ := gjson.GetBytes(ev, "type").Str
		if !isEventName(typ) {
			return errBedrockFrame
		}
		if typ == "message_stop" && bytes.Contains(ev, []byte("amazon-bedrock-invocationMetrics")) {
			if out, err := sjson.DeleteBytes(ev, "amazon-bedrock-invocationMetrics"); err == nil {
				ev = out
			}
		}
		s.emit(typ, ev)
	case eventstreamapi.ExceptionMessageType:
		exc := headerString(&m, eventstreamapi.ExceptionTypeHeader)
		s.emitError(exc, gjson.GetBytes(m.Payload, "message").Str)
	case eventstreamapi.ErrorMessageType:
		s.emitError(headerString(&m, eventstreamapi.ErrorCodeHeader), headerString(&m, eventstreamapi.ErrorMessageHeader))
	default:
		return errBedrockFrame
	}
	return nil
}

// isEventName reports whether an event type can stand on an SSE event line: 1 to 64 of
// [a-z_].
func isEventName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c == '_') {
			return false
		}
	}
	return true
}

// emit appends one SSE frame; data lines split at any raw newline so the framing stays valid.
func (s *bedrockSSE) emit(typ string, data []byte) {
	s.out = append(s.out, "event: "...)
	s.out = append(s.out, typ...)
	for {
		s.out = append(s.out, "\ndata: "...)
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			s.out = append(s.out, data...)
			break
		}
		s.out = append(s.out, bytes.TrimSuffix(data[:i], []byte("\r"))...)
		data = data[i+1:]
	}
	s.out = append(s.out, "\n\n"...)
}

// emitError appends Anthropic's `event: error` for a Bedrock stream exception: its type from
// bedrockErrors (the exception names are the error types with a lower-case first letter),
// api_error when unknown; details.error_code is the exception type.
func (s *bedrockSSE) emitError(exc, msg string) {
	code := bedrockErrorType(exc, nil)
	typ := "api_error"
	if code != "" {
		if kind, ok := bedrockErrors[strings.ToUpper(code[:1])+code[1:]]; ok {
			typ = kind.typ
		}
	} else {
		code = "UnknownError"
	}
	s.emit("error", appendAnthropicError(nil, typ, msg, code))
}

// awsCreds hands out SigV4 credentials without making a request wait while a valid credential
// is at hand. prov is an aws.CredentialsCache whose ExpiryWindow is credsRefreshAhead: it
// reports a credential's Expires that much early, and fetches anew once that time has passed.
// Until then the credential in use is kept; from then on requests keep signing with it (it is
// still valid for credsRefreshAhead) while one background fetch replaces it. A request waits
// only when no credential is valid for another credsMinValid: the first request, or after
// failed refreshes let it run out.
type awsCreds struct {
	prov       aws.CredentialsProvider
	cur        atomic.Pointer[aws.Credentials]
	refreshing atomic.Bool
	// now is the clock (time.Now; tests step it).
	now func() time.Time
}

// newAWSCreds wraps prov in an aws.CredentialsCache with credsRefreshAhead as its expiry
// window, unless it is one already (the default chain's, loaded with that window).
func newAWSCreds(prov aws.CredentialsProvider) *awsCreds {
	if _, ok := prov.(*aws.CredentialsCache); !ok {
		prov = aws.NewCredentialsCache(prov, func(o *aws.CredentialsCacheOptions) { o.ExpiryWindow = credsRefreshAhead })
	}
	return &awsCreds{prov: prov, now: time.Now}
}

// get returns a credential valid for at least credsMinValid.
func (c *awsCreds) get(ctx context.Context) (aws.Credentials, error) {
	now := c.now()
	if cur := c.cur.Load(); cur != nil && (!cur.CanExpire || now.Before(cur.Expires.Add(credsRefreshAhead-credsMinValid))) {
		if cur.CanExpire && !now.Before(cur.Expires) && c.refreshing.CompareAndSwap(false, true) {
			go c.refresh() // one at a time; ends within credsFetchTimeout
		}
		return *cur, nil
	}
	creds, err := c.prov.Retrieve(ctx)
	if err != nil {
		return aws.Credentials{}, err
	}
	c.cur.Store(&creds)
	return creds, nil
}

// refresh fetches a credential in the background; a failure keeps the current one, and the
// next request tries again.
func (c *awsCreds) refresh() {
	defer c.refreshing.Store(false)
	ctx, cancel := context.WithTimeout(context.Background(), credsFetchTimeout)
	defer cancel()
	if creds, err := c.prov.Retrieve(ctx); err == nil {
		c.cur.Store(&creds)
	}
}
