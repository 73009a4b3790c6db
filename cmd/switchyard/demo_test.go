package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for a writer and a reader in different goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The demo's first screen speaks to a newcomer: requests to try and what to do next, and no
// operator message (the admin API being off, a store of accounts) in its log.
func TestDemoFirstScreen(t *testing.T) {
	var out, logs syncBuffer
	logOut = &logs
	t.Cleanup(func() { logOut = os.Stderr })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- cmdDemo(ctx, []string{"--listen", "127.0.0.1:0", "--store", "sqlite://" + filepath.Join(t.TempDir(), "demo.db")}, &out)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(out.String(), "Stop with Ctrl-C") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	screen := out.String() + logs.String()
	for _, want := range []string{"curl -s http://127.0.0.1:", "/v1/chat/completions", "switchyard init"} {
		if !strings.Contains(screen, want) {
			t.Errorf("demo screen lacks %q:\n%s", want, screen)
		}
	}
	for _, unwanted := range []string{"admin", "WARNING"} {
		if strings.Contains(screen, unwanted) {
			t.Errorf("demo screen shows %q:\n%s", unwanted, screen)
		}
	}
}

// TestDemoCrossCloudFailover: the demo serves claude-haiku-4-5 across clouds (issue 21 item 5):
// Anthropic fails every other request, Bedrock (SigV4-verified) every other one that reaches
// it, and Vertex AI (OAuth2 from the written service-account file) answers the rest; the audit
// names each attempt's platform, and the caller sees only 200s.
func TestDemoCrossCloudFailover(t *testing.T) {
	var out, logs syncBuffer
	logOut = &logs
	t.Cleanup(func() { logOut = os.Stderr })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- cmdDemo(ctx, []string{"--listen", "127.0.0.1:0", "--store", "sqlite://" + filepath.Join(t.TempDir(), "demo.db")}, &out)
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	base := ""
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := regexp.MustCompile(`curl -s (http://127\.0\.0\.1:\d+)/v1/models`).FindStringSubmatch(out.String()); m != nil {
			base = m[1]
			break
		}
	}
	if base == "" {
		t.Fatalf("the demo did not start:\n%s\n%s", out.String(), logs.String())
	}
	served := map[string]string{} // deployment -> a request id it served
	for i := 0; i < 8; i++ {
		resp, err := http.Post(base+"/v1/messages", "application/json", strings.NewReader(
			`{"model":"claude-haiku-4-5","max_tokens":64,"messages":[{"role":"user","content":"Hello"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("request %d: status %d", i, resp.StatusCode)
		}
		served[resp.Header.Get("x-switchyard-deployment")] = resp.Header.Get("x-request-id")
	}
	for _, d := range []string{"anthropic-primary", "bedrock", "vertex"} {
		if served[d] == "" {
			t.Errorf("no request was served by %s: %v\n%s", d, served, logs.String())
		}
	}
	resp, err := http.Get(base + "/v1/generation?id=" + served["vertex"])
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var rec struct {
		Attempts []struct {
			Deployment, Platform, Outcome string
			ErrorCode                     string `json:"error_code"`
		} `json:"attempts"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&rec); err != nil {
		t.Fatal(err)
	}
	want := []string{"anthropic-primary anthropic failed upstream_error", "bedrock bedrock failed upstream_error", "vertex vertex completed "}
	if len(rec.Attempts) != 3 {
		t.Fatalf("attempts = %+v, want %v", rec.Attempts, want)
	}
	for i, a := range rec.Attempts {
		if got := a.Deployment + " " + a.Platform + " " + a.Outcome + " " + a.ErrorCode; got != want[i] {
			t.Errorf("attempt %d = %q, want %q", i+1, got, want[i])
		}
	}
}
