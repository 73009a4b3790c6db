package server_test

import (
	"bufio"
	"bytes"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	anthropicopt "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	openaiopt "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/tidwall/gjson"

	fp "github.com/switchyard-gw/switchyard/internal/fakeprovider"
)

// promptMarker is prompt text that must never appear in a debug member.
const promptMarker = "Tell nobody: PROMPT-MARKER-7f3a"

// checkDebug checks a routing debug member (docs/routing.md "Debug mode"): the request id, the
// plan with both routes of the model as candidates, the attempts as the audit shows them (a
// failed attempt on primary, then the backup completed), and no prompt text or credential.
func checkDebug(t *testing.T, dbg gjson.Result, rid, model, primary, backup string) {
	t.Helper()
	r := dbg.Get("routing")
	if !r.Exists() {
		t.Fatalf("no debug.routing: %s", dbg.Raw)
	}
	if r.Get("request_id").String() != rid {
		t.Errorf("request_id %q, want %q", r.Get("request_id").String(), rid)
	}
	if got := r.Get("plan.candidates.#.deployment").Raw; got != `["`+primary+`","`+backup+`"]` {
		t.Errorf("plan candidates %s", got)
	}
	if r.Get("plan.resolved_model").String() != model || !r.Get("fallbacks").IsArray() || !r.Get("admission_events").IsArray() {
		t.Errorf("plan %s", r.Raw)
	}
	got := r.Get("attempts.#.deployment").Raw + " " + r.Get("attempts.#.outcome").Raw
	if want := `["` + primary + `","` + backup + `"] ["failed","completed"]`; got != want {
		t.Errorf("attempts %s, want %s", got, want)
	}
	if a := r.Get("attempts.0"); a.Get("error_code").String() != "upstream_error" || a.Get("upstream_status").Int() != 503 ||
		a.Get("strategy").String() != "price" || !a.Get("band").Exists() {
		t.Errorf("first attempt %s", a.Raw)
	}
	for _, bad := range []string{"PROMPT-MARKER", "sk-house", "sk-ant-house", "overloaded"} {
		if strings.Contains(dbg.Raw, bad) {
			t.Errorf("debug member holds %q: %s", bad, dbg.Raw)
		}
	}
}

// streamDebug reads a raw SSE body and returns the JSON of its `: debug ` comment, which must
// come after every event.
func streamDebug(t *testing.T, body []byte) gjson.Result {
	t.Helper()
	var dbg string
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, ": debug "); ok {
			if dbg != "" {
				t.Fatal("two debug comments")
			}
			dbg = rest
			continue
		}
		if dbg != "" && line != "" {
			t.Fatalf("a line after the debug comment: %q", line)
		}
	}
	if dbg == "" || !gjson.Valid(dbg) {
		t.Fatalf("no debug comment (or not JSON) in\n%s", body)
	}
	return gjson.Parse(dbg)
}

// TestDebugRouting: issue 11 item 4 (seed 003 "request extra.debug with the routing
// category"), contract.md round 2: extra.debug {"routing": true} or ["routing"] returns the plan
// and its attempts: a debug member on non-stream bodies, a final SSE comment on streams. Both
// official SDKs, on chat completions, responses and messages, stream and not, each with a
// failover, still read every answer; without extra.debug nothing changes; the member never
// holds prompt text, credentials or provider error text.
func TestDebugRouting(t *testing.T) {
	t.Parallel()
	g := startTwoYAML(t, withFailures(twoDeployments, 1000)) // failovers here never open a circuit
	oc, ac := g.openaiClient(), g.anthropicClient()
	obj := map[string]any{"debug": map[string]any{"routing": true}}
	list := map[string]any{"debug": []string{"routing"}}
	fail := func(dep string) { g.Fakes[dep].Script(fp.Behavior{Kind: fp.KindStatus, Status: 503}) }

	t.Run("chat", func(t *testing.T) {
		fail("oa-primary")
		var hr *http.Response
		c, err := oc.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{Model: "gpt-4o-mini",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(promptMarker)}},
			openaiopt.WithJSONSet("extra", obj), openaiopt.WithResponseInto(&hr))
		if err != nil {
			t.Fatal(err)
		}
		if c.Choices[0].Message.Content != hello("oa-backup") {
			t.Fatalf("content %q", c.Choices[0].Message.Content)
		}
		checkDebug(t, gjson.Get(c.RawJSON(), "debug"), hr.Header.Get("X-Request-Id"), "gpt-4o-mini", "oa-primary", "oa-backup")

		fail("oa-primary")
		st := oc.Chat.Completions.NewStreaming(t.Context(), openai.ChatCompletionNewParams{Model: "gpt-4o-mini",
			Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage(promptMarker)},
			StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}},
			openaiopt.WithJSONSet("extra", list))
		var text strings.Builder
		for st.Next() {
			if ch := st.Current(); len(ch.Choices) > 0 {
				text.WriteString(ch.Choices[0].Delta.Content)
			}
		}
		if err := st.Err(); err != nil || text.String() != hello("oa-backup") {
			t.Fatalf("SDK stream: %q, %v", text.String(), err)
		}

		fail("oa-primary")
		resp, b := icPost(t, g.URL, "/v1/chat/completions", `{"model":"gpt-4o-mini","stream":true,"extra":{"debug":["routing"]},`+
			`"messages":[{"role":"user","content":"`+promptMarker+`"}]}`)
		if resp.StatusCode != 200 || !strings.Contains(string(b), "data: [DONE]") {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
		checkDebug(t, streamDebug(t, b), resp.Header.Get("X-Request-Id"), "gpt-4o-mini", "oa-primary", "oa-backup")
	})

	t.Run("responses", func(t *testing.T) {
		fail("oa-primary")
		r, err := oc.Responses.New(t.Context(), responses.ResponseNewParams{Model: "gpt-4o-mini",
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(promptMarker)}}, openaiopt.WithJSONSet("extra", obj))
		if err != nil || r.OutputText() != hello("oa-backup") {
			t.Fatalf("%v %+v", err, r)
		}
		checkDebug(t, gjson.Get(r.RawJSON(), "debug"), gjson.Get(r.RawJSON(), "debug.routing.request_id").String(), "gpt-4o-mini", "oa-primary", "oa-backup")

		fail("oa-primary")
		st := oc.Responses.NewStreaming(t.Context(), responses.ResponseNewParams{Model: "gpt-4o-mini",
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(promptMarker)}}, openaiopt.WithJSONSet("extra", list))
		var text strings.Builder
		completed := false
		for st.Next() {
			switch ev := st.Current(); ev.Type {
			case "response.output_text.delta":
				text.WriteString(ev.Delta)
			case "response.completed":
				completed = true
			}
		}
		if err := st.Err(); err != nil || !completed || text.String() != hello("oa-backup") {
			t.Fatalf("SDK stream: %q completed %v, %v", text.String(), completed, err)
		}

		fail("oa-primary")
		resp, b := icPost(t, g.URL, "/v1/responses", `{"model":"gpt-4o-mini","stream":true,"input":"x","extra":{"debug":{"routing":true}}}`)
		if resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
		checkDebug(t, streamDebug(t, b), resp.Header.Get("X-Request-Id"), "gpt-4o-mini", "oa-primary", "oa-backup")
	})

	t.Run("messages", func(t *testing.T) {
		fail("an-primary")
		var hr *http.Response
		m, err := ac.Messages.New(t.Context(), anthropic.MessageNewParams{Model: "claude-haiku-4-5", MaxTokens: 32,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(promptMarker))}},
			anthropicopt.WithJSONSet("extra", obj), anthropicopt.WithResponseInto(&hr))
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Content) == 0 || m.Content[0].Text != hello("an-backup") {
			t.Fatalf("content %+v", m.Content)
		}
		checkDebug(t, gjson.Get(m.RawJSON(), "debug"), hr.Header.Get("X-Request-Id"), "claude-haiku-4-5", "an-primary", "an-backup")

		fail("an-primary")
		st := ac.Messages.NewStreaming(t.Context(), anthropic.MessageNewParams{Model: "claude-haiku-4-5", MaxTokens: 32,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(promptMarker))}},
			anthropicopt.WithJSONSet("extra", list))
		var acc anthropic.Message
		for st.Next() {
			if err := acc.Accumulate(st.Current()); err != nil {
				t.Fatal(err)
			}
		}
		if err := st.Err(); err != nil || len(acc.Content) == 0 || acc.Content[0].Text != hello("an-backup") {
			t.Fatalf("SDK stream: %+v, %v", acc.Content, err)
		}

		fail("an-primary")
		resp, b := icPost(t, g.URL, "/v1/messages", `{"model":"claude-haiku-4-5","max_tokens":32,"stream":true,"extra":{"debug":["routing"]},`+
			`"messages":[{"role":"user","content":"`+promptMarker+`"}]}`, "Anthropic-Version", "2023-06-01")
		if resp.StatusCode != 200 || !strings.Contains(string(b), "event: message_stop") {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
		checkDebug(t, streamDebug(t, b), resp.Header.Get("X-Request-Id"), "claude-haiku-4-5", "an-primary", "an-backup")

		// Cross-dialect: the Anthropic surface on an OpenAI model, through the SDK's stream.
		fail("oa-primary")
		st = ac.Messages.NewStreaming(t.Context(), anthropic.MessageNewParams{Model: "gpt-4o-mini", MaxTokens: 32,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("x"))}},
			anthropicopt.WithJSONSet("extra", obj))
		acc = anthropic.Message{}
		for st.Next() {
			if err := acc.Accumulate(st.Current()); err != nil {
				t.Fatal(err)
			}
		}
		if err := st.Err(); err != nil || len(acc.Content) == 0 || acc.Content[0].Text != hello("oa-backup") {
			t.Fatalf("SDK stream across dialects: %+v, %v", acc.Content, err)
		}
	})

	t.Run("error", func(t *testing.T) {
		// Every route fails: the error body carries the debug member, the SDK still reads the error.
		fail("oa-primary")
		fail("oa-backup")
		_, err := oc.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{Model: "gpt-4o-mini",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(promptMarker)}}, openaiopt.WithJSONSet("extra", obj))
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 503 || apiErr.Type != "api_error" {
			t.Fatalf("want a 503 *openai.Error (the providers' 503), got %v", err)
		}
		fail("oa-primary")
		fail("oa-backup")
		resp, b := icPost(t, g.URL, "/v1/chat/completions", `{"model":"gpt-4o-mini","extra":{"debug":["routing"]},"messages":[{"role":"user","content":"x"}]}`)
		dbg := gjson.GetBytes(b, "debug.routing")
		if got := dbg.Get("attempts.#.outcome").Raw; resp.StatusCode != 503 || got != `["failed","failed"]` ||
			strings.Contains(dbg.Raw, "overloaded") || gjson.GetBytes(b, "error.metadata.error_type").String() != "upstream_error" {
			t.Errorf("debug of a failed request: %d %s", resp.StatusCode, b)
		}
		// A refusal after planning (a pin to a provider that serves nothing) explains itself too.
		resp, b = icPost(t, g.URL, "/v1/messages", `{"model":"claude-haiku-4-5","max_tokens":5,"provider":{"only":["nobody"]},`+
			`"extra":{"debug":{"routing":true}},"messages":[{"role":"user","content":"x"}]}`, "Anthropic-Version", "2023-06-01")
		if resp.StatusCode < 400 || gjson.GetBytes(b, "type").String() != "error" ||
			gjson.GetBytes(b, "debug.routing.plan.dropped.#.reason").Raw != `["not in provider.only","not in provider.only"]` {
			t.Errorf("refusal: %d %s", resp.StatusCode, b)
		}
	})

	t.Run("off and invalid", func(t *testing.T) {
		for _, extra := range []string{``, `,"extra":{"debug":{"routing":false}}`, `,"extra":{"debug":["other"]}`, `,"extra":{"debug":null}`} {
			resp, b := icPost(t, g.URL, "/v1/chat/completions", `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"x"}]`+extra+`}`)
			if resp.StatusCode != 200 || gjson.GetBytes(b, "debug").Exists() {
				t.Errorf("%s: %d %s", extra, resp.StatusCode, b)
			}
			resp, b = icPost(t, g.URL, "/v1/chat/completions", `{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"x"}]`+extra+`}`)
			if resp.StatusCode != 200 || strings.Contains(string(b), ": debug") {
				t.Errorf("stream %s: %d %s", extra, resp.StatusCode, b)
			}
		}
		for _, bad := range []string{`"routing"`, `1`, `{"routing":"yes"}`, `["routing",1]`} {
			resp, b := icPost(t, g.URL, "/v1/chat/completions", `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"x"}],"extra":{"debug":`+bad+`}}`)
			if resp.StatusCode != 400 || gjson.GetBytes(b, "error.param").String() != "extra.debug" {
				t.Errorf("extra.debug %s: %d %s", bad, resp.StatusCode, b)
			}
		}
	})
}
