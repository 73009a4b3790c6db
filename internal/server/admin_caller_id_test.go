package server_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	anthropicopt "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	openaiopt "github.com/openai/openai-go/v3/option"
)

// TestAdminRequestsCallerRequestID (issue 23 item 2, docs/console.md "Logs"): the caller's own
// request id (x-request-id, else X-Client-Request-Id), sent through the official SDKs, is stored
// in the audit record as caller_request_id and shown by the call log, the request's detail
// and GET /v1/generation; GET /admin/v1/requests?request_id= finds a record by the gateway's
// id or by the caller's (every record a caller sent under one id); a malformed or too long
// caller id is dropped, never stored or searchable; the gateway's id stays the answer's
// x-request-id.
func TestAdminRequestsCallerRequestID(t *testing.T) {
	t.Parallel()
	g := startGateway(t, requestsCatalog, oa("oa-primary"), oa("oa-backup"), an("an-primary"), an("an-backup"))
	client := g.openaiClient(openaiopt.WithAPIKey("sk-static"))
	call := func(opts ...openaiopt.RequestOption) string {
		t.Helper()
		var hr *http.Response
		if _, err := client.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{
			Model: "gpt-4o-mini", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello")}},
			append(opts, openaiopt.WithResponseInto(&hr))...); err != nil {
			t.Fatal(err)
		}
		rid := hr.Header.Get("X-Request-Id")
		if !strings.HasPrefix(rid, "req_") {
			t.Fatalf("x-request-id %q: want the gateway's id", rid)
		}
		return rid
	}
	max128 := strings.Repeat("a", 127) + "Z"
	ridA := call(openaiopt.WithHeader("X-Request-Id", "trace-7f3a.1:b_c"))
	ridB := call(openaiopt.WithHeader("X-Client-Request-Id", "client-42"))
	ridC := call(openaiopt.WithHeader("X-Request-Id", "bad id with spaces"))
	ridD := call(openaiopt.WithHeader("X-Request-Id", max128+"x")) // 129 bytes
	ridE := call(openaiopt.WithHeader("X-Request-Id", max128))
	ridF := call(openaiopt.WithHeader("X-Request-Id", "trace-7f3a.1:b_c")) // a caller reusing its id
	ridG := call(openaiopt.WithHeader("X-Request-Id", "caf\u00e9"))        // not ASCII
	// The Anthropic SDK too.
	var hr *http.Response
	ac := g.anthropicClient(anthropicopt.WithAPIKey("sk-static"))
	if _, err := ac.Messages.New(t.Context(), anthropic.MessageNewParams{
		Model: "claude-haiku-4-5", MaxTokens: 16,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello"))}},
		anthropicopt.WithHeader("x-request-id", "anthropic-side-9"), anthropicopt.WithResponseInto(&hr)); err != nil {
		t.Fatal(err)
	}
	ridH := hr.Header.Get("X-Request-Id")

	want := map[string]string{ridA: "trace-7f3a.1:b_c", ridB: "client-42", ridC: "", ridD: "", ridE: max128,
		ridF: "trace-7f3a.1:b_c", ridG: "", ridH: "anthropic-side-9"}
	for rid, caller := range want {
		if got := g.generation(t, rid).CallerRequestID; got != caller {
			t.Errorf("GET /v1/generation %s: caller_request_id %q, want %q", rid, got, caller)
		}
		one := mustAdmin(t, g, 200, "GET", "/admin/v1/requests/"+rid, "")
		if got := one.Get("caller_request_id"); got.Str != caller || (caller == "" && got.Exists()) {
			t.Errorf("GET /admin/v1/requests/%s: caller_request_id %q, want %q", rid, one.Get("caller_request_id").Str, caller)
		}
	}
	search := func(id string) []string {
		t.Helper()
		var ids []string
		for _, r := range mustAdmin(t, g, 200, "GET", "/admin/v1/requests?request_id="+url.QueryEscape(id), "").Get("data").Array() {
			ids = append(ids, r.Get("request_id").Str)
		}
		return ids
	}
	for id, rids := range map[string][]string{
		ridA:                 {ridA},                                           // ours
		"trace-7f3a.1:b_c":   {ridF, ridA},                                     // the caller's, newest first
		"client-42":          {ridB},                                           // from X-Client-Request-Id
		max128:               {ridE},                                           // 128 bytes: kept
		max128 + "x":         nil,                                              // 129 bytes: dropped
		"bad id with spaces": nil,                                              // outside the charset: dropped
		"caf\u00e9":          nil,                                              // not ASCII: dropped
		"anthropic-side-9":   {ridH},                                           // through the Anthropic SDK
		"":                   {ridH, ridG, ridF, ridE, ridD, ridC, ridB, ridA}, // no filter
	} {
		if got := search(id); strings.Join(got, ",") != strings.Join(rids, ",") {
			t.Errorf("request_id=%q: %v, want %v", id, got, rids)
		}
	}
	if resp, b := adminDo(t, g, "GET", "/admin/v1/requests?request_id="+strings.Repeat("x", 513), ""); resp.StatusCode != 400 {
		t.Errorf("a 513-byte request_id filter: %d %s, want 400", resp.StatusCode, b)
	}
}
