package dialect_test

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/switchyard-gw/switchyard/internal/dialect"
	"github.com/switchyard-gw/switchyard/internal/failure"
)

var openAIToolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// TestFitUnchanged: a request within the target's limits is returned as is (no copy).
func TestFitUnchanged(t *testing.T) {
	r := &dialect.Request{User: strings.Repeat("u", 64), Stop: []string{"a", "b", "c", "d"},
		Tools: []dialect.Tool{{Name: "get_weather"}}, ToolChoice: dialect.ToolChoice{Mode: "tool", Name: "get_weather"}}
	out, aliases, ch, err := dialect.Fit(r, dialect.OpenAILimits)
	if err != nil || out != r || aliases != nil || ch.UserHashed || ch.StopClamped || ch.ToolsRenamed {
		t.Fatalf("Fit changed a request within the limits: %v %v %+v %v", out != r, aliases, ch, err)
	}
}

// TestFitUser: Claude Code's long metadata.user_id is sent to OpenAI as a stable 64-character
// hash (OpenAI refuses a safety_identifier over 64); Anthropic's 256 keeps it.
func TestFitUser(t *testing.T) {
	long := "user_" + strings.Repeat("a1b2", 30) + "_account__session_" + strings.Repeat("f", 12) // 150+ characters
	r := &dialect.Request{User: long}
	out, _, ch, err := dialect.Fit(r, dialect.OpenAILimits)
	if err != nil || !ch.UserHashed || len(out.User) != 64 || !strings.HasPrefix(out.User, "sha256:") {
		t.Fatalf("user %q (%d) %+v %v", out.User, len(out.User), ch, err)
	}
	again, _, _, _ := dialect.Fit(&dialect.Request{User: long}, dialect.OpenAILimits)
	other, _, _, _ := dialect.Fit(&dialect.Request{User: long + "x"}, dialect.OpenAILimits)
	if again.User != out.User || other.User == out.User {
		t.Errorf("the hash is not stable and distinct: %q %q %q", out.User, again.User, other.User)
	}
	if r.User != long {
		t.Errorf("Fit changed the caller's request: %q", r.User)
	}
	if out, _, ch, _ := dialect.Fit(&dialect.Request{User: long}, dialect.AnthropicLimits); out.User != long || ch.UserHashed {
		t.Errorf("Anthropic: %q %+v", out.User, ch)
	}
}

// TestFitStop: more than 4 stop sequences go to OpenAI as the first 4.
func TestFitStop(t *testing.T) {
	r := &dialect.Request{Stop: []string{"a", "b", "c", "d", "e", "f"}}
	out, _, ch, err := dialect.Fit(r, dialect.OpenAILimits)
	if err != nil || !ch.StopClamped || strings.Join(out.Stop, "") != "abcd" || len(r.Stop) != 6 {
		t.Fatalf("stop %v %+v %v (caller's %v)", out.Stop, ch, err, r.Stop)
	}
}

// TestFitToolNames: namespace functions are flattened, names that break the target's pattern
// or length are rewritten in tools, tool_choice and the history alike, every sent name matches
// OpenAI's pattern and is unique, and Unalias gives the caller's name and namespace back.
func TestFitToolNames(t *testing.T) {
	long := "mcp__" + strings.Repeat("server", 10) + "__tool"
	r := &dialect.Request{
		Tools: []dialect.Tool{{Name: "shell"}, {Name: "read", Namespace: "mcp__fs__"}, {Name: "read", Namespace: "git"},
			{Name: "a.b"}, {Name: "a_b"}, {Name: long}},
		ToolChoice: dialect.ToolChoice{Mode: "tool", Name: "read", Namespace: "git"},
		Messages: []dialect.Message{{Role: dialect.RoleAssistant, Parts: []dialect.Part{
			{Type: dialect.PartToolCall, ToolCallID: "c1", ToolName: "read", Namespace: "mcp__fs__", Arguments: "{}"},
			{Type: dialect.PartToolCall, ToolCallID: "c2", ToolName: "a.b", Arguments: "{}"}}}},
	}
	out, aliases, ch, err := dialect.Fit(r, dialect.OpenAILimits)
	if err != nil || !ch.ToolsRenamed {
		t.Fatalf("%+v %v", ch, err)
	}
	seen := map[string]bool{}
	for _, tl := range out.Tools {
		if !openAIToolName.MatchString(tl.Name) || seen[tl.Name] || tl.Namespace != "" {
			t.Errorf("sent tool %q (namespace %q): breaks the pattern or is a duplicate", tl.Name, tl.Namespace)
		}
		seen[tl.Name] = true
	}
	if out.Tools[1].Name != "mcp__fs__read" || out.Tools[2].Name != "git__read" || out.Tools[0].Name != "shell" {
		t.Errorf("flattened %q %q", out.Tools[1].Name, out.Tools[2].Name)
	}
	if out.ToolChoice.Name != "git__read" || out.ToolChoice.Namespace != "" {
		t.Errorf("tool_choice %+v", out.ToolChoice)
	}
	calls := out.Messages[0].Parts
	if calls[0].ToolName != "mcp__fs__read" || calls[0].Namespace != "" || calls[1].ToolName != out.Tools[3].Name {
		t.Errorf("history calls %q %q, tools %q", calls[0].ToolName, calls[1].ToolName, out.Tools[3].Name)
	}
	for i, tl := range r.Tools {
		name, ns := dialect.Unalias(aliases, out.Tools[i].Name)
		if name != tl.Name || ns != tl.Namespace {
			t.Errorf("Unalias(%q) = %q, %q; want %q, %q", out.Tools[i].Name, name, ns, tl.Name, tl.Namespace)
		}
	}
	if r.Messages[0].Parts[0].Namespace != "mcp__fs__" || r.Tools[1].Namespace != "mcp__fs__" {
		t.Error("Fit changed the caller's request")
	}
	// Anthropic takes 128: the long name passes as it is there.
	if out, _, _, _ := dialect.Fit(&dialect.Request{Tools: []dialect.Tool{{Name: long}}}, dialect.AnthropicLimits); out.Tools[0].Name != long {
		t.Errorf("Anthropic renamed %q to %q", long, out.Tools[0].Name)
	}
}

// TestFitHostedTools: hosted tools are dropped and listed; a tool_choice naming one, or
// requiring a call when only hosted tools were given, is a 400 naming tool_choice.
func TestFitHostedTools(t *testing.T) {
	r := &dialect.Request{Tools: []dialect.Tool{{Name: "shell"}, {Type: "web_search"}, {Type: "custom", Name: "apply_patch"},
		{Type: "web_search_20250305", Name: "web_search"}}}
	out, _, ch, err := dialect.Fit(r, dialect.OpenAILimits)
	if err != nil || len(out.Tools) != 1 || out.Tools[0].Name != "shell" {
		t.Fatalf("%+v %v", out.Tools, err)
	}
	if got := strings.Join(ch.DroppedTools, ","); got != "tools.web_search,tools.custom:apply_patch,tools.web_search_20250305:web_search" {
		t.Errorf("dropped %s", got)
	}
	for _, tc := range []dialect.ToolChoice{{Mode: "tool", Name: "web_search"}, {Mode: "tool", Name: "apply_patch"}, {Mode: "hosted", Name: "web_search"}} {
		cp := *r
		cp.ToolChoice = tc
		_, _, _, err := dialect.Fit(&cp, dialect.AnthropicLimits)
		var fe *failure.Error
		if !errors.As(err, &fe) || fe.Class != failure.InvalidRequest || fe.Param != "tool_choice" || !strings.Contains(fe.Msg, `"`+tc.Name+`"`) {
			t.Errorf("tool_choice %+v: %v, want a 400 naming it", tc, err)
		}
	}
	only := &dialect.Request{Tools: []dialect.Tool{{Type: "web_search"}}, ToolChoice: dialect.ToolChoice{Mode: "required"}}
	if _, _, _, err := dialect.Fit(only, dialect.OpenAILimits); err == nil {
		t.Error("required with only hosted tools: no error")
	}
}

// TestFitCallIDs: history call ids over OpenAI's 40 characters are hashed, the same way in the
// call and its result.
func TestFitCallIDs(t *testing.T) {
	id := "toolu_" + strings.Repeat("x", 50)
	r := &dialect.Request{Messages: []dialect.Message{
		{Role: dialect.RoleAssistant, Parts: []dialect.Part{{Type: dialect.PartToolCall, ToolCallID: id, ToolName: "f"}}},
		{Role: dialect.RoleUser, Parts: []dialect.Part{{Type: dialect.PartToolResult, ToolCallID: id}}}}}
	out, _, ch, err := dialect.Fit(r, dialect.OpenAILimits)
	c, res := out.Messages[0].Parts[0].ToolCallID, out.Messages[1].Parts[0].ToolCallID
	if err != nil || !ch.CallIDs || c != res || len(c) > 40 || r.Messages[0].Parts[0].ToolCallID != id {
		t.Fatalf("ids %q %q %+v %v", c, res, ch, err)
	}
}
