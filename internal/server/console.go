package server

import (
	"net/http"

	"github.com/switchyard-gw/switchyard/internal/config"
	"github.com/switchyard-gw/switchyard/internal/console"
)

// mountConsole serves the operators' console (package console, docs/console.md) at /console
// on mux: behind admin.token (off, the gateway's 404, without it), reading and writing through
// the admin handler admin, and explaining sample requests with the plan of this snapshot as
// the operator (consoleRoute).
func (s *Server) mountConsole(mux *http.ServeMux, cfg *config.Config, admin http.Handler) {
	c := console.New(console.Options{
		Token:    cfg.Admin.Token,
		Admin:    admin,
		Route:    http.HandlerFunc(s.consoleRoute),
		NotFound: http.HandlerFunc(s.serveNotFound),
	})
	mux.Handle("/console", c)
	mux.Handle("/console/", c)
}

// consoleRoute answers the console's POST /v1/route as the operator's `switchyard route` is
// answered (any strategy override, every dedicated endpoint), on the live gateway: its
// circuits, pauses, measurements and routable state.
func (s *Server) consoleRoute(w http.ResponseWriter, r *http.Request) {
	s.serveRouteAs(w, r, &caller{allowOverride: true, anyEndpoint: true})
}
