package fakeprovider

import (
	"net/http"
	"time"

	"github.com/switchyard-gw/switchyard/internal/catalog"
)

// Kinds of misbehaving streams for the gateway's first-output deadline and end-of-stream
// rules (issue 9).
const (
	// KindPingOnly (stream) sends the 200 headers and the lifecycle preamble (OpenAI: the
	// role-only chunk; Anthropic: message_start, content_block_start, ping), then only
	// keep-alives — an Anthropic `ping` event, an OpenAI `: keep-alive` comment — every
	// Behavior.Delay (default 1s) until the caller goes away: no output, ever. On a
	// non-streaming request it never sends headers (like KindHang).
	KindPingOnly Kind = "ping_only"
	// KindNoDone (stream) sends the whole answer, its finish (finish_reason, usage when asked;
	// Anthropic message_delta with stop_reason and usage) and then ends the response cleanly
	// without the terminal frame ([DONE] / message_stop). On a non-streaming request it answers
	// normally.
	KindNoDone Kind = "no_done"
)

// defaultPingInterval is KindPingOnly's keep-alive interval when Behavior.Delay is 0.
const defaultPingInterval = time.Second

// respondLifecycle carries out KindPingOnly and KindNoDone; handled is false for any other
// kind.
func (p *Provider) respondLifecycle(w http.ResponseWriter, r *http.Request, req Request, b Behavior) (handled bool, err error) {
	switch b.Kind {
	case KindPingOnly, KindNoDone:
	default:
		return false, nil
	}
	ctx := r.Context()
	if !req.Stream {
		if b.Kind == KindPingOnly {
			<-ctx.Done()
			return true, errCallerGone
		}
		b.Kind = KindOK
		return true, p.respond(w, r, req, b)
	}
	a := buildAnswer(p.dialect, p.name, req.Seq, req.At.Unix(), req.Body, b)
	var fs frames
	keepAlive := keepAliveLine
	if p.dialect == catalog.Anthropic {
		fs = anthropicFrames(a)
		keepAlive = sseEvent("ping", anType{Type: "ping"})
	} else {
		fs = openAIFrames(a)
	}
	sw := newSSEWriter(ctx, w, b)
	if err := sw.start(); err != nil {
		return true, err
	}
	if b.Kind == KindNoDone {
		fs.list = fs.list[:len(fs.list)-1] // the terminal frame is always the last
		_, err := sw.streamUntil(fs, b.Delay, -1)
		return true, err
	}
	for _, f := range fs.list[:fs.preamble] {
		if err := sw.frame(f.data); err != nil {
			return true, err
		}
	}
	gap := b.Delay
	if gap <= 0 {
		gap = defaultPingInterval
	}
	for {
		if err := wait(ctx, gap); err != nil {
			return true, err
		}
		if err := sw.write(keepAlive); err != nil {
			return true, err
		}
	}
}
