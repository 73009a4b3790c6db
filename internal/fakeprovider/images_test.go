package fakeprovider

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/switchyard-gw/switchyard/internal/catalog"
)

// The images endpoints answer the official SDK (b64_json images, usage for GPT image models,
// none for dall-e ones) and honour scripted failures like the other endpoints.
func TestImagesEndpoints(t *testing.T) {
	p := New("fake-openai", catalog.OpenAI)
	srv := serve(t, p)
	oc := openAIClient(srv)
	ctx := context.Background()
	res, err := oc.Images.Generate(ctx, openai.ImageGenerateParams{Model: "gpt-image-1", Prompt: "a red fox", N: openai.Int(2)})
	if err != nil {
		t.Fatal(err)
	}
	png, _ := base64.StdEncoding.DecodeString(res.Data[1].B64JSON)
	if len(res.Data) != 2 || !strings.HasPrefix(string(png), "\x89PNG\r\n\x1a\n") ||
		res.Usage.InputTokens != int64(promptTokens([]byte("a red fox"))) || res.Usage.OutputTokens != 544 || res.Usage.TotalTokens != res.Usage.InputTokens+544 {
		t.Fatalf("generate %+v", res)
	}
	res, err = oc.Images.Generate(ctx, openai.ImageGenerateParams{Model: "dall-e-3", Prompt: "x"})
	if err != nil || len(res.Data) != 1 || res.JSON.Usage.Valid() {
		t.Fatalf("dall-e-3: %v %+v", err, res)
	}
	edit, err := oc.Images.Edit(ctx, openai.ImageEditParams{Model: "gpt-image-1", Prompt: "hat",
		Image: openai.ImageEditParamsImageUnion{OfFileArray: []io.Reader{
			openai.File(strings.NewReader("a"), "a.png", "image/png"), openai.File(strings.NewReader("b"), "b.png", "image/png")}}})
	if err != nil || len(edit.Data) != 1 || edit.Usage.InputTokensDetails.ImageTokens != 130 {
		t.Fatalf("edit: %v %+v", err, edit)
	}
	if r := p.Requests(); r[len(r)-1].Model != "gpt-image-1" || r[len(r)-1].Path != "/v1/images/edits" {
		t.Fatalf("recorded %+v", r[len(r)-1])
	}

	p.Script(Behavior{Kind: KindStatus, Status: 503}, Behavior{Kind: KindContentPolicy})
	var oe *openai.Error
	if _, err := oc.Images.Generate(ctx, openai.ImageGenerateParams{Model: "gpt-image-1", Prompt: "x"}); !errors.As(err, &oe) || oe.StatusCode != 503 {
		t.Fatalf("scripted 503: %v", err)
	}
	if _, err := oc.Images.Generate(ctx, openai.ImageGenerateParams{Model: "gpt-image-1", Prompt: "x"}); !errors.As(err, &oe) || oe.Code != "content_policy_violation" {
		t.Fatalf("scripted content policy: %v", err)
	}
	// Requests the real API refuses: no prompt, an edit without an image or not multipart.
	for _, tc := range []struct{ path, ct, body string }{
		{"/v1/images/generations", "application/json", `{"model":"gpt-image-1"}`},
		{"/v1/images/edits", "application/json", `{"model":"gpt-image-1","prompt":"x"}`},
		{"/v1/images/edits", "multipart/form-data; boundary=b", "--b\r\nContent-Disposition: form-data; name=prompt\r\n\r\nx\r\n--b--\r\n"},
	} {
		resp, err := srv.Client().Post(srv.URL+tc.path, tc.ct, strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s %s: %d", tc.path, tc.body, resp.StatusCode)
		}
	}
}
