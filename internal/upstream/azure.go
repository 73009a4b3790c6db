package upstream

import (
	"net/http"

	"github.com/switchyard-gw/switchyard/internal/catalog"
)

// newAzure returns the azure adapter. TODO(platforms): not yet built; the azure helper replaces this file.
func newAzure(dep *catalog.Deployment, tr *http.Transport) adapter { return nil }
