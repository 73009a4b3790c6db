package relay

import (
	"strings"
	"testing"

	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/dialect"
	"github.com/switchyard-gw/switchyard/internal/sse"
)

// BenchmarkTranslateEvent measures one upstream stream event translated into the caller's
// dialect (decode into canonical events, encode), each way, as the relay does it per frame.
func BenchmarkTranslateEvent(b *testing.B) {
	for _, tc := range []struct {
		name        string
		up, caller  catalog.Dialect
		event, data string
	}{
		{"anthropic-to-openai/text", catalog.Anthropic, catalog.OpenAI, "content_block_delta",
			`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello, \"world\"\n"}}`},
		{"anthropic-to-openai/tool-args", catalog.Anthropic, catalog.OpenAI, "content_block_delta",
			`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"city\": \"Par"}}`},
		{"openai-to-anthropic/text", catalog.OpenAI, catalog.Anthropic, "",
			`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":"Hello, \"world\"\n"},"finish_reason":null}],"usage":null}`},
		{"openai-to-anthropic/tool-args", catalog.OpenAI, catalog.Anthropic, "",
			`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]},"finish_reason":null}],"usage":null}`},
	} {
		b.Run(tc.name, func(b *testing.B) {
			up, caller := CodecFor(tc.up), CodecFor(tc.caller)
			var t translation
			var st dialect.StreamState
			up.resetDecoder(&t)
			caller.resetEncoder(&t, "m", "req_1", false)
			// Open the message (and the tool call) first, as a real stream does.
			var warm []sse.Event
			if tc.up == catalog.Anthropic {
				warm = []sse.Event{
					{Name: []byte("message_start"), Data: []byte(`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"c","content":[],"usage":{"input_tokens":5,"output_tokens":1}}}`)},
					{Name: []byte("content_block_start"), Data: []byte(`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)},
					{Name: []byte("content_block_start"), Data: []byte(`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"f","input":{}}}`)},
				}
			} else {
				warm = []sse.Event{
					{Data: []byte(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`)},
					{Data: []byte(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":""}}]},"finish_reason":null}]}`)},
				}
			}
			if !strings.HasSuffix(tc.name, "tool-args") {
				warm = warm[:len(warm)-1] // no open tool call: text would wait for its arguments
			}
			var out []byte
			for _, ev := range warm {
				out, _ = t.scanFrame(out[:0], ev, up, caller, &st)
			}
			ev := sse.Event{Name: []byte(tc.event), Data: []byte(tc.data)}
			if tc.event == "" {
				ev.Name = nil
			}
			b.ReportAllocs()
			b.SetBytes(int64(len(tc.data)))
			for b.Loop() {
				out, _ = t.scanFrame(out[:0], ev, up, caller, &st)
			}
			if len(out) == 0 {
				b.Fatal("nothing encoded")
			}
		})
	}
}
