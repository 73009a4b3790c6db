package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	openaiopt "github.com/openai/openai-go/v3/option"

	fp "github.com/switchyard-gw/switchyard/internal/fakeprovider"
)

// keyedDeployments is twoDeployments' OpenAI half behind a static key of account acme.
const keyedDeployments = `
routing:
  timeouts: {headers: 5s, stream_headers: 5s, stream_idle: 5s}
models:
  - id: gpt-4o-mini
deployments:
  - name: oa-primary
    provider: openai
    dialect: openai
    base_url: "{{oa-primary}}"
    api_key: sk-house-primary
    routes: [{model: gpt-4o-mini, price: {input: 0.15, output: 0.6}}]
  - name: oa-backup
    provider: reseller
    dialect: openai
    base_url: "{{oa-backup}}"
    api_key: sk-house-backup
    routes: [{model: gpt-4o-mini, price: {input: 0.2, output: 0.8}}]
keys:
  - {name: app-1, secret: sk-gw-access-log-secret, account: acme}
`

// accessLine returns the access log line of request id rid ("" when there is none).
func accessLine(g *gateway, rid string) string {
	for line := range strings.SplitSeq(g.Logs.String(), "\n") {
		if strings.HasPrefix(line, "request ") && strings.Contains(line, "request_id="+rid) {
			return line
		}
	}
	return ""
}

// TestAccessLog: one access line per request at info with the request id, the caller's own
// well-formed x-request-id beside it, the account, key id, model, status, class, attempts,
// deployment, the failed-over attempt with its class, duration, tokens and cost; never the
// key's secret, the prompt, the completion or the provider's error body (issue 12 item 3).
func TestAccessLog(t *testing.T) {
	t.Parallel()
	g := startGateway(t, keyedDeployments, oa("oa-primary"), oa("oa-backup"))
	g.Fakes["oa-primary"].Script(fp.Behavior{Kind: fp.KindStatus, Status: 500, Message: "provider-secret-error-body"})
	g.Fakes["oa-backup"].Script(fp.Behavior{Text: "the completion text", Deltas: 2})
	opts := []openaiopt.RequestOption{openaiopt.WithAPIKey("sk-gw-access-log-secret"), openaiopt.WithHeader("X-Request-Id", "caller-123:abc")}
	r := oaSurface.call(t.Context(), g, false) // unauthenticated: 401, logged too
	if r.Status != 401 {
		t.Fatalf("no key: status %d, want 401", r.Status)
	}
	rid401 := r.Header.Get("X-Request-Id")

	res := callWith(t, g, false, "the prompt text", opts...)
	rid := res.Header.Get("X-Request-Id")
	if !strings.HasPrefix(rid, "req_") {
		t.Fatalf("x-request-id %q: want the gateway's id (the caller's is recorded beside it)", rid)
	}
	g.generation(t, rid)
	line := accessLine(g, rid)
	if line == "" {
		t.Fatalf("no access line for %s in:\n%s", rid, g.Logs.String())
	}
	for _, want := range []string{"caller_request_id=caller-123:abc", "surface=openai.chat", "account=acme", "key_id=app-1",
		"model=gpt-4o-mini", "catalog_model=gpt-4o-mini", "status=200", `class=""`, "attempts=2", "deployment=oa-backup",
		"provider=reseller", "failed_over=oa-primary:upstream_error", "duration_ms=", "input_tokens=", "output_tokens=", "cost_usd="} {
		if !strings.Contains(line, want) {
			t.Errorf("access line lacks %s:\n%s", want, line)
		}
	}
	if strings.Contains(line, "output_tokens=0 ") || strings.Contains(line, "cost_usd=0\n") || strings.HasSuffix(line, "cost_usd=0") {
		t.Errorf("access line bills nothing: %s", line)
	}
	if l := accessLine(g, rid401); !strings.Contains(l, "status=401") || !strings.Contains(l, "class=authentication") {
		t.Errorf("401 access line: %q", l)
	}
	// A malformed caller id is not kept.
	res = callWith(t, g, false, "hello", openaiopt.WithAPIKey("sk-gw-access-log-secret"), openaiopt.WithHeader("X-Request-Id", "bad id with spaces"))
	rid2 := res.Header.Get("X-Request-Id")
	g.generation(t, rid2)
	if l := accessLine(g, rid2); !strings.Contains(l, `caller_request_id=""`) {
		t.Errorf("malformed caller id kept: %s", l)
	}
	logs := g.Logs.String()
	for _, secret := range []string{"sk-gw-access-log-secret", "sk-house-primary", "sk-house-backup", "the prompt text", "the completion text", "provider-secret-error-body", "bad id with spaces"} {
		if strings.Contains(logs, secret) {
			t.Errorf("the log holds %q", secret)
		}
	}
}

// callWith makes one non-stream OpenAI SDK call of gpt-4o-mini with prompt and opts; it fails
// the test on an error.
func callWith(t *testing.T, g *gateway, stream bool, prompt string, opts ...openaiopt.RequestOption) *http.Response {
	t.Helper()
	var hr *http.Response
	c := g.openaiClient(append(opts, openaiopt.WithResponseInto(&hr))...)
	p := openai.ChatCompletionNewParams{Model: "gpt-4o-mini", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)}}
	if stream {
		st := c.Chat.Completions.NewStreaming(t.Context(), p)
		for st.Next() {
		}
		if err := st.Err(); err != nil {
			t.Fatal(err)
		}
	} else if _, err := c.Chat.Completions.New(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	return hr
}
