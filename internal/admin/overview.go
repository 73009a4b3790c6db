package admin

import (
	"context"
	"net/http"
	"time"

	"github.com/switchyard-gw/switchyard/internal/audit"
	"github.com/switchyard-gw/switchyard/internal/failure"
)

// Overviewer is the audit as the overview reads it (*audit.Recorder): an aggregate over a
// window of stored records.
type Overviewer interface {
	Overview(ctx context.Context, q audit.OverviewQuery) (*audit.Overview, error)
}

// overviewWindows are the windows of GET /admin/v1/overview and their bucket sizes: a minute
// over the last hour, 15 minutes over a day, 3 hours over a week.
var overviewWindows = map[string][2]time.Duration{
	"1h":  {time.Hour, time.Minute},
	"24h": {24 * time.Hour, 15 * time.Minute},
	"7d":  {7 * 24 * time.Hour, 3 * time.Hour},
}

// overviewTop is how many entries each top list of the overview holds.
const overviewTop = 10

// overviewJSON is the body of GET /admin/v1/overview: the audit's aggregate plus the window's
// name and the top keys' names.
type overviewJSON struct {
	Window string `json:"window"`
	*audit.Overview
	// KeyNames maps each top key's id to its name (a stored key's name; a static key's id is its
	// name); a key that no longer exists maps to its id.
	KeyNames map[string]string `json:"key_names"`
}

// overview serves GET /admin/v1/overview?window=1h|24h|7d (default 24h): totals, the time
// series, the failures by class and the top models, deployments, keys and accounts of the
// window ending now (docs/admin-api.md "Overview").
func (a *api) overview(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("window")
	if name == "" {
		name = "24h"
	}
	win, ok := overviewWindows[name]
	if !ok {
		badRequest(w, "window", "window must be 1h, 24h or 7d")
		return
	}
	ov, ok := a.Audit.(Overviewer)
	if a.Audit == nil || !ok {
		writeError(w, http.StatusServiceUnavailable, &failure.Error{Class: failure.GatewayError, Msg: "the admin API has no audit log"})
		return
	}
	ctx, cancel := storeCtx(r)
	defer cancel()
	now := time.Now()
	o, err := ov.Overview(ctx, audit.OverviewQuery{Since: now.Add(-win[0]), Until: now, Bucket: win[1], Top: overviewTop})
	if err != nil {
		a.Logf("admin: audit overview: %v", err)
		writeError(w, http.StatusServiceUnavailable, &failure.Error{Class: failure.GatewayError, Msg: "the audit store did not answer"})
		return
	}
	out := overviewJSON{Window: name, Overview: o, KeyNames: map[string]string{}}
	for _, k := range o.TopKeys {
		out.KeyNames[k.Name] = k.Name
		if a.Store != nil {
			if sk, err := a.Store.Key(ctx, k.Name); err == nil && sk.Name != "" {
				out.KeyNames[k.Name] = sk.Name
			}
		}
	}
	writeJSON(w, http.StatusOK, out)
}
