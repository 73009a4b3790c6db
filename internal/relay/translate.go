package relay

import (
	"slices"

	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/dialect"
	"github.com/switchyard-gw/switchyard/internal/dialect/anthropic"
	"github.com/switchyard-gw/switchyard/internal/dialect/openai"
	"github.com/switchyard-gw/switchyard/internal/dialect/responses"
	"github.com/switchyard-gw/switchyard/internal/sse"
)

// translation is the per-request state of cross-dialect attempts (R-DIALECT-2): the caller's
// request decoded once, on the first candidate of the other dialect, and the stream decoder of
// each deployment dialect and encoder of each caller dialect, as values (pooled with scratch).
type translation struct {
	decoded bool
	req     *dialect.Request
	decErr  error
	base    int // len(req.Dropped) after decoding: what the caller's decoder itself dropped
	events  []dialect.Event
	// aliases map the tool names the running attempt sent upstream back to the caller's names
	// and namespaces (dialect.Fit); nil when none was renamed.
	aliases []dialect.ToolAlias
	// stop is the stop reason of the last translated non-stream response (rewriteResponse).
	stop dialect.StopReason

	oaDec openai.StreamDecoder
	oaEnc openai.StreamEncoder
	anDec anthropic.StreamDecoder
	anEnc anthropic.StreamEncoder
	rsEnc responses.StreamEncoder
}

func (t *translation) reset() {
	t.decoded, t.req, t.decErr, t.base = false, nil, nil, 0
	t.events = t.events[:0]
	t.aliases = nil
}

// appendBody builds the upstream body for a candidate of the other dialect: the caller's
// request, decoded once, encoded in the deployment's dialect. Unless the model accepts reasoning
// parameters (reasoning, catalog.Model.Reasoning), the request's reasoning effort and thinking
// budget are left out and listed as dropped under the caller's names. It returns the parameters
// this attempt dropped. capOut, when positive, is the output cap of a metered request whose
// caller set none (Request.CapOutput), sent to an OpenAI deployment. An error is a refusal to translate (a typed 400): the candidate is
// skipped.
func (t *translation) appendBody(dst []byte, req *Request, up Codec, upstreamModel string, maxOut, capOut int64, reasoning bool) ([]byte, []string, error) {
	if !t.decoded {
		t.decoded = true
		t.req, t.decErr = req.Codec.DecodeRequest(req.Body)
		if t.req != nil {
			t.base = len(t.req.Dropped)
		}
	}
	if t.decErr != nil {
		return dst, nil, t.decErr
	}
	t.req.Dropped = t.req.Dropped[:t.base]
	r := t.req
	if !reasoning && (r.ReasoningEffort != "" || r.ThinkingBudget > 0 || r.ThinkingAdaptive) {
		// Encode a copy without them: t.req serves the other candidates, whose model may accept them.
		cp := *r
		cp.Dropped = append(cp.Dropped, reasoningParams(req.Surface, r)...)
		cp.ReasoningEffort, cp.ThinkingBudget, cp.ThinkingAdaptive = "", 0, false
		r = &cp
	}
	if capOut > 0 && r.MaxTokens == 0 && up.isOpenAI() {
		// A metered request without an output cap is held to its reserve's basis (an
		// Anthropic request already defaults max_tokens to it).
		cp := *r
		cp.MaxTokens = capOut
		r = &cp
	}
	// The target's field limits (docs/translation.md "Target field limits"): hosted tools out,
	// names, ids and the end-user id fitted; each change listed under the caller's name.
	lim := dialect.AnthropicLimits
	if up.isOpenAI() {
		lim = dialect.OpenAILimits
	}
	fr, aliases, ch, err := dialect.Fit(r, lim)
	if err != nil {
		return dst, nil, err
	}
	t.aliases = aliases
	if fr != r {
		fr.Dropped = append(fr.Dropped[:len(fr.Dropped):len(fr.Dropped)], fitChanges(req.Surface, ch)...)
		r = fr
	}
	out, err := up.AppendRequest(dst, r, upstreamModel, maxOut)
	var dropped []string
	if len(r.Dropped) > 0 {
		dropped = slices.Clone(r.Dropped)
		slices.Sort(dropped)
		dropped = slices.Compact(dropped)
	}
	return out, dropped, err
}

// fitChanges names what dialect.Fit changed, under the caller's field names, for the audit's
// dropped_params: "NAME:hashed", "NAME:clamped", "tools.name:renamed" and the dropped hosted
// tools ("tools.web_search", "tools.custom:apply_patch").
func fitChanges(surface catalog.Dialect, ch dialect.Changes) []string {
	var names []string
	if ch.UserHashed {
		if surface == catalog.Anthropic {
			names = append(names, "metadata.user_id:hashed")
		} else {
			names = append(names, "safety_identifier:hashed")
		}
	}
	if ch.StopClamped {
		if surface == catalog.Anthropic {
			names = append(names, "stop_sequences:clamped")
		} else {
			names = append(names, "stop:clamped")
		}
	}
	if ch.ToolsRenamed {
		names = append(names, "tools.name:renamed")
	}
	if ch.CallIDs {
		names = append(names, "tool_call_id:hashed")
	}
	return append(names, ch.DroppedTools...)
}

// unalias gives a tool call of the running attempt the caller's name and namespace back.
func (t *translation) unalias(name string) (string, string) {
	if len(t.aliases) == 0 {
		return name, ""
	}
	return dialect.Unalias(t.aliases, name)
}

// reasoningParams names the caller's reasoning parameters that r carries, in the caller's
// dialect: thinking and output_config.effort (Anthropic), reasoning.effort (Responses),
// reasoning_effort (OpenAI chat).
func reasoningParams(surface catalog.Dialect, r *dialect.Request) []string {
	var names []string
	switch surface {
	case catalog.Anthropic:
		if r.ThinkingBudget > 0 || r.ThinkingAdaptive {
			names = append(names, "thinking")
		}
		if r.ReasoningEffort != "" {
			names = append(names, "output_config.effort")
		}
	case catalog.Responses:
		names = append(names, "reasoning.effort")
	default:
		names = append(names, "reasoning_effort")
	}
	return names
}

// scanFrame decodes one upstream event of the deployment's dialect into canonical events and
// encodes them in the caller's dialect, appending to dst. The frame's kind is the strongest of
// its events': done, then semantic, then lifecycle; a frame with no event is dropped.
func (t *translation) scanFrame(dst []byte, ev sse.Event, up, caller Codec, st *dialect.StreamState) ([]byte, dialect.FrameKind) {
	t.events = up.decodeStream(t, ev, t.events[:0])
	kind := dialect.FrameDrop
	for i := range t.events {
		e := &t.events[i]
		switch {
		case e.Type == dialect.EventError:
			return dst, dialect.FrameError
		case e.Type == dialect.EventDone:
			kind = dialect.FrameDone
		case e.Type.Semantic():
			if kind != dialect.FrameDone {
				kind = dialect.FrameSemantic
			}
		default:
			if kind == dialect.FrameDrop {
				kind = dialect.FrameLifecycle
			}
		}
		switch e.Type {
		case dialect.EventToolCall:
			e.Name, e.Namespace = t.unalias(e.Name)
		case dialect.EventUsage: // the latest report wins; it commits nothing on its own
			st.Usage, st.UsageSeen = e.Usage, true
		case dialect.EventFinish:
			if !st.Finished { // the canonical stop reason: a translated attempt's finish reason
				st.FinishReason = dialect.InternFinishReason(string(e.Stop))
			}
			st.Finished = true
		}
		dst = caller.encodeStream(t, dst, e)
	}
	return dst, kind
}

// rewriteResponse translates a non-stream response of the deployment's dialect.
func (t *translation) rewriteResponse(dst, body []byte, up, caller Codec, requestedModel, requestID string) ([]byte, dialect.Usage, bool, error) {
	resp, err := up.DecodeResponse(body)
	if err != nil {
		return dst, dialect.Usage{}, false, err
	}
	t.stop = resp.Stop
	if len(t.aliases) > 0 {
		for i := range resp.Parts {
			if p := &resp.Parts[i]; p.Type == dialect.PartToolCall {
				p.ToolName, p.Namespace = t.unalias(p.ToolName)
			}
		}
	}
	return caller.AppendResponse(dst, resp, requestedModel, requestID), resp.Usage, resp.UsageSeen, nil
}
