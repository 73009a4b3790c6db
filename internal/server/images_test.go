package server_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/tidwall/gjson"

	"github.com/switchyard-gw/switchyard/internal/admission"
	"github.com/switchyard-gw/switchyard/internal/fakeprovider"
)

// imagesCatalog: gpt-image-1 on two OpenAI deployments (i1 cheaper, tried first; i2 sends
// its own upstream id) and an Anthropic one (dropped: no images endpoint); dall-e-3 billed per
// image only (its provider reports no usage); claude-haiku-4-5 on Anthropic only.
const imagesCatalog = `
auth: {required: true}
server: {max_body_bytes: 1048576}
routing:
  timeouts: {headers: 5s, stream_headers: 5s, stream_idle: 5s}
models:
  - id: gpt-image-1
  - id: dall-e-3
    price: {image: 0.04}
  - id: claude-haiku-4-5
deployments:
  - {name: i1, provider: openai, dialect: openai, base_url: "{{i1}}", routes: [{model: gpt-image-1, price: {input: 5, output: 40}}, {model: dall-e-3}]}
  - {name: i2, provider: azure, dialect: openai, base_url: "{{i2}}", routes: [{model: gpt-image-1, upstream_model: gpt-image-1-az, price: {input: 6, output: 48}}]}
  - {name: an, provider: anthropic, dialect: anthropic, base_url: "{{an}}", routes: [{model: gpt-image-1}, {model: claude-haiku-4-5}]}
keys:
  - {name: open, secret: sk-open}
  - {name: tight, secret: sk-tight, limits: {budget_usd: 0.01, budget_period: total}}
admin: {token: adm-secret-token}
`

func startImages(t *testing.T) *gateway {
	return startGateway(t, imagesCatalog, oa("i1"), oa("i2"), an("an"))
}

// R-DIALECT-1, R-FAIL-1, R-AUDIT-2, R-BILL-2 (images): POST /v1/images/generations through the
// official SDK fails over from a failing deployment to the next one before anything reached
// the caller, never calls the Anthropic deployment (dropped from the plan, R-ADMIT-5), audits
// both attempts, and bills the usage the provider reported (input_tokens, output_tokens) at
// the serving route's price.
func TestImagesGenerate(t *testing.T) {
	g := startImages(t)
	g.Fakes["i1"].Script(fakeprovider.Behavior{Kind: fakeprovider.KindStatus, Status: 503})
	oc := g.openaiClient(option.WithAPIKey("sk-open"))
	var raw *http.Response
	res, err := oc.Images.Generate(context.Background(), openai.ImageGenerateParams{
		Model: "gpt-image-1", Prompt: "a red fox", N: openai.Int(2),
	}, option.WithResponseInto(&raw))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Data) != 2 || res.Data[0].B64JSON != fakeprovider.FakePNGBase64 || res.Usage.OutputTokens != 544 {
		t.Fatalf("images %+v", res)
	}
	if raw.Header.Get("x-switchyard-deployment") != "i2" || raw.Header.Get("x-switchyard-attempts") != "2" ||
		raw.Header.Get("x-switchyard-upstream-model") != "gpt-image-1-az" {
		t.Fatalf("headers %v", raw.Header)
	}
	if got := g.Fakes["i2"].Requests()[0]; got.Model != "gpt-image-1-az" || got.Path != "/v1/images/generations" {
		t.Fatalf("upstream request %s %q", got.Path, got.Model)
	}
	rec := g.generation(t, raw.Header.Get("x-request-id"))
	if rec.Surface != "openai.images" || len(rec.Attempts) != 2 || rec.Attempts[0].ErrorCode != "upstream_error" {
		t.Fatalf("audit %+v", rec)
	}
	a := rec.Attempts[1]
	in := res.Usage.InputTokens
	if a.Tokens.Input != in || a.Tokens.Output != 544 || a.UsageProvenance != "observed" {
		t.Fatalf("attempt tokens %+v %s", a.Tokens, a.UsageProvenance)
	}
	if want := admission.CostMicroUSD(in, 544, 6, 48); admission.MicroUSD(a.CostUSD) != want {
		t.Fatalf("cost %v; want %d micro-USD", a.CostUSD, want)
	}
	if g.Fakes["an"].Hits() != 0 {
		t.Fatal("an Anthropic deployment was called for images")
	}

	// A model without an OpenAI-dialect route: a clear 400 in the OpenAI dialect, nothing called.
	_, err = oc.Images.Generate(context.Background(), openai.ImageGenerateParams{Model: "claude-haiku-4-5", Prompt: "x"})
	var oe *openai.Error
	if !errors.As(err, &oe) || oe.StatusCode != 400 || oe.Type != "invalid_request_error" || !strings.Contains(oe.Message, "claude-haiku-4-5") {
		t.Fatalf("anthropic-only model: %v", err)
	}
	// Streams are refused, not half-served.
	resp, b := icPost(t, g.URL, "/v1/images/generations", `{"model":"gpt-image-1","prompt":"x","stream":true}`, "Authorization", "Bearer sk-open")
	if resp.StatusCode != 400 || gjson.GetBytes(b, "error.param").String() != "stream" {
		t.Fatalf("stream: %d %s", resp.StatusCode, b)
	}
	if resp, b := icPost(t, g.URL, "/v1/images/generations", `{"model":"gpt-image-1","prompt":"x","n":11}`, "Authorization", "Bearer sk-open"); resp.StatusCode != 400 || gjson.GetBytes(b, "error.param").String() != "n" {
		t.Fatalf("n: %d %s", resp.StatusCode, b)
	}
	if g.Fakes["an"].Hits() != 0 || g.Fakes["i1"].Hits() != 1 || g.Fakes["i2"].Hits() != 1 {
		t.Fatalf("hits i1 %d i2 %d an %d", g.Fakes["i1"].Hits(), g.Fakes["i2"].Hits(), g.Fakes["an"].Hits())
	}
}

// A provider that reports no usage (dall-e-3) is billed per image returned at the catalog's
// price.image, the usage marked estimated; a content-policy refusal never fails over (R-FAIL-6).
func TestImagesPerImagePriceAndContentPolicy(t *testing.T) {
	g := startImages(t)
	oc := g.openaiClient(option.WithAPIKey("sk-open"))
	var raw *http.Response
	res, err := oc.Images.Generate(context.Background(), openai.ImageGenerateParams{Model: "dall-e-3", Prompt: "a red fox", N: openai.Int(3)},
		option.WithResponseInto(&raw))
	if err != nil || len(res.Data) != 3 {
		t.Fatalf("%v %+v", err, res)
	}
	a := g.generation(t, raw.Header.Get("x-request-id")).Attempts[0]
	if admission.MicroUSD(a.CostUSD) != 120000 || a.UsageProvenance != "estimated" {
		t.Fatalf("dall-e-3: cost %v provenance %s; want 0.12 (3 x 0.04) estimated", a.CostUSD, a.UsageProvenance)
	}

	g.Fakes["i1"].Script(fakeprovider.Behavior{Kind: fakeprovider.KindContentPolicy})
	_, err = oc.Images.Generate(context.Background(), openai.ImageGenerateParams{Model: "gpt-image-1", Prompt: "x"})
	var oe *openai.Error
	if !errors.As(err, &oe) || oe.StatusCode != 400 || oe.Code != "content_policy_violation" {
		t.Fatalf("content policy: %v", err)
	}
	if g.Fakes["i2"].Hits() != 0 {
		t.Fatal("a content-policy refusal failed over")
	}
}

// R-BILL-1 (images): a key's budget admits an images request only when its reserve fits (n
// images at ImageOutputTokens output tokens each at the dearest candidate's price); a refusal
// is 402 with limit kind budget, no attempt.
func TestImagesBudget(t *testing.T) {
	g := startImages(t)
	oc := g.openaiClient(option.WithAPIKey("sk-tight"))
	_, err := oc.Images.Generate(context.Background(), openai.ImageGenerateParams{Model: "gpt-image-1", Prompt: "a red fox"})
	var oe *openai.Error
	if !errors.As(err, &oe) || oe.StatusCode != 402 || oe.Response.Header.Get("X-Switchyard-Limit-Kind") != "budget" {
		t.Fatalf("budget: %v", err)
	}
	if fakeHits(g) != 0 {
		t.Fatal("a refused request reached a provider")
	}
}

// R-BILL-2 (images, ledger): a stored key's images request leaves a reserve and one settle of
// the audited cost in its account's ledger.
func TestImagesLedger(t *testing.T) {
	g := startImages(t)
	acct := mustAdmin(t, g, 201, "POST", "/admin/v1/accounts", `{"name":"img"}`).Get("id").String()
	k := mustAdmin(t, g, 201, "POST", "/admin/v1/keys", `{"account_id":"`+acct+`","name":"k","settings":{"limits":{"budget_usd":5,"budget_period":"total"}}}`)
	oc := g.openaiClient(option.WithAPIKey(k.Get("secret").String()))
	var raw *http.Response
	if _, err := oc.Images.Generate(context.Background(), openai.ImageGenerateParams{Model: "gpt-image-1", Prompt: "a red fox"}, option.WithResponseInto(&raw)); err != nil {
		t.Fatal(err)
	}
	a := g.generation(t, raw.Header.Get("x-request-id")).Attempts[0]
	if a.ReservedMaxUSD < 0.2 || a.CostUSD <= 0 {
		t.Fatalf("reserve %v cost %v", a.ReservedMaxUSD, a.CostUSD)
	}
	var kinds []string
	for range 200 {
		kinds = kinds[:0]
		led := mustAdmin(t, g, 200, "GET", "/admin/v1/accounts/"+acct+"/ledger", "")
		settled := int64(-1)
		for _, e := range led.Get("entries").Array() {
			kinds = append(kinds, e.Get("kind").String())
			if e.Get("kind").String() == "settle" {
				settled = e.Get("cost_micro_usd").Int()
			}
		}
		if settled >= 0 {
			if settled != admission.MicroUSD(a.CostUSD) || len(kinds) != 2 {
				t.Fatalf("ledger %s; settle of %v wanted", led.Raw, a.CostUSD)
			}
			return
		}
		time.Sleep(10 * time.Millisecond) // polling the store, not synchronising
	}
	t.Fatalf("no settle in the ledger: %v", kinds)
}

// editBody is an image edit form as the SDK would send it, with extra form fields.
func editBody(t *testing.T, fields ...string) ([]byte, string) {
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for i := 0; i+1 < len(fields); i += 2 {
		_ = w.WriteField(fields[i], fields[i+1])
	}
	fw, _ := w.CreateFormFile("image", "a.png")
	_, _ = fw.Write([]byte("\x89PNG\r\n--fake"))
	_ = w.Close()
	return buf.Bytes(), w.FormDataContentType()
}

// formParts reads a recorded upstream multipart body: field names to values.
func formParts(t *testing.T, r fakeprovider.Request) map[string]string {
	_, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		t.Fatal(err)
	}
	mr := multipart.NewReader(bytes.NewReader(r.Body), params["boundary"])
	out := map[string]string{}
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("upstream body: %v", err)
		}
		v, _ := io.ReadAll(p)
		out[p.FormName()] = string(v)
	}
}

// POST /v1/images/edits (multipart) through the official SDK: failover, the model part
// rewritten to the route's upstream id and extra (extra.fallbacks) consumed, never forwarded;
// the image bytes reach the provider unchanged; billing from the reported usage.
func TestImagesEdit(t *testing.T) {
	g := startImages(t)
	g.Fakes["i1"].Script(fakeprovider.Behavior{Kind: fakeprovider.KindReset})
	oc := g.openaiClient(option.WithAPIKey("sk-open"))
	params := openai.ImageEditParams{
		Model: "gpt-image-1", Prompt: "add a hat", N: openai.Int(2),
		Image: openai.ImageEditParamsImageUnion{OfFileArray: []io.Reader{
			openai.File(strings.NewReader("\x89PNG-one\r\n--"), "one.png", "image/png"),
			openai.File(strings.NewReader("\x89PNG-two"), "two.png", "image/png"),
		}},
	}
	params.SetExtraFields(map[string]any{"extra": `{"fallbacks":["dall-e-3"]}`})
	var raw *http.Response
	res, err := oc.Images.Edit(context.Background(), params, option.WithResponseInto(&raw))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Data) != 2 || res.Usage.InputTokens == 0 || raw.Header.Get("x-switchyard-deployment") != "i2" || raw.Header.Get("x-switchyard-attempts") != "2" {
		t.Fatalf("edit %+v %v", res, raw.Header)
	}
	up := g.Fakes["i2"].Requests()[0]
	f := formParts(t, up)
	if up.Path != "/v1/images/edits" || f["model"] != "gpt-image-1-az" || f["prompt"] != "add a hat" || f["n"] != "2" || f["image[]"] != "\x89PNG-two" {
		t.Fatalf("upstream form %q at %s", f, up.Path)
	}
	if _, ok := f["extra"]; ok {
		t.Fatal("the gateway's extra field was forwarded")
	}
	rec := g.generation(t, raw.Header.Get("x-request-id"))
	a := rec.Attempts[1]
	if rec.Surface != "openai.image_edits" || len(rec.Attempts) != 2 || a.Tokens.Input != res.Usage.InputTokens || a.Tokens.Output != 544 ||
		admission.MicroUSD(a.CostUSD) != admission.CostMicroUSD(res.Usage.InputTokens, 544, 6, 48) {
		t.Fatalf("audit %+v", rec)
	}

	// The fallback named in the form serves when every gpt-image-1 route fails (a fresh gateway:
	// i1's circuit already counts the reset above).
	g = startImages(t)
	g.Fakes["i1"].Script(fakeprovider.Behavior{Kind: fakeprovider.KindStatus, Status: 500}, fakeprovider.Behavior{})
	g.Fakes["i2"].Script(fakeprovider.Behavior{Kind: fakeprovider.KindStatus, Status: 500})
	body, ct := editBody(t, "model", "gpt-image-1", "prompt", "p", "extra", `{"fallbacks":["dall-e-3"]}`)
	resp, b := icPost(t, g.URL, "/v1/images/edits", string(body), "Authorization", "Bearer sk-open", "Content-Type", ct)
	if resp.StatusCode != 200 || resp.Header.Get("X-Switchyard-Model") != "dall-e-3" || len(gjson.GetBytes(b, "data").Array()) != 1 {
		t.Fatalf("fallback: %d %v %s", resp.StatusCode, resp.Header, b)
	}
}

// Hostile multipart bodies on POST /v1/images/edits: a clear 400 or 413 in the OpenAI dialect,
// no provider called, the gateway still serving.
func TestImagesEditHostile(t *testing.T) {
	g := startImages(t)
	good, ct := editBody(t, "model", "gpt-image-1", "prompt", "p")
	var many bytes.Buffer
	mw := multipart.NewWriter(&many)
	_ = mw.WriteField("model", "gpt-image-1")
	for range 5000 {
		_ = mw.WriteField("x", "1")
	}
	_ = mw.Close()
	noModel, ctNoModel := editBody(t, "prompt", "p")
	twoModels, ctTwo := editBody(t, "model", "gpt-image-1", "model", "dall-e-3", "prompt", "p")
	deep, ctDeep := editBody(t, "model", "gpt-image-1", "prompt", "p", "extra", strings.Repeat("[", 200)+strings.Repeat("]", 200))
	badExtra, ctBad := editBody(t, "model", "gpt-image-1", "prompt", "p", "extra", `{"fallbacks":`)
	huge, ctHuge := editBody(t, "model", "gpt-image-1", "prompt", strings.Repeat("p", 2<<20))
	noImage, ctNoImage := editBody(t, "model", "gpt-image-1", "prompt", "p")
	noImage = bytes.Replace(noImage, []byte(`name="image"; filename="a.png"`), []byte(`name="image"`), 1)
	for name, tc := range map[string]struct {
		body        []byte
		ct          string
		status      int
		param, kind string
	}{
		"json content type":  {good, "application/json", 400, "", ""},
		"no boundary":        {good, "multipart/form-data", 400, "", ""},
		"boundary mismatch":  {good, "multipart/form-data; boundary=other", 400, "", ""},
		"truncated":          {good[:len(good)-10], ct, 400, "", ""},
		"thousands of parts": {many.Bytes(), mw.FormDataContentType(), 400, "", ""},
		"no model":           {noModel, ctNoModel, 400, "model", ""},
		"model twice":        {twoModels, ctTwo, 400, "model", ""},
		"deep extra":         {deep, ctDeep, 400, "extra", ""},
		"broken extra":       {badExtra, ctBad, 400, "extra", ""},
		"no image file":      {noImage, ctNoImage, 400, "image", ""},
		"over the body cap":  {huge, ctHuge, 413, "", ""},
		"empty":              {nil, ct, 400, "", ""},
	} {
		resp, b := icPost(t, g.URL, "/v1/images/edits", string(tc.body), "Authorization", "Bearer sk-open", "Content-Type", tc.ct)
		if resp.StatusCode != tc.status || gjson.GetBytes(b, "error.message").String() == "" ||
			gjson.GetBytes(b, "error.param").String() != tc.param {
			t.Errorf("%s: %d %s; want %d param %q", name, resp.StatusCode, b, tc.status, tc.param)
		}
	}
	if fakeHits(g) != 0 {
		t.Fatalf("a hostile body reached a provider (%d)", fakeHits(g))
	}
	if resp, b := icPost(t, g.URL, "/v1/images/edits", string(good), "Authorization", "Bearer sk-open", "Content-Type", ct); resp.StatusCode != 200 {
		t.Fatalf("after the hostile bodies: %d %s", resp.StatusCode, b)
	}
}
