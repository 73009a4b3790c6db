package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/switchyard-gw/switchyard/internal/config"
	"github.com/switchyard-gw/switchyard/internal/telemetry"
)

// procLog is the process's structured log once serve has configured it (log: and
// --log-format); until then logf writes slog text lines to logOut.
var procLog atomic.Pointer[slog.Logger]

// logf logs an operational event at info.
func logf(format string, args ...any) {
	procLogger().Info(fmt.Sprintf(format, args...))
}

// warnf logs at warn what an operator should look at while the gateway keeps serving: a
// configuration warning (checkConfig's, at start and at each reload), a refused reload.
func warnf(format string, args ...any) {
	procLogger().Warn(fmt.Sprintf(format, args...))
}

// procLogger is the process's log, or slog text lines on logOut before serve configured it.
func procLogger() *slog.Logger {
	if lg := procLog.Load(); lg != nil {
		return lg
	}
	return slog.New(slog.NewTextHandler(logOut, nil))
}

// openLog builds the log cfg.Log names (serve's --log-format overrides log.format) on logOut
// and makes it the process's log. serve opens it as soon as the configuration is read, before
// its checks, so that every line it logs (the configuration's warnings included) has the
// configured format. The "listening on HOST:PORT" line stays a plain line whatever the format
// (contract.md: scripts read the port from it).
func openLog(cfg *config.Config) (*slog.Logger, error) {
	lg, err := telemetry.NewLogger(logOut, cfg.Log.Format, cfg.Log.Level)
	if err != nil {
		return nil, err
	}
	procLog.Store(lg)
	return lg, nil
}

// openTracing builds the OpenTelemetry tracing of cfg.Tracing and the OTEL_* variables; nil
// when tracing is off (no endpoint configured). stop exports what is batched (within 5 s).
func openTracing(ctx context.Context, cfg *config.Config) (tr *telemetry.Tracing, stop func(), err error) {
	v := version
	if bi, ok := debug.ReadBuildInfo(); ok && v == "" {
		v = bi.Main.Version
	}
	tr, err = telemetry.NewTracing(ctx, cfg.Tracing, v, os.Getenv)
	if err != nil || tr == nil {
		return nil, func() {}, err
	}
	logf("tracing on: OTLP spans of every model call (docs/observability.md)")
	return tr, func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := tr.Shutdown(sctx); err != nil {
			logf("tracing: flushing the last spans: %v", err)
		}
	}, nil
}
