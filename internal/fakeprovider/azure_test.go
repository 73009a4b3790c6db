package fakeprovider

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/azure"
	openaioption "github.com/openai/openai-go/v3/option"
)

// The Azure emulator is held to openai-go/v3/azure, the SDK's own Azure adapter: if its paths,
// api-version, api-key or stream framing drifted from what the SDK sends and reads, these fail.

func azureSDK(srv *httptest.Server, key string) openai.Client {
	return openai.NewClient(azure.WithEndpoint(srv.URL, "2024-10-21"), azure.WithAPIKey(key), azure.WithUnsafeAllowHTTP(),
		openaioption.WithMaxRetries(0))
}

func TestAzureEmulatorWithAzureSDK(t *testing.T) {
	a := NewAzure("azure")
	a.RequireKey("azure-key-1")
	a.SetDeployments("gpt-4o-prod")
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	client := azureSDK(srv, "azure-key-1")
	params := openAIParams(false)
	params.Model = "gpt-4o-prod"

	c, err := client.Chat.Completions.New(t.Context(), params)
	if err != nil {
		t.Fatal(err)
	}
	if c.Choices[0].Message.Content != "Hello from azure." {
		t.Fatalf("content %q", c.Choices[0].Message.Content)
	}

	a.Script(Behavior{ToolCall: true, Deltas: 4})
	tp := openAIParams(true)
	tp.Model = "gpt-4o-prod"
	st := client.Chat.Completions.NewStreaming(t.Context(), tp)
	var acc openai.ChatCompletionAccumulator
	for st.Next() {
		acc.AddChunk(st.Current())
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	if len(acc.Choices) != 1 || len(acc.Choices[0].Message.ToolCalls) != 1 || acc.Choices[0].FinishReason != "tool_calls" {
		t.Fatalf("accumulated %+v", acc.Choices)
	}
	if !strings.Contains(acc.Choices[0].Message.ToolCalls[0].Function.Arguments, `"city"`) {
		t.Fatalf("arguments %q", acc.Choices[0].Message.ToolCalls[0].Function.Arguments)
	}

	calls := a.Calls()
	if len(calls) != 2 {
		t.Fatalf("calls %+v", calls)
	}
	for _, c := range calls {
		if c.Path != "/openai/deployments/gpt-4o-prod/chat/completions" || c.Deployment != "gpt-4o-prod" ||
			c.APIVersion != "2024-10-21" || c.APIKey != "azure-key-1" || c.Authorization != "" {
			t.Fatalf("call %+v", c)
		}
	}

	// A wrong key is Azure's 401; an unknown deployment its 404 DeploymentNotFound; neither
	// consumes a scripted behavior.
	wrong := azureSDK(srv, "wrong")
	_, err = wrong.Chat.Completions.New(t.Context(), params)
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 401 || apiErr.Code != "401" {
		t.Fatalf("wrong key: %v", err)
	}
	params.Model = "gpt-5-nowhere"
	_, err = client.Chat.Completions.New(t.Context(), params)
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 || apiErr.Code != "DeploymentNotFound" {
		t.Fatalf("unknown deployment: %v", err)
	}
}

func TestAzureEmulatorErrorsAndFilters(t *testing.T) {
	a := NewAzure("azure")
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	client := azureSDK(srv, "k")
	params := openAIParams(false)

	// The prompt filter: 400 content_filter with Azure's innererror.
	a.Script(Behavior{Kind: KindContentPolicy})
	_, err := client.Chat.Completions.New(t.Context(), params)
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Code != "content_filter" ||
		!strings.Contains(apiErr.RawJSON(), `"ResponsibleAIPolicyViolation"`) {
		t.Fatalf("prompt filter: %v", err)
	}

	// A 429 carries Azure's code "429", retry-after and retry-after-ms.
	a.Script(Behavior{Kind: KindStatus, Status: 429, RetryAfter: 7})
	_, err = client.Chat.Completions.New(t.Context(), params)
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 429 || apiErr.Code != "429" ||
		apiErr.Response.Header.Get("Retry-After") != "7" || apiErr.Response.Header.Get("Retry-After-Ms") != "7000" {
		t.Fatalf("429: %v", err)
	}

	// The output filter on a stream: two deltas, then finish_reason content_filter.
	a.Script(Behavior{Kind: KindContentPolicy, After: 2})
	st := client.Chat.Completions.NewStreaming(t.Context(), params)
	var acc openai.ChatCompletionAccumulator
	for st.Next() {
		acc.AddChunk(st.Current())
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	if acc.Choices[0].FinishReason != "content_filter" || acc.Choices[0].Message.Content == "" {
		t.Fatalf("output filter: %+v", acc.Choices)
	}
}

// TestAzureEmulatorPaths: the v1 API needs no api-version; the deployments API does (Azure's
// 404); a request without api-key is a 401.
func TestAzureEmulatorPaths(t *testing.T) {
	a := NewAzure("azure")
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	v1 := openai.NewClient(openaioption.WithBaseURL(srv.URL+"/openai/v1/"), openaioption.WithHeader("api-key", "k"),
		openaioption.WithAPIKey("unused"), openaioption.WithMaxRetries(0))
	if _, err := v1.Chat.Completions.New(t.Context(), openAIParams(false)); err != nil {
		t.Fatal(err)
	}
	if _, err := v1.Embeddings.New(t.Context(), openai.EmbeddingNewParams{Model: "te3",
		Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("hi")}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path, key string
		want      int
	}{
		{"/openai/deployments/d/chat/completions", "k", 404},
		{"/openai/deployments/d/chat/completions?api-version=2024-10-21", "", 401},
		{"/openai/deployments/d/completions?api-version=2024-10-21", "k", 404},
	} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+tc.path, strings.NewReader(`{"model":"d","messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("Api-Key", tc.key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s key %q: %d, want %d", tc.path, tc.key, resp.StatusCode, tc.want)
		}
	}
	if got := a.Hits(); got != 2 {
		t.Fatalf("the wrapped provider saw %d requests, want the 2 admitted ones", got)
	}
}
