package responses_test

import (
	"strings"
	"testing"

	"github.com/switchyard-gw/switchyard/internal/dialect"
	"github.com/switchyard-gw/switchyard/internal/dialect/responses"
	"github.com/switchyard-gw/switchyard/internal/failure"
	"github.com/switchyard-gw/switchyard/internal/sse"
)

// TestScanFrameCommitPoint pins the commit point of a Responses stream (docs/behaviour.md):
// created/in_progress/queued are lifecycle, every output event commits, completed and
// incomplete end the stream with their usage, error and response.failed are errors; the
// response snapshot's model is echoed as the caller's.
func TestScanFrameCommitPoint(t *testing.T) {
	for _, c := range []struct {
		name, data string
		want       dialect.FrameKind
	}{
		{"response.created", `{"type":"response.created","response":{"model":"up-model","output":[]}}`, dialect.FrameLifecycle},
		{"response.in_progress", `{"type":"response.in_progress","response":{"model":"up-model"}}`, dialect.FrameLifecycle},
		{"response.queued", `{"type":"response.queued"}`, dialect.FrameLifecycle},
		{"response.output_item.added", `{"type":"response.output_item.added","item":{"type":"message"}}`, dialect.FrameSemantic},
		{"response.output_text.delta", `{"type":"response.output_text.delta","delta":"Hi"}`, dialect.FrameSemantic},
		{"response.function_call_arguments.delta", `{"type":"response.function_call_arguments.delta","delta":"{"}`, dialect.FrameSemantic},
		{"response.completed", `{"type":"response.completed","response":{"model":"up-model","usage":{"input_tokens":10,"input_tokens_details":{"cached_tokens":4},"output_tokens":7,"output_tokens_details":{"reasoning_tokens":2}}}}`, dialect.FrameDone},
		{"error", `{"type":"error","code":"server_error","message":"x"}`, dialect.FrameError},
		{"response.failed", `{"type":"response.failed","response":{"error":{"code":"server_error"}}}`, dialect.FrameError},
	} {
		var st dialect.StreamState
		st.Reset("caller-model", true)
		out, kind := responses.ScanFrame(nil, sse.Event{Name: []byte(c.name), Data: []byte(c.data)}, &st)
		if kind != c.want {
			t.Errorf("%s: kind %v, want %v", c.name, kind, c.want)
		}
		if strings.Contains(string(out), "up-model") || (strings.Contains(c.data, "up-model") && !strings.Contains(string(out), `"model":"caller-model"`)) {
			t.Errorf("%s: model not echoed: %s", c.name, out)
		}
		if c.name == "response.completed" {
			if u := st.Usage; !st.UsageSeen || !st.Finished || u.Input != 6 || u.Cached != 4 || u.Output != 7 || u.Reasoning != 2 {
				t.Errorf("usage %+v seen %v finished %v", u, st.UsageSeen, st.Finished)
			}
		}
	}
}

// TestRewriteResponsePassThrough: a non-stream answer is checked (an output array, no error),
// its model echoed and its usage read; anything else is an upstream_error that fails over.
func TestRewriteResponsePassThrough(t *testing.T) {
	out, u, ok, err := responses.RewriteResponse(nil, []byte(`{"id":"resp_1","object":"response","model":"up","status":"completed","error":null,"output":[{"type":"message"}],"usage":{"input_tokens":5,"output_tokens":2}}`), "mine")
	if err != nil || !ok || u.Input != 5 || u.Output != 2 || !strings.Contains(string(out), `"model":"mine"`) {
		t.Fatalf("%s %+v %v %v", out, u, ok, err)
	}
	for _, bad := range []string{`{}`, `[]`, `not json`, `{"output":[],"error":{"code":"x"}}`, `{"output":[],"status":"failed"}`} {
		_, _, _, err := responses.RewriteResponse(nil, []byte(bad), "mine")
		if fe := failure.From(err); fe == nil || fe.Class != failure.UpstreamError {
			t.Errorf("%s: %v, want upstream_error", bad, err)
		}
	}
}
