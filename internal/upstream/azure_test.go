package upstream

import (
	"bytes"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/switchyard-gw/switchyard/internal/catalog"
)

// recordingServer answers 200 {} and hands each request's method, URL and headers to got.
func recordingServer(t *testing.T, got chan<- *http.Request) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		got <- r
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{}`))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestAzureRequest: contract.md round 3, platform azure. The deployments API puts the body's
// model (the route's upstream_model) in the path, path-escaped, with api-version; the v1 API
// does not; the key goes in api-key, never in Authorization; image edits read the deployment
// from the multipart form's model field.
func TestAzureRequest(t *testing.T) {
	got := make(chan *http.Request, 1)
	srv := recordingServer(t, got)
	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	_ = mw.WriteField("prompt", "a cat")
	_ = mw.WriteField("model", "dall e/3")
	fw, _ := mw.CreateFormFile("image", "a.png")
	_, _ = fw.Write([]byte("PNG"))
	_ = mw.Close()
	cases := []struct {
		name, version string
		op            catalog.Protocol
		body          []byte
		ct            []string
		want          string
	}{
		{"chat", "2024-10-21", catalog.ProtocolModel, []byte(`{"model":"gpt-4o prod","messages":[]}`), nil,
			"/openai/deployments/gpt-4o%20prod/chat/completions?api-version=2024-10-21"},
		{"embeddings", "2024-10-21", catalog.ProtocolEmbeddings, []byte(`{"model":"te3","input":"x"}`), nil,
			"/openai/deployments/te3/embeddings?api-version=2024-10-21"},
		{"images", "2024-10-21", catalog.ProtocolImages, []byte(`{"model":"img","prompt":"x"}`), nil,
			"/openai/deployments/img/images/generations?api-version=2024-10-21"},
		{"edits", "2025-04-01-preview", catalog.ProtocolImageEdits, form.Bytes(), []string{mw.FormDataContentType()},
			"/openai/deployments/dall%20e%2F3/images/edits?api-version=2025-04-01-preview"},
		{"v1", "", catalog.ProtocolModel, []byte(`{"model":"gpt-4o","messages":[]}`), nil, "/openai/v1/chat/completions"},
		{"v1 embeddings", "", catalog.ProtocolEmbeddings, []byte(`{"model":"te3","input":"x"}`), nil, "/openai/v1/embeddings"},
		{"v1 responses", "", OpResponses, []byte(`{"model":"gpt-5 prod","input":"x"}`), nil, "/openai/v1/responses"},
		{"preview responses", "2025-04-01-preview", OpResponses, []byte(`{"model":"gpt-5 prod","input":"x"}`), nil,
			"/openai/responses?api-version=2025-04-01-preview"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dep := &catalog.Deployment{Name: "az", Dialect: catalog.OpenAI, Platform: catalog.PlatformAzure,
				BaseURL: srv.URL + "/", APIKey: "azure-key", Azure: catalog.Azure{APIVersion: tc.version}, Responses: tc.op == OpResponses}
			c := New(dep, Deadlines{})
			defer c.Close()
			if c.ServesResponses() != (tc.op == OpResponses) {
				t.Errorf("ServesResponses %v", c.ServesResponses())
			}
			call, err := c.SendTyped(t.Context(), tc.op, tc.body, tc.ct, false, "")
			if err != nil {
				t.Fatal(err)
			}
			call.Close()
			r := <-got
			if r.URL.RequestURI() != tc.want {
				t.Errorf("URL %s, want %s", r.URL.RequestURI(), tc.want)
			}
			if r.Header.Get("Api-Key") != "azure-key" || r.Header.Get("Authorization") != "" {
				t.Errorf("api-key %q authorization %q", r.Header.Get("Api-Key"), r.Header.Get("Authorization"))
			}
			if b, _ := io.ReadAll(r.Body); !bytes.Equal(b, tc.body) {
				t.Errorf("body changed: %s", b)
			}
		})
	}
	dep := &catalog.Deployment{Dialect: catalog.OpenAI, Platform: catalog.PlatformAzure, BaseURL: "https://r.openai.azure.com",
		Azure: catalog.Azure{APIVersion: "2024-10-21"}}
	if got := EndpointOf(dep, catalog.ProtocolModel); got != "https://r.openai.azure.com/openai/deployments/{model}/chat/completions?api-version=2024-10-21" {
		t.Errorf("EndpointOf %s", got)
	}
	dep.Azure.APIVersion = ""
	if got := EndpointOf(dep, catalog.ProtocolEmbeddings); got != "https://r.openai.azure.com/openai/v1/embeddings" {
		t.Errorf("EndpointOf %s", got)
	}
	// Responses pass-through: on Azure (responses: true), never on Bedrock or Vertex.
	for _, tc := range []struct {
		platform catalog.Platform
		want     bool
	}{{catalog.PlatformAzure, true}, {catalog.PlatformVertex, false}, {catalog.PlatformOpenAI, true}} {
		d := &catalog.Deployment{Dialect: catalog.OpenAI, Platform: tc.platform, BaseURL: "https://r.example.com/v1", Responses: true,
			Vertex: catalog.Vertex{Project: "p", Location: "global"}}
		if got := New(d, Deadlines{}).ServesResponses(); got != tc.want {
			t.Errorf("%s: ServesResponses %v, want %v", tc.platform, got, tc.want)
		}
	}
}
