package main

import (
	"bufio"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/fakeprovider"
)

// TestMain lets a test run this package's test binary as the switchyard command: with
// SWITCHYARD_TEST_MAIN=1 it runs main with the arguments instead of the tests.
func TestMain(m *testing.M) {
	if os.Getenv("SWITCHYARD_TEST_MAIN") == "1" {
		os.Exit(runMain(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// process is a `switchyard serve` started as a real process, its log lines collected.
type process struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	logs []string
	addr string
	done chan error
}

func startServe(t *testing.T, args ...string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(os.Args[0], append([]string{"serve"}, args...)...), done: make(chan error, 1)}
	p.cmd.Env = append(os.Environ(), "SWITCHYARD_TEST_MAIN=1")
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.cmd.Process.Kill() })
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.logs = append(p.logs, line)
			p.mu.Unlock()
			if a, ok := strings.CutPrefix(line, "listening on "); ok {
				addr <- a
			}
		}
		p.done <- p.cmd.Wait()
	}()
	select {
	case p.addr = <-addr:
	case err := <-p.done:
		t.Fatalf("serve exited before listening: %v\n%s", err, p.log())
	case <-time.After(60 * time.Second):
		t.Fatalf("serve did not listen:\n%s", p.log())
	}
	return p
}

func (p *process) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.logs, "\n")
}

// waitLog waits until the log holds n lines containing s.
func (p *process) waitLog(t *testing.T, s string, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for strings.Count(p.log(), s) < n {
		if time.Now().After(deadline) {
			t.Fatalf("log never said %q (%d times):\n%s", s, n, p.log())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// chat sends a chat completion with key and returns the status and the serving deployment.
func (p *process) chat(t *testing.T, key, model string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", "http://"+p.addr+"/v1/chat/completions",
		strings.NewReader(`{"model":"`+model+`","messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("X-Switchyard-Deployment")
}

const reloadConfig = `server: {listen: "127.0.0.1:0", shutdown_grace: 5s}
store: {url: "sqlite://STORE"}
models: [{id: m}, {id: m2}]
deployments:
  - {name: DEP, dialect: openai, base_url: "URL", api_key: sk-x, routes: [{model: m}, {model: m2}]}
keys: [{name: app, secret: KEY}]
`

// A real `switchyard serve` process: SIGHUP (sent by `switchyard reload --pid-file`) swaps in
// a new key and deployment; an invalid file is refused with its file:line problem logged and
// the old configuration keeps serving; SIGTERM still drains and exits 0.
func TestServeReloadProcess(t *testing.T) {
	fake := httptest.NewServer(fakeprovider.New("fake", catalog.OpenAI))
	t.Cleanup(fake.Close)
	dir := t.TempDir()
	file, pidFile := filepath.Join(dir, "switchyard.yaml"), filepath.Join(dir, "switchyard.pid")
	write := func(dep, key string) {
		r := strings.NewReplacer("STORE", filepath.Join(dir, "sy.db"), "DEP", dep, "URL", fake.URL+"/v1", "KEY", key)
		if err := os.WriteFile(file, []byte(r.Replace(reloadConfig)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("first", "key-one-0123456789")
	p := startServe(t, "--config", file, "--pid-file", pidFile)
	if code, dep := p.chat(t, "key-one-0123456789", "m"); code != 200 || dep != "first" {
		t.Fatalf("before reload: %d from %q", code, dep)
	}

	// An invalid file: refused, problems with file:line, the old configuration keeps serving.
	if err := os.WriteFile(file, []byte("models:\n  - id: m\n   - id: n\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if code := runMain([]string{"reload", "--pid-file", pidFile}, &out, io.Discard); code != 0 {
		t.Fatalf("switchyard reload: exit %d", code)
	}
	p.waitLog(t, "reload refused", 1)
	if !strings.Contains(p.log(), file+":3: did not find expected '-' indicator") {
		t.Errorf("refused reload does not name the file and line:\n%s", p.log())
	}
	if code, dep := p.chat(t, "key-one-0123456789", "m"); code != 200 || dep != "first" {
		t.Errorf("after a refused reload: %d from %q, want the old configuration", code, dep)
	}

	// A valid file: swapped in.
	write("second", "key-two-0123456789")
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	p.waitLog(t, "reloaded "+file, 1)
	if code, _ := p.chat(t, "key-one-0123456789", "m"); code != 401 {
		t.Errorf("old key after reload: %d, want 401", code)
	}
	if code, dep := p.chat(t, "key-two-0123456789", "m2"); code != 200 || dep != "second" {
		t.Errorf("after reload: %d from %q, want 200 from second", code, dep)
	}

	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.done:
		if err != nil {
			t.Errorf("serve after SIGTERM: %v\n%s", err, p.log())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not exit after SIGTERM")
	}
	if _, err := os.Stat(pidFile); !os.IsNotExist(err) {
		t.Errorf("pid file left behind: %v", err)
	}
}
