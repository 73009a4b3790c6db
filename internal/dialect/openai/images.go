package openai

import (
	"bytes"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/switchyard-gw/switchyard/internal/dialect"
	"github.com/switchyard-gw/switchyard/internal/dialect/form"
	"github.com/switchyard-gw/switchyard/internal/failure"
)

// MaxImages is the largest `n` an images request may ask for (OpenAI's bound for every image
// model).
const MaxImages = 10

// maxModelBytes bounds the `model` field of a multipart request.
const maxModelBytes = 256

var errImagesStream = &failure.Error{Class: failure.InvalidRequest, Param: "stream",
	Msg: "streamed image generation is not served by the gateway; omit `stream` (the answer comes whole)"}

// ParseImagesRequest reads the fields routing needs from a POST /v1/images/generations body
// without decoding it: a JSON object (depth-capped, no duplicate keys) with a non-empty string
// `model`, a string `prompt`, an optional integer `n` from 1 to MaxImages (info.Images, default
// 1), and no `stream: true` (the gateway does not relay image streams). The body is forwarded
// with only `model` rewritten (AppendUpstreamBody).
func ParseImagesRequest(body []byte) (dialect.RequestInfo, error) {
	var info dialect.RequestInfo
	var m, prompt, n, stream gjson.Result
	if err := dialect.ScanBody(body, func(k string, v gjson.Result) {
		switch k {
		case "model":
			m = v
		case "prompt":
			prompt = v
		case "n":
			n = v
		case "stream":
			stream = v
		}
	}); err != nil {
		return info, err
	}
	if m.Type != gjson.String || m.Str == "" {
		return info, &failure.Error{Class: failure.InvalidRequest, Param: "model", Msg: "`model` is required and must be a non-empty string"}
	}
	if prompt.Type != gjson.String {
		return info, &failure.Error{Class: failure.InvalidRequest, Param: "prompt", Msg: "`prompt` is required and must be a string"}
	}
	if stream.Type == gjson.True {
		return info, errImagesStream
	}
	info.Images = 1
	if n.Exists() && n.Type != gjson.Null {
		if n.Type != gjson.Number || n.Num != float64(int64(n.Num)) || n.Num < 1 || n.Num > MaxImages {
			return info, nInvalid()
		}
		info.Images = int(n.Num)
	}
	info.Model = strings.Clone(m.Str)
	info.ModelStart, info.ModelEnd = m.Index, m.Index+len(m.Raw)
	return info, nil
}

func nInvalid() *failure.Error {
	return &failure.Error{Class: failure.InvalidRequest, Param: "n", Msg: "`n` must be an integer from 1 to " + strconv.Itoa(MaxImages)}
}

// ImageEdit is what ParseImageEdit read from a POST /v1/images/edits multipart body: the
// routing fields as offsets into the body (nothing of it is copied but the model id).
type ImageEdit struct {
	// Info is the model (ModelStart and ModelEnd bound the `model` part's raw value) and
	// Images the `n` asked for.
	Info dialect.RequestInfo
	// Boundary is the body's boundary, from its first line.
	Boundary string
	// Files counts the image and mask file parts; PromptBytes is the prompt's length.
	Files, PromptBytes int
	// Consumed are the parts the gateway consumes and never forwards (extra, provider,
	// models: their values are the JSON the JSON surfaces take), in body order.
	Consumed []form.Part
}

// Get returns the value of the consumed part named name ("" and false when absent).
func (e *ImageEdit) Get(body []byte, name string) (string, bool) {
	for i := range e.Consumed {
		if p := &e.Consumed[i]; p.Name == name {
			return dialect.View(body[p.ValueStart:p.ValueEnd]), true
		}
	}
	return "", false
}

// FormLimits are the bounds of an image edit body beyond the server's body cap: OpenAI takes
// up to 16 images, a mask and about 15 fields.
var FormLimits = form.Limits{MaxParts: 64, MaxHeaderBytes: 8 << 10}

// consumedParts are the form fields the gateway reads and cuts out (the JSON surfaces'
// consumedMembers).
func consumedPart(name string) bool { return name == "extra" || name == "provider" || name == "models" }

// ParseImageEdit reads a POST /v1/images/edits multipart/form-data body held in memory
// (form.Scan's bounds: at most FormLimits.MaxParts parts, header blocks of at most
// FormLimits.MaxHeaderBytes, CRLF framing, no preamble). Its boundary is its first line's
// (the server checks it is the Content-Type header's). It requires one text part `model`
// (non-empty, at most 256 bytes of printable UTF-8), one text part `prompt` and at least one
// file part `image` or `image[]`; `n` is an integer from 1 to MaxImages; `stream` true is
// refused like on the generations endpoint; a field the gateway reads that appears twice, or
// that is a file or transfer-encoded, is refused. Errors are invalid_request *failure.Error.
// consumed is appended to (pass a reused slice) and returned in ImageEdit.Consumed.
func ParseImageEdit(body []byte, consumed []form.Part) (ImageEdit, error) {
	var e ImageEdit
	e.Consumed = consumed[:0]
	e.Boundary = FirstBoundary(body)
	var model, prompt, n, stream *form.Part
	var mp, pp, np, sp form.Part
	images := 0
	err := form.Scan(body, e.Boundary, FormLimits, func(p *form.Part) error {
		var slot **form.Part
		var keep *form.Part
		switch {
		case p.Name == "model":
			slot, keep = &model, &mp
		case p.Name == "prompt":
			slot, keep = &prompt, &pp
		case p.Name == "n":
			slot, keep = &n, &np
		case p.Name == "stream":
			slot, keep = &stream, &sp
		case consumedPart(p.Name):
			for i := range e.Consumed {
				if e.Consumed[i].Name == p.Name {
					return dupField(p.Name)
				}
			}
			if p.IsFile() || p.Encoded {
				return textField(p.Name)
			}
			e.Consumed = append(e.Consumed, *p)
			return nil
		case p.Name == "image" || p.Name == "image[]":
			if p.IsFile() {
				images++
			}
			e.Files++
			return nil
		case p.Name == "mask":
			e.Files++
			return nil
		default:
			return nil
		}
		if *slot != nil {
			return dupField(p.Name)
		}
		if p.IsFile() || p.Encoded {
			return textField(p.Name)
		}
		*keep = *p
		*slot = keep
		return nil
	})
	if err != nil {
		return e, err
	}
	value := func(p *form.Part) []byte { return body[p.ValueStart:p.ValueEnd] }
	if model == nil || model.ValueEnd == model.ValueStart {
		return e, &failure.Error{Class: failure.InvalidRequest, Param: "model", Msg: "the form field `model` is required and must be non-empty"}
	}
	if m := value(model); len(m) > maxModelBytes || !utf8.Valid(m) || bytes.ContainsFunc(m, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return e, &failure.Error{Class: failure.InvalidRequest, Param: "model", Msg: "the form field `model` must be at most 256 bytes of printable text"}
	}
	if prompt == nil {
		return e, &failure.Error{Class: failure.InvalidRequest, Param: "prompt", Msg: "the form field `prompt` is required"}
	}
	if images == 0 {
		return e, &failure.Error{Class: failure.InvalidRequest, Param: "image", Msg: "at least one image file is required (form field `image` or `image[]`)"}
	}
	if stream != nil && strings.EqualFold(string(value(stream)), "true") {
		return e, errImagesStream
	}
	e.Info.Images = 1
	if n != nil {
		v, err := strconv.Atoi(string(value(n)))
		if err != nil || v < 1 || v > MaxImages {
			return e, nInvalid()
		}
		e.Info.Images = v
	}
	e.PromptBytes = prompt.ValueEnd - prompt.ValueStart
	e.Info.Model = string(value(model))
	e.Info.ModelStart, e.Info.ModelEnd = model.ValueStart, model.ValueEnd
	return e, nil
}

func dupField(name string) error {
	return &failure.Error{Class: failure.InvalidRequest, Param: name, Msg: "the form field " + strconv.Quote(name) + " appears more than once"}
}

func textField(name string) error {
	return &failure.Error{Class: failure.InvalidRequest, Param: name, Msg: "the form field " + strconv.Quote(name) + " must be a plain text field (no file, no transfer encoding)"}
}

// FirstBoundary is the boundary of a multipart body's first line ("--" boundary, optional
// spaces or tabs, CRLF); "" when the body does not begin so.
func FirstBoundary(body []byte) string {
	end := bytes.Index(body[:min(len(body), 2+form.MaxBoundary+8)], []byte("\r\n"))
	if end < 2 || body[0] != '-' || body[1] != '-' {
		return ""
	}
	line := bytes.TrimRight(body[2:end], " \t")
	return dialect.View(line)
}

// AppendImageEditBody appends the multipart body with the `model` part's value replaced by
// upstreamModel (info's offsets); every other byte is the caller's. upstreamModel comes from
// the catalog or is the caller's checked model id: it holds no line break.
func AppendImageEditBody(dst, body []byte, info *dialect.RequestInfo, upstreamModel string) []byte {
	return form.AppendEdited(dst, body, []form.Edit{{Start: info.ModelStart, ValueStart: info.ModelStart, ValueEnd: info.ModelEnd, Value: upstreamModel}})
}

// RewriteImagesResponse checks a non-stream images response (an object: {"created", "data":
// [{"b64_json"|"url", ...}], "usage"?}; an empty or missing data array, or an error member, is
// an upstream_error that fails over, dialect.ScanAnswer), appends it to dst unchanged, and returns its usage
// (ok=false when it has none): GPT image models report {input_tokens, output_tokens,
// input_tokens_details: {text_tokens, image_tokens, cached_tokens?}}; input_tokens counts
// every prompt token (text and image), cached ones included, so Input = input_tokens - cached.
func RewriteImagesResponse(dst, body []byte) ([]byte, dialect.Usage, bool, error) {
	var u dialect.Usage
	a, err := dialect.ScanAnswer(body, "data", false)
	if err != nil {
		return dst, u, false, err // unreadable, no image, or an error object sent with status 200: fails over
	}
	ur := a.Usage
	ok := ur.IsObject() && (ur.Get("input_tokens").Exists() || ur.Get("output_tokens").Exists())
	if ok {
		cached := max(ur.Get("input_tokens_details.cached_tokens").Int(), 0)
		u = dialect.Usage{Input: max(ur.Get("input_tokens").Int()-cached, 0), Cached: cached, Output: ur.Get("output_tokens").Int()}
	}
	return append(dst, body...), u, ok, nil
}
