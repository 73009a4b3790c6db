package config

import (
	"errors"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestLoadFull(t *testing.T) {
	t.Setenv("TEST_ANTHROPIC_KEY", "sk-ant-test")
	t.Setenv("TEST_DEV_KEY", "dev-secret")
	// TEST_VALUE_KEY and TEST_ADMIN_TOKEN stay unset: a default and an empty credential.
	path := filepath.Join("testdata", "full.yaml")
	c, err := Load(path)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if c.File != path {
		t.Errorf("File = %q, want %q", c.File, path)
	}
	wantServer := Server{Listen: "127.0.0.1:9090", MaxBodyBytes: 1 << 20, ShutdownGrace: Duration(45 * time.Second),
		BodyTimeout: Duration(10 * time.Second), MaxInflightBodyBytes: 64 << 20, MaxHeaderBytes: 65536}
	if c.Server != wantServer {
		t.Errorf("Server = %+v, want %+v", c.Server, wantServer)
	}
	if c.Store.URL != "sqlite:///var/lib/switchyard/ledger.db" || c.Admission.URL != "redis://127.0.0.1:6379/0" {
		t.Errorf("Store, Admission = %+v, %+v", c.Store, c.Admission)
	}
	wantRouting := Routing{
		Strategy:   "balanced",
		PriceBlend: PriceBlend{Input: 1, Output: 1},
		Timeouts:   Timeouts{Headers: Duration(90 * time.Second), StreamHeaders: Duration(15 * time.Second), StreamIdle: Duration(2 * time.Minute), FirstOutput: Duration(45 * time.Second)},
		Circuit:    Circuit{Failures: 3, Cooldown: Duration(90 * time.Second)},
	}
	if c.Routing != wantRouting {
		t.Errorf("Routing = %+v, want %+v", c.Routing, wantRouting)
	}
	wantModels := []Model{
		{ID: "claude-sonnet-4-5", Aliases: []string{"rp-sonnet-4-5"}, ContextWindow: 200000, MaxOutputTokens: 64000, Price: &Price{Input: 3, Output: 15}},
		{ID: "meta/llama3.1:70b", ContextWindow: 131072},
		{ID: "anthropic.claude-3-haiku-20240307-v1:0"}, // no route: allowed
	}
	if !reflect.DeepEqual(c.Models, wantModels) {
		t.Errorf("Models = %+v, want %+v", c.Models, wantModels)
	}
	wantDeployments := []Deployment{
		{
			Name: "anthropic", Provider: "anthropic", Dialect: "anthropic", BaseURL: "https://api.anthropic.com",
			APIKey: "sk-ant-test", Tier: "official", Region: "us", Platform: "anthropic",
			Routes: []Route{{Model: "claude-sonnet-4-5", UpstreamModel: "claude-sonnet-4-5", Price: &Price{Input: 3, Output: 15}, Weight: 1, ContextWindow: 200000}},
		},
		{
			Name: "value-eu", Provider: "valuecloud", Dialect: "openai", BaseURL: "http://10.0.0.7:8000/v1",
			APIKey: "sk-none", Priority: 1, Tier: "value", Platform: "openai",
			Routes: []Route{
				{Model: "claude-sonnet-4-5", UpstreamModel: "anthropic/claude-sonnet-4.5", Price: &Price{Input: 3, Output: 15}, Weight: 2.5},
				{Model: "meta/llama3.1:70b", UpstreamModel: "meta/llama3.1:70b", Weight: 1}, // defaults
			},
		},
	}
	if !reflect.DeepEqual(c.Deployments, wantDeployments) {
		t.Errorf("Deployments = %+v\nwant %+v", c.Deployments, wantDeployments)
	}
	wantKeys := []Key{{Name: "dev", Secret: "dev-secret", Account: "default"}, {Name: "ci", Secret: "literal-ci-secret", Account: "acme"}}
	if !reflect.DeepEqual(c.Keys, wantKeys) {
		t.Errorf("Keys = %+v, want %+v", c.Keys, wantKeys)
	}
	if c.Admin.Token != "" || !c.AuthRequired() {
		t.Errorf("Admin.Token = %q, AuthRequired = %v; want empty, true", c.Admin.Token, c.AuthRequired())
	}
}

func TestLoadMissingFile(t *testing.T) {
	if _, err := Load(filepath.Join("testdata", "no-such-file.yaml")); err == nil {
		t.Fatal("Load of a missing file succeeded")
	}
}

// TestDefaults checks applyDefaults against the defaults listed in contract.md.
func TestDefaults(t *testing.T) {
	for _, src := range []string{"", "# nothing\n", "server: {}\n", "routing:\n  timeouts: {headers: ~}\n"} {
		c, err := parse("empty.yaml", []byte(src), env(nil))
		if err != nil {
			t.Fatalf("%q: %v", src, err)
		}
		want := Config{
			Server: Server{Listen: "127.0.0.1:8080", MaxBodyBytes: 33554432, ShutdownGrace: Duration(30 * time.Second),
				BodyTimeout: Duration(30 * time.Second), MaxInflightBodyBytes: 256 << 20, MaxHeaderBytes: 1 << 20},
			Store:     Store{URL: "sqlite://switchyard.db", AuditRetention: Retention(30 * 24 * time.Hour)},
			Admission: Admission{URL: "memory://"},
			Routing: Routing{
				Strategy:   "price",
				PriceBlend: PriceBlend{Input: 3, Output: 1},
				Timeouts:   Timeouts{Headers: Duration(60 * time.Second), StreamHeaders: Duration(20 * time.Second), StreamIdle: Duration(60 * time.Second), FirstOutput: Duration(30 * time.Second)},
				Circuit:    Circuit{Failures: 2, Cooldown: Duration(30 * time.Second)},
			},
		}
		if c.Server != want.Server || c.Store != want.Store || c.Admission != want.Admission || c.Routing != want.Routing {
			t.Errorf("%q: got %+v", src, c)
		}
		if !c.AuthRequired() || c.Auth.Required == nil {
			t.Errorf("%q: auth.required not defaulted to true", src)
		}
	}
}

func TestExplicitZero(t *testing.T) {
	// shutdown_grace: 0s means "no grace" and is kept; a 0 weight or price_blend is rejected
	// (TestInvalidFile, TestValidateRules), never replaced by the default.
	c, err := parse("z.yaml", []byte("server:\n  shutdown_grace: 0s\nauth:\n  required: false\n"), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Server.ShutdownGrace != 0 || c.AuthRequired() {
		t.Errorf("shutdown_grace = %s, auth required = %v; want 0s, false", c.Server.ShutdownGrace, c.AuthRequired())
	}
}

// TestProblemFiles loads files whose "# want:" comments list the problems expected on each
// line: every problem must be wanted on its line and every want must be matched.
func TestProblemFiles(t *testing.T) {
	for _, name := range []string{"invalid.yaml", "decode_errors.yaml", "endpoints.yaml"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join("testdata", name)
			data := mustRead(t, path)
			_, err := parse(path, data, env(nil))
			if err == nil {
				t.Fatal("parse succeeded")
			}
			want := wants(t, data)
			matched := make(map[int][]bool)
			for l, res := range want {
				matched[l] = make([]bool, len(res))
			}
			prev := 0
			for _, p := range problems(t, err) {
				if p.File != path {
					t.Errorf("problem %q: File = %q, want %q", p, p.File, path)
				}
				if p.Line < prev {
					t.Errorf("problem %q out of line order", p)
				}
				prev = p.Line
				prefix := path + ":" + strconv.Itoa(p.Line) + ": "
				if !strings.HasPrefix(p.Error(), prefix) {
					t.Errorf("problem %q does not start with %q", p, prefix)
				}
				ok := false
				for i, re := range want[p.Line] {
					if re.MatchString(p.Error()) {
						matched[p.Line][i], ok = true, true
					}
				}
				if !ok {
					t.Errorf("unexpected problem: %s", p)
				}
			}
			for l, m := range matched {
				for i, ok := range m {
					if !ok {
						t.Errorf("%s:%d: no problem matched %q", path, l, want[l][i])
					}
				}
			}
		})
	}
}

// TestValidateRules covers the rules that one file cannot break at once.
func TestValidateRules(t *testing.T) {
	tests := []struct {
		name, src string
		line      int
		want      string
	}{
		{"sqlite without path", "store:\n  url: sqlite://\n", 2, `store.url: sqlite:// needs a database path`},
		{"no scheme", "store:\n  url: switchyard.db\n", 2, `store.url: must be sqlite://PATH`},
		{"postgres without host", "store:\n  url: postgres:///db\n", 2, `store.url: is not a valid postgres:// URL`},
		{"short secret key", "store:\n  secret_key: short\n", 2, `store.secret_key: must be at least 16 bytes`},
		{"redis without host", "admission:\n  url: redis://\n", 2, `admission.url: is not a valid redis:// URL`},
		{"admission no scheme", "admission:\n  url: memory\n", 2, `admission.url: must be memory:// or redis://`},
		{"redis lease_ttl short", "admission:\n  redis: {lease_ttl: 1s}\n", 2, `admission.redis.lease_ttl: must be at least 3s, got 1s`},
		{"redis timeout zero", "admission:\n  redis:\n    timeout: 0s\n", 3, `admission.redis.timeout: must be > 0, got 0s`},
		{"redis prefix empty", "admission:\n  redis:\n    prefix: \"\"\n", 3, `admission.redis.prefix: must not be empty`},
		{"redis pool negative", "admission:\n  redis:\n    pool_size: -1\n", 3, `admission.redis.pool_size: must be >= 0, got -1`},
		{"redis min idle over pool", "admission:\n  redis:\n    pool_size: 4\n    min_idle_conns: 8\n", 4, `admission.redis.min_idle_conns: must be at most pool_size (4), got 8`},
		{"price_blend both zero", "routing:\n  price_blend: {input: 0, output: 0}\n", 2, `routing.price_blend: input and output weights are both 0`},
		{"price_blend inf", "routing:\n  price_blend: {input: .inf, output: 1}\n", 2, `routing.price_blend.input: must be a finite number >= 0, got +Inf`},
		{"max_body_bytes zero", "server:\n  max_body_bytes: 0\n", 2, `server.max_body_bytes: must be > 0 bytes, got 0`},
		{"body_timeout zero", "server:\n  body_timeout: 0s\n", 2, `server.body_timeout: must be > 0, got 0s (omit it for the default 30s)`},
		{"max_inflight_body_bytes zero", "server:\n  max_inflight_body_bytes: 0\n", 2, `server.max_inflight_body_bytes: must be > 0 bytes, got 0`},
		{"max_header_bytes small", "server:\n  max_header_bytes: 100\n", 2, `server.max_header_bytes: must be >= 4096 bytes, got 100`},
		{"listen bad port", "server:\n  listen: 127.0.0.1:http\n", 2, `server.listen: "127.0.0.1:http" is not HOST:PORT`},
		{"listen port range", "server:\n  listen: :70000\n", 2, `server.listen: ":70000" is not HOST:PORT`},
		{"stream_idle zero", "routing:\n  timeouts:\n    stream_idle: 0s\n", 3, `routing.timeouts.stream_idle: must be > 0, got 0s (omit it for the default 1m0s)`},
		{"first_output zero", "routing:\n  timeouts:\n    first_output: 0s\n", 3, `routing.timeouts.first_output: must be > 0, got 0s (omit it for the default 30s)`},
		{"cooldown zero", "routing:\n  circuit:\n    cooldown: 0s\n", 3, `routing.circuit.cooldown: must be > 0`},
		{"failures negative", "routing:\n  circuit:\n    failures: -1\n", 3, `routing.circuit.failures: must be >= 1, got -1`},
		{"weight inf", "models: [{id: m}]\ndeployments:\n- name: d\n  dialect: openai\n  base_url: http://h\n  routes:\n  - {model: m, weight: .inf}\n", 7, `weight: must be a finite number > 0, got +Inf`},
		{"web_search price negative", "models: [{id: m}]\ndeployments:\n- name: d\n  dialect: openai\n  base_url: http://h\n  routes:\n  - {model: m, price: {input: 1, output: 1, web_search: -0.01}}\n", 7, `routes[0].price.web_search: must be a finite number >= 0, got -0.01`},
		{"web_search price on a model", "models:\n- id: m\n  price: {input: 1, output: 1, web_search: .nan}\n", 3, `models[0].price.web_search: must be a finite number >= 0, got NaN`},
		{"snapshot key not a date", "models: [{id: m}]\ndeployments:\n- name: d\n  dialect: openai\n  base_url: http://h\n  routes:\n  - model: m\n    upstream_snapshots: {\"2025-13-01\": x}\n", 8, `"2025-13-01" is not a snapshot date`},
		{"snapshot date twice", "models: [{id: m}]\ndeployments:\n- name: d\n  dialect: openai\n  base_url: http://h\n  routes:\n  - model: m\n    upstream_snapshots: {\"2025-09-29\": x, \"20250929\": x}\n", 8, `names the same date as`},
		{"snapshot pattern without date", "models: [{id: m}]\ndeployments:\n- name: d\n  dialect: openai\n  base_url: http://h\n  routes:\n  - model: m\n    upstream_snapshot_pattern: m-v1\n", 8, `upstream_snapshot_pattern: must hold {date} exactly once`},
		{"alias equals its own id", "models:\n- id: m\n  aliases: [m]\n", 3, `models[0].aliases[0]: alias "m" is already a model id at line 2`},
		{"alias equals a later id", "models:\n- id: m\n  aliases: [n]\n- id: n\n", 3, `alias "n" is already a model id at line 4`},
		{"empty alias", "models:\n- id: m\n  aliases: [\"\"]\n", 3, `models[0].aliases[0]: is empty`},
		{"control char in id", "models:\n- id: \"a\\tb\"\n", 2, `models[0].id: "a\tb" contains whitespace or a control character`},
		{"empty route model", "deployments:\n- name: d\n  dialect: openai\n  base_url: http://h\n  routes:\n  - weight: 2\n", 6, `routes[0].model: missing: the catalog model id`},
		{"empty deployment name", "deployments:\n- dialect: openai\n  base_url: http://h\n", 2, `deployments[0].name: missing`},
		{"empty deployment name written", "deployments:\n- name: \"\"\n  dialect: openai\n  base_url: http://h\n", 2, `deployments[0].name: is empty`},
		{"base_url missing", "deployments:\n- name: d\n  dialect: openai\n", 2, `deployments[0].base_url: missing: the provider's API base URL`},
		{"dialect missing", "deployments:\n- name: d\n  base_url: http://h\n", 2, `deployments[0].dialect: missing: openai or anthropic`},
		{"base_url without host", "deployments:\n- name: d\n  dialect: openai\n  base_url: https:///v1\n", 4, `base_url: must be an absolute`},
		{"empty secret", "keys:\n- name: k\n  secret: \"\"\n", 3, `keys[0].secret: is empty: the key callers send (auth.required is true)`},
		{"secret missing", "keys:\n- name: k\n", 2, `keys[0].secret: missing`},
		{"bedrock without region", "deployments:\n- name: d\n  dialect: anthropic\n  platform: bedrock\n", 2, `deployments[0].aws.region: missing: the AWS region`},
		{"bedrock empty region", "deployments:\n- name: d\n  dialect: anthropic\n  platform: bedrock\n  aws: {region: \"\"}\n", 5, `deployments[0].aws.region: is empty`},
		{"bedrock half a key pair", "deployments:\n- name: d\n  dialect: anthropic\n  platform: bedrock\n  aws: {region: us-east-1, access_key_id: AKIA}\n", 5, `access_key_id and secret_access_key go together`},
		{"vertex without project", "deployments:\n- name: d\n  dialect: anthropic\n  platform: vertex\n  vertex: {location: global}\n", 5, `deployments[0].vertex.project: missing: the Google Cloud project id`},
		{"vertex without location", "deployments:\n- name: d\n  dialect: anthropic\n  platform: vertex\n  vertex: {project: p}\n", 5, `deployments[0].vertex.location: missing`},
		{"vertex unreadable credentials", "deployments:\n- name: d\n  dialect: anthropic\n  platform: vertex\n  vertex:\n    project: p\n    location: us-east5\n    credentials_file: /nonexistent/sa.json\n", 8, `deployments[0].vertex.credentials_file: cannot read "/nonexistent/sa.json": no such file or directory`},
		{"platform of the other dialect", "deployments:\n- name: d\n  dialect: openai\n  platform: bedrock\n  aws: {region: us-east-1}\n", 4, `platform "bedrock" speaks dialect anthropic, but the deployment's dialect is openai`},
		{"unknown platform", "deployments:\n- name: d\n  dialect: openai\n  base_url: http://h\n  platform: gcp\n", 5, `unknown platform "gcp"`},
		{"settings of another platform", "deployments:\n- name: d\n  dialect: openai\n  base_url: http://h\n  aws: {region: us-east-1}\n", 5, `aws: applies only to platform bedrock`},
		{"azure without base_url", "deployments:\n- name: d\n  dialect: openai\n  platform: azure\n", 2, `deployments[0].base_url: missing`},
		{"responses on anthropic", "deployments:\n- name: d\n  dialect: anthropic\n  base_url: http://h\n  responses: true\n", 5, `responses: true applies only to an openai-dialect deployment`},
		{"duplicate mapping key", "server:\n  listen: 127.0.0.1:1\n  listen: 127.0.0.1:2\n", 3, `mapping key "listen" already defined at line 2`},
		{"list for a string", "server:\n  listen: [a]\n", 2, `cannot unmarshal !!seq into string`},
		{"map for a duration", "server:\n  shutdown_grace: {s: 1}\n", 2, `a duration must be a string`},
		{"unknown field in merged anchor", "deployments:\n- &b {name: a, dialect: openai, base_url: \"http://h/v1\", colour: red}\n- <<: *b\n  name: b\n", 2, `unknown field "colour" in deployments[0]`},
		{"unknown top-level field", "sever: {}\n", 1, `unknown field "sever" in the top level`},
		{"unknown nested field", "routing:\n  circuit:\n    failure: 3\n", 3, `unknown field "failure" in routing.circuit (known fields: cooldown, failures)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parse("t.yaml", []byte(tt.src), env(nil))
			ps := problems(t, err)
			if len(ps) != 1 {
				t.Fatalf("got %d problems %v, want 1", len(ps), err)
			}
			prefix := "t.yaml:" + strconv.Itoa(tt.line) + ": "
			if got := ps[0].Error(); !strings.HasPrefix(got, prefix) || !strings.Contains(got, tt.want) {
				t.Errorf("got %q, want prefix %q and %q", got, prefix, tt.want)
			}
		})
	}
}

func TestValidateAllowed(t *testing.T) {
	tests := []struct{ name, src string }{
		{"model with no route", "models: [{id: m}]\n"},
		{"empty secret without auth", "auth: {required: false}\nkeys:\n- name: k\n"},
		{"unset secret key", "store:\n  secret_key: ${NO_SECRET_KEY}\n"},
		{"unset credentials", "admin:\n  token: ${NO_TOKEN}\ndeployments:\n- name: d\n  dialect: anthropic\n  base_url: https://api.anthropic.com\n  api_key: ${NO_KEY}\n"},
		{"postgres and rediss", "store: {url: \"postgres://u:p@db:5432/sy?sslmode=disable\"}\nadmission: {url: \"rediss://cache:6380/1\"}\n"},
		{"redis tuned", "admission:\n  url: redis://cache:6379/0\n  redis: {timeout: 250ms, lease_ttl: 10s, prefix: \"gw1:\", pool_size: 512, min_idle_conns: 32}\n"},
		{"sqlite absolute", "store: {url: \"sqlite:///var/db/s.db\"}\n"},
		{"ids with / and :", "models:\n- {id: meta/llama3.1:70b, aliases: [\"llama:70b\"]}\n- {id: \"bedrock/anthropic.claude-v2:0\"}\n"},
		{"listen on any port", "server: {listen: \"127.0.0.1:0\"}\n"},
		{"ipv6 listen", "server: {listen: \"[::1]:8080\"}\n"},
		{"endpoint", "models: [{id: m}]\ndeployments:\n- {name: r, dialect: openai, base_url: \"http://h/v1\", reserved: true, routes: [{model: m}]}\nendpoints:\n- {id: acme/m, model: m, deployments: [r], accounts: [acme], public_fallback: false}\n"},
		{"endpoint without reserved deployments", "models: [{id: m}]\nendpoints:\n- {id: acme/m, model: m}\n"},
		{"bedrock default chain", "deployments:\n- {name: b, dialect: anthropic, platform: bedrock, aws: {region: us-east-1}}\n"},
		{"bedrock keys and base_url", "deployments:\n- {name: b, dialect: anthropic, platform: bedrock, base_url: \"https://bedrock.internal\", aws: {region: eu-west-1, access_key_id: AKIA, secret_access_key: s}}\n"},
		{"vertex global with ADC", "deployments:\n- {name: v, dialect: anthropic, platform: vertex, vertex: {project: p-1, location: global}}\n"},
		{"azure deployments API", "deployments:\n- {name: a, dialect: openai, platform: azure, base_url: \"https://r.openai.azure.com\", api_key: k, azure: {api_version: 2024-10-21}}\n"},
		{"responses off on openai", "deployments:\n- {name: o, dialect: openai, base_url: \"https://api.openai.com/v1\", responses: false}\n"},
		{"merge keys", "deployments:\n- &base {name: a, dialect: openai, base_url: \"http://h/v1\"}\n- <<: *base\n  name: b\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := parse("ok.yaml", []byte(tt.src), env(nil)); err != nil {
				t.Errorf("unexpected problems:\n%v", err)
			}
		})
	}
}

func TestSyntaxErrors(t *testing.T) {
	tests := []struct {
		name, src string
		line      int
		want      string
	}{
		{"bad indentation", "server:\n  listen: a\n listen: b\n", 3, "did not find expected key"},
		{"tab", "server:\n\tlisten: a\n", 2, "found character that cannot start any token"},
		{"second document", "server: {}\n---\nstore: {}\n", 2, "holds one YAML document; found a second"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parse("s.yaml", []byte(tt.src), env(nil))
			ps := problems(t, err)
			if len(ps) != 1 {
				t.Fatalf("got %d problems %v, want 1", len(ps), err)
			}
			if ps[0].Line != tt.line || !strings.Contains(ps[0].Msg, tt.want) {
				t.Errorf("got %q (line %d), want line %d and %q", ps[0], ps[0].Line, tt.line, tt.want)
			}
		})
	}
}

func TestProblemError(t *testing.T) {
	tests := []struct {
		p    Problem
		want string
	}{
		{Problem{File: "f.yaml", Line: 3, Path: "server.listen", Msg: "bad"}, "f.yaml:3: server.listen: bad"},
		{Problem{File: "f.yaml", Msg: "bad"}, "f.yaml: bad"},
		{Problem{Path: "server.listen", Msg: "bad"}, "server.listen: bad"},
	}
	for _, tt := range tests {
		if got := tt.p.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

// TestEndpointDefaults: an endpoint's public_fallback defaults to true (R-KEY-6); an explicit
// false is kept.
func TestEndpointDefaults(t *testing.T) {
	src := "auth: {required: false}\nmodels: [{id: m}]\n" +
		"deployments:\n- {name: r, dialect: openai, base_url: \"http://h/v1\", reserved: true, routes: [{model: m}]}\n" +
		"- {name: p, dialect: openai, base_url: \"http://h/v1\", routes: [{model: m}]}\n" +
		"endpoints:\n- {id: a/m, model: m}\n- {id: b/m, model: m, deployments: [r], public_fallback: false}\n"
	c, err := parse("e.yaml", []byte(src), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if !c.Endpoints[0].Fallback() || c.Endpoints[0].PublicFallback == nil || c.Endpoints[1].Fallback() {
		t.Errorf("public_fallback: %v, %v; want true (default), false", c.Endpoints[0].Fallback(), c.Endpoints[1].Fallback())
	}
	if c.Deployments[0].Reserved != true || c.Deployments[1].Reserved {
		t.Errorf("reserved: %+v", c.Deployments)
	}
}

// TestValidateInGo checks Validate on a Config built in Go: no file, paths still named.
func TestValidateInGo(t *testing.T) {
	c := &Config{Deployments: []Deployment{{Name: "d", Dialect: "openai", BaseURL: "https://h/v1", Routes: []Route{{Model: "x"}}}}}
	applyDefaults(c)
	ps := problems(t, c.Validate())
	if len(ps) != 1 || ps[0].Error() != `deployments[0].routes[0].model: model "x" is not in the catalog (models:)` {
		t.Fatalf("got %v", ps)
	}
	if c.Deployments[0].Provider != "d" || c.Deployments[0].Routes[0].UpstreamModel != "x" || c.Deployments[0].Routes[0].Weight != 1 {
		t.Errorf("defaults not applied: %+v", c.Deployments[0])
	}
}

// routing.attempt_limit (R-FAIL-10) must not be negative.
func TestAttemptLimitValidated(t *testing.T) {
	_, err := Parse("a.yaml", []byte("routing:\n  attempt_limit: -1\n"))
	if err == nil || !strings.Contains(err.Error(), "a.yaml:2") || !strings.Contains(err.Error(), "attempt_limit") {
		t.Fatalf("%v", err)
	}
}

// A YAML syntax error is reported on the line that holds the mistake, not on the line where
// the enclosing block starts (the yaml package's context line).
func TestSyntaxErrorLine(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		line       int
	}{
		{"mapping key out-dented", "server:\n  listen: 127.0.0.1:8080\n listen2: x\n", 3},
		{"list item mis-indented", "models:\n  - id: m\n   - id: n\n", 3},
		{"nested list out-dented", "models:\n  - id: m\n    aliases:\n   - x\n", 4},
		{"value on a key line", "server:\n  listen: 127.0.0.1:8080\n   store: x\n", 3},
		{"tab indentation", "server:\n  listen: 127.0.0.1:8080\n\tmax_body_bytes: 3\n", 3},
		{"unclosed flow", "models:\n  - id: m\n    aliases: [a\n", 3},
		{"unclosed quote", "server:\n  listen: \"127.0.0.1:8080\nmodels: []\n", 2},
		{"error after a multi-line flow", "models:\n  - id: m\n    aliases: [a,\n      b]\n  - id: n\n   - id: o\n", 6},
	} {
		_, err := Parse("t.yaml", []byte(tc.yaml))
		var p *Problem
		if !errors.As(err, &p) || p.Line != tc.line {
			t.Errorf("%s: %v; want line %d", tc.name, err, tc.line)
		}
	}
}
