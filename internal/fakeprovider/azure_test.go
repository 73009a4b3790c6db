package fakeprovider

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/azure"
	openaioption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
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

// TestAzureEmulatorResponses: Azure's Responses API as openai-go/v3/azure reaches it (a preview
// api-version: POST /openai/responses, the deployment in the body's model) and on the v1 API
// (POST /openai/v1/responses), stream and not: OpenAI's Responses answers, no prompt-filter
// chunk on the stream; an unknown deployment is Azure's 404 DeploymentNotFound on both, a GA
// api-version or the deployments API's path Azure's 404 "Resource not found", a wrong key its
// 401, a scripted 503 its ServiceUnavailable.
func TestAzureEmulatorResponses(t *testing.T) {
	a := NewAzure("azure")
	a.RequireKey("azure-key-1")
	a.SetDeployments("gpt-5-prod")
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	preview := openai.NewClient(azure.WithEndpoint(srv.URL, "2025-04-01-preview"), azure.WithAPIKey("azure-key-1"),
		azure.WithUnsafeAllowHTTP(), openaioption.WithMaxRetries(0))
	v1 := openai.NewClient(openaioption.WithBaseURL(srv.URL+"/openai/v1/"), openaioption.WithHeader("api-key", "azure-key-1"),
		openaioption.WithAPIKey("unused"), openaioption.WithMaxRetries(0))
	p := responses.ResponseNewParams{Model: "gpt-5-prod", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}}
	// In this order: the calls' check below reads the preview's four first.
	for _, named := range []struct {
		name string
		c    openai.Client
	}{{"preview", preview}, {"v1", v1}} {
		name, c := named.name, named.c
		r, err := c.Responses.New(t.Context(), p)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if r.OutputText() != "Hello from azure." || r.Usage.OutputTokens == 0 {
			t.Fatalf("%s: %q %+v", name, r.OutputText(), r.Usage)
		}
		st := c.Responses.NewStreaming(t.Context(), p)
		var text strings.Builder
		var types []string
		for st.Next() {
			ev := st.Current()
			types = append(types, ev.Type)
			if ev.Type == "response.output_text.delta" {
				text.WriteString(ev.Delta)
			}
		}
		if err := st.Err(); err != nil || text.String() != "Hello from azure." || types[0] != "response.created" {
			t.Fatalf("%s stream: %q %v %v", name, text.String(), types, err)
		}
		var apiErr *openai.Error
		bad := p
		bad.Model = "gpt-5-nowhere"
		if _, err := c.Responses.New(t.Context(), bad); !errors.As(err, &apiErr) || apiErr.StatusCode != 404 || apiErr.Code != "DeploymentNotFound" {
			t.Fatalf("%s unknown deployment: %v", name, err)
		}
		a.Script(Behavior{Kind: KindStatus, Status: 503})
		if _, err := c.Responses.New(t.Context(), p); !errors.As(err, &apiErr) || apiErr.StatusCode != 503 || apiErr.Code != "ServiceUnavailable" {
			t.Fatalf("%s 503: %v", name, err)
		}
	}
	calls := a.Calls()
	if len(calls) != 8 || calls[0].Path != "/openai/responses" || calls[0].APIVersion != "2025-04-01-preview" ||
		calls[0].Deployment != "gpt-5-prod" || calls[4].Path != "/openai/v1/responses" || calls[4].APIVersion != "" {
		t.Fatalf("calls %+v", calls)
	}
	for _, tc := range []struct {
		path, key string
		want      int
	}{
		{"/openai/responses?api-version=2024-10-21", "azure-key-1", 404},
		{"/openai/responses", "azure-key-1", 404},
		{"/openai/deployments/gpt-5-prod/responses?api-version=2025-04-01-preview", "azure-key-1", 404},
		{"/openai/v1/responses", "wrong", 401},
		{"/openai/responses?api-version=2025-04-01-preview", "", 401},
	} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+tc.path, strings.NewReader(`{"model":"gpt-5-prod","input":"hi"}`))
		req.Header.Set("Api-Key", tc.key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.want || !strings.Contains(string(b), `"code"`) {
			t.Errorf("%s key %q: %d %s, want %d", tc.path, tc.key, resp.StatusCode, b, tc.want)
		}
	}
}
