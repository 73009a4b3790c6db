package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const routeConfig = `
auth: {required: false}
models: [{id: chat}, {id: "meta/llama3.1:70b"}]
deployments:
  - {name: cheap, dialect: openai, base_url: "http://127.0.0.1:1/v1", routes: [{model: chat, price: {input: 1, output: 2}}, {model: "meta/llama3.1:70b"}]}
  - {name: dear, provider: dearco, dialect: anthropic, base_url: "http://127.0.0.1:1", priority: 1, routes: [{model: chat, price: {input: 3, output: 4}, weight: 2}]}
keys:
  - {name: locked, secret: s1}
`

func writeRouteConfig(t *testing.T) string {
	f := filepath.Join(t.TempDir(), "sw.yaml")
	if err := os.WriteFile(f, []byte(routeConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestRouteCommand: `switchyard route` (contract.md, R-ORDER-8) prints the plan as a table, and
// with --json the POST /v1/route JSON; --key applies the key's override lock (R-SUFFIX-2).
func TestRouteCommand(t *testing.T) {
	f := writeRouteConfig(t)
	var out bytes.Buffer
	if err := cmdRoute([]string{"--config", f, "--model", "chat"}, &out); err != nil {
		t.Fatal(err)
	}
	want := `model chat -> chat, strategy price, session c:`
	if !strings.HasPrefix(out.String(), want) {
		t.Errorf("table header:\n%s\nwant prefix %q", out.String(), want)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 || !strings.Contains(lines[2], "cheap") || !strings.Contains(lines[3], "dear") || !strings.Contains(lines[3], "dearco") {
		t.Errorf("table:\n%s", out.String())
	}
	out.Reset()
	if err := cmdRoute([]string{"--config", f, "--model", "chat:dearco", "--json"}, &out); err != nil {
		t.Fatal(err)
	}
	var p struct {
		Model      string `json:"model"`
		Candidates []struct {
			Deployment string   `json:"deployment"`
			Score      *float64 `json:"score"`
			Weight     float64  `json:"weight"`
		} `json:"candidates"`
	}
	if err := json.Unmarshal(out.Bytes(), &p); err != nil {
		t.Fatalf("%v: %s", err, out.Bytes())
	}
	if p.Model != "chat:dearco" || len(p.Candidates) != 1 || p.Candidates[0].Deployment != "dear" || p.Candidates[0].Score == nil || *p.Candidates[0].Score != 13 || p.Candidates[0].Weight != 2 {
		t.Errorf("pinned plan: %s", out.Bytes())
	}
	if err := cmdRoute([]string{"--config", f, "--model", "chat:@balanced", "--key", "locked"}, &out); err == nil || !strings.Contains(err.Error(), "allow_request_override") {
		t.Errorf("locked key overriding the strategy: %v", err)
	}
	if err := cmdRoute([]string{"--config", f, "--model", "chat", "--key", "nobody"}, &out); err == nil {
		t.Errorf("unknown key accepted")
	}
}
