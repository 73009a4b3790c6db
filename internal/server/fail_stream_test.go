package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/shared"
	"github.com/tidwall/gjson"

	"github.com/switchyard-gw/switchyard/internal/audit"
	"github.com/switchyard-gw/switchyard/internal/circuit"
	"github.com/switchyard-gw/switchyard/internal/config"
	fp "github.com/switchyard-gw/switchyard/internal/fakeprovider"
)

// sseEvent is one event of a stream as the caller received it.
type sseEvent struct {
	Event, Data string
	Comment     bool // a block of comment lines only (": keep-alive")
}

// parseSSE splits a whole event-stream body into its events (blank-line framed).
func parseSSE(body []byte) []sseEvent {
	var out []sseEvent
	s := strings.ReplaceAll(string(body), "\r\n", "\n")
	for block := range strings.SplitSeq(s, "\n\n") {
		if strings.TrimSpace(block) == "" {
			continue
		}
		var ev sseEvent
		comments, fields := 0, 0
		for line := range strings.SplitSeq(block, "\n") {
			switch {
			case strings.HasPrefix(line, ":"):
				comments++
			case strings.HasPrefix(line, "event:"):
				fields++
				ev.Event = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
			case strings.HasPrefix(line, "data:"):
				fields++
				d := strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " ")
				if ev.Data != "" {
					ev.Data += "\n"
				}
				ev.Data += d
			}
		}
		ev.Comment = comments > 0 && fields == 0
		out = append(out, ev)
	}
	return out
}

// streamText is the text content carried by the events of a stream in either dialect, and the
// number of content deltas.
func streamText(evs []sseEvent) (text string, deltas int) {
	for _, ev := range evs {
		if ev.Comment || ev.Data == "[DONE]" {
			continue
		}
		if c := gjson.Get(ev.Data, "choices.0.delta.content"); c.String() != "" {
			text += c.String()
			deltas++
		}
		if gjson.Get(ev.Data, "type").String() == "content_block_delta" {
			text += gjson.Get(ev.Data, "delta.text").String()
			deltas++
		}
	}
	return text, deltas
}

// countEvents counts events named name (Anthropic) or, for "role", OpenAI chunks carrying
// delta.role, or, for "[DONE]", the OpenAI terminator.
func countEvents(evs []sseEvent, name string) int {
	n := 0
	for _, ev := range evs {
		switch {
		case name == "role" && gjson.Get(ev.Data, "choices.0.delta.role").Exists():
			n++
		case name == "[DONE]" && ev.Data == "[DONE]":
			n++
		case ev.Event == name && name != "":
			n++
		}
	}
	return n
}

// waitGeneration waits for the audit record of a request whose handler may still be finishing
// (an SDK stops reading at [DONE] or an error event, a caller may go away first): it retries the
// lookup after each flush, for at most 5 s. The record is handed to the recorder after the
// attempts reported to their circuits, so it also orders circuit checks after the request.
func waitGeneration(t *testing.T, g *gateway, id string) *audit.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if err := g.Rec.Flush(ctx); err != nil {
			t.Fatalf("flush: %v", err)
		}
		rec, err := g.Rec.Lookup(ctx, id)
		if err == nil {
			return rec
		}
		if !errors.Is(err, audit.ErrNotFound) {
			t.Fatalf("generation %s: %v", id, err)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("generation %s never recorded", id)
		case <-tick.C:
		}
	}
}

// TestPreambleErrorFailsOver: R-FAIL-2, R-FAIL-5: a provider that sends the lifecycle preamble
// (OpenAI role-only chunk; Anthropic message_start, content_block_start, ping) then an overload
// error before any text has not committed: the caller gets the next deployment's answer, never
// the error, and exactly one preamble (none held from the failed attempt leaks out).
func TestPreambleErrorFailsOver(t *testing.T) {
	t.Parallel()
	for _, s := range surfaces {
		t.Run(s.name+"/raw", func(t *testing.T) {
			t.Parallel()
			g := startTwo(t)
			g.Fakes[s.primary].Script(fp.Behavior{Kind: fp.KindPreambleError})
			resp, body := s.post(t, g, s.body(true))
			if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Switchyard-Deployment") != s.backup {
				t.Fatalf("%d from %q: %s", resp.StatusCode, resp.Header.Get("X-Switchyard-Deployment"), body)
			}
			evs := parseSSE(body)
			if text, _ := streamText(evs); text != hello(s.backup) {
				t.Errorf("text %q, want the backup's", text)
			}
			if strings.Contains(string(body), `"error"`) || strings.Contains(strings.ToLower(string(body)), "overload") {
				t.Errorf("the failed attempt's error reached the caller:\n%s", body)
			}
			if s.anthropic() {
				for _, name := range []string{"message_start", "content_block_start", "message_stop"} {
					if n := countEvents(evs, name); n != 1 {
						t.Errorf("%d %s events, want 1:\n%s", n, name, body)
					}
				}
			} else {
				if n := countEvents(evs, "role"); n != 1 {
					t.Errorf("%d role chunks, want 1:\n%s", n, body)
				}
				if n := countEvents(evs, "[DONE]"); n != 1 {
					t.Errorf("%d [DONE], want 1", n)
				}
				id := ""
				for _, ev := range evs {
					if ev.Comment || ev.Data == "[DONE]" { // the served-by comment carries no id
						continue
					}
					if id == "" {
						id = gjson.Get(ev.Data, "id").String()
					}
					if gjson.Get(ev.Data, "id").String() != id {
						t.Errorf("chunk id %q differs from the first chunk's %q", gjson.Get(ev.Data, "id"), id)
					}
				}
			}
			rec := waitGeneration(t, g, resp.Header.Get("X-Request-Id"))
			if len(rec.Attempts) != 2 || rec.Attempts[0].Outcome != audit.OutcomeFailed || rec.Attempts[1].Outcome != audit.OutcomeCompleted {
				t.Errorf("attempts %+v, want failed then completed", rec.Attempts)
			}
		})
		t.Run(s.name+"/sdk", func(t *testing.T) {
			t.Parallel()
			g := startTwo(t)
			g.Fakes[s.primary].Script(fp.Behavior{Kind: fp.KindPreambleError})
			checkFailover(t, g, s, s.call(t.Context(), g, true), "upstream_error")
		})
	}
}

// TestFailureAfterCommit: R-FAIL-4: a provider that fails after the first deltas (connection
// cut, or an in-stream error event) has committed the request: the caller gets exactly the
// deltas already sent, then one terminal error event in its dialect with error_type
// upstream_truncated, and nothing after it (no [DONE] or message_stop, no second provider). The
// SDKs report an error; the audit records one truncated attempt.
func TestFailureAfterCommit(t *testing.T) {
	t.Parallel()
	const text = "AABBCCDDEEFF" // 6 deltas of 2 characters
	cases := []struct {
		name  string
		b     fp.Behavior
		wantN int
	}{
		{"cut-after-3", fp.Behavior{Kind: fp.KindCut, After: 3, Text: text, Deltas: 6}, 3},
		{"stream-error-after-2", fp.Behavior{Kind: fp.KindStreamError, After: 2, Text: text, Deltas: 6}, 2},
	}
	for _, s := range surfaces {
		for _, tc := range cases {
			t.Run(s.name+"/"+tc.name+"/raw", func(t *testing.T) {
				t.Parallel()
				g := startTwo(t)
				g.Fakes[s.primary].Script(tc.b)
				resp, body := s.post(t, g, s.body(true))
				if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Switchyard-Deployment") != s.primary {
					t.Fatalf("%d from %q: %s", resp.StatusCode, resp.Header.Get("X-Switchyard-Deployment"), body)
				}
				evs := parseSSE(body)
				got, n := streamText(evs)
				if want := text[:2*tc.wantN]; got != want || n != tc.wantN {
					t.Errorf("caller got %q in %d deltas, want %q in %d:\n%s", got, n, want, tc.wantN, body)
				}
				last := evs[len(evs)-1]
				if s.anthropic() && last.Event != "error" {
					t.Errorf("last event %q, want error:\n%s", last.Event, body)
				}
				if errorType([]byte(last.Data)) != "upstream_truncated" || !gjson.Get(last.Data, "error").Exists() {
					t.Errorf("last event %q, want the terminal upstream_truncated error", last.Data)
				}
				errs := 0
				for _, ev := range evs {
					if gjson.Get(ev.Data, "error").Exists() {
						errs++
					}
				}
				if errs != 1 || countEvents(evs, "[DONE]") != 0 || countEvents(evs, "message_stop") != 0 {
					t.Errorf("%d error events, want exactly one and no terminator after it:\n%s", errs, body)
				}
				if strings.Contains(string(body), s.backup) || g.Fakes[s.backup].Hits() != 0 {
					t.Errorf("a second provider was called after commit")
				}
				rec := waitGeneration(t, g, resp.Header.Get("X-Request-Id"))
				if len(rec.Attempts) != 1 || rec.Attempts[0].Outcome != audit.OutcomeTruncated || rec.Attempts[0].ErrorCode != "upstream_truncated" {
					t.Errorf("attempts %+v, want one truncated", rec.Attempts)
				}
			})
			t.Run(s.name+"/"+tc.name+"/sdk", func(t *testing.T) {
				t.Parallel()
				g := startTwo(t)
				g.Fakes[s.primary].Script(tc.b)
				r := s.call(t.Context(), g, true)
				if r.Err == nil {
					t.Fatalf("the SDK saw no error after a truncated stream (text %q)", r.Text)
				}
				if want := text[:2*tc.wantN]; r.Text != want {
					t.Errorf("accumulated %q, want %q", r.Text, want)
				}
				if r.Status != http.StatusOK || r.Type != "api_error" || errorType([]byte(r.Raw)) != "upstream_truncated" {
					t.Errorf("SDK error %d %q %s (%v), want an in-stream api_error upstream_truncated", r.Status, r.Type, r.Raw, r.Err)
				}
				if !s.anthropic() {
					var se *ssestream.StreamError
					if !errors.As(r.Err, &se) {
						t.Errorf("openai-go error %T, want *ssestream.StreamError", r.Err)
					}
				}
			})
		}
	}
}

// TestTruncationsOpenCircuit: R-FAIL-4, R-CIRCUIT-1: a failure after commit still counts on the
// deployment circuit: after two truncated streams in a row the primary is open, and the next
// request goes to the backup first (one attempt).
func TestTruncationsOpenCircuit(t *testing.T) {
	t.Parallel()
	for _, s := range surfaces {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			g := startTwo(t)
			g.Fakes[s.primary].Script(fp.Behavior{Kind: fp.KindCut, After: 1}, fp.Behavior{Kind: fp.KindStreamError, After: 1})
			for i := range 2 {
				r := s.call(t.Context(), g, true)
				if r.Err == nil {
					t.Fatalf("call %d: no error after a truncated stream", i)
				}
				// The SDK stops at the error event; the record is written after the attempt
				// reported to its circuit.
				waitGeneration(t, g, r.Header.Get("X-Request-Id"))
			}
			if st := circuitState(g, s.primary, ""); st != circuit.Open {
				t.Fatalf("primary circuit %v after two truncations, want open", st)
			}
			r := s.call(t.Context(), g, true)
			if r.Err != nil || r.Text != hello(s.backup) || r.Header.Get("X-Switchyard-Attempts") != "1" {
				t.Errorf("third call: %q attempts %q (%v), want the backup's answer in one attempt", r.Text, r.Header.Get("X-Switchyard-Attempts"), r.Err)
			}
			if h := g.Fakes[s.primary].Hits(); h != 2 {
				t.Errorf("primary hits %d, want 2", h)
			}
		})
	}
}

// TestNoBytesBeforeCommit: R-FAIL-3: the gateway sends no response header while no provider
// has answered: a client whose response-header timeout is shorter than the primary's hang sees
// its timeout; with a slow primary the headers arrive only after the primary answered, and with
// a hanging primary only after the backup was called, naming the deployment that served.
func TestNoBytesBeforeCommit(t *testing.T) {
	t.Parallel()
	for _, s := range surfaces {
		for _, stream := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/stream=%t/header-timeout", s.name, stream), func(t *testing.T) {
				t.Parallel()
				g := startTwo(t) // deadlines 5s
				g.Fakes[s.primary].Script(fp.Behavior{Kind: fp.KindHang})
				c := rawClient(t, &http.Transport{ResponseHeaderTimeout: 250 * time.Millisecond})
				resp, err := c.Do(s.newRawRequest(t.Context(), g, s.body(stream)))
				if err == nil {
					resp.Body.Close()
					t.Fatalf("headers arrived (%d from %q) while the primary was still hanging", resp.StatusCode, resp.Header.Get("X-Switchyard-Deployment"))
				}
				if !strings.Contains(err.Error(), "timeout awaiting response headers") {
					t.Fatalf("err %v, want the client's response-header timeout", err)
				}
				select { // the client went away: the upstream call ends with it (R-FAIL-11)
				case <-g.Fakes[s.primary].Closed():
				case <-time.After(time.Second):
					t.Fatal("the primary's connection was not closed within 1s of the caller leaving")
				}
			})
			for _, tc := range []struct {
				name   string
				b      fp.Behavior
				yaml   string
				served func(s surface) string
			}{
				{"slow-primary", fp.Behavior{Kind: fp.KindSlowHeaders, Delay: 400 * time.Millisecond}, twoDeployments,
					func(s surface) string { return s.primary }},
				{"hanging-primary", fp.Behavior{Kind: fp.KindHang}, withTimeouts("400ms", "400ms"),
					func(s surface) string { return s.backup }},
			} {
				t.Run(fmt.Sprintf("%s/stream=%t/%s", s.name, stream, tc.name), func(t *testing.T) {
					t.Parallel()
					g := startTwoYAML(t, tc.yaml)
					g.Fakes[s.primary].Script(tc.b)
					var first time.Time
					ctx := httptrace.WithClientTrace(t.Context(), &httptrace.ClientTrace{
						GotFirstResponseByte: func() { first = time.Now() },
					})
					resp, err := rawClient(t, nil).Do(s.newRawRequest(ctx, g, s.body(stream)))
					if err != nil {
						t.Fatal(err)
					}
					resp.Body.Close()
					served := tc.served(s)
					if got := resp.Header.Get("X-Switchyard-Deployment"); resp.StatusCode != http.StatusOK || got != served {
						t.Fatalf("%d from %q, want 200 from %q", resp.StatusCode, got, served)
					}
					answered := g.Fakes[s.primary].Requests()[0].At.Add(400 * time.Millisecond)
					if served == s.backup {
						answered = g.Fakes[s.backup].Requests()[0].At
					}
					if first.Before(answered) {
						t.Errorf("the first response byte came %v before %s could have answered", answered.Sub(first), served)
					}
				})
			}
		}
	}
}

// TestCallerDisconnectMidStream: R-FAIL-11, R-CIRCUIT-3: a caller that goes away mid-stream
// closes the upstream connection at once (within a second), the audit records the attempt as
// cancelled, and nothing counts on a circuit (even with circuits that open on one failure).
func TestCallerDisconnectMidStream(t *testing.T) {
	t.Parallel()
	for _, s := range surfaces {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			g := startTwoYAML(t, withFailures(twoDeployments, 1))
			// The first delta comes after 1.5 s, the next 1.5 s later: far beyond the 1 s wait.
			g.Fakes[s.primary].Script(fp.Behavior{Text: "AABBCCDDEEFF", Deltas: 6, Delay: 1500 * time.Millisecond})
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			resp, err := rawClient(t, nil).Do(s.newRawRequest(ctx, g, s.body(true)))
			if err != nil {
				t.Fatal(err)
			}
			rd := bufio.NewReader(resp.Body)
			for {
				line, err := rd.ReadString('\n')
				if err != nil {
					t.Fatalf("the stream ended before the first delta: %v", err)
				}
				if strings.Contains(line, `"AA"`) {
					break
				}
			}
			cancel()
			resp.Body.Close()
			select {
			case <-g.Fakes[s.primary].Closed():
			case <-time.After(time.Second):
				t.Fatal("the upstream connection was not closed within 1s of the caller leaving")
			}
			rec := waitGeneration(t, g, resp.Header.Get("X-Request-Id"))
			if len(rec.Attempts) != 1 || rec.Attempts[0].Outcome != audit.OutcomeCancelled {
				t.Errorf("attempts %+v, want one cancelled", rec.Attempts)
			}
			requireAllClosed(t, g)
			r := s.call(t.Context(), g, true)
			if r.Err != nil || r.Text != hello(s.primary) || r.Header.Get("X-Switchyard-Attempts") != "1" {
				t.Errorf("next call: %q attempts %q (%v), want the primary's answer at once", r.Text, r.Header.Get("X-Switchyard-Attempts"), r.Err)
			}
			if g.Fakes[s.backup].Hits() != 0 {
				t.Errorf("the backup was called")
			}
		})
	}
}

// TestStreamFraming: R-FAIL-2 (keep-alive comments are lifecycle, never data) and the SSE
// framing facts of wire.md §6: a stream with ": keep-alive" comments between frames and every
// frame split across two writes is relayed intact (no comment re-emitted as data), and a tool
// call whose 200 KiB arguments come in one data line reaches the SDK as valid JSON of that size.
func TestStreamFraming(t *testing.T) {
	t.Parallel()
	const big = 200 << 10
	for _, s := range surfaces {
		t.Run(s.name+"/keep-alive-split", func(t *testing.T) {
			t.Parallel()
			g := startTwo(t)
			b := fp.Behavior{KeepAlive: true, SplitWrites: true, Deltas: 5}
			g.Fakes[s.primary].Script(b, b)
			resp, body := s.post(t, g, s.body(true))
			evs := parseSSE(body)
			if text, n := streamText(evs); resp.StatusCode != http.StatusOK || text != hello(s.primary) || n != 5 {
				t.Fatalf("%d: text %q in %d deltas, want %q in 5:\n%s", resp.StatusCode, text, n, hello(s.primary), body)
			}
			for _, ev := range evs {
				if ev.Comment {
					continue
				}
				if ev.Data != "[DONE]" && !json.Valid([]byte(ev.Data)) {
					t.Errorf("event data is not JSON: %q", ev.Data)
				}
				if strings.Contains(ev.Data, "keep-alive") {
					t.Errorf("a comment was re-emitted as data: %q", ev.Data)
				}
			}
			term := "[DONE]"
			if s.anthropic() {
				term = "message_stop"
			}
			if n := countEvents(evs, term); n != 1 {
				t.Errorf("%d %s, want 1", n, term)
			}
			if r := s.call(t.Context(), g, true); r.Err != nil || r.Text != hello(s.primary) {
				t.Errorf("SDK: %q %v", r.Text, r.Err)
			}
		})
		t.Run(s.name+"/200KiB-line", func(t *testing.T) {
			t.Parallel()
			g := startTwo(t)
			g.Fakes[s.primary].Script(fp.Behavior{BigArgumentBytes: big, KeepAlive: true, SplitWrites: true})
			args, err := bigToolCall(t.Context(), g, s)
			if err != nil {
				t.Fatalf("stream: %v", err)
			}
			if !json.Valid([]byte(args)) || len(args) != big {
				t.Errorf("arguments: %d bytes, valid JSON %t; want %d bytes of JSON", len(args), json.Valid([]byte(args)), big)
			}
		})
	}
}

// bigToolCall streams a call with one tool through the surface's SDK and returns the
// accumulated arguments of the first tool call.
func bigToolCall(ctx context.Context, g *gateway, s surface) (string, error) {
	if s.anthropic() {
		c := g.anthropicClient()
		st := c.Messages.NewStreaming(ctx, anthropic.MessageNewParams{
			Model: anthropic.Model(s.model), MaxTokens: 64,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello"))},
			Tools: []anthropic.ToolUnionParam{anthropic.ToolUnionParamOfTool(anthropic.ToolInputSchemaParam{
				Properties: map[string]any{"city": map[string]any{"type": "string"}}, Required: []string{"city"},
			}, "get_weather")},
		})
		var msg anthropic.Message
		for st.Next() {
			if err := msg.Accumulate(st.Current()); err != nil {
				return "", err
			}
		}
		if err := st.Err(); err != nil {
			return "", err
		}
		for _, c := range msg.Content {
			if c.Type == "tool_use" {
				return string(c.Input), nil
			}
		}
		return "", fmt.Errorf("no tool_use block in %d blocks", len(msg.Content))
	}
	c := g.openaiClient()
	st := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
		Model:    s.model,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello")},
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: "get_weather", Parameters: openai.FunctionParameters{"type": "object",
				"properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}},
		})},
	})
	acc := openai.ChatCompletionAccumulator{}
	for st.Next() {
		acc.AddChunk(st.Current())
	}
	if err := st.Err(); err != nil {
		return "", err
	}
	if len(acc.Choices) == 0 || len(acc.Choices[0].Message.ToolCalls) == 0 {
		return "", errors.New("no tool call")
	}
	return acc.Choices[0].Message.ToolCalls[0].Function.Arguments, nil
}

// TestHeadersDeadlines: R-FAIL-5: the headers deadlines default to 20 s on a stream and 60 s
// otherwise, and each applies to its kind of request only: a provider slower than the stream
// deadline but faster than the other fails a stream over and serves a non-stream call, and the
// other way round.
func TestHeadersDeadlines(t *testing.T) {
	t.Parallel()
	t.Run("defaults", func(t *testing.T) {
		yaml := strings.Replace(twoDeployments, "  timeouts: {headers: 5s, stream_headers: 5s, stream_idle: 5s}\n", "", 1)
		yaml = strings.NewReplacer("{{oa-primary}}", "http://127.0.0.1:1/v1", "{{oa-backup}}", "http://127.0.0.1:1/v1",
			"{{an-primary}}", "http://127.0.0.1:1", "{{an-backup}}", "http://127.0.0.1:1").Replace(yaml)
		cfg, err := config.Parse("defaults.yaml", []byte(yaml))
		if err != nil {
			t.Fatal(err)
		}
		if h, sh := cfg.Routing.Timeouts.Headers.D(), cfg.Routing.Timeouts.StreamHeaders.D(); h != 60*time.Second || sh != 20*time.Second {
			t.Errorf("defaults headers %v stream_headers %v, want 60s and 20s", h, sh)
		}
	})
	for _, s := range surfaces {
		for _, tc := range []struct {
			name                   string
			yaml                   string
			streamFails, plainFail bool
		}{
			{"short-stream-deadline", withTimeouts("3s", "300ms"), true, false},
			{"short-plain-deadline", withTimeouts("300ms", "3s"), false, true},
		} {
			t.Run(s.name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				g := startTwoYAML(t, tc.yaml)
				for _, stream := range []bool{true, false} {
					g.Fakes[s.primary].Reset()
					g.Fakes[s.backup].Reset()
					g.Fakes[s.primary].Script(fp.Behavior{Kind: fp.KindSlowHeaders, Delay: time.Second})
					r := s.call(t.Context(), g, stream)
					if fails := (stream && tc.streamFails) || (!stream && tc.plainFail); fails {
						checkFailover(t, g, s, r, "upstream_timeout")
					} else if r.Err != nil || r.Text != hello(s.primary) {
						t.Errorf("stream=%t: %q %v, want the primary's answer within the deadline", stream, r.Text, r.Err)
					}
				}
			})
		}
	}
}
