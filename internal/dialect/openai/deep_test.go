package openai_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/switchyard-gw/switchyard/internal/dialect"
	"github.com/switchyard-gw/switchyard/internal/dialect/openai"
	"github.com/switchyard-gw/switchyard/internal/failure"
	"github.com/switchyard-gw/switchyard/internal/sse"
)

// deepValue is n nested arrays, closed: valid JSON nested n levels (24 MB at 12 million).
func deepValue(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

const crashDepth = 12_000_000 // overflowed the goroutine stack in gjson's validator (issue 9)

func wantClass(t *testing.T, what string, err error, class failure.Class) {
	t.Helper()
	var fe *failure.Error
	if !errors.As(err, &fe) || fe.Class != class || !strings.Contains(fe.Msg, dialect.DepthLimit) {
		t.Fatalf("%s: %v, want %s naming %q", what, err, class, dialect.DepthLimit)
	}
}

// Caller bodies nested deeper than dialect.MaxDepth are refused 400 invalid_request naming the
// limit, on every parser of the OpenAI surfaces, without recursing (12 million levels used to
// kill the process); nesting at the cap is still served.
func TestDeepRequestRefused(t *testing.T) {
	deep := []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}],"metadata":` + deepValue(crashDepth) + `}`)
	_, err := openai.ParseRequest(deep)
	wantClass(t, "ParseRequest", err, failure.InvalidRequest)
	_, err = openai.DecodeRequest(deep)
	wantClass(t, "DecodeRequest", err, failure.InvalidRequest)
	_, err = openai.ParseEmbeddingsRequest([]byte(`{"model":"m","input":` + deepValue(crashDepth) + `}`))
	wantClass(t, "ParseEmbeddingsRequest", err, failure.InvalidRequest)

	// At the cap (the body object is level 1): accepted.
	ok := []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}],"metadata":` + deepValue(dialect.MaxDepth-1) + `}`)
	if _, err := openai.ParseRequest(ok); err != nil {
		t.Fatalf("ParseRequest at the cap: %v", err)
	}
	over := []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}],"metadata":` + deepValue(dialect.MaxDepth) + `}`)
	_, err = openai.ParseRequest(over)
	wantClass(t, "ParseRequest one past the cap", err, failure.InvalidRequest)
}

// Provider bytes nested too deep are an upstream_error (a provider failure that fails over
// before commit): the non-stream body (same-dialect and translated), a stream event (same-dialect
// and translated), and an error body is read as not JSON (classified by its status).
func TestDeepProviderAnswerFails(t *testing.T) {
	body := []byte(`{"id":"x","object":"chat.completion","model":"gpt","choices":[{"index":0,"message":{"role":"assistant","content":"hi"}}],"extra":` + deepValue(crashDepth) + `}`)
	_, _, _, err := openai.RewriteResponse(nil, body, "m")
	wantClass(t, "RewriteResponse", err, failure.UpstreamError)
	_, err = openai.DecodeResponse(body)
	wantClass(t, "DecodeResponse", err, failure.UpstreamError)

	data := []byte(`{"id":"x","model":"gpt","choices":[{"index":0,"delta":{"content":"hi"}}],"extra":` + deepValue(crashDepth) + `}`)
	var st dialect.StreamState
	st.Reset("m", false)
	out, kind := openai.ScanFrame(nil, sse.Event{Data: data}, &st)
	if kind != dialect.FrameError || len(out) != 0 {
		t.Fatalf("ScanFrame: kind %v, %d bytes; want FrameError, nothing forwarded", kind, len(out))
	}
	wantClass(t, "NormalizeStreamError", openai.NormalizeStreamError(data), failure.UpstreamError)
	if fe := failure.From(openai.NormalizeStreamError(data)); fe.UpstreamStatus != 200 {
		t.Fatalf("NormalizeStreamError status %d, want 200", fe.UpstreamStatus)
	}
	var d openai.StreamDecoder
	d.Reset()
	evs := d.Decode(sse.Event{Data: data}, nil)
	if len(evs) != 1 || evs[0].Type != dialect.EventError {
		t.Fatalf("StreamDecoder.Decode: %+v, want one EventError", evs)
	}

	errBody := []byte(`{"error":{"message":"x","type":"invalid_request_error","code":"context_length_exceeded","extra":` + deepValue(1000) + `}}`)
	fe := failure.From(openai.NormalizeError(500, nil, errBody))
	if fe.Class != failure.UpstreamError {
		t.Fatalf("NormalizeError(500, deep body) class %v, want upstream_error", fe.Class)
	}
	fe = failure.From(openai.NormalizeError(400, nil, errBody))
	if fe.Class == failure.ContextOverflow {
		t.Fatalf("NormalizeError read fields of a body nested too deep: %v", fe)
	}
}

// A tool call's arguments are a JSON string inside the body: its own nesting is not seen by
// the body's depth gate, so the encoders check it again before validating it.
func TestDeepToolArgumentsInTranslation(t *testing.T) {
	r := &dialect.Response{ID: "x", Stop: dialect.StopToolUse, Parts: []dialect.Part{
		{Type: dialect.PartToolCall, ToolCallID: "c", ToolName: "f", Arguments: "{\"a\":" + deepValue(crashDepth) + "}"},
	}}
	out := openai.AppendResponse(nil, r, "m", "req")
	if !dialect.Valid(out) {
		t.Fatalf("AppendResponse wrote invalid JSON")
	}
	req := &dialect.Request{Messages: []dialect.Message{{Role: dialect.RoleUser, Parts: []dialect.Part{{Type: dialect.PartText, Text: "hi"}}}},
		Tools: []dialect.Tool{{Name: "f", Parameters: []byte(`{"a":` + deepValue(crashDepth) + `}`)}}}
	if _, err := openai.AppendRequest(nil, req, "gpt", 0); err == nil || failure.From(err).Class != failure.InvalidRequest {
		t.Fatalf("AppendRequest with a tool schema nested too deep: %v, want invalid_request", err)
	}
}

// A body that is not valid UTF-8 is refused invalid_request by every parser of a caller body
// (FuzzDecodeRequest found it): the encoders write U+FFFD for invalid bytes, so a decoded
// request used not to survive its own round trip, and the providers refuse such JSON anyway.
func TestInvalidUTF8Refused(t *testing.T) {
	for _, b := range []string{
		"{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"a\xffb\"}]}",
		"{\"model\":\"m\xc3\",\"messages\":[{\"role\":\"user\",\"content\":\"ab\"}]}",
		"{\"model\":\"m\",\"messages\":[],\"stop\":\"\xed\xa0\x80\"}", // an encoded surrogate
	} {
		_, err1 := openai.ParseRequest([]byte(b))
		_, err2 := openai.DecodeRequest([]byte(b))
		for _, err := range []error{err1, err2} {
			if fe := failure.From(err); fe == nil || fe.Class != failure.InvalidRequest || !strings.Contains(fe.Msg, "UTF-8") {
				t.Errorf("%q: %v, want invalid_request naming UTF-8", b, err)
			}
		}
	}
	// Escapes are not bytes: a lone surrogate escape decodes to U+FFFD and round-trips.
	r, err := openai.DecodeRequest([]byte(`{"model":"m","messages":[{"role":"user","content":"a\ud800b"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	checkRoundTrip(t, r)
}
