// Package telemetry builds the gateway's structured logger (log/slog, text or JSON) and its
// OpenTelemetry tracer provider (OTLP over HTTP or gRPC, configured by the tracing block and
// the standard OTEL_* variables). What is logged and traced, and the names, are in
// docs/observability.md; the server owns when.
package telemetry
