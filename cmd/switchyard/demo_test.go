package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
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
