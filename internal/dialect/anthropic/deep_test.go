package anthropic_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/switchyard-gw/switchyard/internal/dialect"
	"github.com/switchyard-gw/switchyard/internal/dialect/anthropic"
	"github.com/switchyard-gw/switchyard/internal/failure"
	"github.com/switchyard-gw/switchyard/internal/sse"
)

// deepValue is n nested arrays, closed: valid JSON nested n levels (24 MB at 12 million).
func deepValue(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

const crashDepth = 12_000_000 // overflowed the goroutine stack in gjson's validator (issue 9)

func wantDepthError(t *testing.T, what string, err error, class failure.Class) {
	t.Helper()
	var fe *failure.Error
	if !errors.As(err, &fe) || fe.Class != class || !strings.Contains(fe.Msg, dialect.DepthLimit) {
		t.Fatalf("%s: %v, want %s naming %q", what, err, class, dialect.DepthLimit)
	}
}

// Caller bodies nested deeper than dialect.MaxDepth are refused invalid_request naming the limit
// on messages and count_tokens, in the pass-through parser and the translating decoder.
func TestDeepRequestRefused(t *testing.T) {
	deep := []byte(`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}],"metadata":` + deepValue(crashDepth) + `}`)
	_, err := anthropic.ParseRequest(deep)
	wantDepthError(t, "ParseRequest", err, failure.InvalidRequest)
	_, err = anthropic.ParseCountTokensRequest(deep)
	wantDepthError(t, "ParseCountTokensRequest", err, failure.InvalidRequest)
	_, err = anthropic.DecodeRequest(deep)
	wantDepthError(t, "DecodeRequest", err, failure.InvalidRequest)

	ok := []byte(`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}],"metadata":` + deepValue(dialect.MaxDepth-1) + `}`)
	if _, err := anthropic.ParseRequest(ok); err != nil {
		t.Fatalf("ParseRequest at the cap: %v", err)
	}
}

// Provider bytes nested too deep are an upstream_error: the non-stream body, a stream event
// (same-dialect scan and translating decoder), and an error body is read as not JSON.
func TestDeepProviderAnswerFails(t *testing.T) {
	body := []byte(`{"id":"x","type":"message","role":"assistant","model":"c","content":[{"type":"text","text":"hi"}],"extra":` + deepValue(crashDepth) + `}`)
	_, _, _, err := anthropic.RewriteResponse(nil, body, "m")
	wantDepthError(t, "RewriteResponse", err, failure.UpstreamError)
	_, err = anthropic.DecodeResponse(body)
	wantDepthError(t, "DecodeResponse", err, failure.UpstreamError)

	data := []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"},"extra":` + deepValue(crashDepth) + `}`)
	ev := sse.Event{Name: []byte("content_block_delta"), Data: data}
	var st dialect.StreamState
	st.Reset("m", false)
	out, kind := anthropic.ScanFrame(nil, ev, &st)
	if kind != dialect.FrameError || len(out) != 0 {
		t.Fatalf("ScanFrame: kind %v, %d bytes; want FrameError, nothing forwarded", kind, len(out))
	}
	wantDepthError(t, "NormalizeStreamError", anthropic.NormalizeStreamError(data), failure.UpstreamError)
	var d anthropic.StreamDecoder
	evs := d.Decode(ev, nil)
	if len(evs) != 1 || evs[0].Type != dialect.EventError {
		t.Fatalf("StreamDecoder.Decode: %+v, want one EventError", evs)
	}

	errBody := []byte(`{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long","extra":` + deepValue(1000) + `}}`)
	if fe := failure.From(anthropic.NormalizeError(529, nil, errBody)); fe.Class != failure.UpstreamError {
		t.Fatalf("NormalizeError(529, deep body) class %v, want upstream_error", fe.Class)
	}
	if fe := failure.From(anthropic.NormalizeError(400, nil, errBody)); fe.Class == failure.ContextOverflow {
		t.Fatalf("NormalizeError read fields of a body nested too deep: %v", fe)
	}
}

// Tool call arguments are JSON text inside a string, unseen by the body's gate: the encoders
// check their depth before validating them (a caller's tool call in a translated request, a
// provider's tool call in a translated response).
func TestDeepToolArgumentsInTranslation(t *testing.T) {
	args := "{\"a\":" + deepValue(crashDepth) + "}"
	req := &dialect.Request{Messages: []dialect.Message{
		{Role: dialect.RoleUser, Parts: []dialect.Part{{Type: dialect.PartText, Text: "hi"}}},
		{Role: dialect.RoleAssistant, Parts: []dialect.Part{{Type: dialect.PartToolCall, ToolCallID: "c", ToolName: "f", Arguments: args}}},
	}}
	if _, err := anthropic.AppendRequest(nil, req, "claude", 100); err == nil || failure.From(err).Class != failure.InvalidRequest {
		t.Fatalf("AppendRequest with tool call arguments nested too deep: %v, want invalid_request", err)
	}
	r := &dialect.Response{ID: "x", Stop: dialect.StopToolUse, Parts: []dialect.Part{
		{Type: dialect.PartToolCall, ToolCallID: "c", ToolName: "f", Arguments: args},
	}}
	out := anthropic.AppendResponse(nil, r, "m", "req")
	if !dialect.Valid(out) || !strings.Contains(string(out), `"input":{}`) {
		t.Fatalf("AppendResponse: %.200s", out)
	}
}
