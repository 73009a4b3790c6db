package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/switchyard-gw/switchyard/internal/failure"
	"github.com/switchyard-gw/switchyard/internal/relay"
)

// A panic after a model call's response started adds nothing to it (no status line or JSON
// body inside a stream or after a body); a panic before anything was written is a typed error
// in the caller's dialect with the request id. The relay ends a running stream with its
// terminal error event itself (internal/relay TestPanicAfterCommitEndsTheStream).
func TestPanicRecoveryNeverWritesIntoAStartedResponse(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("started") != "" {
			// What the relay's commit does: the contract headers, the status, then frames.
			w.Header()["X-Switchyard-Attempts"] = []string{"1"}
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte("data: [DONE]\n\n"))
		}
		panic("boom")
	})
	mux.HandleFunc("/v1/messages", func(w http.ResponseWriter, r *http.Request) {
		relay.WriteError(w, relay.CodecFor("anthropic"), requestID(w), &failure.Error{Class: failure.InvalidRequest, Msg: "bad"}, 0, nil)
		panic("boom")
	})
	var logged []string
	s := &Server{mux: mux, logf: func(f string, a ...any) { logged = append(logged, f) }}

	w := httptest.NewRecorder()
	s.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/v1/chat/completions?started=1", nil))
	if w.Code != 200 || w.Body.String() != "data: [DONE]\n\n" {
		t.Fatalf("started stream: %d %q", w.Code, w.Body.String())
	}
	w = httptest.NewRecorder()
	s.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/v1/messages", nil))
	if w.Code != 400 || strings.Count(w.Body.String(), `"type":"error"`) != 1 {
		t.Fatalf("answered error: %d %q", w.Code, w.Body.String())
	}
	w = httptest.NewRecorder()
	s.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/v1/chat/completions", nil))
	rid := w.Header().Get("X-Request-Id")
	if w.Code < 500 || !strings.Contains(w.Body.String(), `"error"`) || rid == "" || !strings.Contains(w.Body.String(), rid) {
		t.Fatalf("nothing written yet: %d %q", w.Code, w.Body.String())
	}
	if len(logged) != 3 {
		t.Fatalf("logged %d panics", len(logged))
	}
}
