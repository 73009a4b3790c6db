package server

import (
	"net/http"
	"strings"
	"testing"
)

// FuzzCallerRequestID (issue 23 item 2): whatever a caller sends as x-request-id and
// X-Client-Request-Id, the caller request id kept is "" or the first header's value, at most
// 128 bytes of [A-Za-z0-9._:-], and never the second header's when the first is present.
func FuzzCallerRequestID(f *testing.F) {
	for _, s := range [][2]string{{"trace-1", ""}, {"", "client-42"}, {"bad id", "client-42"}, {strings.Repeat("a", 129), ""},
		{strings.Repeat("a", 128), ""}, {"caf\u00e9", ""}, {"a\x00b", "c"}, {"", ""}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, rid, client string) {
		r := &http.Request{Header: http.Header{}}
		if rid != "" {
			r.Header["X-Request-Id"] = []string{rid}
		}
		if client != "" {
			r.Header["X-Client-Request-Id"] = []string{client}
		}
		got := callerRequestID(r)
		if got == "" {
			return
		}
		if len(got) > maxCallerRequestID || strings.Trim(got, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:-") != "" {
			t.Fatalf("kept %q", got)
		}
		if rid != "" && got != rid || rid == "" && got != client {
			t.Fatalf("x-request-id %q, X-Client-Request-Id %q: kept %q", rid, client, got)
		}
	})
}

// TestCallerRequestIDRepeated: a header sent twice is dropped, not either value kept.
func TestCallerRequestIDRepeated(t *testing.T) {
	r := &http.Request{Header: http.Header{"X-Request-Id": {"a", "b"}, "X-Client-Request-Id": {"c"}}}
	if got := callerRequestID(r); got != "" {
		t.Errorf("repeated x-request-id: kept %q", got)
	}
}
