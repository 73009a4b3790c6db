package upstream

import (
	"net/http"

	"github.com/switchyard-gw/switchyard/internal/catalog"
)

// newAdapter returns the adapter of dep's platform, nil for the dialect's own API
// (catalog.PlatformOpenAI, catalog.PlatformAnthropic). tr is the deployment's transport, for
// adapters that fetch credentials over HTTP.
func newAdapter(dep *catalog.Deployment, tr *http.Transport) adapter {
	switch dep.Platform {
	case catalog.PlatformBedrock:
		return newBedrock(dep, tr)
	case catalog.PlatformVertex:
		return newVertex(dep, tr)
	case catalog.PlatformAzure:
		return newAzure(dep, tr)
	}
	return nil
}
