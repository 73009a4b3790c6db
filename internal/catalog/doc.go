// Package catalog owns the immutable catalog snapshot: the models callers name (with their
// aliases), the deployments (provider endpoints with a wire dialect) and the routes joining
// them, all wired by pointer (Route.Deployment, Model.Routes, Deployment.Routes) in
// configuration order. New builds a snapshot from a config.Config; a reload builds a new one
// and swaps it, so nothing here is ever mutated after New and a *Catalog is safe for
// concurrent use.
//
// Resolve implements model resolution, R-MODEL-1..5: the exact id, then an alias, then a dated
// snapshot ("-YYYYMMDD" or "-YYYY-MM-DD" with a valid date) of an id or alias; never a closest
// match (R-MODEL-1); an unknown id is a 404 model_unavailable naming the id and pointing at
// GET /v1/models (R-MODEL-2). A snapshot routes and bills as its family while the provider
// receives the caller's id (R-MODEL-3, Resolution.UpstreamModel); an alias routes, bills and
// is sent upstream as its target (R-MODEL-4). Ids may hold '/' and ':' and are looked up whole
// (R-MODEL-5). ResolveSuffixed adds R-SUFFIX on a miss only: a trailing `:provider` pin
// (which must serve the model) or `:@strategy` override is split off; two suffixes are a 400.
//
// Dedicated endpoints (R-KEY-6): an Endpoint `<namespace>/<name>` names a model and the
// reserved deployments tried first for it. Resolve looks an endpoint id up whole, after model
// ids and aliases, and sets Resolution.Endpoint; Resolution.Serves says which routes a
// request may use (a reserved route only through an endpoint listing it); UnknownModel is the
// 404 for an endpoint the caller's account may not use, identical to an unknown model's.
//
// This package does not import net/http.
package catalog
