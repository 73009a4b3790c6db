package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `switchyard check` accepts a valid file and reports every problem of a bad one with file:line.
func TestCheck(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	os.WriteFile(good, []byte("auth: {required: false}\nmodels: [{id: m}]\ndeployments: [{name: d, dialect: openai, base_url: 'http://127.0.0.1:1/v1', routes: [{model: m}]}]\n"), 0o600)
	var out bytes.Buffer
	if err := cmdCheck([]string{"--config", good}, &out); err != nil || !strings.Contains(out.String(), "ok (1 models, 1 deployments)") {
		t.Fatalf("good: %v %q", err, out.String())
	}
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("server:\n  listen: 127.0.0.1:8080\n  colour: blue\nrouting:\n  timeouts: {headers: soon}\n"), 0o600)
	err := cmdCheck([]string{"--config", bad}, &out)
	if err == nil || !strings.Contains(err.Error(), "bad.yaml:3") || !strings.Contains(err.Error(), "bad.yaml:5") {
		t.Fatalf("bad: %v", err)
	}
	if strings.Contains(out.String(), "secret_key") {
		t.Errorf("warned about secret_key without the admin API: %q", out.String())
	}
	adm := filepath.Join(dir, "admin.yaml")
	os.WriteFile(adm, []byte(minimal+"admin: {token: t0123456789}\n"), 0o600)
	out.Reset()
	if err := cmdCheck([]string{"--config", adm}, &out); err != nil || !strings.Contains(out.String(), "warning: store.secret_key is empty") {
		t.Fatalf("admin API without store.secret_key: %v %q; want a warning", err, out.String())
	}
	pg := filepath.Join(dir, "pg.yaml")
	os.WriteFile(pg, []byte(minimal+"store: {url: 'mysql://h/db'}\n"), 0o600)
	if err := cmdCheck([]string{"--config", pg}, &out); err == nil || !strings.Contains(err.Error(), "store") {
		t.Fatalf("an unsupported store passed check: %v", err)
	}
}

// minimal is the smallest configuration check accepts: one model served by one deployment.
const minimal = "auth: {required: false}\nmodels: [{id: m}]\ndeployments: [{name: d, dialect: openai, base_url: 'http://127.0.0.1:1/v1', routes: [{model: m}]}]\n"

func TestIsLoopback(t *testing.T) {
	for addr, want := range map[string]bool{"127.0.0.1:8080": true, "[::1]:1": true, "localhost:1": true, "0.0.0.0:8080": false, ":8080": false, "10.0.0.1:1": false} {
		if isLoopback(addr) != want {
			t.Errorf("isLoopback(%q) != %v", addr, want)
		}
	}
}
