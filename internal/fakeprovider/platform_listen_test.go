package fakeprovider

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestListenAndServePlatform: `switchyard fake-provider --platform vertex` writes a
// service-account file whose token_uri is the listening emulator, and the official SDK's
// Vertex adapter works with that file alone; the emulator stops with its context.
func TestListenAndServePlatform(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	file := filepath.Join(t.TempDir(), "sa.json")
	addrc := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- ListenAndServePlatform(ctx, "127.0.0.1:0", "vertex", file, func(f string, a ...any) {
			if strings.HasPrefix(f, "listening on") {
				addrc <- a[0].(interface{ String() string }).String()
			}
		})
	}()
	var addr string
	select {
	case addr = <-addrc:
	case err := <-done:
		t.Fatal(err)
	case <-time.After(30 * time.Second):
		t.Fatal("never listened")
	}
	sa, err := os.ReadFile(file)
	if err != nil || !strings.Contains(string(sa), `"token_uri":"http://`+addr+`/token"`) {
		t.Fatalf("service-account file: %v %s", err, sa)
	}
	client := vertexSDK(t, &httptest.Server{URL: "http://" + addr}, sa)
	if _, err := client.Messages.New(t.Context(), anthropicParams(false)); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := ListenAndServePlatform(context.Background(), "127.0.0.1:0", "bedrockish", "", nil); err == nil {
		t.Fatal("an unknown platform was accepted")
	}
}
