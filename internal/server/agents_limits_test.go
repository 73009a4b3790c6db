package server_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	anthropicopt "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/tidwall/gjson"

	fp "github.com/switchyard-gw/switchyard/internal/fakeprovider"
)

// claudeCodeUserID is a metadata.user_id as Claude Code sends it: far over OpenAI's 64.
var claudeCodeUserID = "user_" + strings.Repeat("0123456789abcdef", 4) + "_account_" + strings.Repeat("9", 36) + "_session_" + strings.Repeat("e", 36)

// TestCrossDialectFieldLimits: a Claude Code-shaped request (a 150-character user id, 5 stop
// sequences, an MCP tool name over OpenAI's 64 characters, a server tool) routed to an
// OpenAI-dialect deployment whose fake enforces OpenAI's real field limits is answered 200 by
// the Anthropic SDK, stream and not; the model's call of the long-named tool comes back under
// the caller's name; the audit lists every change. A tool_choice naming the server tool is a
// 400 naming it, and nothing is sent upstream.
func TestCrossDialectFieldLimits(t *testing.T) {
	g := startTwo(t)
	longTool := "mcp__" + strings.Repeat("project_server_", 5) + "search_files" // 92 characters
	if len(claudeCodeUserID) <= 64 || len(longTool) <= 64 {
		t.Fatal("the fixture no longer breaks OpenAI's limits")
	}
	f := g.Fakes["oa-primary"]
	for _, stream := range []bool{false, true} {
		f.Reset()
		f.Script(fp.Behavior{ToolCall: true})
		var hr *http.Response
		c := g.anthropicClient()
		p := anthropic.MessageNewParams{Model: "gpt-4o-mini", MaxTokens: 256,
			Metadata:      anthropic.MetadataParam{UserID: anthropic.String(claudeCodeUserID)},
			StopSequences: []string{"a", "b", "c", "d", "e"},
			Tools: []anthropic.ToolUnionParam{
				{OfTool: &anthropic.ToolParam{Name: longTool, InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"q": map[string]any{"type": "string"}}}}},
				{OfWebSearchTool20250305: &anthropic.WebSearchTool20250305Param{}},
			},
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("find it"))}}
		var msg anthropic.Message
		var err error
		if stream {
			st := c.Messages.NewStreaming(t.Context(), p, anthropicopt.WithResponseInto(&hr))
			for st.Next() {
				if err = msg.Accumulate(st.Current()); err != nil {
					break
				}
			}
			if err == nil {
				err = st.Err()
			}
		} else {
			var m *anthropic.Message
			if m, err = c.Messages.New(t.Context(), p, anthropicopt.WithResponseInto(&hr)); m != nil {
				msg = *m
			}
		}
		if err != nil {
			t.Fatalf("stream=%t: %v (upstream %+v)", stream, err, f.Requests())
		}
		if len(msg.Content) == 0 || msg.Content[0].Type != "tool_use" || msg.Content[0].Name != longTool {
			t.Fatalf("stream=%t: the call came back as %+v, want a tool_use of %q", stream, msg.Content, longTool)
		}
		up := f.Requests()
		if len(up) != 1 || up[0].Rejected != "" {
			t.Fatalf("stream=%t: upstream %+v", stream, up)
		}
		body := gjson.ParseBytes(up[0].Body)
		if id := body.Get("safety_identifier").Str; len(id) != 64 || !strings.HasPrefix(id, "sha256:") {
			t.Errorf("safety_identifier %q", id)
		}
		if n := len(body.Get("stop").Array()); n != 4 {
			t.Errorf("stop sequences sent: %d", n)
		}
		if n := len(body.Get("tools").Array()); n != 1 {
			t.Errorf("tools sent: %s", body.Get("tools").Raw)
		}
		rec := g.generation(t, hr.Header.Get("X-Request-Id"))
		got := rec.Attempts[len(rec.Attempts)-1].DroppedParams
		for _, want := range []string{"metadata.user_id:hashed", "stop_sequences:clamped", "tools.name:renamed", "tools.web_search_20250305:web_search"} {
			if !slices.Contains(got, want) {
				t.Errorf("stream=%t: dropped_params %v, want %q among them", stream, got, want)
			}
		}
	}

	f.Reset()
	resp, b := anSurface.post(t, g, `{"model":"gpt-4o-mini","max_tokens":5,"messages":[{"role":"user","content":"x"}],`+
		`"tools":[{"name":"f","input_schema":{"type":"object"}},{"type":"web_search_20250305","name":"web_search"}],"tool_choice":{"type":"tool","name":"web_search"}}`)
	if resp.StatusCode != 400 || !strings.Contains(string(b), `\"web_search\"`) || resp.Header.Get("X-Should-Retry") != "false" || f.Hits() != 0 {
		t.Errorf("tool_choice of a server tool: %d %s (upstream hits %d)", resp.StatusCode, b, f.Hits())
	}
}

// codexBody is a Responses request shaped like Codex's default first request: a plain
// function, a namespace of MCP functions, the hosted web_search and the custom apply_patch.
func codexBody(stream bool, extra string) string {
	s := "false"
	if stream {
		s = "true"
	}
	return `{"model":"gpt-4o-mini","instructions":"You are a coding agent.","stream":` + s + `,"store":false,` +
		`"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"list the files"}]}],` +
		`"tools":[{"type":"namespace","name":"mcp__files__","description":"file tools","tools":[` +
		`{"type":"function","name":"list_dir","description":"list a directory","strict":false,"parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}]},` +
		`{"type":"function","name":"shell","description":"run a command","strict":false,"parameters":{"type":"object","properties":{"command":{"type":"array","items":{"type":"string"}}}}},` +
		`{"type":"web_search","external_web_access":false},` +
		`{"type":"custom","name":"apply_patch","description":"patch files","format":{"type":"grammar","syntax":"lark","definition":"start: /.+/"}}],` +
		`"tool_choice":"auto","parallel_tool_calls":false` + extra + `}`
}

// TestResponsesToolsTranslated: Codex's default tools reach a chat-only OpenAI deployment
// (responses: false) whose fake enforces OpenAI's limits: the namespace function is sent
// flattened, web_search and apply_patch are dropped and listed in the audit, and the model's
// call of the namespace function comes back as a function_call item with its name and
// namespace, stream and not. A tool_choice naming web_search is a 400 naming it.
func TestResponsesToolsTranslated(t *testing.T) {
	g := startTwo(t)
	f := g.Fakes["oa-primary"]
	rs := surface{"responses", "/v1/responses", "gpt-4o-mini", "oa-primary", "oa-backup"}
	for _, stream := range []bool{false, true} {
		f.Reset()
		f.Script(fp.Behavior{ToolCall: true})
		resp, b := rs.post(t, g, codexBody(stream, ""))
		if resp.StatusCode != 200 {
			t.Fatalf("stream=%t: %d %s (upstream %+v)", stream, resp.StatusCode, b, f.Requests())
		}
		up := gjson.ParseBytes(f.Requests()[0].Body)
		if got := up.Get("tools.#.function.name").Raw; got != `["mcp__files__list_dir","shell"]` {
			t.Errorf("tools sent %s", got)
		}
		var item gjson.Result
		if stream {
			for _, line := range strings.Split(string(b), "\n") {
				if d, ok := strings.CutPrefix(line, "data: "); ok && gjson.Get(d, "type").Str == "response.output_item.done" {
					item = gjson.Get(d, "item")
				}
			}
		} else {
			item = gjson.GetBytes(b, "output.0")
		}
		if item.Get("type").Str != "function_call" || item.Get("name").Str != "list_dir" || item.Get("namespace").Str != "mcp__files__" {
			t.Errorf("stream=%t: the call came back as %s, want list_dir in namespace mcp__files__", stream, item.Raw)
		}
		rec := g.generation(t, resp.Header.Get("X-Request-Id"))
		got := rec.Attempts[len(rec.Attempts)-1].DroppedParams
		for _, want := range []string{"tools.name:renamed", "tools.web_search", "tools.custom:apply_patch"} {
			if !slices.Contains(got, want) {
				t.Errorf("stream=%t: dropped_params %v, want %q among them", stream, got, want)
			}
		}
	}
	// The history's namespace call goes back flattened, matching the tool sent.
	f.Reset()
	hist := `,"input":[{"type":"message","role":"user","content":"list"},{"type":"function_call","call_id":"call_1","name":"list_dir","namespace":"mcp__files__","arguments":"{\"path\":\".\"}"},{"type":"function_call_output","call_id":"call_1","output":"a.go"}]`
	body := strings.Replace(codexBody(false, ""), `"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"list the files"}]}],`, "", 1)
	body = strings.TrimSuffix(body, "}") + hist + "}"
	if resp, b := rs.post(t, g, body); resp.StatusCode != 200 {
		t.Fatalf("history: %d %s", resp.StatusCode, b)
	}
	if got := gjson.GetBytes(f.Requests()[0].Body, `messages.#(role=="assistant").tool_calls.0.function.name`).Str; got != "mcp__files__list_dir" {
		t.Errorf("history call sent as %q", got)
	}
	f.Reset()
	resp, b := rs.post(t, g, strings.Replace(codexBody(false, ""), `"tool_choice":"auto"`, `"tool_choice":{"type":"web_search"}`, 1))
	if resp.StatusCode != 400 || gjson.GetBytes(b, "error.param").Str != "tool_choice" || !strings.Contains(string(b), `\"web_search\"`) || f.Hits() != 0 {
		t.Errorf("tool_choice web_search: %d %s", resp.StatusCode, b)
	}
}
