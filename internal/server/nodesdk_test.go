package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	fp "github.com/switchyard-gw/switchyard/internal/fakeprovider"
)

// nodeModulesEnv names the node_modules directory that holds the official openai npm package
// (.ci/run installs a pinned version there and sets it).
const nodeModulesEnv = "SWITCHYARD_TEST_NODE_MODULES"

// nodeCall is one line of testdata/nodesdk/responses.cjs's output.
type nodeCall struct {
	Model         string `json:"model"`
	Stream        bool   `json:"stream"`
	SDK           string `json:"sdk"`
	RequestID     string `json:"request_id"`
	Text          string `json:"text"`
	ResponseModel string `json:"response_model"`
	OutputTokens  int    `json:"output_tokens"`
	Error         string `json:"error"`
}

// TestNodeSDKResponses: issue 22's "done when" for the Node SDK: the official openai npm
// package's responses.create, without a stream and with one, through the real server. To a
// deployment that serves the Responses API the request passes through (/v1/responses) and fails
// over before the first output (the primary answers 503, then an error event after
// response.created); to a chat-only deployment and to an Anthropic one it is translated
// (/v1/chat/completions, /v1/messages). Every answer carries the caller's model and usage, and
// the audit records each attempt.
func TestNodeSDKResponses(t *testing.T) {
	modules := os.Getenv(nodeModulesEnv)
	if modules == "" {
		t.Skip(nodeModulesEnv + " is not set: it names a node_modules directory with the official openai npm package " +
			"(.ci/run installs it: npm install --prefix DIR openai@6.49.0, then " + nodeModulesEnv + "=DIR/node_modules)")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("%s is set but node is not on PATH: %v", nodeModulesEnv, err)
	}
	if _, err := os.Stat(filepath.Join(modules, "openai", "package.json")); err != nil {
		t.Fatalf("%s=%s holds no openai package: %v", nodeModulesEnv, modules, err)
	}
	script, err := filepath.Abs(filepath.Join("testdata", "nodesdk", "responses.cjs"))
	if err != nil {
		t.Fatal(err)
	}
	g := startPassThrough(t)
	prim, back := g.Fakes["rs-primary"], g.Fakes["rs-backup"]
	prim.Script(fp.Behavior{Kind: fp.KindStatus, Status: 503}, fp.Behavior{Kind: fp.KindPreambleError})

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script, g.URL+"/v1", "gpt-4o-mini", "gpt-chat", "claude-haiku-4-5")
	cmd.Env = append(os.Environ(), nodeModulesEnv+"="+modules)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.Bytes())
	}
	var calls []nodeCall
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var c nodeCall
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("node printed %q: %v", sc.Text(), err)
		}
		calls = append(calls, c)
	}
	if len(calls) != 6 {
		t.Fatalf("node made %d calls, want 6:\n%s\n%s", len(calls), out, stderr.Bytes())
	}
	t.Logf("openai npm package %s", calls[0].SDK)
	want := map[string]struct{ dep, path string }{
		"gpt-4o-mini":      {"rs-backup", "/v1/responses"},
		"gpt-chat":         {"oa-chat", "/v1/chat/completions"},
		"claude-haiku-4-5": {"an-only", "/v1/messages"},
	}
	for _, c := range calls {
		w := want[c.Model]
		if c.Error != "" || c.Text != "Hello from "+w.dep+"." || c.ResponseModel != c.Model || c.OutputTokens == 0 || c.RequestID == "" {
			t.Fatalf("%s stream=%v: %+v", c.Model, c.Stream, c)
		}
		rec := g.generation(t, c.RequestID)
		last := rec.Attempts[len(rec.Attempts)-1]
		if last.Deployment != w.dep || last.Outcome != "completed" || last.Tokens.Output == 0 || last.CostUSD <= 0 {
			t.Fatalf("%s stream=%v audit %+v", c.Model, c.Stream, rec.Attempts)
		}
		if c.Model == "gpt-4o-mini" {
			// The primary failed before its first output (a 503, then an error event after
			// response.created): one failed attempt, then the backup's.
			if len(rec.Attempts) != 2 || rec.Attempts[0].Deployment != "rs-primary" || rec.Attempts[0].ErrorCode != "upstream_error" {
				t.Fatalf("%s stream=%v: no failover in the audit: %+v", c.Model, c.Stream, rec.Attempts)
			}
		} else if len(rec.Attempts) != 1 {
			t.Fatalf("%s stream=%v audit %+v", c.Model, c.Stream, rec.Attempts)
		}
		for _, r := range g.Fakes[w.dep].Requests() {
			if r.Path != w.path {
				t.Fatalf("%s reached %s at %s, want %s", c.Model, w.dep, r.Path, w.path)
			}
		}
	}
	for _, r := range append(prim.Requests(), back.Requests()...) {
		if body := gjson.ParseBytes(r.Body); body.Get("instructions").Str != "Be terse." || body.Get("tools.0.name").Str != "get_weather" {
			t.Fatalf("the pass-through body changed: %s", r.Body)
		}
	}
	if prim.Hits() != 2 || back.Hits() != 2 {
		t.Fatalf("hits: primary %d backup %d, want 2 and 2", prim.Hits(), back.Hits())
	}
}
