package server_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// BenchmarkChatCall is one non-stream chat call through the real HTTP server and an emulated
// provider on loopback, with a ~4 KiB body: the whole request path, client and provider
// included (allocs/op is the whole round trip's; compare before and after a change).
func BenchmarkChatCall(b *testing.B) {
	g := startTwo(b)
	body := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"` + strings.Repeat("x", 4096) + `"}]}`
	c := &http.Client{}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		resp, err := c.Post(g.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
	b.StopTimer()
	c.CloseIdleConnections()
}
