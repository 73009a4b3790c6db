package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/config"
	"github.com/switchyard-gw/switchyard/internal/fakeprovider"
)

// demoConfig is the demo's catalog: two models, all emulated in-process. gpt-4o-mini is served
// by a primary OpenAI deployment that fails every other request and a backup. claude-haiku-4-5
// is served across three clouds (docs/platforms.md): Anthropic's API, which fails every other
// request, then Amazon Bedrock (SigV4-signed, and unavailable on every other request that
// reaches it), then Google Vertex AI (OAuth2 tokens from a service-account file). The primaries
// are cheaper, so the price strategy tries them first and the failovers show in
// GET /v1/generation.
const demoConfig = `
server:
  listen: %s
store:
  url: %s
auth:
  required: false
models:
  - id: gpt-4o-mini
    context_window: 128000
    max_output_tokens: 16384
  - id: claude-haiku-4-5
    aliases: [rp-haiku-4-5]
    context_window: 200000
    max_output_tokens: 64000
deployments:
  - name: openai-primary
    provider: openai
    dialect: openai
    base_url: %s
    api_key: demo
    routes:
      - model: gpt-4o-mini
        price: {input: 0.15, output: 0.60, cache_read: 0.075}
  - name: openai-backup
    provider: reseller
    dialect: openai
    base_url: %s
    api_key: demo
    routes:
      - model: gpt-4o-mini
        price: {input: 0.18, output: 0.72}
  - name: anthropic-primary
    provider: anthropic
    dialect: anthropic
    base_url: %s
    api_key: demo
    routes:
      - model: claude-haiku-4-5
        price: {input: 1.0, output: 5.0, cache_read: 0.1, cache_write: 1.25}
  - name: bedrock
    provider: bedrock
    dialect: anthropic
    platform: bedrock
    base_url: %s
    aws: {region: us-east-1, access_key_id: %s, secret_access_key: %s}
    routes:
      - model: claude-haiku-4-5
        upstream_model: anthropic.claude-haiku-4-5-20251001-v1:0
        price: {input: 1.1, output: 5.5, cache_read: 0.11, cache_write: 1.375}
  - name: vertex
    provider: vertex
    dialect: anthropic
    platform: vertex
    base_url: %s
    vertex: {project: %s, location: us-east5, credentials_file: %q}
    routes:
      - model: claude-haiku-4-5
        upstream_model: claude-haiku-4-5@20251001
        price: {input: 1.2, output: 6.0, cache_read: 0.12, cache_write: 1.5}
`

// The demo Bedrock emulator's one AWS credential: the gateway signs with it, the emulator
// verifies the signatures (fakeprovider.BedrockConfig). A demo value, not a secret.
const (
	demoAWSKeyID  = "AKIDSWITCHYARDDEMO01"
	demoAWSSecret = "switchyard-demo-secret"
)

// demoFlaky scripts a primary to fail every other request, starting with the first: 503 on the
// OpenAI side, 529 overloaded on the Anthropic side. Two failures never come in a row, so the
// circuit stays closed and every failure is a visible failover.
func demoFlaky(p *fakeprovider.Provider, status int) {
	bs := make([]fakeprovider.Behavior, 0, 2000)
	for range 1000 {
		bs = append(bs, fakeprovider.Behavior{Kind: fakeprovider.KindStatus, Status: status}, fakeprovider.Behavior{})
	}
	p.Script(bs...)
}

func cmdDemo(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("demo", "demo [--listen ADDR] [--store URL]",
		"Runs the gateway with emulated providers (no keys needed), authentication off; every other\nrequest to a primary deployment fails, so failover shows in the audit.")
	listen := fs.String("listen", "127.0.0.1:8080", "listen address")
	storeURL := fs.String("store", "sqlite://switchyard-demo.db", "store URL for the audit")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	var urls []any
	for _, f := range []struct {
		name   string
		d      catalog.Dialect
		status int // 0: healthy
	}{
		{"openai-primary", catalog.OpenAI, 503},
		{"openai-backup", catalog.OpenAI, 0},
		{"anthropic-primary", catalog.Anthropic, 529},
	} {
		p := fakeprovider.New(f.name, f.d)
		p.DisableControl()
		if f.status != 0 {
			demoFlaky(p, f.status)
		}
		u, err := startFake(ctx, p, f.d)
		if err != nil {
			return err
		}
		urls = append(urls, u)
	}
	// Claude on Bedrock: every other request that reaches it is a ServiceUnavailableException.
	bp := fakeprovider.New("bedrock", catalog.Anthropic)
	bp.DisableControl()
	demoFlaky(bp, 503)
	bu, err := startFake(ctx, fakeprovider.NewBedrock(bp, fakeprovider.BedrockConfig{Region: "us-east-1",
		AccessKeyID: demoAWSKeyID, SecretAccessKey: demoAWSSecret}), catalog.Anthropic)
	if err != nil {
		return err
	}
	// Claude on Vertex AI: the emulator mints OAuth2 tokens for a service account whose key file
	// it writes; the gateway reads that file as vertex.credentials_file.
	vx := fakeprovider.NewVertex("vertex")
	vx.DisableControl()
	vu, err := startFake(ctx, vx, catalog.Anthropic)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "switchyard-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	saFile := filepath.Join(dir, "vertex-service-account.json")
	if err := vx.WriteServiceAccount(saFile, vu); err != nil {
		return err
	}
	urls = append(urls, bu, demoAWSKeyID, demoAWSSecret, vu, fakeprovider.VertexProject, saFile)
	yaml := fmt.Sprintf(demoConfig, append([]any{*listen, *storeURL}, urls...)...)
	cfg, err := config.Parse("demo", []byte(yaml))
	if err != nil {
		return err
	}
	return run(ctx, cfg, runOptions{noAccounts: true, ready: func(addr string) { printDemo(out, addr) }})
}

func printDemo(out io.Writer, addr string) {
	base := "http://" + addr
	s := strings.NewReplacer("BASE", base).Replace(`
Switchyard demo: emulated providers, authentication off. Every other request to a primary
deployment fails, so about half the requests below fail over: gpt-4o-mini to a backup,
claude-haiku-4-5 across clouds (Anthropic, then Amazon Bedrock, then Google Vertex AI).

  curl -s BASE/v1/models

  curl -si BASE/v1/chat/completions -H 'content-type: application/json' \
    -d '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hello"}]}'

  curl -sN BASE/v1/messages -H 'content-type: application/json' -H 'anthropic-version: 2023-06-01' \
    -d '{"model":"claude-haiku-4-5","max_tokens":256,"stream":true,"messages":[{"role":"user","content":"Hello"}]}'

  # then, with the x-request-id of a response:
  curl -s 'BASE/v1/generation?id=REQUEST_ID'

SDKs: OpenAI base URL BASE/v1, Anthropic base URL BASE, any API key.

Stop with Ctrl-C. To run against real providers: switchyard init, then switchyard serve
(README.md, "Running against real providers").
`)
	fmt.Fprint(out, s)
}
