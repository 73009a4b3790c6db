package relay

import (
	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/dialect"
	"github.com/switchyard-gw/switchyard/internal/dialect/anthropic"
	"github.com/switchyard-gw/switchyard/internal/dialect/openai"
	"github.com/switchyard-gw/switchyard/internal/dialect/responses"
	"github.com/switchyard-gw/switchyard/internal/failure"
	"github.com/switchyard-gw/switchyard/internal/sse"
)

// Codec is one dialect's same-dialect machinery, as the relay uses it: the body rewrite, the
// light stream scan for the commit gate, the response rewrite, error normalization (the one
// place a class is decided, R-FAIL-7) and the caller-facing error encodings.
type Codec interface {
	ParseRequest(body []byte) (dialect.RequestInfo, error)
	AppendUpstreamBody(dst, body []byte, info *dialect.RequestInfo, upstreamModel string) []byte
	ScanFrame(dst []byte, ev sse.Event, st *dialect.StreamState) ([]byte, dialect.FrameKind)
	RewriteResponse(dst, body []byte, requestedModel string) ([]byte, dialect.Usage, bool, error)
	NormalizeError(status int, header func(name string) string, body []byte) error
	NormalizeStreamError(data []byte) error
	AppendErrorBody(dst []byte, fe *failure.Error, requestID string) []byte
	AppendStreamError(dst []byte, fe *failure.Error, requestID string) []byte

	// Translation (R-DIALECT-2): the full decode and encode through the canonical types.
	DecodeRequest(body []byte) (*dialect.Request, error)
	AppendRequest(dst []byte, r *dialect.Request, upstreamModel string, maxOutputTokens int64) ([]byte, error)
	DecodeResponse(body []byte) (*dialect.Response, error)
	AppendResponse(dst []byte, r *dialect.Response, requestedModel, requestID string) []byte
	// The stream decoder and encoder of this dialect live in the translation state (values,
	// pooled); these reach them.
	resetDecoder(t *translation)
	decodeStream(t *translation, ev sse.Event, out []dialect.Event) []dialect.Event
	resetEncoder(t *translation, requestedModel, requestID string, includeUsage bool)
	encodeStream(t *translation, dst []byte, ev *dialect.Event) []byte
	// encodeStreamError appends the terminal error of a translated stream (R-FAIL-4); it may
	// use the encoder's state (the Responses surface continues its sequence numbers).
	encodeStreamError(t *translation, dst []byte, fe *failure.Error, requestID string) []byte
	// appendStreamDone appends the dialect's normal end of a same-dialect stream (`data: [DONE]`,
	// message_stop), for a provider that sent its finish and closed without it.
	appendStreamDone(dst []byte) []byte
	// isOpenAI says the codec's dialect is OpenAI chat completions (the deployment dialect of
	// an OpenAI deployment).
	isOpenAI() bool
}

// ResponsesCodec is the codec of the OpenAI Responses surface: the caller-facing half, the
// translation to any deployment (R-DIALECT-1..2), and the pass-through scan of a deployment
// that serves the Responses API itself (responses_passthrough.go).
func ResponsesCodec() Codec { return responsesCodec{} }

type responsesCodec struct{ openaiCodec }

var errNoResponsesDeployment = &failure.Error{Class: failure.UpstreamError, Msg: "no deployment speaks the Responses API"}

func (responsesCodec) ParseRequest(b []byte) (dialect.RequestInfo, error) {
	return responses.ParseRequest(b)
}
func (responsesCodec) DecodeRequest(b []byte) (*dialect.Request, error) {
	return responses.DecodeRequest(b)
}
func (responsesCodec) AppendRequest(dst []byte, _ *dialect.Request, _ string, _ int64) ([]byte, error) {
	return dst, errNoResponsesDeployment
}
func (responsesCodec) DecodeResponse([]byte) (*dialect.Response, error) {
	return nil, errNoResponsesDeployment
}
func (responsesCodec) AppendResponse(dst []byte, r *dialect.Response, m, rid string) []byte {
	return responses.AppendResponse(dst, r, m, rid)
}
func (responsesCodec) AppendErrorBody(dst []byte, fe *failure.Error, rid string) []byte {
	return responses.AppendErrorBody(dst, fe, rid)
}
func (responsesCodec) AppendStreamError(dst []byte, fe *failure.Error, rid string) []byte {
	return responses.AppendStreamError(dst, fe, rid)
}
func (responsesCodec) resetEncoder(t *translation, m, rid string, usage bool) {
	t.rsEnc.Reset(m, rid, usage)
}
func (responsesCodec) encodeStream(t *translation, dst []byte, ev *dialect.Event) []byte {
	return t.rsEnc.Append(dst, *ev)
}
func (responsesCodec) encodeStreamError(t *translation, dst []byte, fe *failure.Error, _ string) []byte {
	return t.rsEnc.AppendError(dst, fe)
}

func (openaiCodec) encodeStreamError(_ *translation, dst []byte, fe *failure.Error, rid string) []byte {
	return openai.AppendStreamError(dst, fe, rid)
}
func (openaiCodec) isOpenAI() bool                     { return true }
func (anthropicCodec) isOpenAI() bool                  { return false }
func (openaiCodec) appendStreamDone(dst []byte) []byte { return append(dst, "data: [DONE]\n\n"...) }
func (anthropicCodec) appendStreamDone(dst []byte) []byte {
	return append(dst, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"...)
}

func (anthropicCodec) encodeStreamError(_ *translation, dst []byte, fe *failure.Error, rid string) []byte {
	return anthropic.AppendStreamError(dst, fe, rid)
}

// EmbeddingsCodec is the OpenAI codec with the embeddings request parser; embeddings are only
// ever same-dialect and non-stream, so the pass-through rewrite and error handling apply as is.
func EmbeddingsCodec() Codec { return embeddingsCodec{} }

// ImagesCodec is the OpenAI codec of POST /v1/images/generations: the images request parser
// and response check (usage from input_tokens/output_tokens); same-dialect and non-stream only,
// errors as the OpenAI codec's (a content_policy_violation is content_policy: no failover).
func ImagesCodec() Codec { return imagesCodec{} }

// ImageEditsCodec is ImagesCodec for POST /v1/images/edits: the body is multipart/form-data
// (openai.ParseImageEdit), forwarded with only the model part's value rewritten.
func ImageEditsCodec() Codec { return imageEditsCodec{} }

type imagesCodec struct{ openaiCodec }

func (imagesCodec) ParseRequest(b []byte) (dialect.RequestInfo, error) {
	return openai.ParseImagesRequest(b)
}
func (imagesCodec) RewriteResponse(dst, b []byte, _ string) ([]byte, dialect.Usage, bool, error) {
	return openai.RewriteImagesResponse(dst, b)
}

type imageEditsCodec struct{ imagesCodec }

func (imageEditsCodec) ParseRequest(b []byte) (dialect.RequestInfo, error) {
	e, err := openai.ParseImageEdit(b, nil)
	return e.Info, err
}
func (imageEditsCodec) AppendUpstreamBody(dst, b []byte, i *dialect.RequestInfo, m string) []byte {
	return openai.AppendImageEditBody(dst, b, i, m)
}

// CountTokensCodec is the Anthropic codec with the count_tokens request parser.
func CountTokensCodec() Codec { return countTokensCodec{} }

type embeddingsCodec struct{ openaiCodec }

func (embeddingsCodec) ParseRequest(b []byte) (dialect.RequestInfo, error) {
	return openai.ParseEmbeddingsRequest(b)
}

type countTokensCodec struct{ anthropicCodec }

func (embeddingsCodec) RewriteResponse(dst, b []byte, m string) ([]byte, dialect.Usage, bool, error) {
	return openai.RewriteEmbeddingsResponse(dst, b, m)
}
func (countTokensCodec) RewriteResponse(dst, b []byte, m string) ([]byte, dialect.Usage, bool, error) {
	return anthropic.RewriteCountTokensResponse(dst, b, m)
}

func (countTokensCodec) ParseRequest(b []byte) (dialect.RequestInfo, error) {
	return anthropic.ParseCountTokensRequest(b)
}

// CodecFor returns the codec of a dialect (OpenAI for any unknown value).
func CodecFor(d catalog.Dialect) Codec {
	if d == catalog.Anthropic {
		return anthropicCodec{}
	}
	return openaiCodec{}
}

type openaiCodec struct{}

func (openaiCodec) ParseRequest(b []byte) (dialect.RequestInfo, error) { return openai.ParseRequest(b) }
func (openaiCodec) AppendUpstreamBody(dst, b []byte, i *dialect.RequestInfo, m string) []byte {
	return openai.AppendUpstreamBody(dst, b, i, m)
}
func (openaiCodec) ScanFrame(dst []byte, ev sse.Event, st *dialect.StreamState) ([]byte, dialect.FrameKind) {
	return openai.ScanFrame(dst, ev, st)
}
func (openaiCodec) RewriteResponse(dst, b []byte, m string) ([]byte, dialect.Usage, bool, error) {
	return openai.RewriteResponse(dst, b, m)
}
func (openaiCodec) NormalizeError(s int, h func(string) string, b []byte) error {
	return openai.NormalizeError(s, h, b)
}
func (openaiCodec) NormalizeStreamError(d []byte) error { return openai.NormalizeStreamError(d) }
func (openaiCodec) AppendErrorBody(dst []byte, fe *failure.Error, rid string) []byte {
	return openai.AppendErrorBody(dst, fe, rid)
}
func (openaiCodec) AppendStreamError(dst []byte, fe *failure.Error, rid string) []byte {
	return openai.AppendStreamError(dst, fe, rid)
}

type anthropicCodec struct{}

func (anthropicCodec) ParseRequest(b []byte) (dialect.RequestInfo, error) {
	return anthropic.ParseRequest(b)
}
func (anthropicCodec) AppendUpstreamBody(dst, b []byte, i *dialect.RequestInfo, m string) []byte {
	return anthropic.AppendUpstreamBody(dst, b, i, m)
}
func (anthropicCodec) ScanFrame(dst []byte, ev sse.Event, st *dialect.StreamState) ([]byte, dialect.FrameKind) {
	return anthropic.ScanFrame(dst, ev, st)
}
func (anthropicCodec) RewriteResponse(dst, b []byte, m string) ([]byte, dialect.Usage, bool, error) {
	return anthropic.RewriteResponse(dst, b, m)
}
func (anthropicCodec) NormalizeError(s int, h func(string) string, b []byte) error {
	return anthropic.NormalizeError(s, h, b)
}
func (anthropicCodec) NormalizeStreamError(d []byte) error { return anthropic.NormalizeStreamError(d) }
func (anthropicCodec) AppendErrorBody(dst []byte, fe *failure.Error, rid string) []byte {
	return anthropic.AppendErrorBody(dst, fe, rid)
}
func (anthropicCodec) AppendStreamError(dst []byte, fe *failure.Error, rid string) []byte {
	return anthropic.AppendStreamError(dst, fe, rid)
}

func (openaiCodec) DecodeRequest(b []byte) (*dialect.Request, error) { return openai.DecodeRequest(b) }
func (openaiCodec) AppendRequest(dst []byte, r *dialect.Request, m string, max int64) ([]byte, error) {
	return openai.AppendRequest(dst, r, m, max)
}
func (openaiCodec) DecodeResponse(b []byte) (*dialect.Response, error) {
	return openai.DecodeResponse(b)
}
func (openaiCodec) AppendResponse(dst []byte, r *dialect.Response, m, rid string) []byte {
	return openai.AppendResponse(dst, r, m, rid)
}
func (openaiCodec) resetDecoder(t *translation) { t.oaDec.Reset() }
func (openaiCodec) decodeStream(t *translation, ev sse.Event, out []dialect.Event) []dialect.Event {
	return t.oaDec.Decode(ev, out)
}
func (openaiCodec) resetEncoder(t *translation, m, rid string, usage bool) {
	t.oaEnc.Reset(m, rid, usage)
}
func (openaiCodec) encodeStream(t *translation, dst []byte, ev *dialect.Event) []byte {
	return t.oaEnc.Append(dst, *ev)
}

func (anthropicCodec) DecodeRequest(b []byte) (*dialect.Request, error) {
	return anthropic.DecodeRequest(b)
}
func (anthropicCodec) AppendRequest(dst []byte, r *dialect.Request, m string, max int64) ([]byte, error) {
	return anthropic.AppendRequest(dst, r, m, max)
}
func (anthropicCodec) DecodeResponse(b []byte) (*dialect.Response, error) {
	return anthropic.DecodeResponse(b)
}
func (anthropicCodec) AppendResponse(dst []byte, r *dialect.Response, m, rid string) []byte {
	return anthropic.AppendResponse(dst, r, m, rid)
}
func (anthropicCodec) resetDecoder(t *translation) { t.anDec.Reset() }
func (anthropicCodec) decodeStream(t *translation, ev sse.Event, out []dialect.Event) []dialect.Event {
	return t.anDec.Decode(ev, out)
}
func (anthropicCodec) resetEncoder(t *translation, m, rid string, usage bool) {
	t.anEnc.Reset(m, rid, usage)
}
func (anthropicCodec) encodeStream(t *translation, dst []byte, ev *dialect.Event) []byte {
	return t.anEnc.Append(dst, *ev)
}
