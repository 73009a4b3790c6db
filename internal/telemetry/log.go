package telemetry

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"
)

// ParseLevel reads a log.level value: debug, info (also ""), warn (or warning) or error.
func ParseLevel(s string) (slog.Level, error) {
	switch strings.ToLower(s) {
	case "debug":
		return slog.LevelDebug, nil
	case "", "info":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("unknown log level %q: want debug, info, warn or error", s)
}

// NewLogger returns a logger writing to w in format "text" (log/slog key=value lines; also "")
// or "json" (one object a line), dropping records below level (ParseLevel). Times are UTC.
func NewLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	lv, err := ParseLevel(level)
	if err != nil {
		return nil, err
	}
	o := &slog.HandlerOptions{Level: lv, ReplaceAttr: utc}
	switch strings.ToLower(format) {
	case "", "text":
		return slog.New(slog.NewTextHandler(w, o)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, o)), nil
	}
	return nil, fmt.Errorf("unknown log format %q: want text or json", format)
}

func utc(groups []string, a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey && len(groups) == 0 && a.Value.Kind() == slog.KindTime {
		a.Value = slog.TimeValue(a.Value.Time().UTC())
	}
	return a
}

// LogfHandler is a slog.Handler that formats each record as one line, "msg key=value ...",
// and hands it to a printf-style function (the server's Options.Logf of tests and embedders).
type LogfHandler struct {
	Logf  func(format string, args ...any)
	Level slog.Level
	attrs []slog.Attr
}

// NewLogfHandler returns a handler of records at level and above to logf.
func NewLogfHandler(logf func(string, ...any), level slog.Level) *LogfHandler {
	return &LogfHandler{Logf: logf, Level: level}
}

// Enabled implements slog.Handler.
func (h *LogfHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.Level }

// Handle implements slog.Handler.
func (h *LogfHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	write := func(a slog.Attr) bool {
		if a.Equal(slog.Attr{}) {
			return true
		}
		b.WriteByte(' ')
		b.WriteString(a.Key)
		b.WriteByte('=')
		v := a.Value.Resolve()
		switch v.Kind() {
		case slog.KindString:
			s := v.String()
			if s == "" || strings.ContainsAny(s, " \"=") {
				fmt.Fprintf(&b, "%q", s)
			} else {
				b.WriteString(s)
			}
		case slog.KindTime:
			b.WriteString(v.Time().UTC().Format(time.RFC3339Nano))
		default:
			b.WriteString(v.String())
		}
		return true
	}
	for _, a := range h.attrs {
		write(a)
	}
	r.Attrs(write)
	h.Logf("%s", b.String())
	return nil
}

// WithAttrs implements slog.Handler.
func (h *LogfHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(append([]slog.Attr{}, h.attrs...), as...)
	return &c
}

// WithGroup implements slog.Handler; groups are flattened.
func (h *LogfHandler) WithGroup(string) slog.Handler { return h }
