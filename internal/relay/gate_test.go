package relay_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/failure"
)

// gate is a commit gate that records its calls and how many bytes the caller had then.
type gate struct {
	err    error
	calls  int
	before []int // the caller's writes at each call
	w      *recorder
}

func (g *gate) Secure(context.Context) error {
	g.calls++
	g.before = append(g.before, g.w.writes+g.w.status)
	return g.err
}

// TestCommitGate (issue 24 item 1): the request's gate runs once, after the upstream answered
// and before anything reaches the caller (stream and non-stream); a gate that refuses (the
// reserve cannot be recorded) ends the request with its error before commit: a gateway_error,
// no failover to the next deployment, nothing of the answer written.
func TestCommitGate(t *testing.T) {
	okChat := jsonBody(`{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`)
	okStream := sse(oaRole, oaText("Hi"), oaFinish, oaDone)
	for _, stream := range []bool{false, true} {
		play := okChat
		if stream {
			play = okStream
		}
		t.Run(map[bool]string{false: "non-stream", true: "stream"}[stream], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newRig(t, []dep{oa("a", play), oa("b", play)}, rigOptions{})
				defer g.close()
				req, p := g.request(catalog.OpenAI, stream, false)
				w := newRecorder()
				gt := &gate{w: w}
				req.Gate = gt
				res := g.run(context.Background(), w, req, p)
				served(t, res, w, "a", 1)
				if gt.calls != 1 || gt.before[0] != 0 {
					t.Fatalf("gate called %d times, the caller had %v writes+status then; want once, before any", gt.calls, gt.before)
				}

				req, p = g.request(catalog.OpenAI, stream, false)
				w = newRecorder()
				refusal := &failure.Error{Class: failure.GatewayError, Msg: "the ledger is not answering"}
				gt = &gate{w: w, err: refusal}
				req.Gate = gt
				res = g.run(context.Background(), w, req, p)
				refused(t, res, w, failure.GatewayError, 1)
				if gt.calls != 1 || g.callsTo("b") != 0 {
					t.Fatalf("gate called %d times, deployment b %d; want once, no failover", gt.calls, g.callsTo("b"))
				}
			})
		})
	}
}
