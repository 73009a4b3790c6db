package relay

// Golden files for cross-dialect translation (R-DIALECT-2, docs/translation.md), driven through
// the relay's own translation state (translate.go: appendBody, rewriteResponse, scanFrame) and
// the codec adapters (CodecFor), exactly as Relay.Run composes them per attempt.
//
// Layout: testdata/<caller>-<upstream>/<case>/ with
//
//	request.json           the caller's body (hand-written)
//	case.json              optional: {"max_output_tokens": N} (the catalog model's output limit)
//	upstream_request.json  what the deployment receives (generated; indented, keys in wire order)
//	dropped_params.json    the attempt's dropped_params for the audit (generated; absent when none)
//	response.json          a non-stream upstream body (hand-written) -> caller_response.json
//	stream.sse             an upstream stream transcript (hand-written) -> caller_stream.sse
//	error.json + status    an upstream error body and status (hand-written) -> caller_error.json
//	caller_error.json      also the typed 400 when the request cannot be translated (refusal)
//
// Run `go test ./internal/relay -run TestGolden -update` to regenerate the generated files; without
// -update any difference fails. The OpenAI `created` timestamps are masked to 0. Every generated
// caller stream must also accumulate without error in the caller's official SDK.
//
// Coverage of docs/translation.md (o-a = openai-anthropic, a-o = anthropic-openai):
//
// OpenAI caller DecodeRequest rows:
//   - model; system/developer anywhere, parts joined, empty skipped: o-a/system_developer
//   - user text parts, empty text skipped: o-a/system_developer, o-a/multipart_images
//   - image_url data:/http(s), detail dropped; other scheme 400: o-a/multipart_images, o-a/refuse_image_scheme
//   - file file_data PDF; file_id 400: o-a/multipart_images, o-a/refuse_file_id
//   - input_audio 400: o-a/refuse_input_audio
//   - assistant content/refusal/tool_calls; empty arguments {}; custom call 400; reasoning_content
//     dropped: o-a/tool_results_grouped, o-a/refusal, o-a/refuse_custom_tool_call
//   - consecutive tool messages -> one user turn: o-a/tool_results_grouped
//   - legacy functions/function_call/function messages: o-a/legacy_functions
//   - message name dropped: o-a/system_developer
//   - max_completion_tokens ?? max_tokens: o-a/tools_auto_parallel, o-a/stop_sequences
//   - stop string/array: o-a/stop_sequences, o-a/system_developer
//   - temperature (clamped), top_p, top_k: o-a/system_developer
//   - tools function; custom tool 400: o-a/tools_auto_parallel, o-a/refuse_custom_tool
//   - tool_choice auto/none/required/function; allowed_tools 400: o-a/tools_auto_parallel,
//     o-a/tool_choice_none, o-a/tool_choice_required, o-a/tool_choice_function, o-a/refuse_allowed_tools
//   - parallel_tool_calls false: o-a/tool_choice_required
//   - response_format json_schema / json_object dropped: o-a/response_format_json_schema, o-a/response_format_json_object
//   - reasoning_effort (and minimal -> low): o-a/thinking, o-a/reasoning_minimal
//   - safety_identifier ?? user; metadata dropped: o-a/metadata_user
//   - prompt_cache_key (not sent to Anthropic): o-a/metadata_user
//   - stream, include_usage true/false: o-a/usage_cache (true), o-a/system_developer (false)
//   - n > 1 400: o-a/refuse_n2
//   - anything else dropped only when meaningful: o-a/metadata_user (seed, logprobs:false not dropped)
//
// Anthropic encoder rows (OpenAI caller): system joined (o-a/system_developer); same-role merge and
// tool results first (o-a/tool_results_grouped); tool id rewrite (o-a/tool_results_grouped);
// non-object arguments 400 (o-a/refuse_tool_args_not_object); image media types, image/jpg ->
// image/jpeg, bad type 400 (o-a/multipart_images, o-a/refuse_image_media_type); document PDF
// (o-a/multipart_images); refusal history as text (o-a/refusal); default max_tokens from the catalog
// and 4096 (o-a/max_tokens_default_catalog, o-a/max_tokens_default_4096); tools without parameters
// (o-a/tools_auto_parallel); ResponseFormat -> output_config.format (o-a/response_format_json_schema);
// User -> metadata.user_id (o-a/metadata_user).
//
// Anthropic caller DecodeRequest rows: max_tokens required 400 (a-o/refuse_missing_max_tokens);
// system string/blocks, cache_control dropped, role:system hoisted (a-o/system_blocks); text
// citations dropped (a-o/system_blocks); image base64/url, document base64 and text source
// (a-o/images_documents); document by URL 400 (a-o/refuse_document_url); tool_use/tool_result
// with is_error and image content (a-o/tool_results); thinking/redacted_thinking dropped by the
// OpenAI encoder (a-o/thinking_across_tools); server_tool_use block 400
// (a-o/refuse_server_tool_use_block); stop_sequences, temperature, top_p, top_k dropped
// (a-o/system_blocks); > 4 stop sequences 400 (a-o/refuse_stop_5); tools with strict; server tool
// 400 (a-o/tools_any_parallel, a-o/refuse_server_tool); tool_choice auto/any/tool/none and
// disable_parallel_tool_use (a-o/tool_choice_auto, a-o/tools_any_parallel, a-o/tool_choice_tool,
// a-o/tool_choice_none); metadata.user_id (a-o/system_blocks); thinking enabled/adaptive and
// budgets -> reasoning_effort (a-o/thinking_across_tools, a-o/thinking_adaptive); output_config
// effort (a-o/output_format); output_config.format json_schema / other type 400 (a-o/output_format,
// a-o/refuse_output_format_text); mcp_servers 400 (a-o/refuse_mcp_servers); service_tier,
// container, context_management, unknown fields dropped (a-o/dropped_params).
//
// Responses and streams: stop reasons each way: end_turn/stop (o-a/system_developer,
// a-o/system_blocks), max_tokens/length (o-a/max_tokens_default_catalog, a-o/stop_reasons_length),
// model_context_window_exceeded -> length (o-a/max_tokens_default_4096), stop_sequence -> stop
// (o-a/stop_sequences), pause_turn -> stop (o-a/pause_turn), tool_use/tool_calls
// (o-a/tools_auto_parallel, a-o/tools_any_parallel), function_call -> tool_use
// (a-o/stop_reasons_function_call), refusal/content_filter (o-a/refusal, a-o/refusal); usage with
// cached and cache-write tokens (o-a/usage_cache, a-o/usage_cached); reasoning text and signatures
// (o-a/thinking, a-o/thinking_across_tools); parallel tool calls with interleaved fragments
// (a-o/tools_any_parallel); upstream errors in the caller's dialect (o-a/error_*, a-o/error_*);
// in-stream errors (o-a/stream_error, a-o/stream_error).

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"

	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/dialect"
	"github.com/switchyard-gw/switchyard/internal/failure"
	"github.com/switchyard-gw/switchyard/internal/sse"
)

// knownBugs are cases that reveal a production bug not yet fixed; they are skipped, naming it.
var knownBugs = map[string]string{}

var update = flag.Bool("update", false, "rewrite the generated golden files under testdata/")

const goldenRequestID = "req_golden01"

var createdRe = regexp.MustCompile(`"created":[0-9]+`)

// goldenPairs maps a testdata directory to (caller, upstream) dialects and the upstream model.
var goldenPairs = []struct {
	dir           string
	caller, up    catalog.Dialect
	upstreamModel string
}{
	{"openai-anthropic", catalog.OpenAI, catalog.Anthropic, "claude-sonnet-4-5-20250929"},
	{"anthropic-openai", catalog.Anthropic, catalog.OpenAI, "gpt-4.1-2025-04-14"},
}

// TestGolden translates every case under testdata/ and compares with the generated files
// (R-DIALECT-2: one decode into the canonical types, one encode, each way; R-FAIL-4: an in-stream
// failure is one terminal error in the caller's dialect; R-ERR: upstream errors in the caller's
// dialect with its native types).
func TestGolden(t *testing.T) {
	for _, pair := range goldenPairs {
		dirs, err := os.ReadDir(filepath.Join("testdata", pair.dir))
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range dirs {
			if !d.IsDir() {
				continue
			}
			dir := filepath.Join("testdata", pair.dir, d.Name())
			t.Run(pair.dir+"/"+d.Name(), func(t *testing.T) {
				runGolden(t, dir, pair.caller, pair.up, pair.upstreamModel)
			})
		}
	}
}

func runGolden(t *testing.T, dir string, callerD, upD catalog.Dialect, upstreamModel string) {
	caller, up := CodecFor(callerD), CodecFor(upD)
	body := mustRead(t, filepath.Join(dir, "request.json"))
	var cfg struct {
		MaxOutputTokens int64 `json:"max_output_tokens"`
		// Reasoning is the catalog model's reasoning flag; absent is true (the cases that map
		// reasoning parameters), false the cases that drop them.
		Reasoning *bool `json:"reasoning"`
	}
	if b, err := os.ReadFile(filepath.Join(dir, "case.json")); err == nil {
		if err := json.Unmarshal(b, &cfg); err != nil {
			t.Fatalf("case.json: %v", err)
		}
	}
	if msg, ok := knownBugs[filepath.Base(filepath.Dir(dir))+"/"+filepath.Base(dir)]; ok {
		t.Skip("BUG: " + msg)
	}
	info, err := caller.ParseRequest(body)
	if err != nil {
		// Refused before any routing, whatever the deployment's dialect.
		checkRefusal(t, dir, caller, err)
		return
	}
	var tr translation
	tr.reset()
	req := &Request{ID: goldenRequestID, Surface: callerD, Codec: caller, Body: body, Info: info}
	out, dropped, err := tr.appendBody(nil, req, up, upstreamModel, cfg.MaxOutputTokens, 0, cfg.Reasoning == nil || *cfg.Reasoning)
	if err != nil {
		checkRefusal(t, dir, caller, err)
		return
	}
	if !json.Valid(out) {
		t.Fatalf("upstream body is not valid JSON: %s", out)
	}
	compareGolden(t, filepath.Join(dir, "upstream_request.json"), indent(t, out))
	droppedFile := filepath.Join(dir, "dropped_params.json")
	if len(dropped) > 0 {
		b, _ := json.Marshal(dropped)
		compareGolden(t, droppedFile, append(b, '\n'))
	} else if _, err := os.Stat(droppedFile); err == nil {
		if *update {
			_ = os.Remove(droppedFile)
		} else {
			t.Errorf("nothing was dropped but %s exists", droppedFile)
		}
	}

	ran := false
	if b, err := os.ReadFile(filepath.Join(dir, "response.json")); err == nil {
		ran = true
		out, _, _, err := tr.rewriteResponse(nil, b, up, caller, info.Model, goldenRequestID)
		if err != nil {
			t.Fatalf("rewriteResponse: %v", err)
		}
		if !json.Valid(out) {
			t.Fatalf("caller response is not valid JSON: %s", out)
		}
		checkSDKResponse(t, callerD, out)
		compareGolden(t, filepath.Join(dir, "caller_response.json"), indent(t, mask(out)))
	}
	if b, err := os.ReadFile(filepath.Join(dir, "stream.sse")); err == nil {
		ran = true
		out := translateStream(t, &tr, b, up, caller, info)
		checkSDKStream(t, callerD, out)
		compareGolden(t, filepath.Join(dir, "caller_stream.sse"), mask(out))
	}
	if b, err := os.ReadFile(filepath.Join(dir, "error.json")); err == nil {
		ran = true
		st, err := strconv.Atoi(strings.TrimSpace(string(mustRead(t, filepath.Join(dir, "status")))))
		if err != nil {
			t.Fatalf("status: %v", err)
		}
		hdr := http.Header{}
		hdr.Set("Content-Type", "application/json")
		if st == 429 {
			hdr.Set("Retry-After", "7")
		}
		fe := failure.From(up.NormalizeError(st, hdr.Get, b))
		compareGolden(t, filepath.Join(dir, "caller_error.json"), callerError(caller, fe))
	}
	if !ran {
		t.Errorf("case has no response.json, stream.sse or error.json")
	}
}

// checkRefusal compares a refusal to translate: the caller gets the typed 400 invalid_request
// (wire.md §5.7) and nothing reaches the deployment.
func checkRefusal(t *testing.T, dir string, caller Codec, err error) {
	t.Helper()
	fe := failure.From(err)
	if fe.Class != failure.InvalidRequest {
		t.Errorf("refusal class = %q, want invalid_request", fe.Class)
	}
	compareGolden(t, filepath.Join(dir, "caller_error.json"), callerError(caller, fe))
	for _, f := range []string{"upstream_request.json", "response.json", "stream.sse", "error.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("%s exists but the request was refused", f)
		}
	}
}

// translateStream runs an upstream transcript through the relay's per-frame translation, writing
// what the relay writes: lifecycle and semantic frames, never dropped ones; an upstream error or
// an end without the terminal frame becomes the relay's terminal error (R-FAIL-4). A comment line
// records the class the in-stream error normalized to.
func translateStream(t *testing.T, tr *translation, transcript []byte, up, caller Codec, info dialect.RequestInfo) []byte {
	t.Helper()
	up.resetDecoder(tr)
	caller.resetEncoder(tr, info.Model, goldenRequestID, info.IncludeUsage)
	var st dialect.StreamState
	st.Reset(info.Model, info.IncludeUsage)
	rd := sse.NewReader(bytes.NewReader(transcript))
	var w []byte
	term := &failure.Error{Class: failure.UpstreamTruncated, Msg: "the provider failed after the response started; the response is incomplete"}
	for {
		ev, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return caller.AppendStreamError(append(w, ": golden: the upstream ended without its terminal frame\n\n"...), term, goldenRequestID)
		}
		if err != nil {
			t.Fatalf("reading stream.sse: %v", err)
		}
		out, kind := tr.scanFrame(nil, ev, up, caller, &st)
		switch kind {
		case dialect.FrameDrop:
			continue
		case dialect.FrameError:
			fe := failure.From(up.NormalizeStreamError(ev.Data))
			w = fmt.Appendf(w, ": golden: upstream in-stream error normalized to %s\n\n", fe.Class)
			return caller.AppendStreamError(w, term, goldenRequestID)
		}
		w = append(w, out...)
		if kind == dialect.FrameDone {
			if !st.UsageSeen {
				w = append(w, ": golden: no usage reported\n\n"...)
			}
			return w
		}
	}
}

// callerError renders what WriteError sends: status, error-code header and the body.
func callerError(c Codec, fe *failure.Error) []byte {
	rec := httptest.NewRecorder()
	WriteError(rec, c, goldenRequestID, fe, 1, nil)
	var b bytes.Buffer
	fmt.Fprintf(&b, "{\"status\": %d, \"x-switchyard-error-code\": %q, \"retry-after\": %q, \"body\": ",
		rec.Code, rec.Header().Get("X-Switchyard-Error-Code"), rec.Header().Get("Retry-After"))
	b.Write(rec.Body.Bytes())
	b.WriteString("}")
	var out bytes.Buffer
	if err := json.Indent(&out, b.Bytes(), "", "  "); err != nil {
		return append(b.Bytes(), '\n')
	}
	return append(out.Bytes(), '\n')
}

// checkSDKResponse decodes a non-stream caller body with the caller's official SDK types.
func checkSDKResponse(t *testing.T, d catalog.Dialect, body []byte) {
	t.Helper()
	if d == catalog.OpenAI {
		var c openai.ChatCompletion
		if err := json.Unmarshal(body, &c); err != nil || len(c.Choices) != 1 {
			t.Errorf("openai SDK: %v (%d choices)", err, len(c.Choices))
			return
		}
		for _, tc := range c.Choices[0].Message.ToolCalls {
			if !json.Valid([]byte(tc.Function.Arguments)) {
				t.Errorf("tool call %s arguments are not JSON: %q", tc.ID, tc.Function.Arguments)
			}
		}
		return
	}
	var m anthropic.Message
	if err := json.Unmarshal(body, &m); err != nil || m.Type != "message" {
		t.Errorf("anthropic SDK: %v (type %q)", err, m.Type)
	}
}

// checkSDKStream accumulates a caller stream with the caller's official SDK accumulator, which
// fails on what real clients reject (changing chunk ids, non-contiguous block indexes), and checks
// that every tool call's accumulated arguments are valid JSON.
func checkSDKStream(t *testing.T, d catalog.Dialect, stream []byte) {
	t.Helper()
	rd := sse.NewReader(bytes.NewReader(stream))
	var acc openai.ChatCompletionAccumulator
	var msg anthropic.Message
	for {
		ev, err := rd.Next()
		if err != nil {
			break
		}
		if d == catalog.OpenAI {
			if string(ev.Data) == "[DONE]" || bytes.Contains(ev.Data, []byte(`"error":{`)) {
				continue
			}
			var c openai.ChatCompletionChunk
			if err := json.Unmarshal(ev.Data, &c); err != nil {
				t.Fatalf("openai chunk %s: %v", ev.Data, err)
			}
			if !acc.AddChunk(c) {
				t.Fatalf("openai accumulator rejected chunk %s", ev.Data)
			}
			continue
		}
		if string(ev.Name) == "error" {
			continue
		}
		var e anthropic.MessageStreamEventUnion
		if err := json.Unmarshal(ev.Data, &e); err != nil {
			t.Fatalf("anthropic event %s: %v", ev.Data, err)
		}
		if err := msg.Accumulate(e); err != nil {
			t.Fatalf("anthropic accumulator: %v (event %s)", err, ev.Data)
		}
	}
	if d == catalog.OpenAI {
		for _, ch := range acc.Choices {
			for _, tc := range ch.Message.ToolCalls {
				if !json.Valid([]byte(tc.Function.Arguments)) {
					t.Errorf("accumulated tool call %s arguments are not JSON: %q", tc.ID, tc.Function.Arguments)
				}
			}
		}
		return
	}
	for _, b := range msg.Content {
		if b.Type == "tool_use" && !json.Valid(b.Input) {
			t.Errorf("accumulated tool_use %s input is not JSON: %q", b.ID, b.Input)
		}
	}
}

func mask(b []byte) []byte { return createdRe.ReplaceAll(b, []byte(`"created":0`)) }

func indent(t *testing.T, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		t.Fatalf("indent: %v: %s", err, b)
	}
	return append(out.Bytes(), '\n')
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// compareGolden compares got with the file, or rewrites the file under -update.
func compareGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("%v (run with -update to create it)", err)
		return
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (run with -update to accept):\n--- got ---\n%s\n--- want ---\n%s", path, got, want)
	}
}
