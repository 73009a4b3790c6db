package fakeprovider

import (
	"bytes"
	"encoding/base64"
	"io"
	"mime"
	"mime/multipart"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// The images endpoints of the OpenAI dialect (docs/fake-provider.md "Images").
func isImagesPath(path string) bool {
	return path == "/v1/images/generations" || path == "/images/generations" || isImageEditsPath(path)
}

func isImageEditsPath(path string) bool { return path == "/v1/images/edits" || path == "/images/edits" }

// fakePNG is the image every answer carries: a valid 1x1 transparent PNG.
var fakePNG = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00\x00\x00\x00IEND\xaeB`\x82")

// FakePNGBase64 is the b64_json of every image the fake answers with.
var FakePNGBase64 = base64.StdEncoding.EncodeToString(fakePNG)

// imageForm is what the fake reads from an image edit's multipart body.
type imageForm struct {
	model, prompt, n string
	images           int
}

// maxFormParts bounds the parts the fake reads from an edit body.
const maxFormParts = 100

// readImageForm parses a multipart/form-data edit body with the standard library; ok false
// when the body or its Content-Type is not one.
func readImageForm(contentType string, body []byte) (f imageForm, ok bool) {
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		return f, false
	}
	r := multipart.NewReader(bytes.NewReader(body), params["boundary"])
	for i := 0; ; i++ {
		p, err := r.NextPart()
		if err == io.EOF {
			return f, true
		}
		if err != nil || i == maxFormParts {
			return f, false
		}
		v, err := io.ReadAll(io.LimitReader(p, maxBodyBytes))
		if err != nil {
			return f, false
		}
		switch name := p.FormName(); {
		case name == "model":
			f.model = string(v)
		case name == "prompt":
			f.prompt = string(v)
		case name == "n":
			f.n = string(v)
		case (name == "image" || name == "image[]") && p.FileName() != "":
			f.images++
		}
	}
}

// imagesUsage says whether a model reports token usage: GPT image models do, dall-e models
// (billed per image) do not.
func imagesUsage(model string) bool { return !strings.HasPrefix(model, "dall-e") }

// imagesAnswer is the answer of the images endpoints: n images (the request's `n`, default 1,
// at most 10) as b64_json of FakePNGBase64 and, for a model that reports usage, usage with
// input_tokens = P (the prompt-token formula over the prompt) + 65 per input image, and
// output_tokens = 272 per image (gpt-image-1 at low quality, 1024x1024).
func (p *Provider) imagesAnswer(req Request) []byte {
	var prompt, nv string
	images := 0
	if isImageEditsPath(req.Path) {
		f, _ := readImageForm(req.Header.Get("Content-Type"), req.Body) // checked by admit
		prompt, nv, images = f.prompt, f.n, f.images
	} else {
		prompt = gjson.GetBytes(req.Body, "prompt").String()
		nv = gjson.GetBytes(req.Body, "n").Raw
	}
	n := 1
	if v, err := strconv.Atoi(nv); err == nil && v >= 1 && v <= 10 {
		n = v
	}
	out := []byte(`{"created":1767225600,"data":[`)
	for i := range n {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"b64_json":"`...)
		out = append(out, FakePNGBase64...)
		out = append(out, `"}`...)
	}
	out = append(out, ']')
	if imagesUsage(req.Model) {
		text := promptTokens([]byte(prompt))
		in, o := text+65*images, 272*n
		out = append(out, `,"usage":{"input_tokens":`...)
		out = strconv.AppendInt(out, int64(in), 10)
		out = append(out, `,"output_tokens":`...)
		out = strconv.AppendInt(out, int64(o), 10)
		out = append(out, `,"total_tokens":`...)
		out = strconv.AppendInt(out, int64(in+o), 10)
		out = append(out, `,"input_tokens_details":{"text_tokens":`...)
		out = strconv.AppendInt(out, int64(text), 10)
		out = append(out, `,"image_tokens":`...)
		out = strconv.AppendInt(out, int64(65*images), 10)
		out = append(out, "}}"...)
	}
	return append(out, '}')
}
