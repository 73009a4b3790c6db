package relay

import (
	"bytes"
	"context"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"time"

	"github.com/switchyard-gw/switchyard/internal/audit"
	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/dialect"
	"github.com/switchyard-gw/switchyard/internal/failure"
	"github.com/switchyard-gw/switchyard/internal/sse"
	"github.com/switchyard-gw/switchyard/internal/stats"
	"github.com/switchyard-gw/switchyard/internal/upstream"
	"github.com/tidwall/gjson"
)

// attempt performs one physical call. It returns nil when the response completed, or the
// failure; res.Committed says whether it came after commit.
func (rl *Relay) attempt(ctx context.Context, r *attemptRun) error {
	dep := r.cand.Route.Deployment
	client, headers := rl.client(dep.Name)
	if client == nil {
		return failure.Newf(failure.UpstreamError, "deployment %q has no client", dep.Name)
	}
	r.upName = r.a.UpstreamModel
	r.headers = headers
	stream := r.req.Info.Stream
	op := r.req.Protocol
	if r.pass {
		op = upstream.OpResponses
	}
	call, err := client.SendTyped(ctx, op, r.sc.body, r.req.ContentType, stream, r.req.AnthropicBeta)
	if err != nil {
		return err
	}
	defer call.Close()
	ms := msSince(r.a.DispatchedAt, call.HeadersAt)
	r.a.HeadersMS = &ms
	r.a.UpstreamStatus = call.UpstreamStatus // the platform's own status, not its dialect translation
	if call.Status < 200 || call.Status > 299 {
		b, _ := readLimited(r.sc.resp[:0], call.Body, maxErrorBody)
		r.sc.resp = b
		err := r.up.NormalizeError(call.Status, call.Header.Get, b)
		if fe := failure.From(err); dep.BYOK && fe.Class == failure.UpstreamAuth {
			// The caller's own credential, not the gateway's: say so (never the credential).
			cp := *fe
			cp.Msg = "the provider rejected the credentials of your own connection " + dep.Name + "; check its api_key"
			err = &cp
		}
		if fe := failure.From(err); call.Status == http.StatusNotFound && fe.Class == failure.UpstreamError && r.model.SnapshotSuffix != "" {
			// The provider does not know the dated snapshot the caller named: the caller's
			// model string is at fault, not the deployment (no failover, no circuit).
			return &failure.Error{Class: failure.ModelUnavailable, Param: "model", UpstreamStatus: call.Status, Cause: err,
				Msg: "the dated snapshot " + strconv.Quote(r.echo) + " is not served by the provider; GET /v1/models lists the available models"}
		}
		return err
	}
	if !stream {
		return rl.complete(ctx, r, call)
	}
	ct, _, _ := mime.ParseMediaType(call.Header.Get("Content-Type"))
	if ct != "text/event-stream" {
		return &failure.Error{Class: failure.UpstreamError, Msg: "the provider did not answer with a stream", UpstreamStatus: call.Status}
	}
	return rl.pump(ctx, r, call)
}

// hasOutputCap reports whether an OpenAI chat body sets an output cap itself (a 0 included).
func hasOutputCap(body []byte) bool {
	return dialect.Get(body, "max_completion_tokens").Exists() || dialect.Get(body, "max_tokens").Exists()
}

// appendOutputCap appends the JSON object body with "max_completion_tokens": n as its first
// member; every other byte is body's.
func appendOutputCap(dst, body []byte, n int64) []byte {
	open := bytes.IndexByte(body, '{')
	if open < 0 {
		return append(dst, body...)
	}
	dst = append(dst, body[:open+1]...)
	dst = append(dst, `"max_completion_tokens":`...)
	dst = strconv.AppendInt(dst, n, 10)
	dst = append(dst, ',')
	return append(dst, body[open+1:]...)
}

// complete reads a non-stream response whole, then commits it.
func (rl *Relay) complete(ctx context.Context, r *attemptRun, call *upstream.Call) error {
	b, err := readLimited(r.sc.resp[:0], call.Body, maxResponseBody)
	r.sc.resp = b
	if err != nil {
		return call.Err(ctx, err)
	}
	var out []byte
	var usage dialect.Usage
	var seen bool
	if r.cross {
		out, usage, seen, err = r.sc.tr.rewriteResponse(r.sc.out[:0], b, r.up, r.req.Codec, r.echo, r.req.ID)
		if r.req.FinishReasons {
			r.a.FinishReason = dialect.InternFinishReason(string(r.sc.tr.stop))
		}
	} else {
		out, usage, seen, err = r.req.Codec.RewriteResponse(r.sc.out[:0], b, r.echo)
		out = validUTF8(out) // relayed undecoded: no invalid byte reaches the caller (utf8.go)
		if r.req.FinishReasons && err == nil {
			r.a.FinishReason = responseFinishReason(r.up, b)
			if r.pass {
				r.a.FinishReason = dialect.InternFinishReason(gjson.GetBytes(b, "status").Str)
			}
		}
	}
	if err == nil {
		out = r.appendProviderMetadata(out) // served-by in the body (metadata.go)
	}
	r.sc.out = out
	if err != nil {
		return err
	}
	images := r.req.Protocol == catalog.ProtocolImages || r.req.Protocol == catalog.ProtocolImageEdits
	if images {
		r.images = max(dialect.Get(b, "data.#").Int(), 0)
	}
	if !seen {
		// No usage report (R-BILL-2): input from the request estimate, output from the answer's
		// text by the same bytes/4 estimate (none for images: they bill per image, PerImageUSD),
		// marked estimated; never billed 0.
		usage = dialect.Usage{Input: int64(r.req.InputTokens)}
		if !images {
			usage.Output = estimateOutput(r.up, b)
		}
		r.estimated = true
	}
	if err := r.gate(ctx); err != nil {
		return err
	}
	ms := msSince(r.a.DispatchedAt, time.Now())
	r.a.FirstTokenMS = &ms
	r.commit(false)
	r.res.Usage, r.res.UsageSeen = usage, seen
	r.finishUsage(usage, seen)
	r.a.Outcome = audit.OutcomeCompleted
	r.res.Status = http.StatusOK
	if r.req.Debug {
		out = AppendMember(out, "debug", r.req.debugOf(r.res)) // the attempt is complete and billed
		r.sc.out = out
	}
	if _, err := r.w.Write(out); err != nil {
		r.a.Outcome = audit.OutcomeCancelled
		r.res.Class = failure.Cancelled
	}
	return nil
}

// estimateOutput is the output-token estimate of a non-stream answer body of the codec's
// dialect without a usage report: the bytes of its text, reasoning, refusal and tool-call
// arguments divided by 4 (the gateway's input estimate uses the same ratio), at least 1 when
// the answer has any.
func estimateOutput(up Codec, body []byte) int64 {
	resp, err := up.DecodeResponse(body)
	if err != nil || resp == nil {
		return 0
	}
	n := 0
	for i := range resp.Parts {
		p := &resp.Parts[i]
		n += len(p.Text) + len(p.Arguments) + len(p.ToolName)
	}
	if n == 0 {
		return 0
	}
	return int64(max((n+3)/4, 1))
}

// pump reads the upstream stream. Before commit it holds lifecycle frames and fails over on any
// failure; the first semantic frame commits; after commit a failure becomes one terminal error
// event (R-FAIL-2..4).
func (rl *Relay) pump(ctx context.Context, r *attemptRun, call *upstream.Call) error {
	sc := r.sc
	sc.st.Reset(r.echo, r.req.Info.IncludeUsage)
	sc.hold = sc.hold[:0]
	sc.rd.Reset(call.Body)
	codec := r.req.Codec
	if r.cross {
		r.up.resetDecoder(&sc.tr)
		codec.resetEncoder(&sc.tr, r.echo, r.req.ID, r.req.Info.IncludeUsage)
	}
	for {
		ev, err := sc.rd.Next()
		if err != nil {
			if errors.Is(err, io.EOF) && sc.st.Finished && r.res.Committed {
				// The provider sent its finish (and usage), then closed cleanly without the
				// terminal frame: the answer is complete. The caller gets its dialect's end.
				return rl.endStream(r)
			}
			if errors.Is(err, io.EOF) {
				err = &failure.Error{Class: failure.UpstreamError, Msg: "the provider ended the stream early"}
			} else if errors.Is(err, sse.ErrEventTooLarge) {
				err = failure.Wrap(failure.UpstreamError, "the provider sent an oversized stream event", err)
			} else if errors.Is(err, io.ErrUnexpectedEOF) {
				err = failure.Wrap(failure.UpstreamError, "the provider ended the stream early", err)
			} else {
				err = call.Err(ctx, err)
			}
			return rl.streamFailure(r, err)
		}
		var out []byte
		var kind dialect.FrameKind
		if r.cross {
			out, kind = sc.tr.scanFrame(sc.out[:0], ev, r.up, codec, &sc.st)
		} else {
			out, kind = codec.ScanFrame(sc.out[:0], ev, &sc.st)
			out = validUTF8(out)
		}
		sc.out = out
		switch kind {
		case dialect.FrameDrop:
			continue
		case dialect.FrameError:
			return rl.streamFailure(r, r.up.NormalizeStreamError(ev.Data))
		case dialect.FrameLifecycle:
			if !r.res.Committed {
				if len(sc.hold)+len(out) > MaxHeldBytes {
					return rl.streamFailure(r, &failure.Error{Class: failure.UpstreamError, UpstreamStatus: call.Status,
						Msg: "the provider sent more than 64 KiB of stream events before any output"})
				}
				sc.hold = append(sc.hold, out...)
				continue
			}
		case dialect.FrameSemantic, dialect.FrameDone:
			if kind == dialect.FrameDone && !r.res.Committed {
				// The stream's end before any output or finish (`data: [DONE]` alone, a bare
				// message_stop): the provider answered nothing. It fails over like any failure
				// before commit; an empty stream never reaches the caller as a success.
				return rl.streamFailure(r, &failure.Error{Class: failure.UpstreamError, UpstreamStatus: call.Status,
					Msg: "the provider ended the stream without any output"})
			}
			if !r.res.Committed {
				call.Output() // the first-output deadline is met
				if err := r.gate(ctx); err != nil {
					return err
				}
				ms := msSince(r.a.DispatchedAt, time.Now())
				r.a.FirstTokenMS = &ms
				r.commit(true)
				// Who serves comes first (a comment the SDKs skip); sc.resp is free on a stream.
				sc.resp = r.appendStreamMetadata(sc.resp[:0])
				if _, err := r.w.Write(sc.resp); err != nil {
					return rl.callerGone(r)
				}
				if len(sc.hold) > 0 {
					if _, err := r.w.Write(sc.hold); err != nil {
						return rl.callerGone(r)
					}
				}
				if cap(sc.hold) > maxKeptHold { // a long preamble: not held for the rest of the stream
					sc.hold = nil
				}
			}
		}
		if _, err := r.w.Write(out); err != nil {
			return rl.callerGone(r)
		}
		if kind == dialect.FrameSemantic {
			r.frames++
			r.res.Gaps.event(time.Now())
		}
		if err := r.rc.Flush(); err != nil {
			return rl.callerGone(r)
		}
		if kind == dialect.FrameDone {
			r.a.FinishReason = sc.st.FinishReason
			call.Drain() // lets the connection be reused
			r.res.Usage, r.res.UsageSeen = sc.st.Usage, sc.st.UsageSeen
			r.finishUsage(sc.st.Usage, sc.st.UsageSeen)
			r.a.Outcome = audit.OutcomeCompleted
			return nil
		}
	}
}

// endStream completes a committed stream whose provider sent its finish and then ended the
// body cleanly without the terminal frame: the caller gets the terminal frame its dialect
// expects (the translated stream's end, or `data: [DONE]` / message_stop), and the attempt is
// completed and billed from the usage seen (estimated when none was), never marked truncated.
func (rl *Relay) endStream(r *attemptRun) error {
	sc := r.sc
	if r.cross {
		sc.out = r.req.Codec.encodeStream(&sc.tr, sc.out[:0], &dialect.Event{Type: dialect.EventDone})
	} else {
		sc.out = r.req.Codec.appendStreamDone(sc.out[:0])
	}
	if _, err := r.w.Write(sc.out); err != nil {
		return rl.callerGone(r)
	}
	if err := r.rc.Flush(); err != nil {
		return rl.callerGone(r)
	}
	r.res.Usage, r.res.UsageSeen = sc.st.Usage, sc.st.UsageSeen
	r.finishUsage(sc.st.Usage, sc.st.UsageSeen)
	r.a.Outcome = audit.OutcomeCompleted
	r.a.FinishReason = sc.st.FinishReason
	return nil
}

// responseFinishReason is the finish reason of a non-stream response body of the codec's
// dialect: the first choice's finish_reason (OpenAI chat completions) or the stop_reason
// (Anthropic messages); "" when it has none.
func responseFinishReason(up Codec, body []byte) string {
	path := "stop_reason"
	if up.isOpenAI() {
		path = "choices.0.finish_reason"
	}
	v := gjson.GetBytes(body, path)
	if v.Type != gjson.String {
		return ""
	}
	return dialect.InternFinishReason(v.Str)
}

// streamFailure handles a failure inside a stream. Before commit it is returned for failover
// (or to be returned directly when it does not fail over). After commit the caller gets one
// terminal error event and the stream ends (R-FAIL-4); the underlying failure is returned so
// that it counts on the circuit when its class is failover-eligible.
func (rl *Relay) streamFailure(r *attemptRun, err error) error {
	fe := failure.From(err)
	if !r.res.Committed {
		return fe
	}
	r.res.Usage, r.res.UsageSeen = r.sc.st.Usage, r.sc.st.UsageSeen
	r.finishUsage(r.sc.st.Usage, r.sc.st.UsageSeen)
	if fe.Class == failure.Cancelled {
		r.a.Outcome, r.a.ErrorCode = audit.OutcomeCancelled, string(failure.Cancelled)
		r.res.Class = failure.Cancelled
		return fe
	}
	r.a.Outcome, r.a.ErrorCode = audit.OutcomeTruncated, string(failure.UpstreamTruncated)
	r.res.Class = failure.UpstreamTruncated
	term := &failure.Error{Class: failure.UpstreamTruncated, Msg: "the provider failed after the response started; the response is incomplete"}
	if fe.Class == failure.GatewayError {
		term.Msg = "the gateway is shutting down; the response is incomplete"
	}
	if r.cross {
		r.sc.out = r.req.Codec.encodeStreamError(&r.sc.tr, r.sc.out[:0], term, r.req.ID)
	} else {
		r.sc.out = r.req.Codec.AppendStreamError(r.sc.out[:0], term, r.req.ID)
	}
	if _, err := r.w.Write(r.sc.out); err == nil {
		_ = r.rc.Flush()
	}
	under := *fe
	under.Hang = false // a stall after commit truncates; the hang rule is about missing headers
	return &under
}

func (rl *Relay) callerGone(r *attemptRun) error {
	r.a.Outcome, r.a.ErrorCode = audit.OutcomeCancelled, string(failure.Cancelled)
	r.res.Class = failure.Cancelled
	r.res.Usage, r.res.UsageSeen = r.sc.st.Usage, r.sc.st.UsageSeen
	r.finishUsage(r.sc.st.Usage, r.sc.st.UsageSeen)
	return &failure.Error{Class: failure.Cancelled, Msg: "the caller went away"}
}

func msSince(from, to time.Time) float64 { return float64(to.Sub(from).Microseconds()) / 1000 }

// readLimited appends r's content to dst, reading at most limit bytes; more is an error.
func readLimited(dst []byte, r io.Reader, limit int) ([]byte, error) {
	buf := bytes.NewBuffer(dst)
	n, err := buf.ReadFrom(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return buf.Bytes(), err
	}
	if n > int64(limit) {
		return buf.Bytes()[:limit], &failure.Error{Class: failure.UpstreamError, Msg: "the provider's response is too large"}
	}
	return buf.Bytes(), nil
}

// observe hands one attempt's outcome to the statistics windows, off the request path.
func (rl *Relay) observe(a *audit.Attempt, err error) {
	if rl.Stats == nil {
		return
	}
	o := stats.Observation{Deployment: a.Deployment, Model: a.Model, At: a.EndedAt,
		Duration: a.EndedAt.Sub(a.DispatchedAt), OutputTokens: int(a.Tokens.Output)}
	if fe := failure.From(err); fe != nil {
		o.Outcome = fe.Class
	}
	if a.FirstTokenMS != nil {
		o.TTFT = time.Duration(*a.FirstTokenMS * float64(time.Millisecond))
	}
	rl.Stats.Record(o)
}
