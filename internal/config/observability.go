package config

import (
	"net/url"
	"strings"
)

// Log configures the operational and access log (docs/observability.md): `log: {format, level}`.
type Log struct {
	// Format is "text" (log/slog key=value lines, the default) or "json" (one JSON object a
	// line). The --log-format flag of serve overrides it.
	Format string `yaml:"format"`
	// Level is the least level written: debug, info (the default; one access line a request),
	// warn or error.
	Level string `yaml:"level"`
}

// Tracing configures OpenTelemetry traces (docs/observability.md). Tracing is on when Endpoint
// is set or the standard OTEL_EXPORTER_OTLP_ENDPOINT / OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
// variable is; otherwise it is off and costs nothing. The other standard OTEL_* variables
// (headers, timeout, OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER and its
// argument) apply too; a value written here wins over the variable.
type Tracing struct {
	// Endpoint is the OTLP collector: an http(s):// URL (OTLP/HTTP protobuf; a URL without a
	// path gets /v1/traces) or, with protocol grpc, HOST:PORT or a URL.
	Endpoint string `yaml:"endpoint"`
	// Protocol is "http/protobuf" (the default) or "grpc"; OTEL_EXPORTER_OTLP_PROTOCOL when
	// unset.
	Protocol string `yaml:"protocol"`
	// Insecure sends to an http:// or plain gRPC endpoint without TLS.
	Insecure bool `yaml:"insecure"`
	// SampleRatio is the fraction of new traces sampled (0..1; unset: OTEL_TRACES_SAMPLER, else
	// 1). A caller's sampled traceparent is always followed (parent-based sampling).
	SampleRatio *float64 `yaml:"sample_ratio"`
	// ServiceName is service.name (default OTEL_SERVICE_NAME, else "switchyard").
	ServiceName string `yaml:"service_name"`
	// Headers are sent with every export (e.g. an API key of the collector); values may use
	// ${ENV_VAR}.
	Headers map[string]string `yaml:"headers"`
}

func (v *validator) observability(c *Config) {
	switch strings.ToLower(c.Log.Format) {
	case "", "text", "json":
	default:
		v.add("log.format", "unknown format %q: want text or json", c.Log.Format)
	}
	switch strings.ToLower(c.Log.Level) {
	case "", "debug", "info", "warn", "warning", "error":
	default:
		v.add("log.level", "unknown level %q: want debug, info, warn or error", c.Log.Level)
	}
	t := &c.Tracing
	switch t.Protocol {
	case "", "http/protobuf", "http", "grpc":
	default:
		v.add("tracing.protocol", "unknown protocol %q: want http/protobuf or grpc", t.Protocol)
	}
	if t.Endpoint != "" && t.Protocol != "grpc" {
		if u, err := url.Parse(t.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			v.add("tracing.endpoint", "must be an http:// or https:// URL of an OTLP collector (or set protocol: grpc for HOST:PORT)")
		}
	}
	if r := t.SampleRatio; r != nil && !(*r >= 0 && *r <= 1) {
		v.add("tracing.sample_ratio", "must be between 0 and 1, got %v", *r)
	}
}
