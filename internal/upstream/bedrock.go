package upstream

import (
	"net/http"

	"github.com/switchyard-gw/switchyard/internal/catalog"
)

// newBedrock returns the bedrock adapter. TODO(platforms): not yet built; the bedrock helper replaces this file.
func newBedrock(dep *catalog.Deployment, tr *http.Transport) adapter { return nil }
