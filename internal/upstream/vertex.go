package upstream

import (
	"net/http"

	"github.com/switchyard-gw/switchyard/internal/catalog"
)

// newVertex returns the vertex adapter. TODO(platforms): not yet built; the vertex helper replaces this file.
func newVertex(dep *catalog.Deployment, tr *http.Transport) adapter { return nil }

func vertexEndpoint(dep *catalog.Deployment, op catalog.Protocol) string { return "" }
