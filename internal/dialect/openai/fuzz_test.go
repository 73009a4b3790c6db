package openai_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/switchyard-gw/switchyard/internal/dialect"
	"github.com/switchyard-gw/switchyard/internal/dialect/openai"
	"github.com/switchyard-gw/switchyard/internal/failure"
	"github.com/switchyard-gw/switchyard/internal/sse"
)

// FuzzParseRequest: the pass-through parsers of the chat and embeddings surfaces never panic,
// refuse only with invalid_request, refuse what is nested deeper than dialect.MaxDepth, and
// when they accept: the model offsets point at the model string in the body, and the upstream
// body is valid JSON that parses back to the same request with the upstream model (and, on a
// stream, include_usage forced on).
func FuzzParseRequest(f *testing.F) {
	for _, b := range roundTripBodies {
		f.Add([]byte(b))
	}
	f.Add(benchBody)
	f.Add([]byte(`{"model":"m","messages":[],"stream":true,"stream_options":{"x":1}}`))
	f.Add([]byte(`{"stream_options":{"include_usage":false},"model":"m","messages":[],"stream":true}`))
	f.Add([]byte(`{"model":"m","input":["a","b"]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		if _, err := openai.ParseEmbeddingsRequest(body); err != nil && failure.From(err).Class != failure.InvalidRequest {
			t.Fatalf("embeddings: error class %v", err)
		}
		info, err := openai.ParseRequest(body)
		if err != nil {
			if failure.From(err).Class != failure.InvalidRequest {
				t.Fatalf("error class %v", err)
			}
			return
		}
		if dialect.TooDeep(body) {
			t.Fatal("accepted a body nested deeper than the cap")
		}
		if got := gjson.Parse(string(body[info.ModelStart:info.ModelEnd])); got.Type != gjson.String || got.Str != info.Model {
			t.Fatalf("model offsets [%d,%d) hold %q, not %q", info.ModelStart, info.ModelEnd, body[info.ModelStart:info.ModelEnd], info.Model)
		}
		up := openai.AppendUpstreamBody(nil, body, &info, "up-model")
		if !json.Valid(up) {
			t.Fatalf("upstream body is not JSON: %s", up)
		}
		info2, err := openai.ParseRequest(up)
		if err != nil {
			t.Fatalf("upstream body %s refused: %v", up, err)
		}
		if info2.Model != "up-model" || info2.Stream != info.Stream || info2.MaxTokens != info.MaxTokens {
			t.Fatalf("upstream body parses as %+v, from %+v", info2, info)
		}
		if info.Stream && !info2.IncludeUsage {
			t.Fatalf("a stream sent upstream without include_usage: %s", up)
		}
	})
}

// FuzzProviderBytes: every parser of provider bytes never panics on any input: the non-stream
// rewrite and decode (errors only upstream_error; output valid JSON with the caller's model),
// the error normalizers (always a classified error), the stream scan (frames forwarded as one
// data line) and the stream decoder.
func FuzzProviderBytes(f *testing.F) {
	f.Add([]byte(`{"id":"c","object":"chat.completion","model":"g","choices":[{"index":0,"message":{"role":"assistant","content":"hi","tool_calls":[{"id":"t","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":1}}}`))
	f.Add([]byte(`{"error":{"message":"m","type":"server_error","code":"rate_limit_exceeded","param":"messages"}}`))
	f.Add([]byte(`{"error":"text"}`))
	f.Add([]byte(`{"type":"error","code":"context_length_exceeded","message":"x"}`))
	f.Add([]byte(`[DONE]`))
	for _, fr := range upstreamTranscript {
		f.Add([]byte(fr))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		out, _, _, err := openai.RewriteResponse(nil, b, "caller-model")
		if err != nil {
			if failure.From(err).Class != failure.UpstreamError {
				t.Fatalf("RewriteResponse error class %v", err)
			}
		} else {
			if !dialect.Valid(out) {
				t.Fatalf("RewriteResponse output is not JSON: %s", out)
			}
			if m := gjson.GetBytes(b, "model"); m.Type == gjson.String && gjson.GetBytes(out, "model").Str != "caller-model" {
				t.Fatalf("model not echoed: %s", out)
			}
		}
		if r, err := openai.DecodeResponse(b); err != nil {
			if failure.From(err).Class != failure.UpstreamError {
				t.Fatalf("DecodeResponse error class %v", err)
			}
		} else if enc := openai.AppendResponse(nil, r, "caller-model", "req"); !json.Valid(enc) {
			t.Fatalf("AppendResponse output is not JSON: %s", enc)
		}
		for _, status := range []int{400, 429, 500} {
			if fe := failure.From(openai.NormalizeError(status, nil, b)); fe == nil || fe.Class == "" {
				t.Fatalf("NormalizeError(%d) = %v", status, fe)
			}
		}
		if fe := failure.From(openai.NormalizeStreamError(b)); fe == nil || fe.Class == "" {
			t.Fatalf("NormalizeStreamError = %v", fe)
		}
		var st dialect.StreamState
		st.Reset("caller-model", true)
		frame, kind := openai.ScanFrame(nil, sse.Event{Data: b}, &st)
		switch kind {
		case dialect.FrameError, dialect.FrameDrop:
			if len(frame) != 0 {
				t.Fatalf("kind %v wrote %q", kind, frame)
			}
		default:
			if !bytes.HasPrefix(frame, []byte("data: ")) || !bytes.HasSuffix(frame, []byte("\n\n")) ||
				bytes.Count(frame, []byte("\n")) != 2 || bytes.ContainsRune(frame, '\r') {
				t.Fatalf("not one data line: %q", frame)
			}
		}
		if dialect.TooDeep(b) && kind != dialect.FrameError {
			t.Fatalf("a frame nested too deep was %v", kind)
		}
		var d openai.StreamDecoder
		for _, e := range d.Decode(sse.Event{Data: b}, nil) {
			if e.Type == 0 {
				t.Fatal("an event without a type")
			}
		}
	})
}

// FuzzParseImageEdit: no multipart body panics the image edit parser; an accepted one has
// its model at the offsets it reports, and the rewritten body parses again with the new model
// and the same n.
func FuzzParseImageEdit(f *testing.F) {
	f.Add([]byte("--b\r\nContent-Disposition: form-data; name=model\r\n\r\ngpt-image-1\r\n--b\r\nContent-Disposition: form-data; name=prompt\r\n\r\nhat\r\n--b\r\nContent-Disposition: form-data; name=\"image[]\"; filename=a.png\r\n\r\nPNG\r\n--b--\r\n"))
	f.Add([]byte("--b\r\nContent-Disposition: form-data; name=n\r\n\r\n3\r\n--b\r\nContent-Disposition: form-data; name=extra\r\n\r\n{}\r\n--b--"))
	f.Fuzz(func(t *testing.T, body []byte) {
		e, err := openai.ParseImageEdit(body, nil)
		if err != nil {
			return
		}
		if string(body[e.Info.ModelStart:e.Info.ModelEnd]) != e.Info.Model || e.Info.Images < 1 || e.Info.Images > openai.MaxImages {
			t.Fatalf("info %+v", e.Info)
		}
		out := openai.AppendImageEditBody(nil, body, &e.Info, "upstream-model")
		again, err := openai.ParseImageEdit(out, nil)
		if err != nil || again.Info.Model != "upstream-model" || again.Info.Images != e.Info.Images || len(again.Consumed) != len(e.Consumed) {
			t.Fatalf("rewritten body: %v %+v", err, again.Info)
		}
	})
}
