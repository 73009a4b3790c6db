package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	openaiopt "github.com/openai/openai-go/v3/option"
)

// wrongPathYAML: deployment w has a wrong base path (the fake answers OpenAI's own 404
// `Invalid URL (POST /v1/wrong/v1/chat/completions)`, type invalid_request_error, code null);
// ok is healthy and dearer, so every plan tries w first.
const wrongPathYAML = `
auth: {required: false}
routing:
  timeouts: {headers: 5s, stream_headers: 5s, stream_idle: 5s}
models: [{id: gpt-4o-mini}, {id: gpt-image-1}]
deployments:
  - name: w
    provider: pw
    dialect: openai
    base_url: "{{w}}/wrong/v1"
    routes: [{model: gpt-4o-mini, price: {input: 1, output: 1}}, {model: gpt-image-1, price: {input: 1, output: 1}}]
  - name: ok
    provider: pok
    dialect: openai
    base_url: "{{ok}}"
    routes: [{model: gpt-4o-mini, price: {input: 2, output: 2}}, {model: gpt-image-1, price: {input: 2, output: 2}}]
`

// TestWrongBasePathFailsOver: issue 25 item 1, seed 003 ("HTTP 404, 408, and 5xx advance"): a
// provider's own 404 for a wrong path is the deployment's fault, not the caller's. The chat
// call and the images call each fail over from w to ok (the caller gets 200 through the
// official SDK, the audit shows w's attempt as upstream_error), and the two 404s open w's
// circuit: the next stream goes to ok in one attempt without calling w.
func TestWrongBasePathFailsOver(t *testing.T) {
	t.Parallel()
	g := startGateway(t, wrongPathYAML, oa("w"), oa("ok"))
	oc := g.openaiClient()

	var hr *http.Response
	cc, err := oc.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{Model: "gpt-4o-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello")}}, openaiopt.WithResponseInto(&hr))
	if err != nil || len(cc.Choices) == 0 || cc.Choices[0].Message.Content != hello("ok") {
		t.Fatalf("chat: %v %+v", err, cc)
	}
	icServed(t, g, hr, "ok", 2)
	rec := g.generation(t, hr.Header.Get("X-Request-Id"))
	if a := rec.Attempts[0]; a.Deployment != "w" || a.ErrorCode != "upstream_error" || a.UpstreamStatus != 404 {
		t.Fatalf("w's attempt %+v, want upstream_error after a 404", a)
	}
	if got := g.Fakes["w"].Requests(); len(got) != 0 {
		t.Fatalf("the fake served a model call on the wrong path: %+v", got)
	}

	img, err := oc.Images.Generate(t.Context(), openai.ImageGenerateParams{Model: "gpt-image-1", Prompt: "a red fox"},
		openaiopt.WithResponseInto(&hr))
	if err != nil || len(img.Data) == 0 {
		t.Fatalf("images: %v %+v", err, img)
	}
	icServed(t, g, hr, "ok", 2)

	// Two counted failures in a row: w's deployment circuit is open.
	st := oc.Chat.Completions.NewStreaming(t.Context(), openai.ChatCompletionNewParams{Model: "gpt-4o-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello")}}, openaiopt.WithResponseInto(&hr))
	for st.Next() {
	}
	if err := st.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	icServed(t, g, hr, "ok", 1)
	_, mb := icGet(t, g.URL, "/metrics")
	if line := `switchyard_circuit_state{deployment="w",model="",scope="deployment"} 1`; !strings.Contains(string(mb), line+"\n") {
		t.Errorf("/metrics lacks %s", line)
	}
}
