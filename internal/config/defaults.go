package config

import (
	_ "embed"
	"fmt"
	"os"
	"time"
)

// Default values applied by applyDefaults to fields left out of a configuration.
const (
	DefaultListen        = "127.0.0.1:8080"
	DefaultMaxBodyBytes  = 32 << 20 // 33554432 bytes
	DefaultShutdownGrace = 30 * time.Second
	// DefaultBodyTimeout is server.body_timeout: the time to send a request body.
	DefaultBodyTimeout = 30 * time.Second
	// DefaultMaxInflightBodyBytes is server.max_inflight_body_bytes (256 MiB): the bytes all
	// request bodies in flight may hold together.
	DefaultMaxInflightBodyBytes = 256 << 20
	// DefaultMaxHeaderBytes is server.max_header_bytes (1 MiB, net/http's default).
	DefaultMaxHeaderBytes = 1 << 20
	DefaultStoreURL       = "sqlite://switchyard.db"
	// DefaultAuditRetention is store.audit_retention: audit records are kept 30 days.
	DefaultAuditRetention = 30 * 24 * time.Hour
	DefaultAdmissionURL   = "memory://"
	DefaultStrategy       = "price"
	DefaultBlendInput     = 3 // price_blend input weight
	DefaultBlendOutput    = 1 // price_blend output weight
	DefaultHeaders        = 60 * time.Second
	DefaultStreamHeaders  = 20 * time.Second
	DefaultStreamIdle     = 60 * time.Second
	DefaultFirstOutput    = 30 * time.Second
	DefaultFailures       = 2
	DefaultCooldown       = 30 * time.Second
	DefaultWeight         = 1
	DefaultAccount        = "default"
)

// applyDefaults fills every field that was left out. A field written explicitly with a zero
// value is not defaulted where zero means something else than "unset" (weight: 0,
// failures: 0, a 0s deadline, max_body_bytes: 0, max_inflight_body_bytes: 0,
// max_header_bytes: 0, price_blend {0, 0}): Validate rejects it
// rather than silently replacing it. shutdown_grace: 0s is kept (no grace). Empty strings are
// always defaulted. For a Config built in Go every zero value counts as left out.
func applyDefaults(c *Config) {
	p := c.pos
	if c.Server.Listen == "" {
		c.Server.Listen = DefaultListen
	}
	if c.Server.MaxBodyBytes == 0 && !p.has("server.max_body_bytes") {
		c.Server.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.Server.ShutdownGrace == 0 && !p.has("server.shutdown_grace") {
		c.Server.ShutdownGrace = Duration(DefaultShutdownGrace)
	}
	defaultDuration(&c.Server.BodyTimeout, DefaultBodyTimeout, p, "server.body_timeout")
	if c.Server.MaxInflightBodyBytes == 0 && !p.has("server.max_inflight_body_bytes") {
		c.Server.MaxInflightBodyBytes = DefaultMaxInflightBodyBytes
	}
	if c.Server.MaxHeaderBytes == 0 && !p.has("server.max_header_bytes") {
		c.Server.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if c.Store.URL == "" {
		c.Store.URL = DefaultStoreURL
	}
	if c.Store.AuditRetention == 0 && !p.has("store.audit_retention") {
		c.Store.AuditRetention = Retention(DefaultAuditRetention)
	}
	if c.Admission.URL == "" {
		c.Admission.URL = DefaultAdmissionURL
	}
	r := &c.Routing
	if r.Strategy == "" {
		r.Strategy = DefaultStrategy
	}
	if r.PriceBlend == (PriceBlend{}) && !p.has("routing.price_blend.input") && !p.has("routing.price_blend.output") {
		r.PriceBlend = PriceBlend{Input: DefaultBlendInput, Output: DefaultBlendOutput}
	}
	defaultDuration(&r.Timeouts.Headers, DefaultHeaders, p, "routing.timeouts.headers")
	defaultDuration(&r.Timeouts.StreamHeaders, DefaultStreamHeaders, p, "routing.timeouts.stream_headers")
	defaultDuration(&r.Timeouts.StreamIdle, DefaultStreamIdle, p, "routing.timeouts.stream_idle")
	defaultDuration(&r.Timeouts.FirstOutput, DefaultFirstOutput, p, "routing.timeouts.first_output")
	defaultDuration(&r.Circuit.Cooldown, DefaultCooldown, p, "routing.circuit.cooldown")
	if r.Circuit.Failures == 0 && !p.has("routing.circuit.failures") {
		r.Circuit.Failures = DefaultFailures
	}
	for i := range c.Deployments {
		d := &c.Deployments[i]
		if d.Provider == "" {
			d.Provider = d.Name
		}
		if d.Platform == "" {
			switch d.Dialect {
			case "openai":
				d.Platform = PlatformOpenAI
			case "anthropic":
				d.Platform = PlatformAnthropic
			}
		}
		for j := range d.Routes {
			rt := &d.Routes[j]
			if rt.UpstreamModel == "" {
				rt.UpstreamModel = rt.Model
			}
			if rt.Weight == 0 && !p.has(fmt.Sprintf("deployments[%d].routes[%d].weight", i, j)) {
				rt.Weight = DefaultWeight
			}
		}
	}
	for i := range c.Endpoints {
		if c.Endpoints[i].PublicFallback == nil {
			fallback := true
			c.Endpoints[i].PublicFallback = &fallback
		}
	}
	for i := range c.Keys {
		if c.Keys[i].Account == "" {
			c.Keys[i].Account = DefaultAccount
		}
	}
	if c.Auth.Required == nil {
		required := true
		c.Auth.Required = &required
	}
}

func defaultDuration(d *Duration, def time.Duration, p *positions, path string) {
	if *d == 0 && !p.has(path) {
		*d = Duration(def)
	}
}

// AuthRequired reports auth.required after defaults (true when unset).
func (c *Config) AuthRequired() bool { return c.Auth.Required == nil || *c.Auth.Required }

//go:embed default.yaml
var defaultYAML []byte

// Default returns the built-in configuration that `switchyard serve` uses without --config
// (contract.md): deployments "openai" (https://api.openai.com/v1, key ${OPENAI_API_KEY}) and
// "anthropic" (https://api.anthropic.com, key ${ANTHROPIC_API_KEY}) and a small catalog of
// current models with list prices in USD per million tokens. Keys are read from the process
// environment at the call; an unset one leaves that deployment's APIKey empty (the caller
// decides what to do about it, e.g. start emulated providers). Defaults are applied and the
// result is valid; File is "". Each call returns a new Config.
func Default() *Config {
	c, err := parse("<built-in>", defaultYAML, os.LookupEnv)
	if err != nil {
		// Only a broken default.yaml gets here; TestDefault keeps it valid.
		panic("config: built-in default configuration is invalid: " + err.Error())
	}
	c.File = ""
	return c
}

//go:embed starter.yaml
var starterYAML []byte

// Starter returns the commented starter configuration `switchyard init` writes: the built-in
// catalog (the same models and deployments as Default) with every section explained, one
// static key read from ${SWITCHYARD_API_KEY}, and authentication required. It is valid when
// SWITCHYARD_API_KEY is set (TestStarter).
func Starter() []byte { return append([]byte(nil), starterYAML...) }
