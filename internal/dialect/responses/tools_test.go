package responses_test

import (
	"testing"

	"github.com/switchyard-gw/switchyard/internal/dialect"
	"github.com/switchyard-gw/switchyard/internal/dialect/responses"
)

// TestDecodeNamespaceAndHostedTools: Codex's default tools (a namespace of functions, the
// hosted web_search, a custom apply_patch) decode: the namespace's functions keep their
// namespace, hosted and custom tools keep their type for dialect.Fit to drop, a function_call
// of the history keeps its namespace, and a hosted tool_choice is remembered for Fit to refuse.
func TestDecodeNamespaceAndHostedTools(t *testing.T) {
	body := `{"model":"m","input":[{"role":"user","content":"hi"},
	 {"type":"function_call","call_id":"c1","name":"read","namespace":"mcp__fs__","arguments":"{}"},
	 {"type":"function_call_output","call_id":"c1","output":"ok"}],
	 "tools":[{"type":"function","name":"shell","parameters":{"type":"object"}},
	  {"type":"namespace","name":"mcp__fs__","description":"files","tools":[
	    {"type":"function","name":"read","description":"read a file","parameters":{"type":"object"},"strict":false},
	    {"type":"function","name":"write"}]},
	  {"type":"web_search","external_web_access":false},
	  {"type":"custom","name":"apply_patch","format":{"type":"grammar","syntax":"lark","definition":"x"}}],
	 "tool_choice":{"type":"web_search"}}`
	r, err := responses.DecodeRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	want := []dialect.Tool{{Name: "shell"}, {Name: "read", Namespace: "mcp__fs__"}, {Name: "write", Namespace: "mcp__fs__"},
		{Type: "web_search"}, {Type: "custom", Name: "apply_patch"}}
	if len(r.Tools) != len(want) {
		t.Fatalf("tools %+v", r.Tools)
	}
	for i, w := range want {
		if g := r.Tools[i]; g.Name != w.Name || g.Namespace != w.Namespace || g.Type != w.Type {
			t.Errorf("tools[%d] = %+v, want %+v", i, g, w)
		}
	}
	if p := r.Messages[0].Parts; len(r.Messages) < 2 || r.Messages[1].Parts[0].Namespace != "mcp__fs__" || p[0].Text != "hi" {
		t.Errorf("history %+v", r.Messages)
	}
	if r.ToolChoice.Mode != "hosted" || r.ToolChoice.Name != "web_search" {
		t.Errorf("tool_choice %+v", r.ToolChoice)
	}
}
