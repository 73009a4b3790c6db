package fakeprovider

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tidwall/gjson"

	"github.com/switchyard-gw/switchyard/internal/catalog"
)

// no_done: the whole answer with its finish and usage, then a clean end without the terminal
// frame; non-stream requests are answered normally.
func TestKindNoDone(t *testing.T) {
	for _, dc := range dialects {
		t.Run(string(dc.d), func(t *testing.T) {
			p := New("x", dc.d)
			p.SetDefault(Behavior{Kind: KindNoDone})
			srv := serve(t, p)
			body := strings.Replace(streamBody(dc.body), "{", `{"stream_options":{"include_usage":true},`, 1)
			resp, data, err := rawPost(t.Context(), srv, dc.path, body, nil)
			if err != nil || resp.StatusCode != 200 || bytes.Contains(data, []byte(dc.terminal)) {
				t.Fatalf("%v %d %q", err, resp.StatusCode, data)
			}
			evs := parseSSE(t, data)
			last := evs[len(evs)-1].data
			switch dc.d {
			case catalog.Anthropic:
				if gjson.Get(last, "type").Str != "message_delta" || gjson.Get(last, "delta.stop_reason").Str != "end_turn" || !gjson.Get(last, "usage.output_tokens").Exists() {
					t.Fatalf("last frame %s", last)
				}
			default:
				if !gjson.Get(last, "usage.completion_tokens").Exists() || gjson.Get(evs[len(evs)-2].data, "choices.0.finish_reason").Str != "stop" {
					t.Fatalf("last frames %+v", evs[len(evs)-2:])
				}
			}
			resp, data, err = rawPost(t.Context(), srv, dc.path, dc.body, nil)
			if err != nil || resp.StatusCode != 200 || !gjson.ValidBytes(data) {
				t.Fatalf("non-stream: %v %d %q", err, resp.StatusCode, data)
			}
		})
	}
}

// ping_only: the preamble, then only keep-alives (Anthropic ping events, OpenAI comments)
// every Delay until the caller goes away; no content delta, no finish, ever.
func TestKindPingOnly(t *testing.T) {
	for _, d := range []catalog.Dialect{catalog.OpenAI, catalog.Anthropic} {
		t.Run(string(d), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := New("x", d)
				p.SetDefault(Behavior{Kind: KindPingOnly, Delay: 5 * time.Second})
				ctx, cancel := context.WithTimeout(context.Background(), 61*time.Second)
				defer cancel()
				rec, aborted := serveDirect(p, modelRequest(ctx, d, true))
				if !aborted || rec.Code != 200 {
					t.Fatalf("aborted %v status %d", aborted, rec.Code)
				}
				body := rec.Body.String()
				pings := strings.Count(body, ": keep-alive\n\n")
				if d == catalog.Anthropic {
					pings = strings.Count(body, "event: ping\n") - 1 // one is in the preamble
				}
				if pings != 12 || strings.Contains(body, "delta\":{\"content") || strings.Contains(body, "text_delta") || strings.Contains(body, "finish_reason\":\"") {
					t.Fatalf("%d keep-alives in %q", pings, body)
				}
			})
		})
	}
}
