package relay_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tidwall/gjson"

	"github.com/switchyard-gw/switchyard/internal/admission"
	"github.com/switchyard-gw/switchyard/internal/audit"
	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/circuit"
	"github.com/switchyard-gw/switchyard/internal/failure"
	"github.com/switchyard-gw/switchyard/internal/relay"
	"github.com/switchyard-gw/switchyard/internal/stats"
	"github.com/switchyard-gw/switchyard/internal/upstream"
)

// scenario is one row of the attempt loop's table: deployments in plan order with their
// scripts, the caller's request, and what the caller and the audit must see.
type scenario struct {
	name      string
	deps      []dep
	opts      rigOptions
	surface   catalog.Dialect // "" is OpenAI
	nonStream bool
	fallback  bool
	limit     int // Request.AttemptLimit
	// ctx, when set, wraps the request context (a shutdown, a cancellation).
	ctx func(context.Context) context.Context
	// writer, when set, tunes the caller's connection (a panic while writing).
	writer func(*recorder)
	check  func(t *testing.T, g *rig, res relay.Result, w *recorder, took time.Duration)
}

func oa(name string, s script) dep { return dep{name: name, dialect: "openai", play: s} }
func an(name string, s script) dep { return dep{name: name, dialect: "anthropic", play: s} }

// served checks a completed answer from deployment want after n attempts.
func served(t *testing.T, res relay.Result, w *recorder, want string, n int) {
	t.Helper()
	if res.Status != http.StatusOK || res.Class != "" || !res.Committed || len(res.Attempts) != n {
		t.Fatalf("status %d class %q committed %v attempts %d, want 200 after %d: %s", res.Status, res.Class, res.Committed, len(res.Attempts), n, w.body.String())
	}
	last := res.Attempts[n-1]
	if last.Deployment != want || last.Outcome != audit.OutcomeCompleted {
		t.Fatalf("served by %s (%s), want %s completed", last.Deployment, last.Outcome, want)
	}
	if got := w.h.Get("X-Switchyard-Deployment"); got != want {
		t.Fatalf("x-switchyard-deployment %q", got)
	}
	for _, a := range res.Attempts[:n-1] {
		if a.Outcome != audit.OutcomeFailed {
			t.Fatalf("earlier attempt %+v", a)
		}
	}
}

// refused checks a typed error answer of class c after n attempts, nothing committed.
func refused(t *testing.T, res relay.Result, w *recorder, c failure.Class, n int) {
	t.Helper()
	if res.Committed || res.Class != c || res.Status != c.Status() || len(res.Attempts) != n {
		t.Fatalf("committed %v class %q status %d attempts %d, want %s after %d", res.Committed, res.Class, res.Status, len(res.Attempts), c, n)
	}
	if w.status != c.Status() || !strings.Contains(w.body.String(), string(c)) || w.h.Get("X-Switchyard-Error-Code") != string(c) {
		t.Fatalf("caller got %d %q", w.status, w.body.String())
	}
}

// endsWith checks the caller's stream ends with suffix and holds no error event.
func endsWith(t *testing.T, w *recorder, suffix string) {
	t.Helper()
	b := w.body.String()
	if !strings.HasSuffix(b, suffix) || strings.Count(b, suffix) != 1 || strings.Contains(b, `"error"`) {
		t.Fatalf("stream does not end with exactly one %q:\n%s", suffix, b)
	}
}

// truncatedStream checks a committed stream that ended with one terminal error event.
func truncatedStream(t *testing.T, res relay.Result, w *recorder, n int) {
	t.Helper()
	b := w.body.String()
	if !res.Committed || res.Status != 200 || res.Class != failure.UpstreamTruncated || len(res.Attempts) != n {
		t.Fatalf("committed %v status %d class %q attempts %d", res.Committed, res.Status, res.Class, len(res.Attempts))
	}
	if res.Attempts[n-1].Outcome != audit.OutcomeTruncated {
		t.Fatalf("attempt %+v", res.Attempts[n-1])
	}
	i := strings.LastIndex(b, "upstream_truncated")
	if i < 0 || strings.Count(b, "upstream_truncated") != 1 || strings.Contains(b, "[DONE]") || strings.Contains(b, "message_stop") {
		t.Fatalf("stream without exactly one terminal error event:\n%s", b)
	}
	if rest := b[i:]; strings.Count(rest, "\n\n") != 1 {
		t.Fatalf("frames after the terminal error event:\n%s", b)
	}
}

// hangAt checks that the first attempt failed as a hang (upstream_timeout, R-CIRCUIT-5) and that
// the request took exactly d of the bubble's time (the failover itself takes none).
func hangAt(t *testing.T, res relay.Result, took, d time.Duration) {
	t.Helper()
	if a := res.Attempts[0]; a.ErrorCode != string(failure.UpstreamTimeout) {
		t.Fatalf("first attempt %+v, want upstream_timeout", a)
	}
	if took != d {
		t.Fatalf("failed over after %v, want %v", took, d)
	}
}

func usageIs(t *testing.T, res relay.Result, in, out int64, prov string) {
	t.Helper()
	a := res.Attempts[len(res.Attempts)-1]
	if a.Tokens.Input != in || a.Tokens.Output != out || a.UsageProvenance != prov {
		t.Fatalf("usage %+v provenance %q, want input %d output %d %s", a.Tokens, a.UsageProvenance, in, out, prov)
	}
}

var scenarios = []scenario{
	{
		name: "completes",
		deps: []dep{oa("a", sse(oaRole, oaText("Hi"), oaFinish, oaUsage(7, 1), oaDone))},
		check: func(t *testing.T, g *rig, res relay.Result, w *recorder, _ time.Duration) {
			served(t, res, w, "a", 1)
			endsWith(t, w, "data: [DONE]\n\n")
			usageIs(t, res, 7, 1, audit.ProvenanceObserved)
		},
	},
	{
		name: "fails over before commit: 5xx",
		deps: []dep{oa("a", status(500, oaServerError)), oa("b", sse(oaRole, oaText("Hi"), oaFinish, oaDone))},
		check: func(t *testing.T, g *rig, res relay.Result, w *recorder, _ time.Duration) {
			served(t, res, w, "b", 2)
			if res.Attempts[0].ErrorCode != string(failure.UpstreamError) {
				t.Fatalf("first attempt %+v", res.Attempts[0])
			}
		},
	},
	{
		name: "fails over before commit: in-stream error after the held preamble",
		deps: []dep{oa("a", sse(oaRole, oaStreamError)), oa("b", sse(oaRole, oaText("Hi"), oaFinish, oaDone))},
		check: func(t *testing.T, g *rig, res relay.Result, w *recorder, _ time.Duration) {
			served(t, res, w, "b", 2)
			if strings.Count(w.body.String(), `"role":"assistant"`) != 1 {
				t.Fatalf("the failed attempt's held preamble reached the caller:\n%s", w.body.String())
			}
		},
	},
	{
		name: "no failover after commit: an in-stream error is the terminal event",
		deps: []dep{oa("a", sse(oaRole, oaText("Hi"), oaStreamError)), oa("b", nil)},
		check: func(t *testing.T, g *rig, res relay.Result, w *recorder, _ time.Duration) {
			truncatedStream(t, res, w, 1)
		},
	},
	{
		name: "content policy does not fail over",
		deps: []dep{oa("a", status(400, `{"error":{"message":"flagged","type":"invalid_request_error","param":null,"code":"content_policy_violation"}}`)), oa("b", nil)},
		check: func(t *testing.T, g *rig, res relay.Result, w *recorder, _ time.Duration) {
			refused(t, res, w, failure.ContentPolicy, 1)
		},
	},
	{
		name: "context overflow does not fail over",
		deps: []dep{oa("a", status(400, `{"error":{"message":"too long","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`)), oa("b", nil)},
		check: func(t *testing.T, g *rig, res relay.Result, w *recorder, _ time.Duration) {
			refused(t, res, w, failure.ContextOverflow, 1)
		},
	},
	{
		name:  "attempt limit",
		deps:  []dep{oa("a", status(500, oaServerError)), oa("b", nil)},
		limit: 1,
		check: func(t *testing.T, g *rig, res relay.Result, w *recorder, _ time.Duration) {
			refused(t, res, w, failure.UpstreamError, 1)
		},
	},
	{
		name:     "fallback model after every route of the requested one",
		deps:     []dep{oa("a", status(500, oaServerError)), an("b", status(529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`))},
		opts:     rigOptions{fallback: &dep{name: "f", dialect: "openai", play: sse(oaRole, oaText("Hi"), oaFinish, oaDone)}},
		fallback: true,
		check: func(t *testing.T, g *rig, res relay.Result, w *recorder, _ time.Duration) {
			served(t, res, w, "f", 3)
			if w.h.Get("X-Switchyard-Model") != "m2" {
				t.Fatalf("x-switchyard-model %q", w.h.Get("X-Switchyard-Model"))
			}
		},
	},

	// R-FAIL-4 / R-BILL-2: a clean end after the finish is complete; before it, truncated.
	{
		name: "finish then clean close without [DONE] completes (OpenAI)",
		deps: []dep{oa("a", sse(oaRole, oaText("Hi"), oaFinish, oaUsage(7, 2)))},
		check: func(t *testing.T, g *rig, res relay.Result, w *recorder, _ time.Duration) {
			served(t, res, w, "a", 1)
			endsWith(t, w, "data: [DONE]\n\n")
			usageIs(t, res, 7, 2, audit.ProvenanceObserved)
		},
	},
	{
		name:    "finish then clean close without message_stop completes (Anthropic)",
		surface: catalog.Anthropic,
		deps:    []dep{an("a", sse(anStart, anBlockStart, anText("Hi"), anBlockStop, anDelta("end_turn", 4)))},
		check: func(t *testing.T, g *rig, res relay.Result, w *recorder, _ time.Duration) {
			served(t, res, w, "a", 1)
			endsWith(t, w, anStop)
			usageIs(t, res, 9, 4, audit.ProvenanceObserved)
		},
	},
	{
		name:    "finish then clean close, translated OpenAI provider to Anthropic caller",
		surface: catalog.Anthropic,
		deps:    []dep{oa("a", sse(oaRole, oaText("Hi"), oaFinish, oaUsage(7, 2)))},
		check: func(t *testing.T, g *rig, res relay.Result, w *recorder, _ time.Duration) {
			served(t, res, w, "a", 1)
			endsWith(t, w, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
			if !strings.Contains(w.body.String(), `"stop_reason":"end_turn"`) {
				t.Fatalf("no message_delta with the stop reason:\n%s", w.body.String())
			}
			usageIs(t, res, 7, 2, audit.ProvenanceObserved)
		},
	},
	{
		name: "finish then clean close, translated Anthropic provider to OpenAI caller",
		deps: []dep{an("a", sse(anStart, anBlockStart, anText("Hi"), anBlockStop, anDelta("end_turn", 4)))},
		check: func(t *testing.T, g *rig, res relay.Result, w *recorder, _ time.Duration) {
			served(t, res, w, "a", 1)
			endsWith(t, w, "data: [DONE]\n\n")
			usageIs(t, res, 9, 4, audit.ProvenanceObserved)
		},
	},
	{
		name: "clean close before the finish is truncated (OpenAI)",
		deps: []dep{oa("a", sse(oaRole, oaText("Hi"))), oa("b", nil)},
		check: func(t *testing.T, g *rig, res relay.Result, w *recorder, _ time.Duration) {
			truncatedStream(t, res, w, 1)
			usageIs(t, res, 10, 1, audit.ProvenanceEstimated)
		},
	},
	{
		name:    "clean close before the finish is truncated (Anthropic, usage-only message_delta)",
		surface: catalog.Anthropic,
		deps:    []dep{an("a", sse(anStart, anBlockStart, anText("Hi"), anDelta("", 3))), an("b", nil)},
		check: func(t *testing.T, g *rig, res relay.Result, w *recorder, _ time.Duration) {
			truncatedStream(t, res, w, 1)
		},
	},

	// Per-chunk usage does not commit on its own; the latest report is billed.
	{
		name: "usage on every chunk does not commit the role chunk (OpenAI)",
		deps: []dep{
			oa("a", sse(oaWithUsage(`{"role":"assistant","content":""}`, "null", 7, 0), oaStreamError)),
			oa("b", sse(oaWithUsage(`{"role":"assistant","content":""}`, "null", 7, 0), oaWithUsage(`{"content":"Hi"}`, "null", 7, 1),
				oaWithUsage(`{"content":" there"}`, "null", 7, 2), oaWithUsage(`{}`, `"stop"`, 7, 3), oaDone)),
		},
		check: func(t *testing.T, g *rig, res relay.Result, w *recorder, _ time.Duration) {
			served(t, res, w, "b", 2)
			usageIs(t, res, 7, 3, audit.ProvenanceObserved)
		},
	},
	{
		name:    "usage-only message_delta does not commit (Anthropic)",
		surface: catalog.Anthropic,
		deps: []dep{
			an("a", sse(anStart, anDelta("", 1), anOverloaded)),
			an("b", sse(anStart, anBlockStart, anText("Hi"), anDelta("", 2), anBlockStop, anDelta("end_turn", 5), anStop)),
		},
		check: func(t *testing.T, g *rig, res relay.Result, w *recorder, _ time.Duration) {
			served(t, res, w, "b", 2)
			usageIs(t, res, 9, 5, audit.ProvenanceObserved)
		},
	},
	{
		name:    "usage on every chunk does not commit, translated to an Anthropic caller",
		surface: catalog.Anthropic,
		deps: []dep{
			oa("a", sse(oaWithUsage(`{"role":"assistant","content":""}`, "null", 7, 0), oaStreamError)),
			oa("b", sse(oaWithUsage(`{"role":"assistant","content":""}`, "null", 7, 0), oaWithUsage(`{"content":"Hi"}`, "null", 7, 1), oaWithUsage(`{}`, `"stop"`, 7, 2), oaDone)),
		},
		check: func(t *testing.T, g *rig, res relay.Result, w *recorder, _ time.Duration) {
			served(t, res, w, "b", 2)
			usageIs(t, res, 7, 2, audit.ProvenanceObserved)
		},
	},
	// R-CIRCUIT-5: the first-output deadline (routing.timeouts.first_output, 30 s by default)
	// runs from the response headers to the first semantic output; lifecycle frames do not
	// extend it. Missing it before commit is a hang that fails over. Times are the bubble's.
	{
		name:    "ping-only provider fails over at the first-output deadline (Anthropic pings)",
		surface: catalog.Anthropic,
		deps:    []dep{an("a", every(5*time.Second, anPing, anStart, anBlockStart)), an("b", sse(anStart, anBlockStart, anText("Hi"), anBlockStop, anDelta("end_turn", 2), anStop))},
		check: func(t *testing.T, g *rig, res relay.Result, w *recorder, took time.Duration) {
			served(t, res, w, "b", 2)
			hangAt(t, res, took, 30*time.Second)
			if strings.Count(w.body.String(), "event: message_start") != 1 || strings.Contains(w.body.String(), "event: ping") {
				t.Fatalf("the ping-only attempt's held frames reached the caller:\n%s", w.body.String())
			}
		},
	},
	{
		name: "keep-alive comments only: fails over at the first-output deadline",
		deps: []dep{oa("a", every(5*time.Second, ": keep-alive\n\n")), oa("b", sse(oaRole, oaText("Hi"), oaFinish, oaDone))},
		check: func(t *testing.T, g *rig, res relay.Result, w *recorder, took time.Duration) {
			served(t, res, w, "b", 2)
			hangAt(t, res, took, 30*time.Second)
		},
	},
	{
		name: "unknown events only: fails over at the first-output deadline",
		deps: []dep{an("a", every(time.Second, anFrame("vendor_heartbeat", `{"type":"vendor_heartbeat"}`), anStart)), oa("b", sse(oaRole, oaText("Hi"), oaFinish, oaDone))},
		check: func(t *testing.T, g *rig, res relay.Result, w *recorder, took time.Duration) {
			served(t, res, w, "b", 2)
			hangAt(t, res, took, 30*time.Second)
		},
	},
	{
		name: "headers then silence: the first-output deadline comes before the idle deadline",
		deps: []dep{oa("a", every(time.Hour, "")), oa("b", sse(oaRole, oaText("Hi"), oaFinish, oaDone))},
		check: func(t *testing.T, g *rig, res relay.Result, w *recorder, took time.Duration) {
			served(t, res, w, "b", 2)
			hangAt(t, res, took, 30*time.Second)
		},
	},
	{
		name: "a configured first-output deadline",
		opts: rigOptions{deadlines: upstream.Deadlines{FirstOutput: 2 * time.Second}},
		deps: []dep{oa("a", every(500*time.Millisecond, ": keep-alive\n\n", oaRole)), oa("b", sse(oaRole, oaText("Hi"), oaFinish, oaDone))},
		check: func(t *testing.T, g *rig, res relay.Result, w *recorder, took time.Duration) {
			served(t, res, w, "b", 2)
			hangAt(t, res, took, 2*time.Second)
		},
	},
	{
		name: "the deadline ends at the first output: a slow stream after it completes",
		deps: []dep{oa("a", paced(25*time.Second, oaRole, oaText("Hi"), oaText(" slow"), oaText(" world"), oaFinish, oaDone)), oa("b", nil)},
		check: func(t *testing.T, g *rig, res relay.Result, w *recorder, took time.Duration) {
			served(t, res, w, "a", 1)
			if took != 125*time.Second {
				t.Fatalf("took %v", took)
			}
		},
	},
	{
		name:    "held lifecycle frames are capped: more than 64 KiB before any output fails over",
		surface: catalog.Anthropic,
		deps: []dep{an("a", every(time.Millisecond, anFrame("ping", `{"type":"ping","pad":"`+strings.Repeat("x", 1000)+`"}`), anStart)),
			an("b", sse(anStart, anBlockStart, anText("Hi"), anBlockStop, anDelta("end_turn", 2), anStop))},
		check: func(t *testing.T, g *rig, res relay.Result, w *recorder, took time.Duration) {
			served(t, res, w, "b", 2)
			// 1 KiB pings 1 ms apart: the cap is passed at about the 65th, long before the script's
			// end (1000 pings) and the first-output deadline.
			if res.Attempts[0].ErrorCode != string(failure.UpstreamError) || took < 60*time.Millisecond || took > 70*time.Millisecond {
				t.Fatalf("first attempt %+v after %v", res.Attempts[0], took)
			}
			if strings.Contains(w.body.String(), `"pad"`) || w.body.Len() > 4096 {
				t.Fatalf("held frames reached the caller (%d bytes)", w.body.Len())
			}
		},
	},
	// R-BILL-2: a committed non-stream answer without a usage report is estimated, not billed 0.
	{
		name:      "non-stream answer without usage is estimated",
		nonStream: true,
		deps:      []dep{oa("a", jsonBody(oaCompletionNoUsage))},
		check: func(t *testing.T, g *rig, res relay.Result, w *recorder, _ time.Duration) {
			served(t, res, w, "a", 1)
			usageIs(t, res, 10, 12, audit.ProvenanceEstimated) // 48 bytes of text / 4
			if res.Attempts[0].CostUSD <= 0 {
				t.Fatalf("cost %v", res.Attempts[0].CostUSD)
			}
		},
	},
	{
		name:      "non-stream answer without usage is estimated, translated",
		nonStream: true,
		surface:   catalog.Anthropic,
		deps:      []dep{oa("a", jsonBody(oaCompletionNoUsage))},
		check: func(t *testing.T, g *rig, res relay.Result, w *recorder, _ time.Duration) {
			served(t, res, w, "a", 1)
			usageIs(t, res, 10, 12, audit.ProvenanceEstimated)
		},
	},
	{
		name:      "non-stream answer with usage is observed",
		nonStream: true,
		deps:      []dep{oa("a", jsonBody(oaCompletion))},
		check: func(t *testing.T, g *rig, res relay.Result, w *recorder, _ time.Duration) {
			served(t, res, w, "a", 1)
			usageIs(t, res, 7, 5, audit.ProvenanceObserved)
		},
	},
	// Nothing ends in an empty 200: a provider 200 that answers nothing fails over before commit.
	{
		name: "a stream of [DONE] alone fails over (OpenAI)",
		deps: []dep{oa("a", sse(oaDone)), oa("b", sse(oaRole, oaText("Hi"), oaFinish, oaDone))},
		check: func(t *testing.T, g *rig, res relay.Result, w *recorder, _ time.Duration) {
			served(t, res, w, "b", 2)
			if res.Attempts[0].ErrorCode != string(failure.UpstreamError) || strings.Count(w.body.String(), "[DONE]") != 1 {
				t.Fatalf("first attempt %+v; caller got:\n%s", res.Attempts[0], w.body.String())
			}
		},
	},
	{
		name:    "a stream of a bare message_stop fails over (Anthropic)",
		surface: catalog.Anthropic,
		deps:    []dep{an("a", sse(anStart, anStop)), an("b", sse(anStart, anBlockStart, anText("Hi"), anBlockStop, anDelta("end_turn", 2), anStop))},
		check: func(t *testing.T, g *rig, res relay.Result, w *recorder, _ time.Duration) {
			served(t, res, w, "b", 2)
			endsWith(t, w, anStop)
		},
	},
	{
		name: "a stream of [DONE] alone on the last route is a 502, not an empty stream",
		deps: []dep{oa("a", sse(oaRole, oaDone))},
		check: func(t *testing.T, g *rig, res relay.Result, w *recorder, _ time.Duration) {
			refused(t, res, w, failure.UpstreamError, 1)
		},
	},
	{
		name:      "a non-stream 200 with an error object fails over (OpenAI)",
		nonStream: true,
		deps:      []dep{oa("a", jsonBody(`{"error":{"message":"OK","type":"server_error"}}`)), oa("b", jsonBody(oaCompletion))},
		check: func(t *testing.T, g *rig, res relay.Result, w *recorder, _ time.Duration) {
			served(t, res, w, "b", 2)
			if res.Attempts[0].ErrorCode != string(failure.UpstreamError) || res.Attempts[0].CostUSD != 0 {
				t.Fatalf("first attempt %+v", res.Attempts[0])
			}
		},
	},
	{
		name:      "a non-stream 200 without choices is a 502 (OpenAI)",
		nonStream: true,
		deps:      []dep{oa("a", jsonBody(`{"id":"x","object":"chat.completion","choices":[]}`))},
		check: func(t *testing.T, g *rig, res relay.Result, w *recorder, _ time.Duration) {
			refused(t, res, w, failure.UpstreamError, 1)
		},
	},
	{
		name:      "a non-stream 200 of {} is a 502 (Anthropic)",
		nonStream: true,
		surface:   catalog.Anthropic,
		deps:      []dep{an("a", jsonBody(`{}`))},
		check: func(t *testing.T, g *rig, res relay.Result, w *recorder, _ time.Duration) {
			refused(t, res, w, failure.UpstreamError, 1)
		},
	},
	// Saturating money: absurd reported usage saturates (relay.MaxUsageTokens), never wraps.
	{
		name: "absurd reported usage saturates",
		deps: []dep{oa("a", sse(oaRole, oaText("Hi"), oaFinish, oaUsage(1<<62, 1<<62), oaDone))},
		check: func(t *testing.T, g *rig, res relay.Result, w *recorder, _ time.Duration) {
			served(t, res, w, "a", 1)
			a := res.Attempts[0]
			if a.Tokens.Input != relay.MaxUsageTokens || a.Tokens.Output != relay.MaxUsageTokens || a.CostUSD <= 0 {
				t.Fatalf("attempt %+v", a)
			}
			if sum := res.Usage.Input + res.Usage.Cached + res.Usage.CacheWrite + res.Usage.Output; sum <= 0 {
				t.Fatalf("the settled token sum wraps: %d", sum)
			}
		},
	},
}

// TestScenarios runs the attempt loop's table (R-FAIL-1..11, R-CIRCUIT-5, R-BILL-2): each row in
// its own synctest bubble with its own deployments, circuits and relay.
func TestScenarios(t *testing.T) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newRig(t, sc.deps, sc.opts)
				defer g.close()
				surface := sc.surface
				if surface == "" {
					surface = catalog.OpenAI
				}
				req, p := g.request(surface, !sc.nonStream, sc.fallback)
				req.AttemptLimit = sc.limit
				ctx := context.Background()
				if sc.ctx != nil {
					ctx = sc.ctx(ctx)
				}
				w := newRecorder()
				if sc.writer != nil {
					sc.writer(w)
				}
				start := time.Now()
				res := g.run(ctx, w, req, p)
				sc.check(t, g, res, w, time.Since(start))
			})
		})
	}
}

// statsHook is a relay.Stats that calls fn on every observation (one per attempt, taken while
// the attempt's circuit ticket is still held).
type statsHook struct{ fn func(stats.Observation) }

func (s *statsHook) Record(o stats.Observation) { s.fn(o) }

// panicOnWrite makes the caller's connection panic on its n-th write only.
func panicOnWrite(n int) func(*recorder) {
	return func(w *recorder) {
		w.panicOn = func(w *recorder) {
			if w.writes == n {
				panic("boom")
			}
		}
	}
}

// R-FAIL-4 under a panic: a panic after commit ends the stream with one terminal error event
// of the caller's dialect (never a JSON body inside the stream, never a silent cut), and the
// attempt is billed for its output so far, marked truncated.
func TestPanicAfterCommitEndsTheStream(t *testing.T) {
	for _, surface := range []catalog.Dialect{catalog.OpenAI, catalog.Anthropic} {
		t.Run(string(surface), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newRig(t, []dep{oa("a", sse(oaRole, oaText("Hi"), oaText(" there"), oaFinish, oaDone)), oa("b", nil)}, rigOptions{})
				defer g.close()
				req, p := g.request(surface, true, false)
				w := newRecorder()
				panicOnWrite(4)(w) // the served-by comment, role and first delta written, then the gateway panics
				res := g.run(context.Background(), w, req, p)
				truncatedStream(t, res, w, 1)
				if a := res.Attempts[0]; a.ErrorCode != string(failure.GatewayError) || a.UsageProvenance != audit.ProvenanceEstimated || a.Tokens.Output < 1 || a.CostUSD <= 0 {
					t.Fatalf("attempt %+v", a)
				}
				if !relay.Answered(w.h) {
					t.Fatal("relay.Answered is false after commit")
				}
			})
		})
	}
}

// Before commit, a panic is a typed 503 gateway_error in the caller's dialect (not an empty 200,
// not a failover to a deployment the panic would hit again).
func TestPanicBeforeCommitIsATyped503(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hook := &statsHook{fn: func(stats.Observation) { panic("boom") }}
		g := newRig(t, []dep{an("a", status(529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)), oa("b", nil)}, rigOptions{stats: hook})
		defer g.close()
		req, p := g.request(catalog.Anthropic, true, false)
		w := newRecorder()
		res := g.run(context.Background(), w, req, p)
		refused(t, res, w, failure.GatewayError, 1)
		if !strings.Contains(w.body.String(), `"type":"error"`) || res.Attempts[0].Outcome != audit.OutcomeFailed {
			t.Fatalf("%s %+v", w.body.String(), res.Attempts[0])
		}
	})
}

// The circuit ticket is reported in a defer: a panic while a request holds a half-open probe
// frees the probe slot, so the deployment is probed again instead of being dropped from every
// plan until restart (R-CIRCUIT-2).
func TestPanicWithProbeTicketFreesTheProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ok := sse(oaRole, oaText("Hi"), oaFinish, oaDone)
		a := func(w http.ResponseWriter, r *http.Request, n int) {
			if n == 0 {
				status(500, oaServerError)(w, r, n)
				return
			}
			ok(w, r, n)
		}
		g := newRig(t, []dep{oa("a", a), oa("b", ok)}, rigOptions{circuit: circuit.Settings{Failures: 1, Cooldown: 30 * time.Second}})
		defer g.close()
		run := func(wr func(*recorder)) (relay.Result, *recorder) {
			req, p := g.request(catalog.OpenAI, true, false)
			w := newRecorder()
			if wr != nil {
				wr(w)
			}
			return g.run(context.Background(), w, req, p), w
		}
		res, w := run(nil) // a fails once: its circuit opens; b serves
		served(t, res, w, "b", 2)
		time.Sleep(31 * time.Second) // the cooldown ends: a is half-open
		res, w = run(panicOnWrite(1))
		if len(res.Attempts) != 1 || res.Attempts[0].Deployment != "a" {
			t.Fatalf("the probe request: %+v", res.Attempts)
		}
		if g.circuits.Open("pa", "a", "m") {
			t.Fatal("the panicking probe left deployment a's circuit with its probe in flight: a is dropped from every plan")
		}
		res, w = run(nil) // a is probed again and closes
		served(t, res, w, "a", 1)
	})
}

// After the shutdown grace (the request context cancelled with failure.ErrShutdown), a request
// between attempts is answered 503 gateway_error in its dialect, not an empty 200: the caller is
// still there. A caller that went away gets nothing (there is nobody to answer).
func TestShutdownBetweenAttemptsIsA503(t *testing.T) {
	for _, shutdown := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			hook := &statsHook{fn: func(stats.Observation) {
				if shutdown {
					cancel(failure.ErrShutdown)
				} else {
					cancel(context.Canceled)
				}
			}}
			g := newRig(t, []dep{oa("a", status(500, oaServerError)), oa("b", nil)}, rigOptions{stats: hook})
			defer g.close()
			req, p := g.request(catalog.OpenAI, true, false)
			w := newRecorder()
			res := g.run(ctx, w, req, p)
			if !shutdown {
				if res.Class != failure.Cancelled || w.status != 0 || w.body.Len() != 0 {
					t.Fatalf("cancelled: %+v %d %q", res, w.status, w.body.String())
				}
				return
			}
			refused(t, res, w, failure.GatewayError, 1)
			if !strings.Contains(w.body.String(), "shutting down") {
				t.Fatalf("body %s", w.body.String())
			}
		})
	}
}

// A metered request (Request.CapOutput) whose caller set no output cap is held to its
// reserve's basis: the upstream request carries the model's max_output_tokens (1000 here) on
// an OpenAI deployment, same dialect or translated; an Anthropic deployment gets it as its
// max_tokens default. A provider that honours it cannot bill more output than was reserved.
// A caller's own cap, or an unmetered request, is forwarded unchanged.
func TestMeteredRequestHeldToItsReserve(t *testing.T) {
	// honest writes as much as it is allowed: 10^6 tokens unless the request caps it.
	honest := func(w http.ResponseWriter, r *http.Request, n int) {
		out := int64(1_000_000)
		if v := gjson.GetBytes(mustBody(r), "max_completion_tokens"); v.Exists() {
			out = v.Int()
		}
		sse(oaRole, oaText("Hi"), oaFinish, oaUsage(10, int(out)), oaDone)(w, r, n)
	}
	for _, tc := range []struct {
		name    string
		surface catalog.Dialect
		capped  bool
		body    string // replaces the request body when set
		want    string // in the upstream body
		absent  string // not in the upstream body
	}{
		{"same dialect", catalog.OpenAI, true, "", `"max_completion_tokens":1000,`, ""},
		{"translated from the Responses surface", catalog.Responses, true, "", `"max_completion_tokens":1000`, ""},
		{"caller's own cap kept", catalog.OpenAI, true, `{"model":"m","stream":true,"max_tokens":50,"messages":[{"role":"user","content":"hi"}]}`, `"max_tokens":50`, "max_completion_tokens"},
		{"unmetered", catalog.OpenAI, false, "", "", "max_completion_tokens"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newRig(t, []dep{oa("a", honest)}, rigOptions{})
				defer g.close()
				req, p := g.request(catalog.OpenAI, true, false)
				if tc.surface == catalog.Responses {
					req.Surface, req.Codec = catalog.Responses, relay.ResponsesCodec()
					req.Body = []byte(`{"model":"m","stream":true,"input":"hi"}`)
				}
				if tc.body != "" {
					req.Body = []byte(tc.body)
				}
				info, err := req.Codec.ParseRequest(req.Body)
				if err != nil {
					t.Fatal(err)
				}
				req.Info, req.CapOutput = info, tc.capped
				w := newRecorder()
				res := g.run(context.Background(), w, req, p)
				served(t, res, w, "a", 1)
				up := g.body("a")
				if (tc.want != "" && !strings.Contains(up, tc.want)) || (tc.absent != "" && strings.Contains(up, tc.absent)) || !gjson.Valid(up) {
					t.Fatalf("upstream body %s", up)
				}
				if !tc.capped || tc.body != "" {
					return
				}
				// The reserve of this request: input estimate x input price + basis x output price.
				reserve := admission.CostMicroUSD(int64(req.InputTokens), 1000, 1, 2)
				if cost := admission.MicroUSD(res.Attempts[0].CostUSD); cost > reserve {
					t.Fatalf("cost %d micro-USD above the reserve %d", cost, reserve)
				}
			})
		})
	}
}

// mustBody is the upstream request body the rig read (it restores r.Body for the script).
func mustBody(r *http.Request) []byte {
	b, _ := io.ReadAll(r.Body)
	return b
}
