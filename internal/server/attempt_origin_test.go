package server_test

import (
	"net/http"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	anthropicopt "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	openaiopt "github.com/openai/openai-go/v3/option"
	"github.com/tidwall/gjson"

	fp "github.com/switchyard-gw/switchyard/internal/fakeprovider"
)

// TestAttemptUpstreamStatusAndOrigin: issue 11 item 5 (part), R-AUDIT-2: each attempt in GET
// /v1/generation carries upstream_status (the provider's HTTP status, 0 when no response came)
// and error_origin (upstream, gateway, caller; "" on success), stored on the real store and
// read back: a 503 then a success (OpenAI SDK), a hang then a success (Anthropic SDK stream),
// a content-policy refusal (caller).
func TestAttemptUpstreamStatusAndOrigin(t *testing.T) {
	t.Parallel()
	g := startTwoYAML(t, withTimeouts("300ms", "300ms"))
	generation := func(id string) gjson.Result {
		t.Helper()
		g.generation(t, id) // recorded
		resp, b := icGet(t, g.URL, "/v1/generation?id="+id)
		if resp.StatusCode != 200 {
			t.Fatalf("GET /v1/generation: %d %s", resp.StatusCode, b)
		}
		return gjson.ParseBytes(b)
	}
	check := func(rec gjson.Result, want ...string) {
		t.Helper()
		var got []string
		for _, a := range rec.Get("attempts").Array() {
			if !a.Get("upstream_status").Exists() || !a.Get("error_origin").Exists() {
				t.Fatalf("attempt without the fields: %s", a.Raw)
			}
			got = append(got, a.Get("upstream_status").Raw+"/"+a.Get("error_origin").String())
		}
		if len(got) != len(want) {
			t.Fatalf("attempts %v, want %v", got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("attempt %d: %s, want %s", i+1, got[i], want[i])
			}
		}
	}

	g.Fakes["oa-primary"].Script(fp.Behavior{Kind: fp.KindStatus, Status: 503})
	var hr *http.Response
	oc := g.openaiClient()
	if _, err := oc.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{Model: "gpt-4o-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello")}}, openaiopt.WithResponseInto(&hr)); err != nil {
		t.Fatal(err)
	}
	check(generation(hr.Header.Get("X-Request-Id")), "503/upstream", "200/")

	g.Fakes["an-primary"].Script(fp.Behavior{Kind: fp.KindHang})
	ac := g.anthropicClient()
	st := ac.Messages.NewStreaming(t.Context(), anthropic.MessageNewParams{Model: "claude-haiku-4-5", MaxTokens: 32,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello"))}}, anthropicopt.WithResponseInto(&hr))
	for st.Next() {
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	check(generation(hr.Header.Get("X-Request-Id")), "0/gateway", "200/")

	g.Fakes["oa-primary"].Script(fp.Behavior{Kind: fp.KindContentPolicy})
	resp, _ := icPost(t, g.URL, "/v1/chat/completions", `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"x"}]}`)
	if resp.StatusCode != 400 {
		t.Fatalf("content policy: %d", resp.StatusCode)
	}
	check(generation(resp.Header.Get("X-Request-Id")), "400/caller")
}
