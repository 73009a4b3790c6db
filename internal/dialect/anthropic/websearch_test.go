package anthropic

import (
	"testing"

	"github.com/switchyard-gw/switchyard/internal/dialect"
	"github.com/switchyard-gw/switchyard/internal/sse"
)

// TestWebSearchRequests: usage.server_tool_use.web_search_requests is the count of web searches
// billed per call (dialect.Usage.WebSearchRequests; docs/pricing.md "Server-tool calls"), read
// from a message, a passed-through stream's message_delta (cumulative: it overwrites
// message_start's) and the translating decoders; web_fetch_requests is not billed per call;
// a server_tool_use that is not an object, or a repeated member, counts as the first read.
func TestWebSearchRequests(t *testing.T) {
	start := []byte(`{"type":"message_start","message":{"id":"m","usage":{"input_tokens":12,"output_tokens":1,"server_tool_use":{"web_search_requests":0}}}}`)
	delta := []byte(`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"input_tokens":12,"output_tokens":9,` +
		`"server_tool_use":{"web_search_requests":2,"web_fetch_requests":5,"web_search_requests":7}}}`)
	want := dialect.Usage{Input: 12, Output: 9, WebSearchRequests: 2}

	var st dialect.StreamState
	st.Reset("m", false)
	ScanFrame(nil, sse.Event{Name: []byte("message_start"), Data: start}, &st)
	ScanFrame(nil, sse.Event{Name: []byte("message_delta"), Data: delta}, &st)
	if st.Usage != want {
		t.Errorf("passed-through stream usage %+v, want %+v", st.Usage, want)
	}

	var d StreamDecoder
	d.Reset()
	var got dialect.Usage
	for _, ev := range [...][]byte{start, delta} {
		for _, e := range d.Decode(sse.Event{Data: ev}, nil) {
			if e.Type == dialect.EventUsage {
				got = e.Usage
			}
		}
	}
	if got != want {
		t.Errorf("translated stream usage %+v, want %+v", got, want)
	}

	body := []byte(`{"id":"msg_1","type":"message","role":"assistant","model":"x","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn",` +
		`"usage":{"input_tokens":12,"output_tokens":9,"server_tool_use":{"web_search_requests":2}}}`)
	if _, u, ok, err := RewriteResponse(nil, body, "m"); err != nil || !ok || u != want {
		t.Errorf("message usage %+v ok %v err %v, want %+v", u, ok, err, want)
	}
	if r, err := DecodeResponse(body); err != nil || r.Usage != want {
		t.Errorf("translated message usage %+v err %v, want %+v", r.Usage, err, want)
	}

	for _, tc := range []string{`"server_tool_use":5`, `"server_tool_use":{"web_fetch_requests":3}`, `"server_tool_use":null`} {
		b := []byte(`{"id":"msg_1","type":"message","role":"assistant","model":"x","content":[],"usage":{"input_tokens":1,"output_tokens":1,` + tc + `}}`)
		if _, u, _, err := RewriteResponse(nil, b, "m"); err != nil || u.WebSearchRequests != 0 {
			t.Errorf("%s: usage %+v err %v, want no web searches", tc, u, err)
		}
	}
}
