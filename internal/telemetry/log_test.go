package telemetry

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
)

// The JSON log is one object a line with time (UTC), level, msg and the attributes; records
// below the level are dropped; text is key=value.
func TestNewLogger(t *testing.T) {
	var b bytes.Buffer
	lg, err := NewLogger(&b, "json", "warn")
	if err != nil {
		t.Fatal(err)
	}
	lg.Info("request", "request_id", "req_1")
	lg.Warn("request", "request_id", "req_2", "status", 502)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("lines %q, want the warn line only", lines)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &m); err != nil {
		t.Fatalf("not JSON: %q: %v", lines[0], err)
	}
	if m["level"] != "WARN" || m["msg"] != "request" || m["request_id"] != "req_2" || m["status"] != float64(502) {
		t.Errorf("record %v", m)
	}
	if ts, _ := m["time"].(string); !strings.HasSuffix(ts, "Z") {
		t.Errorf("time %q not UTC", ts)
	}
	b.Reset()
	lg, _ = NewLogger(&b, "text", "")
	lg.Debug("hidden")
	lg.Info("request", "request_id", "req_3")
	if got := b.String(); !strings.Contains(got, "level=INFO msg=request request_id=req_3") || strings.Contains(got, "hidden") {
		t.Errorf("text log %q", got)
	}
	for _, bad := range [][2]string{{"xml", "info"}, {"json", "loud"}} {
		if _, err := NewLogger(&b, bad[0], bad[1]); err == nil {
			t.Errorf("NewLogger(%q, %q) accepted", bad[0], bad[1])
		}
	}
}

// LogfHandler writes "msg key=value" lines, quoting empty values and values with spaces.
func TestLogfHandler(t *testing.T) {
	var got []string
	lg := slog.New(NewLogfHandler(func(f string, a ...any) { got = append(got, a[0].(string)) }, slog.LevelInfo))
	lg.Debug("dropped")
	lg.With("surface", "openai.chat").Info("request", "class", "", "msg2", "a b", "n", 3)
	if len(got) != 1 || got[0] != `request surface=openai.chat class="" msg2="a b" n=3` {
		t.Errorf("lines %q", got)
	}
}
