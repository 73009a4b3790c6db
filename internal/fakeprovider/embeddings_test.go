package fakeprovider

import (
	"bytes"
	"context"
	"net/http"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/switchyard-gw/switchyard/internal/catalog"
)

// Embeddings through the official OpenAI SDK: encoding_format base64 (the default of the Node
// and Python SDKs; openai-go v3 sends what it is told and decodes either) comes back as the
// base64 of little-endian float32s, which the SDK decodes into the same vector the float
// format gives; dimensions sets the vector length.
func TestEmbeddingsEncodingAndDimensions(t *testing.T) {
	srv := serve(t, New("emb", catalog.OpenAI))
	client := openAIClient(srv)
	ctx := context.Background()
	input := openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"a", "b"}}
	want := []float64{0.125, -0.25, 0.5}
	for _, tc := range []struct {
		name   string
		format openai.EmbeddingNewParamsEncodingFormat
		dims   int64
		want   []float64
		quoted bool
	}{
		{"default", "", 0, want, false},
		{"float", openai.EmbeddingNewParamsEncodingFormatFloat, 0, want, false},
		{"base64", openai.EmbeddingNewParamsEncodingFormatBase64, 0, want, true},
		{"base64 dimensions", openai.EmbeddingNewParamsEncodingFormatBase64, 5, []float64{0.125, -0.25, 0.5, 0.125, -0.25}, true},
		{"float dimensions", openai.EmbeddingNewParamsEncodingFormatFloat, 2, []float64{0.125, -0.25}, false},
	} {
		params := openai.EmbeddingNewParams{Model: "text-embedding-3-small", Input: input, EncodingFormat: tc.format}
		if tc.dims > 0 {
			params.Dimensions = openai.Int(tc.dims)
		}
		res, err := client.Embeddings.New(ctx, params)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if len(res.Data) != 2 {
			t.Fatalf("%s: %d embeddings, want 2", tc.name, len(res.Data))
		}
		for _, e := range res.Data {
			raw := e.JSON.Embedding.Raw()
			if quoted := len(raw) > 0 && raw[0] == '"'; quoted != tc.quoted {
				t.Errorf("%s: embedding on the wire %s; want base64 string %v", tc.name, raw, tc.quoted)
			}
			if len(e.Embedding) != len(tc.want) {
				t.Fatalf("%s: vector %v, want %v", tc.name, e.Embedding, tc.want)
			}
			for i := range tc.want {
				if e.Embedding[i] != tc.want[i] {
					t.Errorf("%s: vector %v, want %v", tc.name, e.Embedding, tc.want)
					break
				}
			}
		}
	}
}

// An unknown encoding_format or a dimensions out of range is OpenAI's 400, naming the param.
func TestEmbeddingsBadOptions(t *testing.T) {
	srv := serve(t, New("emb", catalog.OpenAI))
	for _, body := range []string{
		`{"model":"m","input":"a","encoding_format":"int8"}`,
		`{"model":"m","input":"a","dimensions":0}`,
		`{"model":"m","input":"a","dimensions":1.5}`,
		`{"model":"m","input":"a","dimensions":99999}`,
	} {
		resp, err := http.Post(srv.URL+"/v1/embeddings", "application/json", bytes.NewReader([]byte(body)))
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		buf.ReadFrom(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 400 || !bytes.Contains(buf.Bytes(), []byte(`"param":`)) {
			t.Errorf("%s: %d %s; want 400 naming the param", body, resp.StatusCode, buf.String())
		}
	}
}
