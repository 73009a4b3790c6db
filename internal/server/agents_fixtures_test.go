package server_test

import (
	"bytes"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	fp "github.com/switchyard-gw/switchyard/internal/fakeprovider"
)

// agentFixture is a coding agent's first request as captured (testdata/agents, docs/agents.md):
// its path, the headers that matter and its body.
type agentFixture struct {
	Path    string            `json:"path"`
	Headers map[string]string `json:"headers"`
	Body    gjson.Result
}

func loadAgentFixture(t *testing.T, name string) agentFixture {
	t.Helper()
	b, err := os.ReadFile("testdata/agents/" + name)
	if err != nil {
		t.Fatal(err)
	}
	root := gjson.ParseBytes(b)
	f := agentFixture{Path: root.Get("path").Str, Headers: map[string]string{}, Body: root.Get("body")}
	root.Get("headers").ForEach(func(k, v gjson.Result) bool { f.Headers[k.Str] = v.Str; return true })
	return f
}

// replay posts the fixture's body with model and stream set, with its headers, and returns the
// status and body of the answer.
func (f agentFixture) replay(t *testing.T, g *gateway, model string, stream bool) (*http.Response, []byte) {
	t.Helper()
	body, err := sjson.SetBytes([]byte(f.Body.Raw), "model", model)
	if err == nil {
		body, err = sjson.SetBytes(body, "stream", stream)
	}
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, g.URL+f.Path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range f.Headers {
		req.Header.Set(k, v)
	}
	resp, err := rawClient(t, nil).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out bytes.Buffer
	_, _ = out.ReadFrom(resp.Body)
	return resp, out.Bytes()
}

// TestAgentFixturesReplay: the first requests of the real Claude Code 2.1.197 and Codex 0.171.0
// CLIs, captured with their default configuration, are answered 200 when replayed through the
// gateway to fakes that enforce the real APIs' field limits: Claude Code same-dialect and to an
// OpenAI deployment; Codex passed through to a Responses deployment and translated to a
// chat-only and an Anthropic deployment; each streamed and not, with a text answer and with a
// call of the agent's first tool, which comes back under the agent's own tool name.
func TestAgentFixturesReplay(t *testing.T) {
	g := startPassThrough(t)
	cases := []struct {
		fixture, model, dep, firstTool string
	}{
		{"claude-code-2.1.197.json", "claude-haiku-4-5", "an-only", "Agent"},
		{"claude-code-2.1.197.json", "gpt-chat", "oa-chat", "Agent"},
		{"codex-0.171.0.json", "gpt-4o-mini", "rs-primary", "exec_command"},
		{"codex-0.171.0.json", "gpt-chat", "oa-chat", "exec_command"},
		{"codex-0.171.0.json", "claude-haiku-4-5", "an-only", "exec_command"},
	}
	for _, c := range cases {
		f := loadAgentFixture(t, c.fixture)
		for _, stream := range []bool{false, true} {
			for _, call := range []bool{false, true} {
				name := c.fixture + "/" + c.dep
				fake := g.Fakes[c.dep]
				fake.Reset()
				fake.Script(fp.Behavior{ToolCall: call})
				resp, b := f.replay(t, g, c.model, stream)
				if resp.StatusCode != 200 {
					t.Errorf("%s stream=%t call=%t: %d %.600s (upstream %v)", name, stream, call, resp.StatusCode, b, rejected(fake))
					continue
				}
				if r := fake.Requests(); len(r) != 1 || r[0].Rejected != "" {
					t.Errorf("%s: upstream %v", name, rejected(fake))
				}
				if call && !strings.Contains(string(b), `"`+c.firstTool+`"`) {
					t.Errorf("%s stream=%t: the call of %s did not come back: %.800s", name, stream, c.firstTool, b)
				}
			}
		}
	}
}

// rejected lists the provider's recorded requests' rejections, for messages.
func rejected(f *fp.Provider) []string {
	var out []string
	for _, r := range f.Requests() {
		out = append(out, r.Path+":"+r.Rejected)
	}
	return out
}
