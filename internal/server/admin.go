package server

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/switchyard-gw/switchyard/internal/accounts"
	"github.com/switchyard-gw/switchyard/internal/admission"
	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/config"
	"github.com/switchyard-gw/switchyard/internal/failure"
	"github.com/switchyard-gw/switchyard/internal/layers"
	"github.com/switchyard-gw/switchyard/internal/relay"
	"github.com/switchyard-gw/switchyard/internal/secret"
)

// adminMaxBody caps an admin request body.
const adminMaxBody = 1 << 20

// storeTimeout bounds the store work of one admin request, and the initial load.
const storeTimeout = 10 * time.Second

// initAccounts sets up the admin token and, with a store of accounts, the key cache (loaded
// now) and the ledger writer; with a store but no admin.token it logs one line saying the
// admin API is off.
func (s *Server) initAccounts(cfg *config.Config, o Options, prev *Server) error {
	if cfg.Admin.Token != "" {
		s.adminOn, s.adminHash = true, sha256.Sum256([]byte(cfg.Admin.Token))
	}
	if o.Accounts == nil {
		return nil
	}
	if prev != nil { // a reload: the same store, cache and ledger writer; the key from cfg
		s.accts, s.ledger, s.cache = prev.accts, prev.ledger, prev.cache
		s.replica, s.reconciler = prev.replica, prev.reconciler
		box, err := secret.New(cfg.Store.SecretKey)
		s.box = box
		return err
	}
	if !s.adminOn {
		// a store of accounts is useless without the admin API that fills it: say why it is off
		s.logf("admin API off: admin.token is empty; /admin/v1/ answers 404")
	}
	s.accts = o.Accounts
	box, err := secret.New(cfg.Store.SecretKey)
	if err != nil {
		return err
	}
	s.box = box
	s.replica = accounts.NewID("rep")
	s.ledger = accounts.NewWriter(o.Accounts, accounts.WriterOptions{Logf: s.logf, Replica: s.replica})
	if rs, ok := o.Accounts.(accounts.ReplicaStore); ok {
		s.reconciler = accounts.NewReconciler(o.Accounts, rs, s.replica, accounts.ReconcilerOptions{
			Audit: s.auditEnd, Logf: s.logf, Count: func(mark string) { s.metrics.reconciled.WithLabelValues(mark).Inc() }})
	}
	s.cache = accounts.NewCache(o.Accounts, accounts.CacheOptions{
		ReloadInterval: cfg.Store.ReloadInterval.D(), Pending: s.ledger.Pending, Logf: s.logf,
		AccountLayers: func(id string) []admission.Layer {
			if live := s.live.Load(); live != nil {
				return live.acctLayers[id]
			}
			return s.acctLayers[id] // the first load, in New, before the snapshot is published
		},
		OnChange: s.onChange,
		Balances: s.syncBalance})
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := s.reloadRoutable(ctx); err != nil {
		return err
	}
	return s.cache.Reload(ctx)
}

// syncBalance hands a reloaded prepaid balance to an in-memory admission store, so that a
// replica without a shared store sees credits made through another within one reload; the
// Redis store keeps the one balance every replica charges and needs none.
func (s *Server) syncBalance(accountID string, balanceMicroUSD int64) {
	if m, ok := s.admit.(*admission.Memory); ok {
		m.SyncBalance(accountID, balanceMicroUSD)
	}
}

// ReloadKeys reloads the stored keys and accounts from the store now, as Run does every
// store.reload_interval (default 5 s): keys created or revoked through another replica take
// effect here. Without a store of accounts it does nothing. It returns the store's error.
func (s *Server) ReloadKeys(ctx context.Context) error {
	if s.cache == nil {
		return nil
	}
	return s.cache.Reload(ctx)
}

// adminHandler serves /admin/: 404 for every path when admin.token is unset; else a request
// without the admin token (an API key included) is 401 authentication, and the others go to
// the admin API's mux.
func (s *Server) adminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /admin/v1/accounts", s.adminCreateAccount)
	mux.HandleFunc("GET /admin/v1/accounts/{id}", s.adminGetAccount)
	mux.HandleFunc("PATCH /admin/v1/accounts/{id}", s.adminPatchAccount)
	mux.HandleFunc("POST /admin/v1/accounts/{id}/credits", s.adminCredit)
	mux.HandleFunc("GET /admin/v1/accounts/{id}/ledger", s.adminLedger)
	mux.HandleFunc("POST /admin/v1/workspaces", s.adminCreateWorkspace)
	mux.HandleFunc("GET /admin/v1/workspaces/{id}", s.adminGetWorkspace)
	mux.HandleFunc("PATCH /admin/v1/workspaces/{id}", s.adminPatchWorkspace)
	mux.HandleFunc("POST /admin/v1/keys", s.adminCreateKey)
	mux.HandleFunc("GET /admin/v1/keys/{id}", s.adminGetKey)
	mux.HandleFunc("PATCH /admin/v1/keys/{id}", s.adminPatchKey)
	mux.HandleFunc("DELETE /admin/v1/keys/{id}", s.adminRevokeKey)
	mux.HandleFunc("GET /admin/v1/keys/{id}/effective", s.adminEffective)
	mux.HandleFunc("POST /admin/v1/policies", s.adminCreatePolicy)
	mux.HandleFunc("GET /admin/v1/policies/{id}", s.adminGetPolicy)
	mux.HandleFunc("DELETE /admin/v1/policies/{id}", s.adminDeletePolicy)
	mux.HandleFunc("PATCH /admin/v1/policies/{id}", s.adminPatchPolicy)
	mux.HandleFunc("GET /admin/v1/accounts/{id}/policies", s.adminAccountPolicies)
	mux.HandleFunc("POST /admin/v1/keys/{id}/connections", s.adminCreateConnection)
	mux.HandleFunc("GET /admin/v1/keys/{id}/connections", s.adminConnections)
	mux.HandleFunc("DELETE /admin/v1/keys/{id}/connections/{conn}", s.adminRevokeConnection)
	mux.HandleFunc("GET /admin/v1/deployments", s.adminDeployments)
	mux.HandleFunc("GET /admin/v1/deployments/{name}", s.adminGetDeployment)
	mux.HandleFunc("PATCH /admin/v1/deployments/{name}", s.adminPatchRoutable)
	mux.HandleFunc("PATCH /admin/v1/deployments/{name}/routes/{model...}", s.adminPatchRoutable)
	mux.HandleFunc("/", s.serveNotFound)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.adminOn {
			s.serveNotFound(w, r)
			return
		}
		if !s.adminAuthorized(r) {
			adminError(w, http.StatusUnauthorized, &failure.Error{Class: failure.Authentication,
				Msg: "the admin API requires Authorization: Bearer ADMIN_TOKEN (admin.token); API keys are not accepted"})
			return
		}
		if s.accts == nil {
			adminError(w, http.StatusServiceUnavailable, &failure.Error{Class: failure.GatewayError, Msg: "the admin API has no store"})
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, adminMaxBody)
		mux.ServeHTTP(w, r)
	})
}

// adminAuthorized compares the bearer token with admin.token in constant time (of their
// SHA-256, so the length leaks nothing either).
func (s *Server) adminAuthorized(r *http.Request) bool {
	a := r.Header.Get("Authorization")
	if len(a) <= 7 || !strings.EqualFold(a[:7], "bearer ") {
		return false
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(a[7:])))
	return subtle.ConstantTimeCompare(sum[:], s.adminHash[:]) == 1
}

// adminError writes fe with status in the OpenAI error shape.
func adminError(w http.ResponseWriter, status int, fe *failure.Error) {
	adminErrorConflicts(w, status, fe, nil)
}

// adminErrorConflicts is adminError with, when conflicts is not empty, a top-level
// "conflicts" member after "request_id" (R-KEY-3: the layers a settings change would leave
// with no candidate); the OpenAI shape of "error" is unchanged.
func adminErrorConflicts(w http.ResponseWriter, status int, fe *failure.Error, conflicts []conflictJSON) {
	b := relay.CodecFor(catalog.OpenAI).AppendErrorBody(nil, fe, requestID(w))
	if len(conflicts) > 0 {
		if cs, err := json.Marshal(conflicts); err == nil && len(b) > 0 && b[len(b)-1] == '}' {
			b = append(append(append(b[:len(b)-1], `,"conflicts":`...), cs...), '}')
		}
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Switchyard-Error-Code", string(fe.Class))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func badRequest(w http.ResponseWriter, param, format string, args ...any) {
	adminError(w, http.StatusBadRequest, &failure.Error{Class: failure.InvalidRequest, Param: param, Msg: fmt.Sprintf(format, args...)})
}

// storeError answers a store error: 404 for accounts.ErrNotFound (notFound says what), 409 for
// accounts.ErrExists and accounts.ErrBalanceLimit (a credit above the balance cap), else 503
// (the error is logged, not shown).
func (s *Server) storeError(w http.ResponseWriter, err error, notFound string) {
	switch {
	case errors.Is(err, accounts.ErrNotFound):
		adminError(w, http.StatusNotFound, &failure.Error{Class: failure.InvalidRequest, Msg: notFound})
	case errors.Is(err, accounts.ErrExists):
		adminError(w, http.StatusConflict, &failure.Error{Class: failure.InvalidRequest, Msg: "the id is already taken"})
	case errors.Is(err, accounts.ErrBalanceLimit):
		adminError(w, http.StatusConflict, &failure.Error{Class: failure.InvalidRequest, Param: "amount_usd",
			Msg: "the credit would take the balance above the limit of 1000000000000 USD (1e12); nothing was credited"})
	default:
		s.logf("admin: store: %v", err)
		adminError(w, http.StatusServiceUnavailable, &failure.Error{Class: failure.GatewayError, Msg: "the store did not answer"})
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		adminError(w, http.StatusInternalServerError, &failure.Error{Class: failure.UpstreamError, Msg: "internal error"})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// decodeBody reads a JSON object into dst, refusing members not in allowed (all named in the
// 400, sorted) and members in required that are absent. It answers the error itself and
// reports false then.
func decodeBody(w http.ResponseWriter, r *http.Request, dst any, allowed []string, required ...string) bool {
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(r.Body)
	if err := dec.Decode(&raw); err != nil || raw == nil || dec.More() {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			adminError(w, http.StatusRequestEntityTooLarge, &failure.Error{Class: failure.RequestTooLarge, Msg: "the body is larger than 1 MiB"})
			return false
		}
		badRequest(w, "", "the body must be one JSON object")
		return false
	}
	var unknown []string
	for k := range raw {
		if !slices.Contains(allowed, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		badRequest(w, unknown[0], "unknown fields: %s (allowed: %s)", strings.Join(unknown, ", "), strings.Join(allowed, ", "))
		return false
	}
	for _, k := range required {
		if v, ok := raw[k]; !ok || string(v) == "null" {
			badRequest(w, k, "%s is required", k)
			return false
		}
	}
	b, _ := json.Marshal(raw)
	if err := json.Unmarshal(b, dst); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			got, _, _ := strings.Cut(te.Value, " ") // "number -5": the kind only
			if got == "bool" {
				got = "boolean"
			}
			badRequest(w, te.Field, "%s has the wrong type: want %s, not %s", te.Field, jsonTypeName(te.Type), got)
			return false
		}
		badRequest(w, "", "the body is not valid: %v", err)
		return false
	}
	return true
}

// jsonTypeName names the JSON type that decodes into t, for a 400: string, boolean, integer,
// number, object, array of strings (of integers, of objects...), array; "a JSON value" for
// anything else.
func jsonTypeName(t reflect.Type) string {
	if t == nil {
		return "a JSON value"
	}
	switch t.Kind() {
	case reflect.Pointer:
		return jsonTypeName(t.Elem())
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice, reflect.Array:
		switch e := jsonTypeName(t.Elem()); {
		case e == "a JSON value":
			return "array"
		case strings.HasPrefix(e, "array"):
			return "array of arrays" + strings.TrimPrefix(e, "array")
		default:
			return "array of " + e + "s"
		}
	case reflect.Map, reflect.Struct:
		return "object"
	}
	return "a JSON value"
}

// maxNameBytes bounds the name of an account, workspace, key or policy.
const maxNameBytes = 256

// checkName validates a name given to an account, workspace, key or policy: at most
// maxNameBytes bytes and no control characters (C0, DEL, C1). It returns the 400's message, or
// "" when the name is acceptable.
func checkName(name string) string {
	if len(name) > maxNameBytes {
		return fmt.Sprintf("name is %d bytes long; at most %d", len(name), maxNameBytes)
	}
	if strings.ContainsFunc(name, unicode.IsControl) {
		return "name must not contain control characters (newlines, tabs, NUL...)"
	}
	return ""
}

func adminCtx(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), storeTimeout)
}

// flushLedger writes the settles queued so far, so that a balance or ledger read right after a
// request sees it; on failure the answer is what is stored.
func (s *Server) flushLedger(ctx context.Context) {
	fctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := s.ledger.Flush(fctx); err != nil {
		s.logf("admin: ledger flush: %v", err)
	}
}

// usdNumber formats micro-USD as an exact JSON number of USD ("4.999766", "-0.5", "12").
func usdNumber(micro int64) json.Number {
	sign := ""
	u := uint64(micro)
	if micro < 0 {
		sign, u = "-", uint64(-micro)
	}
	s := fmt.Sprintf("%s%d.%06d", sign, u/1e6, u%1e6)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return json.Number(s)
}

// maxCreditUSD bounds one credit: amount_usd must be below it (the store caps the balance at
// 1e12 USD too, accounts.ErrBalanceLimit).
const maxCreditUSD = 1e12

// parseUSD reads a positive USD amount below maxCreditUSD with at most 6 significant decimals
// into exact micro-USD, without going through a float. Zeros after the 6th decimal are
// accepted (1.0000000 is 1); a non-zero digit there (0.0000001) is refused.
func parseUSD(s string) (int64, error) {
	if s == "" || s[0] < '0' || s[0] > '9' || strings.ContainsAny(s, "eE") {
		return 0, errors.New("amount_usd must be a positive decimal number such as 10 or 2.50")
	}
	whole, frac, _ := strings.Cut(s, ".")
	if len(frac) > 6 {
		if strings.TrimRight(frac[6:], "0") != "" {
			return 0, errors.New("amount_usd has at most 6 decimals (micro-USD)")
		}
		frac = frac[:6]
	}
	frac += strings.Repeat("0", 6-len(frac))
	w, err1 := strconv.ParseInt(whole, 10, 64)
	f, err2 := strconv.ParseInt(frac, 10, 64)
	if err1 != nil || err2 != nil || w >= maxCreditUSD {
		return 0, errors.New("amount_usd must be a positive decimal number below 1e12 (1000000000000)")
	}
	if v := w*1e6 + f; v > 0 {
		return v, nil
	}
	return 0, errors.New("amount_usd must be positive")
}

func timeOrNil(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

func accountJSON(a *accounts.Account) map[string]any {
	return map[string]any{"id": a.ID, "name": a.Name, "settings": a.Settings, "billing": a.Billing,
		"balance_usd": usdNumber(a.BalanceMicroUSD), "created_at": a.CreatedAt}
}

func workspaceJSON(ws *accounts.Workspace) map[string]any {
	return map[string]any{"id": ws.ID, "account_id": ws.AccountID, "name": ws.Name, "settings": ws.Settings, "created_at": ws.CreatedAt}
}

// keyJSON never carries the secret: only its display prefix.
func keyJSON(k *accounts.Key) map[string]any {
	var ws any
	if k.WorkspaceID != "" {
		ws = k.WorkspaceID
	}
	return map[string]any{"id": k.ID, "account_id": k.AccountID, "workspace_id": ws, "name": k.Name,
		"prefix": k.Prefix, "settings": k.Settings, "revoked_at": timeOrNil(k.RevokedAt), "created_at": k.CreatedAt}
}

type createBody struct {
	AccountID   string          `json:"account_id"`
	WorkspaceID string          `json:"workspace_id"`
	Name        string          `json:"name"`
	Settings    json.RawMessage `json:"settings"`
}

func (s *Server) adminCreateAccount(w http.ResponseWriter, r *http.Request) {
	var b createBody
	if !decodeBody(w, r, &b, []string{"name", "settings"}, "name") {
		return
	}
	if msg := checkName(b.Name); msg != "" {
		badRequest(w, "name", "%s", msg)
		return
	}
	id := accounts.NewID("acct")
	patch, err := parsePatch(b.Settings)
	var settings json.RawMessage
	if err == nil {
		// a new account has no policy yet: settings.policy naming one is refused
		err = s.checkPolicyRef(r.Context(), id, patch)
	}
	if err == nil {
		settings, err = propose(layers.Tree{Account: layers.Node{ID: id}}, layers.Account, id, patch, true)
	}
	if err != nil {
		s.answerSettings(w, err, "")
		return
	}
	billing, err := accounts.SettingsBilling(settings)
	if err != nil {
		badRequest(w, "settings.billing", "%v", err)
		return
	}
	a := &accounts.Account{ID: id, Name: b.Name, Settings: settings, Billing: billing, CreatedAt: time.Now().UTC()}
	ctx, cancel := adminCtx(r)
	defer cancel()
	if err := s.accts.CreateAccount(ctx, a); err != nil {
		s.storeError(w, err, "")
		return
	}
	s.cache.PutAccount(a)
	writeJSON(w, http.StatusCreated, accountJSON(a))
}

func (s *Server) adminGetAccount(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := adminCtx(r)
	defer cancel()
	s.flushLedger(ctx)
	a, err := s.accts.Account(ctx, r.PathValue("id"))
	if err != nil {
		s.storeError(w, err, "no account with that id")
		return
	}
	writeJSON(w, http.StatusOK, accountJSON(a))
}

type patchBody struct {
	Name     *string         `json:"name"`
	Settings json.RawMessage `json:"settings"`
}

// adminPatchAccount merges the body into the account (contract.md: a settings field present
// replaces it, absent is unchanged, null clears it) after checking the account's whole tree
// (R-KEY-3): a change that would leave a workspace or key with no candidate is 409.
func (s *Server) adminPatchAccount(w http.ResponseWriter, r *http.Request) {
	var b patchBody
	if !decodeBody(w, r, &b, []string{"name", "settings"}) || !b.checkName(w) {
		return
	}
	id := r.PathValue("id")
	ctx, cancel := adminCtx(r)
	defer cancel()
	defer lockAccount(id).unlock() // R-KEY-3: held from the check to the save
	settings, err := s.proposePatch(ctx, b.Settings, func() (layers.Tree, error) {
		t, _, err := s.accountTree(ctx, id)
		return t, err
	}, layers.Account, id)
	if err != nil {
		s.answerSettings(w, err, "no account with that id")
		return
	}
	a, err := s.accts.UpdateAccount(ctx, id, func(a *accounts.Account) error {
		b.apply(&a.Name, &a.Settings, settings)
		billing, err := accounts.SettingsBilling(a.Settings)
		if err != nil {
			return errBadPatch{err}
		}
		a.Billing = billing
		return nil
	})
	if s.patchFailed(w, err, "no account with that id") {
		return
	}
	s.cache.PutAccount(a)
	writeJSON(w, http.StatusOK, accountJSON(a))
}

// checkName answers a 400 naming `name` and reports false when the body renames to a name
// checkName refuses.
func (b *patchBody) checkName(w http.ResponseWriter) bool {
	if b.Name == nil {
		return true
	}
	if msg := checkName(*b.Name); msg != "" {
		badRequest(w, "name", "%s", msg)
		return false
	}
	return true
}

// apply sets the name and, when settings is not nil, the settings.
func (b *patchBody) apply(name *string, dst *json.RawMessage, settings json.RawMessage) {
	if b.Name != nil {
		*name = *b.Name
	}
	if settings != nil {
		*dst = settings
	}
}

// proposePatch checks a PATCH body's settings against the tree tree reads and returns the
// node's new settings in canonical JSON; nil when the body changes no settings.
func (s *Server) proposePatch(ctx context.Context, raw json.RawMessage, tree func() (layers.Tree, error), n layers.Name, id string) (json.RawMessage, error) {
	patch, err := parsePatch(raw)
	if err != nil || patch == nil {
		return nil, err
	}
	t, err := tree()
	if err != nil {
		return nil, err
	}
	if err := s.checkPolicyRef(ctx, t.Account.ID, patch); err != nil {
		return nil, err
	}
	return propose(t, n, id, patch, false)
}

// errBadPatch marks an update refused for its body (400), not by the store.
type errBadPatch struct{ error }

func (s *Server) patchFailed(w http.ResponseWriter, err error, notFound string) bool {
	var bad errBadPatch
	switch {
	case err == nil:
		return false
	case errors.As(err, &bad):
		badRequest(w, "settings", "%v", bad.error)
	default:
		s.storeError(w, err, notFound)
	}
	return true
}

func (s *Server) adminCreateWorkspace(w http.ResponseWriter, r *http.Request) {
	var b createBody
	if !decodeBody(w, r, &b, []string{"account_id", "name", "settings"}, "account_id", "name") {
		return
	}
	if msg := checkName(b.Name); msg != "" {
		badRequest(w, "name", "%s", msg)
		return
	}
	id := accounts.NewID("ws")
	ctx, cancel := adminCtx(r)
	defer cancel()
	defer lockAccount(b.AccountID).unlock() // R-KEY-3: held from the check to the save
	patch, err := parsePatch(b.Settings)
	var settings json.RawMessage
	if err == nil {
		settings, err = s.proposeCreate(ctx, b.AccountID, layers.Workspace, id, "", patch)
	}
	if err != nil {
		s.answerSettings(w, err, "no account with that account_id")
		return
	}
	ws := &accounts.Workspace{ID: id, AccountID: b.AccountID, Name: b.Name, Settings: settings, CreatedAt: time.Now().UTC()}
	if err := s.accts.CreateWorkspace(ctx, ws); err != nil {
		s.storeError(w, err, "no account with that account_id")
		return
	}
	s.cache.PutWorkspace(ws)
	writeJSON(w, http.StatusCreated, workspaceJSON(ws))
}

func (s *Server) adminGetWorkspace(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := adminCtx(r)
	defer cancel()
	ws, err := s.accts.Workspace(ctx, r.PathValue("id"))
	if err != nil {
		s.storeError(w, err, "no workspace with that id")
		return
	}
	writeJSON(w, http.StatusOK, workspaceJSON(ws))
}

func (s *Server) adminPatchWorkspace(w http.ResponseWriter, r *http.Request) {
	var b patchBody
	if !decodeBody(w, r, &b, []string{"name", "settings"}) || !b.checkName(w) {
		return
	}
	id := r.PathValue("id")
	ctx, cancel := adminCtx(r)
	defer cancel()
	var held accountLock // R-KEY-3: held from the check to the save
	defer held.unlock()
	settings, err := s.proposePatch(ctx, b.Settings, func() (layers.Tree, error) {
		ws, err := s.lockedWorkspace(ctx, &held, id)
		if err != nil {
			return layers.Tree{}, err
		}
		t, _, err := s.accountTree(ctx, ws.AccountID) // lists every workspace, this one included
		return t, err
	}, layers.Workspace, id)
	if err != nil {
		s.answerSettings(w, err, "no workspace with that id")
		return
	}
	ws, err := s.accts.UpdateWorkspace(ctx, id, func(ws *accounts.Workspace) error {
		b.apply(&ws.Name, &ws.Settings, settings)
		return nil
	})
	if s.patchFailed(w, err, "no workspace with that id") {
		return
	}
	s.cache.PutWorkspace(ws)
	writeJSON(w, http.StatusOK, workspaceJSON(ws))
}

// adminCreateKey mints a key: the secret is in this answer only; the store keeps its SHA-256.
func (s *Server) adminCreateKey(w http.ResponseWriter, r *http.Request) {
	var b createBody
	if !decodeBody(w, r, &b, []string{"account_id", "workspace_id", "name", "settings"}, "account_id", "name") {
		return
	}
	if msg := checkName(b.Name); msg != "" {
		badRequest(w, "name", "%s", msg)
		return
	}
	id := accounts.NewID("key")
	ctx, cancel := adminCtx(r)
	defer cancel()
	defer lockAccount(b.AccountID).unlock() // R-KEY-3: held from the check to the save
	patch, err := parsePatch(b.Settings)
	var settings json.RawMessage
	if err == nil && b.WorkspaceID != "" {
		// the workspace must exist and belong to the account (the store checks it again)
		var ws *accounts.Workspace
		if ws, err = s.accts.Workspace(ctx, b.WorkspaceID); err == nil && ws.AccountID != b.AccountID {
			err = accounts.ErrNotFound
		}
		if err == nil {
			s.cache.PutWorkspace(ws)
		}
	}
	if err == nil {
		settings, err = s.proposeCreate(ctx, b.AccountID, layers.Key, id, b.WorkspaceID, patch)
	}
	if err != nil {
		s.answerSettings(w, err, "no account with that account_id, or no workspace with that workspace_id in it")
		return
	}
	secret, prefix, hash := accounts.NewSecret()
	k := &accounts.Key{ID: id, AccountID: b.AccountID, WorkspaceID: b.WorkspaceID, Name: b.Name,
		Prefix: prefix, SecretHash: hash, Settings: settings, CreatedAt: time.Now().UTC()}
	if err := s.accts.CreateKey(ctx, k); err != nil {
		s.storeError(w, err, "no account with that account_id, or no workspace with that workspace_id in it")
		return
	}
	s.cache.PutKey(k)
	out := keyJSON(k)
	out["secret"] = secret
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, out)
}

func (s *Server) adminGetKey(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := adminCtx(r)
	defer cancel()
	k, err := s.accts.Key(ctx, r.PathValue("id"))
	if err != nil {
		s.storeError(w, err, "no key with that id")
		return
	}
	writeJSON(w, http.StatusOK, keyJSON(k))
}

func (s *Server) adminPatchKey(w http.ResponseWriter, r *http.Request) {
	var b patchBody
	if !decodeBody(w, r, &b, []string{"name", "settings"}) || !b.checkName(w) {
		return
	}
	id := r.PathValue("id")
	ctx, cancel := adminCtx(r)
	defer cancel()
	var held accountLock // R-KEY-3: held from the check to the save
	defer held.unlock()
	settings, err := s.proposePatch(ctx, b.Settings, func() (layers.Tree, error) {
		k, err := s.lockedKey(ctx, &held, id)
		if err != nil {
			return layers.Tree{}, err
		}
		t, _, err := s.accountTree(ctx, k.AccountID)
		if err == nil && !k.RevokedAt.IsZero() { // not among the active keys: checked all the same
			st, serr := storedSettings(layers.Key, id, k.Settings)
			addKey(&t, k.WorkspaceID, layers.Node{ID: id, Settings: st})
			err = serr
		}
		return t, err
	}, layers.Key, id)
	if err != nil {
		s.answerSettings(w, err, "no key with that id")
		return
	}
	k, err := s.accts.UpdateKey(ctx, id, func(k *accounts.Key) error {
		b.apply(&k.Name, &k.Settings, settings)
		return nil
	})
	if s.patchFailed(w, err, "no key with that id") {
		return
	}
	s.cache.PutKey(k) // a revoked key stays out
	writeJSON(w, http.StatusOK, keyJSON(k))
}

// adminRevokeKey evicts the key from this process's cache first, so that it stops working
// before the answer whatever the store does, then records the revocation in the store (other
// replicas drop it at their next reload).
func (s *Server) adminRevokeKey(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	s.cache.Evict(id)
	ctx, cancel := adminCtx(r)
	defer cancel()
	now := time.Now().UTC()
	_, err := s.accts.UpdateKey(ctx, id, func(k *accounts.Key) error {
		if k.RevokedAt.IsZero() {
			k.RevokedAt = now
		}
		return nil
	})
	if err != nil {
		s.storeError(w, err, "no key with that id")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// adminCredit adds to an account's balance: a credit entry and the balance change in one
// store transaction, written before the answer (synchronous, unlike settles).
func (s *Server) adminCredit(w http.ResponseWriter, r *http.Request) {
	var b struct {
		AmountUSD json.RawMessage `json:"amount_usd"`
	}
	if !decodeBody(w, r, &b, []string{"amount_usd"}, "amount_usd") {
		return
	}
	micro, err := parseUSD(string(b.AmountUSD))
	if err != nil {
		badRequest(w, "amount_usd", "%v", err)
		return
	}
	id := r.PathValue("id")
	ctx, cancel := adminCtx(r)
	defer cancel()
	s.flushLedger(ctx)
	balance, err := s.accts.Credit(ctx, &accounts.LedgerEntry{At: time.Now().UTC(), AccountID: id, Kind: accounts.KindCredit, AmountMicroUSD: micro})
	if err != nil {
		s.storeError(w, err, "no account with that id")
		return
	}
	s.cache.SetStoredBalance(id, balance) // absolute: the change feed's refresh of it does not count it twice
	if err := s.admit.Credit(ctx, id, micro); err != nil {
		// The credit is stored; the shared balance misses it until it is reseeded.
		s.logf("admission store: crediting account %s: %v", id, err)
	}
	writeJSON(w, http.StatusOK, map[string]any{"balance_usd": usdNumber(balance)})
}

type ledgerTokens struct {
	Input      int64 `json:"input"`
	Cached     int64 `json:"cached"`
	CacheWrite int64 `json:"cache_write"`
	Output     int64 `json:"output"`
	Reasoning  int64 `json:"reasoning"`
}

type ledgerEntryJSON struct {
	RequestID  string        `json:"request_id"`
	KeyID      string        `json:"key_id"`
	Model      string        `json:"model"`
	Deployment string        `json:"deployment"`
	Tokens     ledgerTokens  `json:"tokens"`
	CostUSD    json.Number   `json:"cost_usd"`
	CostMicro  int64         `json:"cost_micro_usd"`
	Kind       accounts.Kind `json:"kind"`
	// Mark is upstream-truncated or client-cancelled for a settle whose response did not
	// complete (R-BILL-2); Usage is a settle's usage provenance, observed or estimated. Both
	// are omitted when empty.
	Mark  string    `json:"mark,omitempty"`
	Usage string    `json:"usage,omitempty"`
	At    time.Time `json:"at"`
}

// adminLedger answers the account's ledger, newest first: ?limit= entries (default 1000, at
// most 10000).
func (s *Server) adminLedger(w http.ResponseWriter, r *http.Request) {
	limit := 1000
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 || n > 10000 {
			badRequest(w, "limit", "limit must be 1..10000")
			return
		}
		limit = n
	}
	id := r.PathValue("id")
	ctx, cancel := adminCtx(r)
	defer cancel()
	s.flushLedger(ctx)
	// An account that is not stored (a static key's, from the configuration) has a ledger but
	// no balance: balance_usd is null.
	var balance any
	a, err := s.accts.Account(ctx, id)
	if err == nil {
		balance = usdNumber(a.BalanceMicroUSD)
	} else if !errors.Is(err, accounts.ErrNotFound) {
		s.storeError(w, err, "")
		return
	}
	es, err := s.accts.Ledger(ctx, id, limit)
	if err == nil && a == nil && len(es) == 0 {
		err = accounts.ErrNotFound
	}
	if err != nil {
		s.storeError(w, err, "no account with that id")
		return
	}
	out := make([]ledgerEntryJSON, len(es))
	for i := range es {
		e := &es[i]
		t := e.Tokens
		out[i] = ledgerEntryJSON{RequestID: e.RequestID, KeyID: e.KeyID, Model: e.Model, Deployment: e.Deployment,
			Tokens:  ledgerTokens{t.Input, t.Cached, t.CacheWrite, t.Output, t.Reasoning},
			CostUSD: usdNumber(e.AmountMicroUSD), CostMicro: e.AmountMicroUSD, Kind: e.Kind, Mark: e.Mark, Usage: e.UsageProvenance, At: e.At}
	}
	writeJSON(w, http.StatusOK, map[string]any{"balance_usd": balance, "entries": out})
}
