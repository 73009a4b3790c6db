package fakeprovider

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/switchyard-gw/switchyard/internal/catalog"
)

// An embedded provider with its control API off cannot be scripted from outside.
func TestDisableControl(t *testing.T) {
	p := New("x", catalog.OpenAI)
	p.DisableControl()
	w := httptest.NewRecorder()
	p.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/_fake/script", strings.NewReader(`{"default":{"kind":"hang"}}`)))
	if w.Code != http.StatusNotFound {
		t.Fatalf("control API answered %d", w.Code)
	}
}

// A script cannot ask for unbounded memory.
func TestBehaviorCaps(t *testing.T) {
	for _, b := range []Behavior{{BigArgumentBytes: MaxBigArgumentBytes + 1}, {Deltas: MaxDeltas + 1}, {ToolCall: true, ParallelToolCalls: MaxDeltas + 1}} {
		if err := b.Validate(); err == nil {
			t.Errorf("%+v accepted", b)
		}
	}
}
