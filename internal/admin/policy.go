package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/switchyard-gw/switchyard/internal/accounts"
	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/failure"
	"github.com/switchyard-gw/switchyard/internal/layers"
)

// maxPolicyOrder bounds a policy's saved order, and maxConnectionModels a connection's models.
const (
	maxPolicyOrder      = 64
	maxConnectionModels = 1024
)

// policyBody is the body of POST /admin/v1/policies and, without account_id, of PATCH
// /admin/v1/policies/{id} (contract.md "Admin API"). The members are nil when absent or null.
type policyBody struct {
	AccountID    string    `json:"account_id"`
	Name         *string   `json:"name"`
	Order        *[]string `json:"order"`
	Funding      *string   `json:"funding"`
	AttemptLimit *int      `json:"attempt_limit"`
}

// policyMembers are the members of PATCH /admin/v1/policies/{id}; POST adds account_id.
var policyMembers = []string{"name", "order", "funding", "attempt_limit"}

func policyJSON(p *accounts.Policy) map[string]any {
	return map[string]any{"id": p.ID, "account_id": p.AccountID, "name": p.Name, "order": p.Order,
		"funding": p.Funding, "attempt_limit": p.AttemptLimit, "created_at": p.CreatedAt}
}

// check validates the members of f that are set (not AccountID), without the store, as POST
// and PATCH both do (R-POLICY): a non-empty name of at most maxNameBytes bytes without control
// characters (checkName), a funding rule (house, byok,
// byok_with_house_fallback), an attempt limit of 0 (none) or more, an order of at most
// maxPolicyOrder entries (its entries are checkPolicyOrder's). It returns the parameter and message of the first problem, or "" and "".
func (f *policyBody) check() (param, msg string) {
	if f.Name != nil && strings.TrimSpace(*f.Name) == "" {
		return "name", "name must not be empty"
	}
	if f.Name != nil {
		if msg := checkName(*f.Name); msg != "" {
			return "name", msg
		}
	}
	if f.Funding != nil {
		if _, err := accounts.ParseFunding(*f.Funding); err != nil {
			return "funding", err.Error()
		}
	}
	if f.AttemptLimit != nil && *f.AttemptLimit < 0 {
		return "attempt_limit", "attempt_limit must be 0 (no limit) or more"
	}
	if f.Order != nil && len(*f.Order) > maxPolicyOrder {
		return "order", fmt.Sprintf("order names at most %d deployments", maxPolicyOrder)
	}
	return "", ""
}

// apply sets the members of f that are set (not AccountID) on p; f has passed check.
func (f *policyBody) apply(p *accounts.Policy) {
	if f.Name != nil {
		p.Name = *f.Name
	}
	if f.Order != nil {
		p.Order = slices.Clone(*f.Order)
		if p.Order == nil {
			p.Order = []string{}
		}
	}
	if f.Funding != nil {
		p.Funding, _ = accounts.ParseFunding(*f.Funding)
	}
	if f.AttemptLimit != nil {
		p.AttemptLimit = *f.AttemptLimit
	}
}

// checkPolicyOrder checks f's order, when set, against the catalog and account acct's
// connections (checkOrder) and answers the 400 or the store error itself; it reports whether
// the order passed.
func (a *api) checkPolicyOrder(ctx context.Context, w http.ResponseWriter, acct string, f *policyBody) bool {
	if f.Order == nil {
		return true
	}
	param, msg, err := a.checkOrder(ctx, acct, *f.Order)
	switch {
	case err != nil:
		a.fail(w, err, "")
		return false
	case msg != "":
		badRequest(w, param, "%s", msg)
		return false
	}
	return true
}

// createPolicy serves POST /admin/v1/policies: a routing policy of an account (R-POLICY):
// its saved order (R-ORDER-7: deployment or provider names of the catalog, or "byok:<id>" of a
// connection of a key of the same account), its funding rule (house, byok,
// byok_with_house_fallback; default house) and its attempt limit (0: none). 201 with the
// policy; 400 naming the field for a bad body; 404 for an unknown account. Keys, workspaces or
// the account use it by setting settings.policy to its id.
func (a *api) createPolicy(w http.ResponseWriter, r *http.Request) {
	var b policyBody
	if !decode(w, r, &b, append([]string{"account_id"}, policyMembers...), "account_id", "name") {
		return
	}
	ctx, cancel := storeCtx(r)
	defer cancel()
	if _, err := a.Store.Account(ctx, b.AccountID); err != nil {
		a.fail(w, err, "no account with that account_id")
		return
	}
	if !a.checkPolicyOrder(ctx, w, b.AccountID, &b) {
		return
	}
	p := &accounts.Policy{ID: accounts.NewID("pol"), AccountID: b.AccountID, Order: []string{},
		Funding: accounts.FundingHouse, CreatedAt: time.Now().UTC()}
	b.apply(p)
	if err := a.Store.CreatePolicy(ctx, p); err != nil {
		a.fail(w, err, "no account with that account_id")
		return
	}
	a.Cache.PutPolicy(p)
	writeJSON(w, http.StatusCreated, policyJSON(p))
}

// patchPolicy serves PATCH /admin/v1/policies/{id}: the members present (name, order,
// funding, attempt_limit) replace the policy's, each checked as by POST (400 naming the field);
// absent or null members are kept, and a kept order is not checked again (an entry naming a
// connection revoked since matches nothing). 200 with the policy; 404 for an unknown id. This
// process routes by the new policy from its next request; other replicas from their next
// reload (store.reload_interval).
func (a *api) patchPolicy(w http.ResponseWriter, r *http.Request) {
	var f policyBody
	if !decode(w, r, &f, policyMembers) {
		return
	}
	ctx, cancel := storeCtx(r)
	defer cancel()
	cur, err := a.Store.Policy(ctx, r.PathValue("id"))
	if err != nil {
		a.fail(w, err, "no policy with that id")
		return
	}
	// The account's settings lock (a policy never changes account) orders this process's cache
	// puts of the account's policies as their writes: checkPolicyRef puts what it read under it.
	defer lockAccount(cur.AccountID).unlock()
	if !a.checkPolicyOrder(ctx, w, cur.AccountID, &f) {
		return
	}
	p, err := a.Store.UpdatePolicy(ctx, cur.ID, func(p *accounts.Policy) error {
		f.apply(p)
		return nil
	})
	if err != nil {
		a.fail(w, err, "no policy with that id")
		return
	}
	a.Cache.PutPolicy(p)
	writeJSON(w, http.StatusOK, policyJSON(p))
}

// accountPolicies serves GET /admin/v1/accounts/{id}/policies: the account's policies,
// oldest first; 404 for an unknown account.
func (a *api) accountPolicies(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := storeCtx(r)
	defer cancel()
	id := r.PathValue("id")
	if _, err := a.Store.Account(ctx, id); err != nil {
		a.fail(w, err, "no account with that id")
		return
	}
	ps, err := a.Store.AccountPolicies(ctx, id)
	if err != nil {
		a.fail(w, err, "")
		return
	}
	out := make([]map[string]any, len(ps))
	for i := range ps {
		out[i] = policyJSON(&ps[i])
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": out})
}

// checkOrder checks a saved order: every entry names a catalog deployment or provider, or a
// connection ("byok:<id>") of a key of account acct, and no entry repeats. It returns the
// parameter and message of the first bad entry ("" when all are good), or a store error.
func (a *api) checkOrder(ctx context.Context, acct string, order []string) (param, msg string, err error) {
	var conns []accounts.Connection
	for i, name := range order {
		param = fmt.Sprintf("order[%d]", i)
		if slices.Contains(order[:i], name) {
			return param, fmt.Sprintf("%q is named twice", name), nil
		}
		id, isConn := strings.CutPrefix(name, accounts.ConnectionPrefix)
		if !isConn {
			if !a.knownDeployment(name) {
				return param, fmt.Sprintf("%q is not a deployment or provider of the catalog, nor byok:<connection id>", name), nil
			}
			continue
		}
		if conns == nil {
			if conns, err = a.Store.ActiveConnections(ctx); err != nil {
				return "", "", err
			}
		}
		i := slices.IndexFunc(conns, func(c accounts.Connection) bool { return c.ID == id })
		if i < 0 {
			return param, fmt.Sprintf("%q names no active connection", name), nil
		}
		k, err := a.Store.Key(ctx, conns[i].KeyID)
		if errors.Is(err, accounts.ErrNotFound) || (err == nil && k.AccountID != acct) {
			return param, fmt.Sprintf("%q is not a connection of a key of this account", name), nil
		}
		if err != nil {
			return "", "", err
		}
	}
	return "", "", nil
}

// knownDeployment reports whether name is a deployment's name or a provider in the catalog.
func (a *api) knownDeployment(name string) bool {
	if a.Catalog.Deployment(name) != nil {
		return true
	}
	for _, d := range a.Catalog.Deployments {
		if d.Provider == name {
			return true
		}
	}
	return false
}

// getPolicy serves GET /admin/v1/policies/{id}: the policy, or 404.
func (a *api) getPolicy(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := storeCtx(r)
	defer cancel()
	p, err := a.Store.Policy(ctx, r.PathValue("id"))
	if err != nil {
		a.fail(w, err, "no policy with that id")
		return
	}
	writeJSON(w, http.StatusOK, policyJSON(p))
}

// connectionBody is the body of POST /admin/v1/keys/{id}/connections (contract.md).
type connectionBody struct {
	Provider string   `json:"provider"`
	Dialect  string   `json:"dialect"`
	BaseURL  string   `json:"base_url"`
	APIKey   string   `json:"api_key"`
	Models   []string `json:"models"`
}

// connectionJSON never carries the API key.
func connectionJSON(c *accounts.Connection) map[string]any {
	return map[string]any{"id": c.ID, "key_id": c.KeyID, "deployment": c.Deployment(), "provider": c.Provider,
		"dialect": c.Dialect, "base_url": c.BaseURL, "models": c.Models, "created_at": c.CreatedAt}
}

// createConnection serves POST /admin/v1/keys/{id}/connections: a BYOK connection of an
// active key (R-KEY-5): its provider name, dialect (openai or anthropic), base URL as the
// provider's SDK takes it (OpenAI: ending in /v1), API key, and the catalog model ids it serves
// (default: every model that has a route of the same dialect). It routes as deployment
// "byok:<id>" for requests of that key. 201 with the connection (never its API key); 400 naming
// the field; 404 for an unknown or revoked key.
func (a *api) createConnection(w http.ResponseWriter, r *http.Request) {
	var b connectionBody
	if !decode(w, r, &b, []string{"provider", "dialect", "base_url", "api_key", "models"}, "provider", "dialect", "base_url", "api_key") {
		return
	}
	if param, msg := a.checkConnection(&b); msg != "" {
		badRequest(w, param, "%s", msg)
		return
	}
	ctx, cancel := storeCtx(r)
	defer cancel()
	k, err := a.Store.Key(ctx, r.PathValue("id"))
	if err == nil && !k.RevokedAt.IsZero() {
		err = accounts.ErrNotFound
	}
	if err != nil {
		a.fail(w, err, "no active key with that id")
		return
	}
	c := &accounts.Connection{ID: accounts.NewID("conn"), KeyID: k.ID, Provider: b.Provider, Dialect: b.Dialect,
		BaseURL: b.BaseURL, APIKey: a.Box.Seal(b.APIKey), Models: b.Models, CreatedAt: time.Now().UTC()}
	if err := a.Store.CreateConnection(ctx, c); err != nil {
		a.fail(w, err, "no active key with that id")
		return
	}
	a.Cache.PutConnection(c)
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, connectionJSON(c))
}

// revokeConnection serves DELETE /admin/v1/keys/{id}/connections/{conn}: it revokes the
// key's connection (R-KEY-5) in the store, then drops it from this process's cache and closes
// its idle upstream connections, before the 204: the key's next request is planned without it
// (under funding byok with no other connection serving the model, it is refused naming
// settings.policy). Other replicas stop using it at their next reload. A policy whose order
// names it keeps working: the entry matches nothing. 404 when the key has no such active
// connection (unknown key or connection, another key's, or revoked already).
func (a *api) revokeConnection(w http.ResponseWriter, r *http.Request) {
	keyID, connID := r.PathValue("id"), r.PathValue("conn")
	ctx, cancel := storeCtx(r)
	defer cancel()
	now := time.Now().UTC()
	if err := a.Store.RevokeConnection(ctx, keyID, connID, now); err != nil {
		a.fail(w, err, "that key has no active connection with that id")
		return
	}
	a.Cache.PutConnection(&accounts.Connection{ID: connID, KeyID: keyID, RevokedAt: now})
	a.DropConnection(connID)
	w.WriteHeader(http.StatusNoContent)
}

// checkConnection validates a connection body and fills its default models; it returns the
// parameter and message of the first problem, or "" and "".
func (a *api) checkConnection(b *connectionBody) (param, msg string) {
	switch {
	case strings.TrimSpace(b.Provider) == "" || strings.ContainsAny(b.Provider, " \t\r\n"):
		return "provider", "provider must be a non-empty name without spaces, such as openai"
	case strings.HasPrefix(b.Provider, accounts.ConnectionPrefix):
		return "provider", "provider must not start with byok:"
	case b.Dialect != string(catalog.OpenAI) && b.Dialect != string(catalog.Anthropic):
		return "dialect", "dialect must be openai or anthropic"
	case b.APIKey == "" || strings.ContainsFunc(b.APIKey, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return "api_key", "api_key must be a non-empty credential without spaces or control characters"
	}
	u, err := url.Parse(b.BaseURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "base_url", "base_url must be an absolute http(s) URL without credentials, query or fragment, such as https://api.openai.com/v1"
	}
	if b.Models == nil {
		if b.Models = byokModels(a.Catalog, catalog.Dialect(b.Dialect)); len(b.Models) == 0 {
			return "models", "no catalog model has a route of dialect " + b.Dialect + "; name the models"
		}
		return "", ""
	}
	if len(b.Models) == 0 || len(b.Models) > maxConnectionModels {
		return "models", fmt.Sprintf("models must name 1 to %d catalog model ids", maxConnectionModels)
	}
	for i, id := range b.Models {
		if a.Catalog.Model(id) == nil {
			return fmt.Sprintf("models[%d]", i), fmt.Sprintf("%q is not a model id of the catalog (GET /v1/models lists them)", clip(id))
		}
		if slices.Contains(b.Models[:i], id) {
			return fmt.Sprintf("models[%d]", i), fmt.Sprintf("%q is named twice", id)
		}
	}
	return "", ""
}

// keyConnections serves GET /admin/v1/keys/{id}/connections: the key's active connections,
// without their API keys, each with usable (whether its stored credential opens with this
// gateway's store.secret_key).
func (a *api) keyConnections(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := storeCtx(r)
	defer cancel()
	id := r.PathValue("id")
	if _, err := a.Store.Key(ctx, id); err != nil {
		a.fail(w, err, "no key with that id")
		return
	}
	all, err := a.Store.ActiveConnections(ctx)
	if err != nil {
		a.fail(w, err, "")
		return
	}
	out := []map[string]any{}
	for i := range all {
		if all[i].KeyID == id {
			c := connectionJSON(&all[i])
			// usable is false for a credential sealed under another store.secret_key (or
			// sealed while none is set now): the connection serves nothing until it opens.
			_, err := a.Box.Open(all[i].APIKey)
			c["usable"] = err == nil
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b map[string]any) int {
		return a["created_at"].(time.Time).Compare(b["created_at"].(time.Time))
	})
	writeJSON(w, http.StatusOK, map[string]any{"data": out})
}

// checkPolicyRef refuses a settings patch that attaches a routing policy (settings.policy)
// which does not exist or belongs to another account than acct: 400 naming settings.policy.
// A patch without policy, or detaching it ("" or null), passes; a policy that is not a string
// is left to the layers package to refuse.
func (a *api) checkPolicyRef(ctx context.Context, acct string, patch json.RawMessage) error {
	id := gjson.GetBytes(patch, "policy")
	if id.Type != gjson.String || id.Str == "" {
		return nil
	}
	p, err := a.Store.Policy(ctx, id.Str)
	if errors.Is(err, accounts.ErrNotFound) || (err == nil && p.AccountID != acct) {
		return &errSettings{status: http.StatusBadRequest, fe: &failure.Error{Class: failure.InvalidRequest, Param: "settings.policy",
			Msg: fmt.Sprintf("settings.policy: no routing policy %q in this account", clip(id.Str))}}
	}
	if err == nil {
		a.Cache.PutPolicy(p)
	}
	return err
}

// deletePolicy serves DELETE /admin/v1/policies/{id}: 204 once the policy is gone from the
// store and this process's cache (other replicas drop it at their next reload); 404 for an
// unknown policy; 409 naming every layer of its account (the account, a workspace, an active
// key) whose settings attach it, which must detach it first (settings.policy null). The check
// and the delete hold the account's settings lock, so no attach of this process slips between.
func (a *api) deletePolicy(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := storeCtx(r)
	defer cancel()
	id := r.PathValue("id")
	p, err := a.Store.Policy(ctx, id)
	if err != nil {
		a.fail(w, err, "no policy with that id")
		return
	}
	defer lockAccount(p.AccountID).unlock()
	t, _, err := a.accountTree(ctx, p.AccountID)
	if err != nil {
		a.fail(w, err, "no policy with that id")
		return
	}
	var users []string
	attached := func(layer, lid string, st *layers.Settings) {
		if st.Policy != nil && *st.Policy == id {
			users = append(users, layer+" "+lid)
		}
	}
	attached("account", t.Account.ID, &t.Account.Settings)
	for i := range t.Workspaces {
		ws := &t.Workspaces[i]
		attached("workspace", ws.ID, &ws.Settings)
		for j := range ws.Keys {
			attached("key", ws.Keys[j].ID, &ws.Keys[j].Settings)
		}
	}
	for i := range t.Keys {
		attached("key", t.Keys[i].ID, &t.Keys[i].Settings)
	}
	if len(users) > 0 {
		writeError(w, http.StatusConflict, &failure.Error{Class: failure.InvalidRequest, Param: "settings.policy",
			Msg: "the policy is attached to " + strings.Join(users, ", ") + "; detach it first (settings.policy null)"})
		return
	}
	if err := a.Store.DeletePolicy(ctx, id); err != nil {
		a.fail(w, err, "no policy with that id")
		return
	}
	a.Cache.DeletePolicy(id)
	w.WriteHeader(http.StatusNoContent)
}

// byokModels are the catalog model ids a connection of dialect d serves by default
// (contract.md: every model that has a route of the same dialect), in catalog order.
func byokModels(cat *catalog.Catalog, d catalog.Dialect) []string {
	var ids []string
	for _, m := range cat.Models {
		for _, rt := range m.Routes {
			if rt.Deployment.Dialect == d {
				ids = append(ids, m.ID)
				break
			}
		}
	}
	return ids
}
