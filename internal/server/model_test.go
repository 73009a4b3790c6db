package server_test

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/tidwall/gjson"

	"github.com/switchyard-gw/switchyard/internal/catalog"
)

// TestUnknownModelNeverSubstituted: R-MODEL-1, R-MODEL-2 (issue failure kind "an unknown model
// is answered by some default model"): an unknown id, near misses included, is a 404
// model_unavailable naming the id exactly and pointing at GET /v1/models, on both surfaces in
// the SDKs' native types, with no upstream call.
func TestUnknownModelNeverSubstituted(t *testing.T) {
	t.Parallel()
	g := startTwo(t)
	ids := []string{"gpt-5-nano", "gpt-4o", "gpt-4o-minii", "GPT-4o-mini", "gpt-4o-mini ", " gpt-4o-mini",
		"gpt-4o-mini-2025-13-01", "claude-haiku-4", "claude-haiku-4-5-latest", "claude-haiku-4-5-20251001-20251001",
		"Mini", "rp-haiku", "claude-haiku-4-5\n"}
	for _, d := range icSurfaces {
		for _, id := range ids {
			resp, b := icPost(t, g.URL, icPath(d), icBody(d, id, false))
			native := "invalid_request_error"
			if d == catalog.Anthropic {
				native = "not_found_error"
			}
			icCheckError(t, d, resp, b, 404, "model_unavailable", native)
			msg := gjson.GetBytes(b, "error.message").String()
			if !strings.Contains(msg, strconv.Quote(id)) || !strings.Contains(msg, "GET /v1/models") {
				t.Errorf("%s %q: message %q does not name the id exactly and point at GET /v1/models", d, id, msg)
			}
			if d == catalog.OpenAI && (gjson.GetBytes(b, "error.code").String() != "model_unavailable" || gjson.GetBytes(b, "error.param").String() != "model") {
				t.Errorf("openai %q: code/param %s", id, b)
			}
		}
	}
	ctx := context.Background()
	oc, ac := g.openaiClient(), g.anthropicClient()
	_, err := oc.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model: "gpt-4o-minii", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello")},
	})
	var oe *openai.Error
	if !errors.As(err, &oe) || oe.StatusCode != 404 || oe.Code != "model_unavailable" || !strings.Contains(oe.Message, `"gpt-4o-minii"`) {
		t.Errorf("openai SDK: %v %+v", err, oe)
	}
	st := ac.Messages.NewStreaming(ctx, anthropic.MessageNewParams{
		Model: "claude-haiku-4-5-latest", MaxTokens: 64,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello"))},
	})
	for st.Next() {
	}
	var ae *anthropic.Error
	if !errors.As(st.Err(), &ae) || ae.StatusCode != 404 || ae.Type() != "not_found_error" || !strings.Contains(ae.Message, `"claude-haiku-4-5-latest"`) {
		t.Errorf("anthropic SDK stream: %v", st.Err())
	}
	icNoHits(t, g)
}

// TestDatedSnapshotRoutesAsFamily: R-MODEL-3: a dated snapshot routes (and is audited) as its
// family, the provider receives the caller's id, and the response echoes it (R-MODEL-6).
func TestDatedSnapshotRoutesAsFamily(t *testing.T) {
	t.Parallel()
	g := startTwo(t)
	ctx := context.Background()
	oc, ac := g.openaiClient(), g.anthropicClient()

	var hdr *http.Response
	cc, err := oc.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model: "gpt-4o-mini-2024-07-18", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello")},
	}, option.WithResponseInto(&hdr))
	if err != nil {
		t.Fatal(err)
	}
	if cc.Model != "gpt-4o-mini-2024-07-18" {
		t.Errorf("openai echoed %q", cc.Model)
	}
	if got := g.Fakes["oa-primary"].Requests()[0].Model; got != "gpt-4o-mini-2024-07-18" {
		t.Errorf("provider received %q, want the caller's id", got)
	}
	rec := g.generation(t, hdr.Header.Get("X-Request-Id"))
	if rec.Model != "gpt-4o-mini-2024-07-18" || rec.Attempts[0].Model != "gpt-4o-mini" || rec.Attempts[0].UpstreamModel != "gpt-4o-mini-2024-07-18" {
		t.Errorf("audit %+v", rec)
	}

	st := ac.Messages.NewStreaming(ctx, anthropic.MessageNewParams{
		Model: "claude-haiku-4-5-20251001", MaxTokens: 64,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello"))},
	})
	var msg anthropic.Message
	for st.Next() {
		if err := msg.Accumulate(st.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	if msg.Model != "claude-haiku-4-5-20251001" {
		t.Errorf("anthropic echoed %q", msg.Model)
	}
	if got := g.Fakes["an-primary"].Requests()[0].Model; got != "claude-haiku-4-5-20251001" {
		t.Errorf("provider received %q, want the caller's id", got)
	}

	// A route pinned to a dated upstream id (oa-backup: gpt-4o-mini-2024-07-18) receives one
	// dated id, never a date appended to a date.
	g.Fakes["oa-primary"].Script(icFail503)
	resp, b := icCall(t, g.URL, catalog.OpenAI, "gpt-4o-mini-2024-07-18", false)
	icServed(t, g, resp, "oa-backup", 2)
	if got := g.Fakes["oa-backup"].Requests()[0].Model; got != "gpt-4o-mini-2024-07-18" {
		t.Errorf("backup received %q, want gpt-4o-mini-2024-07-18", got)
	}
	if gjson.GetBytes(b, "model").String() != "gpt-4o-mini-2024-07-18" {
		t.Errorf("echoed %s", b)
	}
}

// TestAliasSentUpstreamAsTarget: R-MODEL-4: an alias routes and is sent upstream as its target;
// the response echoes the caller's string (contract.md "the model echoed ... as sent").
func TestAliasSentUpstreamAsTarget(t *testing.T) {
	t.Parallel()
	g := startTwo(t)
	for _, tc := range []struct {
		d             catalog.Dialect
		alias, target string
		fake          string
	}{
		{catalog.OpenAI, "mini", "gpt-4o-mini", "oa-primary"},
		{catalog.Anthropic, "rp-haiku-4-5", "claude-haiku-4-5", "an-primary"},
	} {
		for _, stream := range []bool{false, true} {
			before := g.Fakes[tc.fake].Hits()
			resp, b := icCall(t, g.URL, tc.d, tc.alias, stream)
			reqs := g.Fakes[tc.fake].Requests()
			if len(reqs) != before+1 || reqs[before].Model != tc.target {
				t.Fatalf("%s %s: provider requests %d, last model %q, want %q", tc.d, tc.alias, len(reqs), reqs[len(reqs)-1].Model, tc.target)
			}
			b = withoutProviderMetadata(t, b, stream, tc.target) // R-AUDIT-1: the served id is reported there only
			if strings.Contains(string(b), `"`+tc.target+`"`) || !strings.Contains(string(b), `"`+tc.alias+`"`) {
				t.Errorf("%s stream=%v: caller sees the target id or not its own: %s", tc.d, stream, b)
			}
			if got := resp.Header.Get("X-Switchyard-Upstream-Model"); got != tc.target {
				t.Errorf("x-switchyard-upstream-model %q", got)
			}
			rec := g.generation(t, resp.Header.Get("X-Request-Id"))
			if rec.Model != tc.alias || rec.Attempts[0].Model != tc.target {
				t.Errorf("audit model %q / %q", rec.Model, rec.Attempts[0].Model)
			}
		}
	}
}

// TestModelIDsWithSlashAndColon: R-MODEL-5: ids with '/' and ':' are looked up as the full
// string, exactly; a prefix of such an id is unknown.
func TestModelIDsWithSlashAndColon(t *testing.T) {
	t.Parallel()
	g := startGateway(t, `
auth: {required: false}
models:
  - id: meta/llama3.1:70b
  - id: meta/llama3.1:8b
  - id: anthropic.claude-3-haiku-20240307-v1:0
deployments:
  - name: big
    dialect: openai
    base_url: "{{big}}"
    routes: [{model: "meta/llama3.1:70b", upstream_model: "llama3.1:70b"}, {model: "anthropic.claude-3-haiku-20240307-v1:0"}]
  - name: small
    dialect: openai
    base_url: "{{small}}"
    routes: [{model: "meta/llama3.1:8b"}]
`, oa("big"), oa("small"))
	for _, tc := range []struct{ id, dep, upstream string }{
		{"meta/llama3.1:70b", "big", "llama3.1:70b"},
		{"meta/llama3.1:8b", "small", "meta/llama3.1:8b"},
		{"anthropic.claude-3-haiku-20240307-v1:0", "big", "anthropic.claude-3-haiku-20240307-v1:0"},
	} {
		resp, b := icCall(t, g.URL, catalog.OpenAI, tc.id, false)
		if got := resp.Header.Get("X-Switchyard-Deployment"); got != tc.dep {
			t.Errorf("%s served by %q, want %q", tc.id, got, tc.dep)
		}
		reqs := g.Fakes[tc.dep].Requests()
		if got := reqs[len(reqs)-1].Model; got != tc.upstream {
			t.Errorf("%s: provider received %q, want %q", tc.id, got, tc.upstream)
		}
		if got := gjson.GetBytes(b, "model").String(); got != tc.id {
			t.Errorf("%s: echoed %q", tc.id, got)
		}
	}
	hits := g.Fakes["big"].Hits() + g.Fakes["small"].Hits()
	// ("meta/llama3.1:70b:big" is a provider pin since R-SUFFIX: routing_test.go.)
	for _, id := range []string{"meta/llama3.1", "meta/llama3.1:70", "llama3.1:70b", "meta/llama3.1:70:big"} {
		resp, b := icPost(t, g.URL, "/v1/chat/completions", icChatBody(id, false))
		icCheckError(t, catalog.OpenAI, resp, b, 404, "model_unavailable", "invalid_request_error")
	}
	if n := g.Fakes["big"].Hits() + g.Fakes["small"].Hits(); n != hits {
		t.Errorf("unknown ids reached a provider")
	}
}

// TestUpstreamIDsVirtualized: R-MODEL-6: the provider gets the route's upstream id; the caller
// sees its own id in the body and in every stream frame; x-switchyard-upstream-model and the
// audit report the upstream id.
func TestUpstreamIDsVirtualized(t *testing.T) {
	t.Parallel()
	g := startGateway(t, `
auth: {required: false}
models: [{id: house-chat}, {id: house-claude}]
deployments:
  - name: vendor-oa
    dialect: openai
    base_url: "{{vendor-oa}}"
    routes: [{model: house-chat, upstream_model: "vendor/chat-v7:beta"}]
  - name: vendor-an
    dialect: anthropic
    base_url: "{{vendor-an}}"
    routes: [{model: house-claude, upstream_model: "vendor-claude-xyz"}]
`, oa("vendor-oa"), an("vendor-an"))
	for _, tc := range []struct {
		d               catalog.Dialect
		model, upstream string
		fake            string
	}{
		{catalog.OpenAI, "house-chat", "vendor/chat-v7:beta", "vendor-oa"},
		{catalog.Anthropic, "house-claude", "vendor-claude-xyz", "vendor-an"},
	} {
		for _, stream := range []bool{false, true} {
			resp, b := icCall(t, g.URL, tc.d, tc.model, stream)
			reqs := g.Fakes[tc.fake].Requests()
			if got := reqs[len(reqs)-1].Model; got != tc.upstream {
				t.Errorf("%s: provider received %q, want %q", tc.d, got, tc.upstream)
			}
			b = withoutProviderMetadata(t, b, stream, tc.upstream)
			if strings.Contains(string(b), tc.upstream) {
				t.Errorf("%s stream=%v: the upstream id leaked into the body: %s", tc.d, stream, b)
			}
			if !stream {
				if got := gjson.GetBytes(b, "model").String(); got != tc.model {
					t.Errorf("%s: echoed %q", tc.d, got)
				}
			} else {
				frames := 0
				for _, data := range icSSEData(t, b) {
					m := gjson.Get(data, "model")
					if tc.d == catalog.Anthropic {
						m = gjson.Get(data, "message.model")
					}
					if m.Exists() {
						frames++
						if m.String() != tc.model {
							t.Errorf("%s frame model %q: %s", tc.d, m.String(), data)
						}
					}
				}
				if frames == 0 {
					t.Errorf("%s: no stream frame carries a model: %s", tc.d, b)
				}
			}
			if got := resp.Header.Get("X-Switchyard-Upstream-Model"); got != tc.upstream {
				t.Errorf("x-switchyard-upstream-model %q, want %q", got, tc.upstream)
			}
			rec := g.generation(t, resp.Header.Get("X-Request-Id"))
			if a := rec.Attempts[0]; a.UpstreamModel != tc.upstream || a.Model != tc.model || rec.Model != tc.model {
				t.Errorf("audit %+v", rec)
			}
		}
	}
}

// TestNGreaterThanOneRefused: R-MODEL-7: n > 1 is a typed 400 invalid_request on param n, with
// no upstream call; n = 1 is served.
func TestNGreaterThanOneRefused(t *testing.T) {
	t.Parallel()
	g := startTwo(t)
	ctx := context.Background()
	oc := g.openaiClient()
	params := openai.ChatCompletionNewParams{
		Model: "gpt-4o-mini", N: openai.Int(2), Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello")},
	}
	_, err := oc.Chat.Completions.New(ctx, params)
	var oe *openai.Error
	if !errors.As(err, &oe) || oe.StatusCode != 400 || oe.Type != "invalid_request_error" || oe.Param != "n" {
		t.Fatalf("n=2: %v %+v", err, oe)
	}
	st := oc.Chat.Completions.NewStreaming(ctx, params)
	for st.Next() {
	}
	if !errors.As(st.Err(), &oe) || oe.StatusCode != 400 || oe.Param != "n" {
		t.Fatalf("n=2 stream: %v", st.Err())
	}
	resp, b := icPost(t, g.URL, "/v1/chat/completions", `{"model":"gpt-4o-mini","n":5,"messages":[{"role":"user","content":"Hello"}]}`)
	icCheckError(t, catalog.OpenAI, resp, b, 400, "invalid_request", "invalid_request_error")
	icNoHits(t, g)
	params.N = openai.Int(1)
	if _, err := oc.Chat.Completions.New(ctx, params); err != nil {
		t.Fatalf("n=1: %v", err)
	}
}

// withoutProviderMetadata checks that a body reports the upstream id it was served by in
// provider_metadata.actual_model (R-AUDIT-1, issue 11 item 8; a stream in its first comment
// line, issue 25 item 3) and returns the body without it, for the checks that no upstream id is
// echoed anywhere else (R-MODEL-6).
func withoutProviderMetadata(t *testing.T, b []byte, stream bool, upstream string) []byte {
	t.Helper()
	if stream { // the stream's first line: `: provider_metadata {...}` (issue 25 item 3)
		line, rest, _ := strings.Cut(string(b), "\n")
		pm := gjson.Get(strings.TrimPrefix(line, ": provider_metadata "), "actual_model")
		if !strings.HasPrefix(line, ": provider_metadata ") || pm.String() != upstream {
			t.Errorf("stream's served-by line %q, want actual_model %q", line, upstream)
		}
		return []byte(rest)
	}
	pm := gjson.GetBytes(b, "provider_metadata")
	if got := pm.Get("actual_model").String(); got != upstream {
		t.Errorf("provider_metadata %s, want actual_model %q", pm.Raw, upstream)
	}
	return []byte(strings.Replace(string(b), `"provider_metadata":`+pm.Raw, "", 1))
}
