package fakeprovider

import (
	"strings"
	"testing"

	"github.com/switchyard-gw/switchyard/internal/catalog"
)

// TestLimitError: the provider refuses, as the real APIs do, each field over its documented
// limit, and accepts the same request within the limits.
func TestLimitError(t *testing.T) {
	long := func(n int) string { return strings.Repeat("x", n) }
	ok := `{"model":"m","messages":[]}`
	for _, c := range []struct {
		d          catalog.Dialect
		path, body string
		param      string // "" for Anthropic (its message is checked for a prefix instead)
		msg        string
	}{
		{catalog.OpenAI, "/v1/chat/completions", `{"safety_identifier":"` + long(65) + `"}`, "safety_identifier", ""},
		{catalog.OpenAI, "/v1/chat/completions", `{"stop":["a","b","c","d","e"]}`, "stop", ""},
		{catalog.OpenAI, "/v1/chat/completions", `{"tools":[{"type":"function","function":{"name":"a.b"}}]}`, "tools[0].function.name", ""},
		{catalog.OpenAI, "/v1/chat/completions", `{"tools":[{"type":"function","function":{"name":"` + long(65) + `"}}]}`, "tools[0].function.name", ""},
		{catalog.OpenAI, "/v1/chat/completions", `{"messages":[{"role":"assistant","tool_calls":[{"id":"` + long(41) + `"}]}]}`, "messages[0].tool_calls[0].id", ""},
		{catalog.OpenAI, "/v1/chat/completions", `{"metadata":{"k":"` + long(513) + `"}}`, "metadata.k", ""},
		{catalog.OpenAI, "/v1/responses", `{"tools":[{"type":"namespace","name":"n","tools":[{"type":"function","name":"a b"}]}]}`, "tools[0].tools[0].name", ""},
		{catalog.Anthropic, "/v1/messages", `{"metadata":{"user_id":"` + long(257) + `"}}`, "", "metadata.user_id"},
		{catalog.Anthropic, "/v1/messages", `{"tools":[{"name":"` + long(129) + `"}]}`, "", "tools.0.custom.name"},
		{catalog.Anthropic, "/v1/messages", `{"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"call.1"}]}]}`, "", "messages.0.content.0.tool_use.id"},
	} {
		e := limitError(c.d, c.path, []byte(c.body))
		if e == nil || e.status != 400 || e.param != c.param || !strings.HasPrefix(e.message, c.msg) {
			t.Errorf("%s %s: %+v, want a 400 for %q%q", c.d, c.body, e, c.param, c.msg)
		}
	}
	for _, d := range []catalog.Dialect{catalog.OpenAI, catalog.Anthropic} {
		if e := limitError(d, "/v1/messages", []byte(ok)); e != nil {
			t.Errorf("%s: a request within the limits refused: %+v", d, e)
		}
	}
	if e := limitError(catalog.OpenAI, "/v1/chat/completions", []byte(`{"safety_identifier":"`+long(64)+`","tools":[{"type":"function","function":{"name":"`+long(64)+`"}}]}`)); e != nil {
		t.Errorf("at the limits: %+v", e)
	}
}
