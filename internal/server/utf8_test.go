package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/openai/openai-go/v3"
)

// TestInvalidUTF8Repaired: issue 25 item 5: a provider's 200 whose strings hold invalid UTF-8
// (a raw Latin-1 byte, a lone continuation byte) reaches the caller as valid UTF-8 JSON, the bad
// bytes replaced by U+FFFD, non-stream and stream alike; the official SDK reads both.
func TestInvalidUTF8Repaired(t *testing.T) {
	t.Parallel()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if !strings.Contains(string(b), `"stream":true`) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"caf`+
				"\xe9 \x80"+`ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"caf\xe9\"},\"finish_reason\":null}]}\n\n"+
			"data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"+
			"data: [DONE]\n\n")
	}))
	t.Cleanup(up.Close)
	g := startGateway(t, strings.ReplaceAll(`
auth: {required: false}
models: [{id: m}]
deployments:
  - {name: d, provider: p, dialect: openai, base_url: "URL/v1", routes: [{model: m, price: {input: 1, output: 1}}]}
`, "URL", up.URL))

	resp, b := icPost(t, g.URL, "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"Hi"}]}`)
	if resp.StatusCode != 200 || !utf8.Valid(b) || !json.Valid(b) || !strings.Contains(string(b), "caf\uFFFD \uFFFDok") {
		t.Fatalf("non-stream: %d valid UTF-8 %v: %q", resp.StatusCode, utf8.Valid(b), b)
	}
	resp, b = icPost(t, g.URL, "/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"Hi"}]}`)
	if resp.StatusCode != 200 || !utf8.Valid(b) || !strings.Contains(string(b), "caf\uFFFD") {
		t.Fatalf("stream: %d valid UTF-8 %v: %q", resp.StatusCode, utf8.Valid(b), b)
	}

	oc := g.openaiClient()
	st := oc.Chat.Completions.NewStreaming(t.Context(), openai.ChatCompletionNewParams{Model: "m",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hi")}})
	acc := openai.ChatCompletionAccumulator{}
	for st.Next() {
		acc.AddChunk(st.Current())
	}
	if err := st.Err(); err != nil || len(acc.Choices) == 0 || acc.Choices[0].Message.Content != "caf\uFFFD" {
		t.Fatalf("SDK stream: %v %+v", err, acc.Choices)
	}
}
