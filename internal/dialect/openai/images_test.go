package openai_test

import (
	"testing"

	"github.com/switchyard-gw/switchyard/internal/dialect"
	"github.com/switchyard-gw/switchyard/internal/dialect/openai"
	"github.com/switchyard-gw/switchyard/internal/failure"
)

func TestParseImagesRequest(t *testing.T) {
	info, err := openai.ParseImagesRequest([]byte(`{"prompt":"p","model":"gpt-image-1","n":3}`))
	if err != nil || info.Model != "gpt-image-1" || info.Images != 3 || info.Stream {
		t.Fatalf("%v %+v", err, info)
	}
	for body, param := range map[string]string{
		`{"prompt":"p"}`:                           "model",
		`{"model":"m"}`:                            "prompt",
		`{"model":"m","prompt":"p","n":0}`:         "n",
		`{"model":"m","prompt":"p","n":1.5}`:       "n",
		`{"model":"m","prompt":"p","stream":true}`: "stream",
		`{"model":"m","model":"x","prompt":"p"}`:   "model",
		`{"model":"m","prompt":"p","n":"2"}`:       "n",
	} {
		_, err := openai.ParseImagesRequest([]byte(body))
		fe := failure.From(err)
		if fe == nil || fe.Class != failure.InvalidRequest || fe.Param != param {
			t.Errorf("%s: %v; want invalid_request param %s", body, err, param)
		}
	}
}

// RewriteImagesResponse: input_tokens counts every prompt token, cached ones included
// (Input = input_tokens - cached); a body without usage bills by the image; a body that is
// not an images answer fails over as upstream_error.
func TestRewriteImagesResponse(t *testing.T) {
	body := []byte(`{"created":1,"data":[{"b64_json":"x"}],"usage":{"input_tokens":50,"output_tokens":272,"input_tokens_details":{"text_tokens":40,"image_tokens":10,"cached_tokens":8}}}`)
	out, u, ok, err := openai.RewriteImagesResponse(nil, body)
	if err != nil || !ok || string(out) != string(body) || u != (dialect.Usage{Input: 42, Cached: 8, Output: 272}) {
		t.Fatalf("%v %v %+v", err, ok, u)
	}
	if _, _, ok, err := openai.RewriteImagesResponse(nil, []byte(`{"created":1,"data":[{"url":"https://x"}]}`)); err != nil || ok {
		t.Fatalf("no usage: %v %v", ok, err)
	}
	for _, b := range []string{`{"choices":[]}`, `[]`, `not json`, `{"created":1,"data":[]}`, `{"data":[{"b64_json":"x"}],"error":{"message":"m"}}`} {
		if _, _, _, err := openai.RewriteImagesResponse(nil, []byte(b)); failure.From(err).Class != failure.UpstreamError {
			t.Errorf("%s: %v", b, err)
		}
	}
}
