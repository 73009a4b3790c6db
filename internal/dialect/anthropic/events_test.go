package anthropic_test

import (
	"strings"
	"testing"

	"github.com/switchyard-gw/switchyard/internal/dialect"
	"github.com/switchyard-gw/switchyard/internal/dialect/anthropic"
	"github.com/switchyard-gw/switchyard/internal/sse"
)

// checkSSE fails unless out is exactly one SSE event: an `event:` line with a name of the fixed
// set, one `data:` line, and the blank line that ends it.
func checkSSE(t *testing.T, out []byte, wantName string) {
	t.Helper()
	lines := strings.Split(string(out), "\n")
	if len(lines) != 4 || lines[2] != "" || lines[3] != "" ||
		lines[0] != "event: "+wantName || !strings.HasPrefix(lines[1], "data: ") || strings.ContainsRune(string(out), '\r') {
		t.Fatalf("not one %q event:\n%q", wantName, out)
	}
}

// The event name written to a caller comes from a fixed set, never from the provider's bytes:
// a JSON "type" holding a line break used to become new SSE lines in the caller's stream (an
// upstream could inject events), and unknown types used to be forwarded under their own name.
func TestEventNamesFromFixedSet(t *testing.T) {
	var st dialect.StreamState
	for _, typ := range []string{"message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop", "ping"} {
		st.Reset("m", false)
		data := `{"type":"` + typ + `","index":0,"message":{"model":"x"},"delta":{"type":"text_delta","text":"a"},"content_block":{"type":"text","text":""}}`
		for _, ev := range []sse.Event{{Name: []byte(typ), Data: []byte(data)}, {Data: []byte(data)}} {
			out, _ := anthropic.ScanFrame(nil, ev, &st)
			checkSSE(t, out, typ)
		}
	}
	injected := []string{
		`{"type":"ping\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"injected\"}}\n"}`,
		`{"type":"ping\r\ndata: x"}`,
		`{"type":"message_stop\n\n"}`,
		`{"type":"vendor_heartbeat"}`,
		`{"type":""}`,
		`{}`,
	}
	for _, data := range injected {
		st.Reset("m", false)
		out, kind := anthropic.ScanFrame(nil, sse.Event{Data: []byte(data)}, &st)
		if kind != dialect.FrameDrop || len(out) != 0 {
			t.Errorf("data %q: kind %v, wrote %q; want FrameDrop, nothing written", data, kind, out)
		}
	}
	// An unknown name on the event line is not forwarded either.
	st.Reset("m", false)
	if out, kind := anthropic.ScanFrame(nil, sse.Event{Name: []byte("vendor_heartbeat"), Data: []byte(`{"type":"ping"}`)}, &st); kind != dialect.FrameDrop || len(out) != 0 {
		t.Errorf("unknown event name: kind %v, wrote %q", kind, out)
	}
	if anthropic.EventName("ping\n") != "" || anthropic.EventName("ping") != "ping" {
		t.Error("EventName accepts a name outside the fixed set")
	}
}
