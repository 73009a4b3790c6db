// Package admin is the admin API of contract.md, served under /admin/v1/ and authenticated
// with admin.token (docs/admin-api.md): accounts, workspaces, keys and their settings by layer
// (R-KEY-3 conflicts), credits and the ledger, routing policies, BYOK connections, and the
// deployments' routable state. The server mounts the handler New returns at /admin/ and hands
// it what it reads and changes through the small interfaces below; the request path never
// waits on it.
package admin

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/switchyard-gw/switchyard/internal/accounts"
	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/failure"
	"github.com/switchyard-gw/switchyard/internal/secret"
)

// MaxBody caps an admin request body (1 MiB); its JSON nests at most dialect.MaxDepth levels.
const MaxBody = 1 << 20

// storeTimeout bounds the store work of one admin request.
const storeTimeout = 10 * time.Second

// Cache is the in-memory cache of keys, accounts, workspaces, policies and connections that
// the request path reads (*accounts.Cache): the admin API puts what it wrote into it, so this
// process sees a change before the answer; other replicas see it at their next reload.
type Cache interface {
	PutAccount(a *accounts.Account)
	PutWorkspace(w *accounts.Workspace)
	PutKey(k *accounts.Key)
	// Evict drops key id, so that it stops authenticating at once.
	Evict(id string)
	PutPolicy(p *accounts.Policy)
	DeletePolicy(id string)
	PutConnection(c *accounts.Connection)
	// SetStoredBalance sets an account's stored balance (micro-USD), absolute.
	SetStoredBalance(accountID string, storedMicroUSD int64)
}

// Ledger is the ledger writer (*accounts.Writer): Flush writes the settles queued so far, so a
// balance or ledger read right after a request sees it.
type Ledger interface {
	Flush(ctx context.Context) error
}

// Credits is the admission store's prepaid balance (admission.Store): a credit stored is added
// to it at once.
type Credits interface {
	Credit(ctx context.Context, accountID string, deltaMicroUSD int64) error
}

// Sealer seals and opens BYOK connections' API keys (*secret.Box, nil included: the clear).
type Sealer interface {
	Seal(plain string) string
	Open(stored string) (string, error)
}

// Routable is the gateway's live routable state (the operators' overrides of the
// configuration's disabled flags, issue 11 item 3).
type Routable interface {
	// Disabled reports whether rt is out of routing: its deployment's or its own override,
	// else the configuration's flags.
	Disabled(rt *catalog.Route) bool
	// Override returns the live override of a deployment (model "") or of one of its routes,
	// and whether there is one.
	Override(deployment, model string) (disabled, ok bool)
	// Reload reads every override from the store into the live state.
	Reload(ctx context.Context) error
}

// Options are the admin API's collaborators; every one but Token, Catalog and NotFound may be
// nil when Store is.
type Options struct {
	// Token is admin.token; "" turns the admin API off: every path answers NotFound.
	Token string
	// Store is the store of accounts; nil answers 503 to every authenticated request.
	Store    accounts.Store
	Cache    Cache
	Ledger   Ledger
	Credits  Credits
	Box      Sealer
	Catalog  *catalog.Catalog
	Routable Routable
	// Stats and Circuits are the routes' measurements and circuit states of the route
	// statistics; nil shows none (every circuit closed, no sample).
	Stats    RouteStats
	Circuits Circuits
	// Audit is the call log (*audit.Recorder); nil answers 503 to its endpoints.
	Audit AuditLog
	// Strategy is routing.strategy ("" is config.DefaultStrategy), the default layer of a
	// key's effective settings.
	Strategy string
	// DropConnection forgets the deployment of a revoked BYOK connection and closes its idle
	// upstream connections.
	DropConnection func(connID string)
	// NotFound answers a path the admin API does not serve (the gateway's 404).
	NotFound http.Handler
	// Logf logs operational events; nil discards.
	Logf func(format string, args ...any)
}

// api is the admin API of one configuration snapshot.
type api struct {
	Options
	hash [sha256.Size]byte
	on   bool
	mux  *http.ServeMux
}

// New returns the handler of /admin/: 404 (NotFound) for every path when Token is empty; else a
// request without the admin token (an API key included) is 401 authentication, and the others
// go to the admin API's mux with their body capped at MaxBody.
func New(o Options) http.Handler {
	a := &api{Options: o}
	if a.Logf == nil {
		a.Logf = func(string, ...any) {}
	}
	if a.Routable == nil {
		a.Routable = configRoutable{}
	}
	if a.Box == nil {
		a.Box = (*secret.Box)(nil) // the clear: sealed values do not open
	}
	if o.Token != "" {
		a.on, a.hash = true, sha256.Sum256([]byte(o.Token))
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /admin/v1/accounts", a.listAccounts)
	mux.HandleFunc("GET /admin/v1/workspaces", a.listWorkspaces)
	mux.HandleFunc("GET /admin/v1/keys", a.listKeys)
	mux.HandleFunc("GET /admin/v1/policies", a.listPolicies)
	mux.HandleFunc("GET /admin/v1/connections", a.listConnections)
	mux.HandleFunc("GET /admin/v1/stats/models", a.statsModels)
	mux.HandleFunc("GET /admin/v1/stats/deployments", a.statsDeployments)
	mux.HandleFunc("GET /admin/v1/requests", a.listRequests)
	mux.HandleFunc("GET /admin/v1/requests/{id}", a.getRequest)
	mux.HandleFunc("GET /admin/v1/overview", a.overview)
	mux.HandleFunc("POST /admin/v1/accounts", a.createAccount)
	mux.HandleFunc("GET /admin/v1/accounts/{id}", a.getAccount)
	mux.HandleFunc("PATCH /admin/v1/accounts/{id}", a.patchAccount)
	mux.HandleFunc("POST /admin/v1/accounts/{id}/credits", a.credit)
	mux.HandleFunc("GET /admin/v1/accounts/{id}/ledger", a.ledger)
	mux.HandleFunc("POST /admin/v1/workspaces", a.createWorkspace)
	mux.HandleFunc("GET /admin/v1/workspaces/{id}", a.getWorkspace)
	mux.HandleFunc("PATCH /admin/v1/workspaces/{id}", a.patchWorkspace)
	mux.HandleFunc("POST /admin/v1/keys", a.createKey)
	mux.HandleFunc("GET /admin/v1/keys/{id}", a.getKey)
	mux.HandleFunc("PATCH /admin/v1/keys/{id}", a.patchKey)
	mux.HandleFunc("DELETE /admin/v1/keys/{id}", a.revokeKey)
	mux.HandleFunc("GET /admin/v1/keys/{id}/effective", a.effective)
	mux.HandleFunc("POST /admin/v1/policies", a.createPolicy)
	mux.HandleFunc("GET /admin/v1/policies/{id}", a.getPolicy)
	mux.HandleFunc("DELETE /admin/v1/policies/{id}", a.deletePolicy)
	mux.HandleFunc("PATCH /admin/v1/policies/{id}", a.patchPolicy)
	mux.HandleFunc("GET /admin/v1/accounts/{id}/policies", a.accountPolicies)
	mux.HandleFunc("POST /admin/v1/keys/{id}/connections", a.createConnection)
	mux.HandleFunc("GET /admin/v1/keys/{id}/connections", a.keyConnections)
	mux.HandleFunc("DELETE /admin/v1/keys/{id}/connections/{conn}", a.revokeConnection)
	mux.HandleFunc("GET /admin/v1/deployments", a.deployments)
	mux.HandleFunc("GET /admin/v1/deployments/{name}", a.getDeployment)
	mux.HandleFunc("PATCH /admin/v1/deployments/{name}", a.patchRoutable)
	mux.HandleFunc("PATCH /admin/v1/deployments/{name}/routes/{model...}", a.patchRoutable)
	mux.Handle("/", o.NotFound)
	a.mux = mux
	return a
}

// ServeHTTP authenticates the request and serves it.
func (a *api) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !a.on {
		a.NotFound.ServeHTTP(w, r)
		return
	}
	if !a.authorized(r) {
		writeError(w, http.StatusUnauthorized, &failure.Error{Class: failure.Authentication,
			Msg: "the admin API requires Authorization: Bearer ADMIN_TOKEN (admin.token); API keys are not accepted"})
		return
	}
	if a.Store == nil {
		writeError(w, http.StatusServiceUnavailable, &failure.Error{Class: failure.GatewayError, Msg: "the admin API has no store"})
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, MaxBody)
	a.mux.ServeHTTP(w, r)
}

// authorized compares the bearer token with admin.token in constant time (of their SHA-256,
// so the length leaks nothing either).
func (a *api) authorized(r *http.Request) bool {
	h := r.Header.Get("Authorization")
	if len(h) <= 7 || !strings.EqualFold(h[:7], "bearer ") {
		return false
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(h[7:])))
	return subtle.ConstantTimeCompare(sum[:], a.hash[:]) == 1
}

func storeCtx(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), storeTimeout)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeError(w, http.StatusInternalServerError, &failure.Error{Class: failure.UpstreamError, Msg: "internal error"})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// flushLedger writes the settles queued so far, so that a balance or ledger read right after a
// request sees it; on failure the answer is what is stored.
func (a *api) flushLedger(ctx context.Context) {
	if a.Ledger == nil {
		return
	}
	fctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := a.Ledger.Flush(fctx); err != nil {
		a.Logf("admin: ledger flush: %v", err)
	}
}
