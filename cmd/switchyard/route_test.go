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

// TestRouteDedicatedEndpoint: `switchyard route` explains a dedicated endpoint (R-KEY-6): its
// reserved deployments first, marked; without --key every endpoint is explained, with --key
// the key's account applies (another account's endpoint is unknown to it).
func TestRouteDedicatedEndpoint(t *testing.T) {
	f := filepath.Join(t.TempDir(), "sw.yaml")
	cfg := routeConfig + `  - {name: other, secret: s2, account: other}
endpoints:
  - {id: acme/chat, model: chat, deployments: [vip], accounts: [acme]}
`
	cfg = strings.Replace(cfg, "keys:\n", `  - {name: vip, dialect: openai, base_url: "http://127.0.0.1:1/v1", reserved: true, routes: [{model: chat, price: {input: 9, output: 9}}]}
keys:
`, 1)
	if err := os.WriteFile(f, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := cmdRoute([]string{"--config", f, "--model", "acme/chat"}, &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if !strings.HasPrefix(lines[0], "model acme/chat -> chat (dedicated endpoint acme/chat), strategy price") ||
		len(lines) != 5 || !strings.Contains(lines[2], "vip (reserved)") || !strings.Contains(lines[3], "cheap") {
		t.Errorf("endpoint plan:\n%s", out.String())
	}
	out.Reset()
	if err := cmdRoute([]string{"--config", f, "--model", "chat"}, &out); err != nil {
		t.Fatal(err)
	}
	_, droppedPart, _ := strings.Cut(out.String(), "dropped:\n")
	if f := strings.Fields(droppedPart); len(f) != 3 || f[0] != "vip" || f[2] != "reserved" {
		t.Errorf("public plan does not show vip dropped as reserved:\n%s", out.String())
	}
	if err := cmdRoute([]string{"--config", f, "--model", "acme/chat", "--key", "other"}, &out); err == nil || !strings.Contains(err.Error(), `"acme/chat" is not in`) {
		t.Errorf("another account's endpoint: %v, want the unknown-model error", err)
	}
}

// TestRouteCommandRefusal: issue 11 item 10: `switchyard route` explains a pool that admits no
// route instead of failing: every route dropped with its reason and the answer a request would
// get (here every deployment is disabled in the configuration: 503 gateway_error). Exit 0.
func TestRouteCommandRefusal(t *testing.T) {
	f := filepath.Join(t.TempDir(), "sw.yaml")
	cfg := strings.ReplaceAll(routeConfig, `base_url: "http://127.0.0.1:1`, `disabled: true, base_url: "http://127.0.0.1:1`)
	if err := os.WriteFile(f, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := cmdRoute([]string{"--config", f, "--model", "chat"}, &out); err != nil {
		t.Fatalf("route: %v", err)
	}
	for _, want := range []string{"refused: a request would get 503 gateway_error: every deployment of model \"chat\"", "cheap", "dear", "disabled"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if err := cmdRoute([]string{"--config", f, "--model", "chat", "--json"}, &out); err != nil {
		t.Fatal(err)
	}
	var p struct {
		Candidates []json.RawMessage `json:"candidates"`
		Dropped    []struct{ Reason string }
		Refusal    struct {
			Status    int    `json:"status"`
			ErrorType string `json:"error_type"`
		}
	}
	if err := json.Unmarshal(out.Bytes(), &p); err != nil {
		t.Fatal(err)
	}
	if p.Candidates == nil || len(p.Candidates) != 0 || len(p.Dropped) != 2 || p.Dropped[0].Reason != "disabled" || p.Refusal.Status != 503 || p.Refusal.ErrorType != "gateway_error" {
		t.Errorf("plan: %s", out.Bytes())
	}
}

// TestRoutePlatforms: `switchyard route` names each candidate's platform (issue 21 item 6):
// one model served by Anthropic's API, Bedrock, Vertex AI; the table's PLATFORM column and the
// JSON's platform say which cloud each route goes to.
func TestRoutePlatforms(t *testing.T) {
	f := filepath.Join(t.TempDir(), "sw.yaml")
	cfg := `
auth: {required: false}
models: [{id: claude-haiku-4-5}]
deployments:
  - {name: anthropic, dialect: anthropic, base_url: "http://127.0.0.1:1", routes: [{model: claude-haiku-4-5}]}
  - {name: bedrock, dialect: anthropic, platform: bedrock, priority: 1, aws: {region: us-east-1, access_key_id: AKIDEXAMPLE, secret_access_key: s}, routes: [{model: claude-haiku-4-5, upstream_model: "anthropic.claude-haiku-4-5-20251001-v1:0"}]}
  - {name: vertex, dialect: anthropic, platform: vertex, priority: 2, vertex: {project: p, location: global}, routes: [{model: claude-haiku-4-5, upstream_model: "claude-haiku-4-5@20251001"}]}
routing: {strategy: priority}
`
	if err := os.WriteFile(f, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := cmdRoute([]string{"--config", f, "--model", "claude-haiku-4-5"}, &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 5 || !strings.Contains(lines[1], "PLATFORM") {
		t.Fatalf("table:\n%s", out.String())
	}
	for i, want := range []string{"anthropic", "bedrock", "vertex"} {
		if fields := strings.Fields(lines[2+i]); len(fields) < 4 || fields[1] != want || fields[3] != want {
			t.Errorf("row %d = %q, want deployment and platform %s", i+1, lines[2+i], want)
		}
	}
	out.Reset()
	if err := cmdRoute([]string{"--config", f, "--model", "claude-haiku-4-5", "--json"}, &out); err != nil {
		t.Fatal(err)
	}
	var p struct {
		Candidates []struct{ Deployment, Platform string } `json:"candidates"`
	}
	if err := json.Unmarshal(out.Bytes(), &p); err != nil {
		t.Fatal(err)
	}
	if len(p.Candidates) != 3 || p.Candidates[1].Platform != "bedrock" || p.Candidates[2].Platform != "vertex" || p.Candidates[0].Platform != "anthropic" {
		t.Errorf("candidates = %+v", p.Candidates)
	}
}
