package responses_test

import (
	"bytes"
	"testing"

	"github.com/switchyard-gw/switchyard/internal/dialect"
	"github.com/switchyard-gw/switchyard/internal/dialect/responses"
	"github.com/switchyard-gw/switchyard/internal/failure"
	"github.com/switchyard-gw/switchyard/internal/sse"
)

// searchOutput holds three billed web searches (an action of type search, one without an
// action, one whose action has no type) and three that are not billed per call (open_page and
// find_in_page actions; a message that quotes the item type).
const searchOutput = `[{"type":"web_search_call","id":"ws_1","status":"completed","action":{"type":"search","query":"q"}},` +
	`{"id":"ws_2","status":"completed","type":"web_search_call"},` +
	`{"type":"web_search_call","id":"ws_3","action":{"query":"q"}},` +
	`{"type":"web_search_call","id":"ws_4","action":{"type":"open_page","url":"https://example.com"}},` +
	`{"type":"web_search_call","id":"ws_5","action":{"type":"find_in_page","pattern":"x"}},` +
	`{"type":"message","content":[{"type":"output_text","text":"\"web_search_call\""}]}]`

// TestWebSearchCalls: the web searches of a passed-through Responses answer are its
// web_search_call output items whose action is a search (docs/pricing.md "Server-tool calls"),
// read from a non-stream body's output and from a stream's response.completed, beside the usage.
func TestWebSearchCalls(t *testing.T) {
	usage := `"usage":{"input_tokens":10,"input_tokens_details":{"cached_tokens":4},"output_tokens":7}`
	want := dialect.Usage{Input: 6, Cached: 4, Output: 7, WebSearchRequests: 3}
	_, u, ok, err := responses.RewriteResponse(nil, []byte(`{"id":"resp_1","model":"up","status":"completed","error":null,"output":`+searchOutput+`,`+usage+`}`), "mine")
	if err != nil || !ok || u != want {
		t.Errorf("non-stream usage %+v ok %v err %v, want %+v", u, ok, err, want)
	}
	var st dialect.StreamState
	st.Reset("mine", true)
	_, kind := responses.ScanFrame(nil, sse.Event{Name: []byte("response.completed"),
		Data: []byte(`{"type":"response.completed","response":{"model":"up","status":"completed","output":` + searchOutput + `,` + usage + `}}`)}, &st)
	if kind != dialect.FrameDone || st.Usage != want {
		t.Errorf("stream: kind %v usage %+v, want %+v", kind, st.Usage, want)
	}
	// No web_search_call item, or an output that is not an array: none.
	for _, output := range []string{`[{"type":"message"}]`, `{"type":"web_search_call"}`, `["web_search_call"]`} {
		_, u, _, err := responses.RewriteResponse(nil, []byte(`{"model":"up","output":`+output+`,`+usage+`}`), "mine")
		if output[0] == '{' {
			if err == nil {
				t.Errorf("%s: accepted", output)
			}
			continue
		}
		if err != nil || u.WebSearchRequests != 0 {
			t.Errorf("%s: usage %+v err %v, want no web searches", output, u, err)
		}
	}
}

// FuzzPassThrough: the pass-through readers of a Responses provider's bytes never panic: the
// non-stream rewrite (errors only upstream_error) and the stream scan, under any event name; the
// web searches counted never exceed the web_search_call items the bytes name.
func FuzzPassThrough(f *testing.F) {
	f.Add("", []byte(`{"id":"resp_1","model":"up","status":"completed","output":`+searchOutput+`,"usage":{"input_tokens":1,"output_tokens":1}}`))
	f.Add("response.completed", []byte(`{"type":"response.completed","response":{"model":"up","output":`+searchOutput+`}}`))
	f.Add("response.output_text.delta", []byte(`{"type":"response.output_text.delta","delta":"hi"}`))
	f.Add("", []byte(`{"output":[{"type":"web_search_call","action":[]}]}`))
	f.Fuzz(func(t *testing.T, name string, b []byte) {
		items := int64(bytes.Count(b, []byte(`"web_search_call"`)))
		_, u, _, err := responses.RewriteResponse(nil, b, "caller-model")
		if err != nil {
			if failure.From(err).Class != failure.UpstreamError {
				t.Fatalf("RewriteResponse error class %v", err)
			}
		} else if u.WebSearchRequests < 0 || u.WebSearchRequests > items {
			t.Fatalf("%d web searches from %d items: %s", u.WebSearchRequests, items, b)
		}
		if bytes.ContainsAny([]byte(name), "\r\n") {
			return // the SSE reader never yields a name holding a line break
		}
		ev := sse.Event{Data: b}
		if name != "" {
			ev.Name = []byte(name)
		}
		var st dialect.StreamState
		st.Reset("caller-model", true)
		out, kind := responses.ScanFrame(nil, ev, &st)
		if st.Usage.WebSearchRequests < 0 || st.Usage.WebSearchRequests > items {
			t.Fatalf("%d web searches from %d items: %s", st.Usage.WebSearchRequests, items, b)
		}
		if (kind == dialect.FrameError || kind == dialect.FrameDrop) && len(out) != 0 {
			t.Fatalf("kind %v wrote %q", kind, out)
		}
	})
}
