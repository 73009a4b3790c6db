// Package internal_test enforces the import rules of the architecture: imports flow one way,
// and the pure packages stay free of net/http (tailscale's deptest idea, standard library only).
package internal_test

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/switchyard-gw/switchyard/internal/"

func deps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", "./"+pkg).Output()
	if err != nil {
		t.Fatalf("go list %s: %v", pkg, err)
	}
	return strings.Fields(string(out))
}

// TestImportRules: catalog, plan, circuit, failure, config and dialect stay off net/http;
// dialect packages import only dialect, failure and sse of ours (and dialect/form, the multipart
// scanner, which imports only failure); plan never imports the relay
// or the server; the admin API never imports the relay (its error bodies come from
// dialect/openai, issue 25 item 6); nothing below server imports server.
func TestImportRules(t *testing.T) {
	for _, tc := range []struct {
		pkg       string
		forbidden []string
		ours      []string // when set, the only packages of this module it may import
	}{
		{pkg: "catalog", forbidden: []string{"net/http"}},
		{pkg: "plan", forbidden: []string{"net/http", module + "relay", module + "server"}},
		{pkg: "circuit", forbidden: []string{"net/http"}},
		{pkg: "failure", forbidden: []string{"net/http"}},
		{pkg: "config", forbidden: []string{"net/http"}},
		{pkg: "dialect", forbidden: []string{"net/http"}},
		{pkg: "dialect/openai", forbidden: []string{"net/http"}, ours: []string{"dialect", "dialect/form", "dialect/openai", "failure", "sse"}},
		{pkg: "dialect/form", forbidden: []string{"net/http"}, ours: []string{"dialect/form", "failure"}},
		{pkg: "dialect/anthropic", forbidden: []string{"net/http"}, ours: []string{"dialect", "dialect/anthropic", "failure", "sse"}},
		{pkg: "sse", forbidden: []string{"net/http", "encoding/json"}},
		{pkg: "relay", forbidden: []string{module + "server"}},
		{pkg: "dialect/responses", forbidden: []string{"net/http"}, ours: []string{"dialect", "dialect/form", "dialect/openai", "dialect/responses", "failure", "sse"}},
		{pkg: "admission", forbidden: []string{"net/http"}},
		{pkg: "billing", forbidden: []string{"net/http", module + "relay", module + "server"}},
		{pkg: "accounts", forbidden: []string{"net/http", module + "store/sqlite", module + "store/postgres", module + "server"}},
		{pkg: "audit", forbidden: []string{module + "store/sqlite", "net/http"}},
		{pkg: "layers", forbidden: []string{"net/http"}},
		{pkg: "secret", forbidden: []string{"net/http"}, ours: []string{"secret"}},
		{pkg: "litellm", forbidden: []string{"net/http"}, ours: []string{"litellm"}},
		{pkg: "admin", forbidden: []string{module + "relay", module + "server", module + "store/sqlite", module + "store/postgres"}},
		{pkg: "stats", forbidden: []string{"net/http", module + "relay", module + "server"}},
		{pkg: "console", ours: []string{"console"}},
	} {
		t.Run(tc.pkg, func(t *testing.T) {
			for _, d := range deps(t, tc.pkg) {
				for _, f := range tc.forbidden {
					if d == f {
						t.Errorf("%s imports %s", tc.pkg, f)
					}
				}
				if tc.ours != nil && strings.HasPrefix(d, module) {
					ok := false
					for _, o := range tc.ours {
						ok = ok || d == module+o
					}
					if !ok {
						t.Errorf("%s imports %s; it may import only %v of ours", tc.pkg, d, tc.ours)
					}
				}
			}
		})
	}
}
