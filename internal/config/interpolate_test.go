package config

import (
	"strings"
	"testing"
)

func TestExpand(t *testing.T) {
	vars := env(map[string]string{"A": "alpha", "EMPTY": "", "N": "42"})
	tests := []struct {
		in, want string
		err      string // substring of the error; "" for none
	}{
		{in: "plain", want: "plain"},
		{in: "${A}", want: "alpha"},
		{in: "x-${A}-${N}", want: "x-alpha-42"},
		{in: "${EMPTY}", want: ""},
		{in: "${EMPTY:-d}", want: "d"},
		{in: "${UNSET:-fallback value}", want: "fallback value"},
		{in: "${UNSET:-}", want: ""},
		{in: "${A:-d}", want: "alpha"},
		{in: "$${A}", want: "${A}"},
		{in: "cost $5 and $A", want: "cost $5 and $A"},
		{in: "$", want: "$"},
		{in: "${UNSET}", err: "environment variable UNSET is not set"},
		{in: "${U1}/${U2}", err: "U2 is not set"},
		{in: "${A", err: `unterminated "${"`},
		{in: "${}", err: "invalid variable reference"},
		{in: "${1A}", err: "invalid variable reference"},
		{in: "${A-d}", err: "invalid variable reference"},
		{in: "${A B}", err: "invalid variable reference"},
	}
	for _, tt := range tests {
		got, err := expand(tt.in, vars)
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("expand(%q): %v", tt.in, err)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("expand(%q) error = %v, want %q", tt.in, err, tt.err)
		case tt.err == "" && got != tt.want:
			t.Errorf("expand(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestInterpolationInFile(t *testing.T) {
	vars := env(map[string]string{
		"MAX":    "1024",
		"GRACE":  "5s",
		"HOST":   "127.0.0.1",
		"KEY":    "sk-x",
		"INJECT": "x\nstrategy: latency\n# ${A}",
		"WEIRD":  "*not-an-alias #not-a-comment",
	})
	src := `# a comment may mention ${NOT_SET} freely
server:
  listen: ${HOST}:${PORT:-9999}
  max_body_bytes: ${MAX}
  shutdown_grace: ${GRACE}
deployments:
  - name: d
    dialect: openai
    base_url: https://h/v1
    api_key: ${KEY}
    tier: ${INJECT}
    region: ${WEIRD}
admin:
  token: "$${LITERAL}"
`
	c, err := parse("i.yaml", []byte(src), vars)
	if err != nil {
		t.Fatal(err)
	}
	if c.Server.Listen != "127.0.0.1:9999" || c.Server.MaxBodyBytes != 1024 || c.Server.ShutdownGrace.D().String() != "5s" {
		t.Errorf("server = %+v", c.Server)
	}
	d := c.Deployments[0]
	if d.APIKey != "sk-x" || d.Tier != "x\nstrategy: latency\n# ${A}" || d.Region != "*not-an-alias #not-a-comment" {
		t.Errorf("deployment = %+v", d)
	}
	if c.Routing.Strategy != "price" {
		t.Errorf("an interpolated value changed the structure: strategy = %q", c.Routing.Strategy)
	}
	if c.Admin.Token != "${LITERAL}" {
		t.Errorf("admin.token = %q, want the literal ${LITERAL}", c.Admin.Token)
	}
}

func TestInterpolationProblems(t *testing.T) {
	tests := []struct {
		name, src string
		line      int
		want      string
	}{
		{"unset outside a credential", "server:\n  listen: ${LISTEN}\n", 2, "server.listen: environment variable LISTEN is not set"},
		{"credential with text around", "admin:\n  token: tok-${TOKEN}\n", 2, "admin.token: environment variable TOKEN is not set"},
		{"credential with a default is fine, bad syntax is not", "admin:\n  token: ${TOKEN:-x}${\n", 2, `admin.token: unterminated "${"`},
		{"quoted number stays a string", "server:\n  max_body_bytes: \"${MAX}\"\n", 2, "server.max_body_bytes: cannot unmarshal !!str `1024` into int64"},
		{"interpolated bad duration", "server:\n  shutdown_grace: ${MAX}\n", 2, `invalid duration "1024"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parse("p.yaml", []byte(tt.src), env(map[string]string{"MAX": "1024"}))
			ps := problems(t, err)
			if len(ps) != 1 {
				t.Fatalf("got %d problems %v, want 1", len(ps), err)
			}
			if ps[0].Line != tt.line || !strings.Contains(ps[0].Error(), tt.want) {
				t.Errorf("got %q, want line %d and %q", ps[0], tt.line, tt.want)
			}
		})
	}
}

func TestInterpolationSeveralUnset(t *testing.T) {
	_, err := parse("m.yaml", []byte("server:\n  listen: ${H}:${P}\n"), env(nil))
	ps := problems(t, err)
	if len(ps) != 2 || !strings.Contains(ps[0].Msg, " H ") || !strings.Contains(ps[1].Msg, " P ") || ps[0].Line != 2 || ps[1].Line != 2 {
		t.Fatalf("got %v, want H and P unset on line 2", err)
	}
}
