package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/fakeprovider"
)

// jsonLogConfig has two configuration warnings (a deployment whose API key variable is not
// set, the admin API on without store.secret_key) and logs in JSON.
const jsonLogConfig = `server: {listen: "127.0.0.1:0", shutdown_grace: 5s}
log: {format: json}
store: {url: "sqlite://STORE"}
admin: {token: adm-0123456789abcdef}
models: [{id: m}]
deployments:
  - {name: good, dialect: openai, base_url: "URL", api_key: sk-x, routes: [{model: m}]}
  - {name: nokey, dialect: openai, base_url: "URL", api_key: "${SY_TEST_JSONLOG_UNSET_KEY}", routes: [{model: m}]}
keys: [{name: app, secret: key-0123456789abcdef}]
`

// TestServeJSONLogOnly: issue 25 item 5. With log.format: json, a real `switchyard serve`
// process writes only JSON lines (the ready line `listening on HOST:PORT` aside, contract.md):
// the configuration's warnings printed at start and at a reload are JSON at level WARN, not
// text lines. A refused reload is logged at WARN with its file:line problem and counted on
// switchyard_config_reloads_total{result="refused"} (both results exist at 0 from the start);
// a valid reload counts result="applied".
func TestServeJSONLogOnly(t *testing.T) {
	os.Unsetenv("SY_TEST_JSONLOG_UNSET_KEY")
	fake := httptest.NewServer(fakeprovider.New("fake", catalog.OpenAI))
	t.Cleanup(fake.Close)
	dir := t.TempDir()
	file := filepath.Join(dir, "switchyard.yaml")
	good := strings.NewReplacer("STORE", filepath.Join(dir, "sy.db"), "URL", fake.URL+"/v1").Replace(jsonLogConfig)
	if err := os.WriteFile(file, []byte(good), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startServe(t, "--config", file)
	metric := func(result string) string {
		t.Helper()
		resp, err := http.Get("http://" + p.addr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, `switchyard_config_reloads_total{result="`+result+`"} `); ok {
				return v
			}
		}
		return "absent"
	}
	if a, r := metric("applied"), metric("refused"); a != "0" || r != "0" {
		t.Errorf("before any reload: applied %s, refused %s; want both 0", a, r)
	}

	// A file that does not parse: refused.
	if err := os.WriteFile(file, []byte("models:\n  - id: m\n   - id: n\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	p.waitLog(t, "reload refused", 1)
	if r := metric("refused"); r != "1" {
		t.Errorf("after a refused reload: refused %s, want 1", r)
	}
	// The first file again: applied, with its warnings logged again.
	if err := os.WriteFile(file, []byte(good), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	p.waitLog(t, "reloaded "+file, 1)
	if a, r := metric("applied"), metric("refused"); a != "1" || r != "1" {
		t.Errorf("after a valid reload: applied %s, refused %s; want 1 and 1", a, r)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.done:
		if err != nil {
			t.Fatalf("serve after SIGTERM: %v\n%s", err, p.log())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not exit after SIGTERM")
	}

	p.mu.Lock()
	lines := append([]string(nil), p.logs...)
	p.mu.Unlock()
	warned := map[string]int{}
	for _, l := range lines {
		if strings.HasPrefix(l, "listening on ") {
			continue
		}
		var rec struct{ Time, Level, Msg string }
		if err := json.Unmarshal([]byte(l), &rec); err != nil || rec.Time == "" || rec.Level == "" || rec.Msg == "" {
			t.Errorf("not a JSON log line (time, level, msg): %q", l)
			continue
		}
		switch {
		case strings.Contains(rec.Msg, "deployment nokey has no API key"):
			warned["key "+rec.Level]++
		case strings.Contains(rec.Msg, "store.secret_key is empty"):
			warned["secret_key "+rec.Level]++
		case strings.HasPrefix(rec.Msg, "reload refused"):
			warned["refused "+rec.Level]++
			if !strings.Contains(rec.Msg, file+":3: did not find expected '-' indicator") {
				t.Errorf("the refused reload does not name the file and line: %q", rec.Msg)
			}
		}
	}
	// At start and at the applied reload; the refused file stopped before its warnings.
	for k, want := range map[string]int{"key WARN": 2, "secret_key WARN": 2, "refused WARN": 1} {
		if warned[k] != want {
			t.Errorf("%q logged %d times, want %d (logged: %v)", k, warned[k], want, warned)
		}
	}
	if t.Failed() {
		t.Logf("log:\n%s", strings.Join(lines, "\n"))
	}
}
