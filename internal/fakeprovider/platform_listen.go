package fakeprovider

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
)

// ListenAndServePlatform runs a platform emulator on addr until ctx ends, for `switchyard
// fake-provider --platform vertex|azure`: NewVertex("fake-vertex") or NewAzure("fake-azure").
// For vertex it first writes the service-account file (ServiceAccountJSON for the listening
// address) to credentialsFile, or to fake-vertex-service-account.json in the temporary
// directory when that is "", and logs its path: a gateway deployment names it as
// vertex.credentials_file. Once listening it logs "listening on HOST:PORT" through logf (nil
// logs nothing). It returns nil after a shutdown caused by ctx, or the error that stopped it.
func ListenAndServePlatform(ctx context.Context, addr, platform, credentialsFile string, logf func(string, ...any)) error {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if platform != "vertex" && platform != "azure" {
		return fmt.Errorf("fakeprovider: unknown platform %q (want vertex or azure)", platform)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("fakeprovider: %w", err)
	}
	var h http.Handler
	switch platform {
	case "vertex":
		v := NewVertex("fake-vertex")
		if credentialsFile == "" {
			credentialsFile = filepath.Join(os.TempDir(), "fake-vertex-service-account.json")
		}
		if err := v.WriteServiceAccount(credentialsFile, "http://"+ln.Addr().String()); err != nil {
			_ = ln.Close()
			return fmt.Errorf("fakeprovider: writing the service-account file: %w", err)
		}
		logf("vertex service-account file (vertex.credentials_file): %s", credentialsFile)
		h = v
	case "azure":
		h = NewAzure("fake-azure")
	}
	logf("listening on %s", ln.Addr())
	return Serve(ctx, ln, h)
}
