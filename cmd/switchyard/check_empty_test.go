package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// check warns about a provider key whose variable is exported but empty, as it does about an
// unset one: that deployment's requests would fail all the same. A key set to a value, and a
// variable with a default (${V:-x}), get no warning.
func TestCheckWarnsEmptyKeyVariable(t *testing.T) {
	dir := t.TempDir()
	cfg := `auth: {required: false}
models: [{id: m}]
deployments:
  - {name: a, dialect: openai, base_url: "http://127.0.0.1:1/v1", api_key: "${SY_TEST_EMPTY_KEY}", routes: [{model: m}]}
  - {name: b, dialect: openai, base_url: "http://127.0.0.1:1/v1", api_key: "${SY_TEST_BLANK_KEY}", routes: [{model: m}]}
  - {name: c, dialect: openai, base_url: "http://127.0.0.1:1/v1", api_key: "${SY_TEST_SET_KEY}", routes: [{model: m}]}
  - {name: d, dialect: openai, base_url: "http://127.0.0.1:1/v1", api_key: "${SY_TEST_EMPTY_KEY:-sk-default}", routes: [{model: m}]}
`
	if err := os.WriteFile(filepath.Join(dir, "switchyard.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SY_TEST_EMPTY_KEY", "")
	t.Setenv("SY_TEST_BLANK_KEY", "  ")
	t.Setenv("SY_TEST_SET_KEY", "sk-set")
	code, out, errOut := runCLI(t, dir, "check")
	if code != 0 || !strings.Contains(out, "ok (1 models, 4 deployments)") {
		t.Fatalf("check: %d %q %q", code, out, errOut)
	}
	for _, want := range []string{
		"warning: deployment a has no API key: SY_TEST_EMPTY_KEY is set but empty",
		"warning: deployment b has no API key: SY_TEST_BLANK_KEY is set but empty",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("check does not say %q:\n%s", want, out)
		}
	}
	for _, not := range []string{"deployment c has no", "deployment d has no"} {
		if strings.Contains(out, not) {
			t.Errorf("check warns %q:\n%s", not, out)
		}
	}
}
