package server_test

import (
	"context"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/switchyard-gw/switchyard/internal/fakeprovider"
)

// R-DIALECT-1..2: the OpenAI SDK's Responses API is served from a messages deployment and from
// a chat-completions deployment, streamed and not, with usage, and a failure after commit ends
// the stream with an error the SDK surfaces (R-FAIL-4).
func TestResponsesSurface(t *testing.T) {
	g := startTwo(t)
	ctx := context.Background()
	oc := g.openaiClient()
	for _, tc := range []struct{ model, dep string }{{"claude-haiku-4-5", "an-primary"}, {"gpt-4o-mini", "oa-primary"}} {
		resp, err := oc.Responses.New(ctx, responses.ResponseNewParams{
			Model:        tc.model,
			Instructions: openai.String("Be terse."),
			Input:        responses.ResponseNewParamsInputUnion{OfString: openai.String("Hello")},
		})
		if err != nil {
			t.Fatalf("%s: %v", tc.model, err)
		}
		if resp.OutputText() != "Hello from "+tc.dep+"." || resp.Model != tc.model || resp.Usage.OutputTokens == 0 || resp.Status != "completed" {
			t.Fatalf("%s: %+v", tc.model, resp)
		}

		st := oc.Responses.NewStreaming(ctx, responses.ResponseNewParams{
			Model: tc.model,
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Hello")},
		})
		var text strings.Builder
		var completed bool
		for st.Next() {
			ev := st.Current()
			switch ev.Type {
			case "response.output_text.delta":
				text.WriteString(ev.Delta)
			case "response.completed":
				completed = ev.Response.Usage.OutputTokens > 0
			}
		}
		if err := st.Err(); err != nil || text.String() != "Hello from "+tc.dep+"." || !completed {
			t.Fatalf("%s stream: %v %q completed=%v", tc.model, err, text.String(), completed)
		}
	}

	g.Fakes["an-primary"].Script(fakeprovider.Behavior{Kind: fakeprovider.KindCut, After: 2})
	st := oc.Responses.NewStreaming(ctx, responses.ResponseNewParams{
		Model: "claude-haiku-4-5",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Hello")},
	})
	for st.Next() {
	}
	if st.Err() == nil {
		t.Fatal("a stream cut after commit ended without an error")
	}
	if g.Fakes["an-backup"].Hits() != 0 {
		t.Fatal("switched provider after commit")
	}
}
