package main

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

// runCLI runs the command line in dir and returns its exit status and outputs.
func runCLI(t *testing.T, dir string, args ...string) (int, string, string) {
	t.Helper()
	if dir != "" {
		t.Chdir(dir)
	}
	var out, errOut bytes.Buffer
	code := runMain(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// Exit statuses: help of every kind is 0 on stdout, a usage mistake 2, a failed command 1.
func TestCLIExitCodes(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"help"}, 0},
		{[]string{"--help"}, 0},
		{[]string{"-h"}, 0},
		{[]string{"help", "route"}, 0},
		{[]string{"serve", "--help"}, 0},
		{[]string{"check", "-h"}, 0},
		{[]string{"route", "--help"}, 0},
		{[]string{"demo", "--help"}, 0},
		{[]string{"init", "--help"}, 0},
		{[]string{"fake-provider", "--help"}, 0},
		{[]string{"version"}, 0},
		{[]string{"reload", "--help"}, 0},
		{[]string{"reload"}, 2},
		{[]string{"reload", "--pid-file", "/nonexistent/pid"}, 1},
		{[]string{"--version"}, 0},
		{nil, 2},
		{[]string{"frobnicate"}, 2},
		{[]string{"serve", "--bogus"}, 2},
		{[]string{"check", "extra-arg"}, 2},
		{[]string{"route"}, 2}, // --model is required
		{[]string{"check", "--config", "/nonexistent/switchyard.yaml"}, 1},
	} {
		code, _, _ := runCLI(t, "", tc.args...)
		if code != tc.code {
			t.Errorf("switchyard %s: exit %d, want %d", strings.Join(tc.args, " "), code, tc.code)
		}
	}
	_, out, _ := runCLI(t, "", "serve", "--help")
	if !strings.Contains(out, "usage: switchyard serve") || !strings.Contains(out, "-listen") {
		t.Errorf("serve --help printed %q", out)
	}
	_, out, _ = runCLI(t, "", "--version")
	if !strings.HasPrefix(out, "switchyard ") {
		t.Errorf("--version printed %q", out)
	}
}

// --version carries the module version, the VCS revision and whether the tree was modified.
func TestFormatVersion(t *testing.T) {
	bi := &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.time", Value: "2026-12-01T10:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	got := formatVersion(bi, "", "")
	if !strings.HasPrefix(got, "switchyard v1.2.3 (rev 0123456789ab+dirty, 2026-12-01T10:00:00Z) go") {
		t.Errorf("formatVersion = %q", got)
	}
	if got := formatVersion(&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "v2.0.0", "abc"); !strings.HasPrefix(got, "switchyard v2.0.0 (rev abc) go") {
		t.Errorf("release build: formatVersion = %q", got)
	}
	if got := formatVersion(nil, "", ""); !strings.HasPrefix(got, "switchyard (devel) go") {
		t.Errorf("no build info: %q", got)
	}
}

// check and route take the same default as serve: ./switchyard.yaml when present, else the
// built-in catalog.
func TestCheckAndRouteDefault(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := runCLI(t, dir, "check")
	if code != 0 || !strings.Contains(out, "the built-in catalog: ok (7 models, 2 deployments)") {
		t.Fatalf("check without a file: %d %q %q", code, out, errOut)
	}
	code, out, errOut = runCLI(t, dir, "route", "--model", "claude-haiku-4-5")
	if code != 0 || !strings.Contains(out, "anthropic") {
		t.Fatalf("route on the built-in catalog: %d %q %q", code, out, errOut)
	}
	os.WriteFile(filepath.Join(dir, "switchyard.yaml"), []byte(minimal), 0o600)
	code, out, _ = runCLI(t, dir, "check")
	if code != 0 || !strings.Contains(out, "switchyard.yaml: ok (1 models, 1 deployments)") {
		t.Fatalf("check with ./switchyard.yaml: %d %q", code, out)
	}
	code, out, _ = runCLI(t, dir, "route", "--model", "m")
	if code != 0 || !strings.Contains(out, "model m -> m") {
		t.Fatalf("route with ./switchyard.yaml: %d %q", code, out)
	}
	// An unknown model is explained for the command line: no HTTP hint, the models it has.
	code, _, errOut = runCLI(t, dir, "route", "--model", "nope")
	if code != 1 || strings.Contains(errOut, "GET /v1") || !strings.Contains(errOut, `model "nope" is not in switchyard.yaml; its models are: m`) {
		t.Errorf("route --model nope: %d %q", code, errOut)
	}
}

// check refuses a configuration that could serve nothing, an empty file included.
func TestCheckRefusesEmpty(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"empty.yaml":    "",
		"nomodels.yaml": "auth: {required: false}\n",
		"nodeps.yaml":   "auth: {required: false}\nmodels: [{id: m}]\n",
	} {
		f := filepath.Join(dir, name)
		os.WriteFile(f, []byte(body), 0o600)
		code, _, errOut := runCLI(t, "", "check", "--config", f)
		if code != 1 || !strings.Contains(errOut, "no deployments") || !strings.Contains(errOut, "switchyard init") {
			t.Errorf("check %s: exit %d %q; want 1 naming what is missing", name, code, errOut)
		}
	}
}

// init writes the commented starter file, which check accepts once the variables it reads are
// set, and never replaces an existing file without --force.
func TestInit(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := runCLI(t, dir, "init")
	if code != 0 || !strings.Contains(out, "wrote switchyard.yaml") || !strings.Contains(out, "switchyard check") {
		t.Fatalf("init: %d %q %q", code, out, errOut)
	}
	data, err := os.ReadFile(filepath.Join(dir, "switchyard.yaml"))
	if err != nil || !bytes.HasPrefix(data, []byte("# switchyard.yaml")) {
		t.Fatalf("init wrote %q, %v", data, err)
	}
	t.Setenv("SWITCHYARD_API_KEY", "k-0123456789abcdef")
	t.Setenv("OPENAI_API_KEY", "sk-test")
	t.Setenv("ANTHROPIC_API_KEY", "")
	os.Unsetenv("ANTHROPIC_API_KEY")
	code, out, errOut = runCLI(t, dir, "check")
	if code != 0 || !strings.Contains(out, "switchyard.yaml: ok (7 models, 2 deployments)") {
		t.Fatalf("check of the starter file: %d %q %q", code, out, errOut)
	}
	// A provider key left unset is worth a warning: that deployment's requests would fail.
	if !strings.Contains(out, "warning: deployment anthropic has no API key: ANTHROPIC_API_KEY is not set") || strings.Contains(out, "deployment openai has no") {
		t.Errorf("check does not warn (only) about the unset provider key:\n%s", out)
	}
	os.WriteFile(filepath.Join(dir, "switchyard.yaml"), []byte("# mine\n"), 0o600)
	code, _, errOut = runCLI(t, dir, "init")
	if code != 1 || !strings.Contains(errOut, "already exists") {
		t.Fatalf("init over an existing file: %d %q", code, errOut)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "switchyard.yaml")); string(data) != "# mine\n" {
		t.Fatalf("init replaced an existing file")
	}
	if code, _, _ = runCLI(t, dir, "init", "--force"); code != 0 {
		t.Fatalf("init --force: %d", code)
	}
	code, out, _ = runCLI(t, dir, "init", "--output", "-")
	if code != 0 || !strings.HasPrefix(out, "# switchyard.yaml") {
		t.Fatalf("init --output -: %d", code)
	}
}

// `switchyard import litellm` writes a configuration check accepts to stdout and the notes to
// stderr; a wrong invocation is a usage error.
func TestImportLiteLLM(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "config.yaml")
	os.WriteFile(in, []byte(`model_list:
  - model_name: gpt-4o
    litellm_params: {model: openai/gpt-4o, api_key: os.environ/OPENAI_API_KEY, rpm: 100}
  - model_name: gpt-4o
    litellm_params: {model: bedrock/anthropic.claude-3-5-sonnet, aws_region_name: us-east-1}
  - model_name: titan
    litellm_params: {model: bedrock/amazon.titan-text-express-v1, aws_region_name: us-east-1}
general_settings: {master_key: os.environ/LITELLM_MASTER_KEY}
`), 0o600)
	code, out, errOut := runCLI(t, "", "import", "litellm", in)
	if code != 0 {
		t.Fatalf("import: exit %d %q", code, errOut)
	}
	for _, want := range []string{"litellm_params.rpm: deployment rate limits are not modelled", "model_list[1].litellm_params.aws_access_key_id: absent: the AWS SDK's default credential chain applies",
		"model_list[2]: bedrock/amazon.titan-text-express-v1: Switchyard calls Anthropic models on Bedrock"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	file := filepath.Join(dir, "switchyard.yaml")
	os.WriteFile(file, []byte(out), 0o600)
	t.Setenv("LITELLM_MASTER_KEY", "sk-master-0123456789")
	if code, o, e := runCLI(t, "", "check", "--config", file); code != 0 || !strings.Contains(o, "ok (1 models, 2 deployments)") {
		t.Errorf("check of the imported file: %d %q %q\n%s", code, o, e, out)
	}
	for _, args := range [][]string{{"import"}, {"import", "litellm"}, {"import", "portkey", in}} {
		if code, _, _ := runCLI(t, "", args...); code != 2 {
			t.Errorf("switchyard %s: exit %d, want 2", strings.Join(args, " "), code)
		}
	}
	if code, _, _ := runCLI(t, "", "import", "litellm", filepath.Join(dir, "missing.yaml")); code != 1 {
		t.Errorf("import of a missing file: exit %d, want 1", code)
	}
}

// Every flag of every command's --help shows a one-word placeholder (issue 25 item 5: the flag
// package reads a back-quoted phrase of the usage as the placeholder, which garbled serve's
// --pid-file as "-pid-file switchyard reload --pid-file").
func TestHelpPlaceholders(t *testing.T) {
	for _, cmd := range []string{"serve", "check", "route", "demo", "init", "fake-provider", "reload"} {
		_, out, _ := runCLI(t, "", cmd, "--help")
		for line := range strings.SplitSeq(out, "\n") {
			if !strings.HasPrefix(line, "  -") {
				continue
			}
			if f := strings.Fields(line); len(f) > 2 {
				t.Errorf("%s --help: flag line %q has a placeholder of %d words", cmd, line, len(f)-1)
			}
		}
		if cmd == "serve" && !strings.Contains(out, "  -pid-file FILE\n") {
			t.Errorf("serve --help: no \"-pid-file FILE\" line in\n%s", out)
		}
	}
}
