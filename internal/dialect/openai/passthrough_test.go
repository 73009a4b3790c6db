package openai

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/switchyard-gw/switchyard/internal/dialect"
	"github.com/switchyard-gw/switchyard/internal/failure"
	"github.com/switchyard-gw/switchyard/internal/sse"
)

// R-MODEL-7, R-DIALECT-3: ParseRequest reads what routing needs and refuses bad input with a
// typed invalid_request naming the field.
func TestParseRequest(t *testing.T) {
	for _, tc := range []struct {
		name, body, param string
		msg               string // a part of the error message, when set
		ok                bool
		want              dialect.RequestInfo
	}{
		{name: "plain", body: `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`, ok: true, want: dialect.RequestInfo{Model: "gpt-4o"}},
		{name: "stream usage", body: `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true},"max_completion_tokens":12}`, ok: true,
			want: dialect.RequestInfo{Model: "m", Stream: true, IncludeUsage: true, MaxTokens: 12}},
		{name: "n=1 ok", body: `{"model":"m","messages":[{"role":"user","content":"hi"}],"n":1}`, ok: true, want: dialect.RequestInfo{Model: "m"}},
		{name: "n=2", body: `{"model":"m","messages":[],"n":2}`, param: "n"},
		{name: "n string", body: `{"model":"m","messages":[],"n":"2"}`, param: "n"},
		{name: "not json", body: `{"model":`, param: ""},
		{name: "array", body: `[1]`, param: ""},
		{name: "model number", body: `{"model":5,"messages":[]}`, param: "model"},
		{name: "messages empty", body: `{"model":"m","messages":[ ]}`, param: "messages", msg: "[] is too short - 'messages'"},
		{name: "model empty", body: `{"model":"","messages":[]}`, param: "model"},
		{name: "no messages", body: `{"model":"m"}`, param: "messages"},
		{name: "stream string", body: `{"model":"m","messages":[],"stream":"yes"}`, param: "stream"},
		{name: "max_tokens negative", body: `{"model":"m","messages":[],"max_tokens":-1}`, param: "max_tokens"},
		{name: "max_completion_tokens too large", body: `{"model":"m","messages":[],"max_completion_tokens":9223372036854775807}`,
			param: "max_completion_tokens", msg: "from 0 to 10^15"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			info, err := ParseRequest([]byte(tc.body))
			if tc.ok {
				if err != nil {
					t.Fatal(err)
				}
				info.ModelStart, info.ModelEnd = 0, 0
				if info != tc.want {
					t.Fatalf("got %+v want %+v", info, tc.want)
				}
				return
			}
			fe := failure.From(err)
			if fe == nil || fe.Class != failure.InvalidRequest || fe.Param != tc.param {
				t.Fatalf("got %v (param %q), want invalid_request param %q", err, fe.Param, tc.param)
			}
			if !strings.Contains(fe.Msg, tc.msg) {
				t.Fatalf("message %q does not say %q", fe.Msg, tc.msg)
			}
		})
	}
}

// R-DIALECT-3 and wire.md §8.1: only `model` changes, plus include_usage forced on a stream;
// every other byte (unknown fields included) is the caller's.
func TestAppendUpstreamBody(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"non-stream", `{"model":"a","messages":[{"role":"user","content":"hi"}],"x_unknown":{"k":[1,2]}}`, `{"model":"up","messages":[{"role":"user","content":"hi"}],"x_unknown":{"k":[1,2]}}`},
		{"stream no options", `{"model":"a","stream":true,"messages":[{"role":"user","content":"hi"}]}`, `{"stream_options":{"include_usage":true},"model":"up","stream":true,"messages":[{"role":"user","content":"hi"}]}`},
		{"stream with usage", `{"model":"a","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`, `{"model":"up","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`},
		{"stream usage false", `{"model":"a","stream":true,"stream_options":{"include_usage":false},"messages":[{"role":"user","content":"hi"}]}`, `{"model":"up","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`},
		{"options before model", `{"stream_options":{"include_obfuscation":false},"stream":true,"model":"a","messages":[{"role":"user","content":"hi"}]}`, `{"stream_options":{"include_usage":true,"include_obfuscation":false},"stream":true,"model":"up","messages":[{"role":"user","content":"hi"}]}`},
		{"escaped id", `{"model":"a","messages":[{"role":"user","content":"hi"}]}`, `{"model":"up","messages":[{"role":"user","content":"hi"}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			info, err := ParseRequest([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			got := string(AppendUpstreamBody(nil, []byte(tc.in), &info, "up"))
			if got != tc.want {
				t.Fatalf("\n got %s\nwant %s", got, tc.want)
			}
			if !json.Valid([]byte(got)) {
				t.Fatal("invalid JSON")
			}
		})
	}
}

// R-FAIL-2: role-only chunks are lifecycle; text, tool calls, refusals and finish reasons are
// semantic; a usage report alone is not (providers may report usage on every chunk); [DONE] ends; an error object is an in-stream error; a usage chunk is dropped
// unless the caller asked (wire.md §1.5). The model is echoed as the caller's id (R-MODEL-6).
func TestScanFrame(t *testing.T) {
	for _, tc := range []struct {
		name, data   string
		includeUsage bool
		kind         dialect.FrameKind
	}{
		{"role only", `{"id":"c","model":"up","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"finish_reason":null}],"usage":null}`, false, dialect.FrameLifecycle},
		{"text", `{"id":"c","model":"up","choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]}`, false, dialect.FrameSemantic},
		{"tool call", `{"id":"c","model":"up","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":""}}]}}]}`, false, dialect.FrameSemantic},
		{"refusal", `{"id":"c","model":"up","choices":[{"index":0,"delta":{"refusal":"no"}}]}`, false, dialect.FrameSemantic},
		{"reasoning", `{"id":"c","model":"up","choices":[{"index":0,"delta":{"reasoning_content":"hmm"}}]}`, false, dialect.FrameSemantic},
		{"finish", `{"id":"c","model":"up","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`, false, dialect.FrameSemantic},
		{"usage asked", `{"id":"c","model":"up","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2}}`, true, dialect.FrameLifecycle},
		{"role chunk with usage", `{"id":"c","model":"up","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}],"usage":{"prompt_tokens":5,"completion_tokens":0}}`, false, dialect.FrameLifecycle},
		{"text chunk with usage", `{"id":"c","model":"up","choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}],"usage":{"prompt_tokens":5,"completion_tokens":1}}`, false, dialect.FrameSemantic},
		{"usage not asked", `{"id":"c","model":"up","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2}}`, false, dialect.FrameDrop},
		{"error", `{"error":{"message":"overloaded","type":"server_error"}}`, false, dialect.FrameError},
		{"done", `[DONE]`, false, dialect.FrameDone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var st dialect.StreamState
			st.Reset("mine", tc.includeUsage)
			out, kind := ScanFrame(nil, sse.Event{Data: []byte(tc.data)}, &st)
			if kind != tc.kind {
				t.Fatalf("kind %d, want %d", kind, tc.kind)
			}
			switch kind {
			case dialect.FrameError, dialect.FrameDrop:
				if len(out) != 0 {
					t.Fatalf("forwarded %q", out)
				}
			case dialect.FrameDone:
			default:
				s := string(out)
				if !strings.HasPrefix(s, "data: ") || !strings.HasSuffix(s, "\n\n") || !strings.Contains(s, `"model":"mine"`) || strings.Contains(s, `"up"`) {
					t.Fatalf("frame %q", s)
				}
			}
		})
	}
}

// Usage is converted to the canonical additive form: OpenAI prompt_tokens include cached tokens.
func TestScanFrameUsage(t *testing.T) {
	var st dialect.StreamState
	st.Reset("m", false)
	ScanFrame(nil, sse.Event{Data: []byte(`{"choices":[],"usage":{"prompt_tokens":100,"completion_tokens":20,"prompt_tokens_details":{"cached_tokens":30},"completion_tokens_details":{"reasoning_tokens":5}}}`)}, &st)
	want := dialect.Usage{Input: 70, Cached: 30, Output: 20, Reasoning: 5}
	if !st.UsageSeen || st.Usage != want {
		t.Fatalf("usage %+v", st.Usage)
	}
}

// A JSON payload split over two data lines is forwarded as one valid data line.
func TestScanFrameMultiLineData(t *testing.T) {
	var st dialect.StreamState
	st.Reset("m", false)
	out, _ := ScanFrame(nil, sse.Event{Data: []byte("{\"model\":\"x\",\n\"choices\":[{\"delta\":{\"content\":\"a\"}}]}")}, &st)
	lines := strings.Split(strings.TrimSuffix(string(out), "\n\n"), "\n")
	if len(lines) != 1 || !json.Valid([]byte(strings.TrimPrefix(lines[0], "data: "))) {
		t.Fatalf("frame %q", out)
	}
}

// A duplicated key is refused: routing reads the first `model`, a provider may read the last.
func TestParseRequestDuplicateKeys(t *testing.T) {
	for _, body := range []string{
		`{"model":"a","model":"b","messages":[]}`,
		`{"model":"a","stream":false,"messages":[],"stream":true}`,
	} {
		_, err := ParseRequest([]byte(body))
		if fe := failure.From(err); fe == nil || fe.Class != failure.InvalidRequest {
			t.Errorf("%s: %v", body, err)
		}
	}
	if _, err := ParseRequest([]byte(`{"model":"a","messages":[{"role":"user","content":"x"},{"role":"user","content":"y"}]}`)); err != nil {
		t.Errorf("nested repeated keys are fine: %v", err)
	}
}

// The finish: a finish_reason sets Finished (a clean end after it is complete, not truncated);
// per-chunk usage reports keep the latest.
func TestScanFrameFinishedAndLatestUsage(t *testing.T) {
	var st dialect.StreamState
	st.Reset("m", false)
	for _, d := range []string{
		`{"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":null}],"usage":{"prompt_tokens":5,"completion_tokens":1}}`,
		`{"choices":[{"index":0,"delta":{"content":"b"},"finish_reason":null}],"usage":{"prompt_tokens":5,"completion_tokens":2}}`,
	} {
		ScanFrame(nil, sse.Event{Data: []byte(d)}, &st)
	}
	if st.Finished || st.Usage.Output != 2 || !st.UsageSeen {
		t.Fatalf("before the finish: %+v", st)
	}
	ScanFrame(nil, sse.Event{Data: []byte(`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":3}}`)}, &st)
	if !st.Finished || st.Usage.Output != 3 {
		t.Fatalf("after the finish: %+v", st)
	}
}
