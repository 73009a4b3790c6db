package admin

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/switchyard-gw/switchyard/internal/accounts"
	"github.com/switchyard-gw/switchyard/internal/layers"
)

// nodeBody is the body of the POST and PATCH of an account, workspace or key (contract.md
// "Admin API"): POST takes name (required) and settings, a workspace's or key's account_id
// (required), a key's workspace_id; PATCH takes name and settings. A member absent or null is
// its zero value (no change, for a PATCH).
type nodeBody struct {
	AccountID   string          `json:"account_id"`
	WorkspaceID string          `json:"workspace_id"`
	Name        *string         `json:"name"`
	Settings    json.RawMessage `json:"settings"`
}

// check refuses a name checkName refuses.
func (b *nodeBody) check() (param, msg string) {
	if b.Name != nil {
		if msg := checkName(*b.Name); msg != "" {
			return "name", msg
		}
	}
	return "", ""
}

// apply sets the name and, when settings is not nil, the settings.
func (b *nodeBody) apply(name *string, dst *json.RawMessage, settings json.RawMessage) {
	if b.Name != nil {
		*name = *b.Name
	}
	if settings != nil {
		*dst = settings
	}
}

// patchMembers are the members of the PATCH of an account, workspace or key.
var patchMembers = []string{"name", "settings"}

// idPrefix is the id prefix of a new node of each layer.
var idPrefix = map[layers.Name]string{layers.Account: "acct", layers.Workspace: "ws", layers.Key: "key"}

// createNode serves the POST of a node of layer n (account, workspace, key), the one shape of
// the three: the body (members, required), a new id, and for a workspace or key its account's
// settings lock (R-KEY-3) from reading the account's tree until save has stored the node; the
// new node's settings are checked against that tree (400 naming the field, 409 with the
// layers left with no candidate) and handed to save in canonical JSON. save stores the node
// and returns the 201's body; notFound is the 404's message.
func (a *api) createNode(w http.ResponseWriter, r *http.Request, n layers.Name, members, required []string, notFound string,
	save func(ctx context.Context, b *nodeBody, id string, settings json.RawMessage) (any, error)) {
	var b nodeBody
	if !decode(w, r, &b, members, required...) {
		return
	}
	id := accounts.NewID(idPrefix[n])
	ctx, cancel := storeCtx(r)
	defer cancel()
	patch, err := parsePatch(b.Settings)
	var settings json.RawMessage
	if n == layers.Account {
		if err == nil {
			// a new account has no policy yet: settings.policy naming one is refused
			err = a.checkPolicyRef(ctx, id, patch)
		}
		if err == nil {
			settings, err = propose(layers.Tree{Account: layers.Node{ID: id}}, layers.Account, id, patch, true)
		}
	} else {
		defer lockAccount(b.AccountID).unlock() // R-KEY-3: held from the check to the save
		if err == nil && b.WorkspaceID != "" {
			// the workspace must exist and belong to the account (the store checks it again)
			var ws *accounts.Workspace
			if ws, err = a.Store.Workspace(ctx, b.WorkspaceID); err == nil && ws.AccountID != b.AccountID {
				err = accounts.ErrNotFound
			}
			if err == nil {
				a.Cache.PutWorkspace(ws)
			}
		}
		if err == nil {
			settings, err = a.proposeCreate(ctx, b.AccountID, n, id, b.WorkspaceID, patch)
		}
	}
	var out any
	if err == nil {
		out, err = save(ctx, &b, id, settings)
	}
	if err != nil {
		a.fail(w, err, notFound)
		return
	}
	writeJSON(w, http.StatusCreated, out)
}

// patchNode serves the PATCH of node id of layer n, the one shape of the three: it merges the
// body into the node (contract.md: a settings field present replaces it, absent is unchanged,
// null clears it) after checking the account's whole tree (R-KEY-3), holding the account's
// settings lock from the read of the tree to the save: a change that would leave a layer with
// no candidate is 409 naming them. tree reads the tree, taking the lock into held for a
// workspace or key (an account's is taken before); update writes the node, calling apply on
// its name and settings inside the store's transaction; answer is the 200's body.
func patchNode[T any](a *api, w http.ResponseWriter, r *http.Request, n layers.Name, notFound string,
	tree func(ctx context.Context, held *accountLock, id string) (layers.Tree, error),
	update func(ctx context.Context, id string, apply func(name *string, settings *json.RawMessage)) (T, error),
	answer func(T) any) {
	var b nodeBody
	if !decode(w, r, &b, patchMembers) {
		return
	}
	id := r.PathValue("id")
	ctx, cancel := storeCtx(r)
	defer cancel()
	var held accountLock // R-KEY-3: held from the check to the save
	defer held.unlock()
	if n == layers.Account {
		held.lock(id)
	}
	settings, err := a.proposePatch(ctx, b.Settings, func() (layers.Tree, error) { return tree(ctx, &held, id) }, n, id)
	var v T
	if err == nil {
		v, err = update(ctx, id, func(name *string, dst *json.RawMessage) { b.apply(name, dst, settings) })
	}
	if err != nil {
		a.fail(w, err, notFound)
		return
	}
	writeJSON(w, http.StatusOK, answer(v))
}

// proposePatch checks a PATCH body's settings against the tree tree reads and returns the
// node's new settings in canonical JSON; nil when the body changes no settings.
func (a *api) proposePatch(ctx context.Context, raw json.RawMessage, tree func() (layers.Tree, error), n layers.Name, id string) (json.RawMessage, error) {
	patch, err := parsePatch(raw)
	if err != nil || patch == nil {
		return nil, err
	}
	t, err := tree()
	if err != nil {
		return nil, err
	}
	if err := a.checkPolicyRef(ctx, t.Account.ID, patch); err != nil {
		return nil, err
	}
	return propose(t, n, id, patch, false)
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

func timeOrNil(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

func (a *api) createAccount(w http.ResponseWriter, r *http.Request) {
	a.createNode(w, r, layers.Account, []string{"name", "settings"}, []string{"name"}, "",
		func(ctx context.Context, b *nodeBody, id string, settings json.RawMessage) (any, error) {
			billing, err := accounts.SettingsBilling(settings)
			if err != nil {
				return nil, errInvalid("settings.billing", "%v", err)
			}
			acct := &accounts.Account{ID: id, Name: *b.Name, Settings: settings, Billing: billing, CreatedAt: time.Now().UTC()}
			if err := a.Store.CreateAccount(ctx, acct); err != nil {
				return nil, err
			}
			a.Cache.PutAccount(acct)
			return accountJSON(acct), nil
		})
}

func (a *api) getAccount(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := storeCtx(r)
	defer cancel()
	a.flushLedger(ctx)
	acct, err := a.Store.Account(ctx, r.PathValue("id"))
	if err != nil {
		a.fail(w, err, "no account with that id")
		return
	}
	writeJSON(w, http.StatusOK, accountJSON(acct))
}

func (a *api) patchAccount(w http.ResponseWriter, r *http.Request) {
	patchNode(a, w, r, layers.Account, "no account with that id",
		func(ctx context.Context, _ *accountLock, id string) (layers.Tree, error) {
			t, _, err := a.accountTree(ctx, id)
			return t, err
		},
		func(ctx context.Context, id string, apply func(*string, *json.RawMessage)) (*accounts.Account, error) {
			acct, err := a.Store.UpdateAccount(ctx, id, func(acct *accounts.Account) error {
				apply(&acct.Name, &acct.Settings)
				billing, err := accounts.SettingsBilling(acct.Settings)
				if err != nil {
					return errBadPatch{err}
				}
				acct.Billing = billing
				return nil
			})
			if err == nil {
				a.Cache.PutAccount(acct)
			}
			return acct, err
		},
		func(acct *accounts.Account) any { return accountJSON(acct) })
}

func (a *api) createWorkspace(w http.ResponseWriter, r *http.Request) {
	a.createNode(w, r, layers.Workspace, []string{"account_id", "name", "settings"}, []string{"account_id", "name"},
		"no account with that account_id",
		func(ctx context.Context, b *nodeBody, id string, settings json.RawMessage) (any, error) {
			ws := &accounts.Workspace{ID: id, AccountID: b.AccountID, Name: *b.Name, Settings: settings, CreatedAt: time.Now().UTC()}
			if err := a.Store.CreateWorkspace(ctx, ws); err != nil {
				return nil, err
			}
			a.Cache.PutWorkspace(ws)
			return workspaceJSON(ws), nil
		})
}

func (a *api) getWorkspace(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := storeCtx(r)
	defer cancel()
	ws, err := a.Store.Workspace(ctx, r.PathValue("id"))
	if err != nil {
		a.fail(w, err, "no workspace with that id")
		return
	}
	writeJSON(w, http.StatusOK, workspaceJSON(ws))
}

func (a *api) patchWorkspace(w http.ResponseWriter, r *http.Request) {
	patchNode(a, w, r, layers.Workspace, "no workspace with that id",
		func(ctx context.Context, held *accountLock, id string) (layers.Tree, error) {
			ws, err := a.lockedWorkspace(ctx, held, id)
			if err != nil {
				return layers.Tree{}, err
			}
			t, _, err := a.accountTree(ctx, ws.AccountID) // lists every workspace, this one included
			return t, err
		},
		func(ctx context.Context, id string, apply func(*string, *json.RawMessage)) (*accounts.Workspace, error) {
			ws, err := a.Store.UpdateWorkspace(ctx, id, func(ws *accounts.Workspace) error {
				apply(&ws.Name, &ws.Settings)
				return nil
			})
			if err == nil {
				a.Cache.PutWorkspace(ws)
			}
			return ws, err
		},
		func(ws *accounts.Workspace) any { return workspaceJSON(ws) })
}

// createKey mints a key: the secret is in this answer only; the store keeps its SHA-256.
func (a *api) createKey(w http.ResponseWriter, r *http.Request) {
	a.createNode(w, r, layers.Key, []string{"account_id", "workspace_id", "name", "settings"}, []string{"account_id", "name"},
		"no account with that account_id, or no workspace with that workspace_id in it",
		func(ctx context.Context, b *nodeBody, id string, settings json.RawMessage) (any, error) {
			secret, prefix, hash := accounts.NewSecret()
			k := &accounts.Key{ID: id, AccountID: b.AccountID, WorkspaceID: b.WorkspaceID, Name: *b.Name,
				Prefix: prefix, SecretHash: hash, Settings: settings, CreatedAt: time.Now().UTC()}
			if err := a.Store.CreateKey(ctx, k); err != nil {
				return nil, err
			}
			a.Cache.PutKey(k)
			out := keyJSON(k)
			out["secret"] = secret
			w.Header().Set("Cache-Control", "no-store")
			return out, nil
		})
}

func (a *api) getKey(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := storeCtx(r)
	defer cancel()
	k, err := a.Store.Key(ctx, r.PathValue("id"))
	if err != nil {
		a.fail(w, err, "no key with that id")
		return
	}
	writeJSON(w, http.StatusOK, keyJSON(k))
}

func (a *api) patchKey(w http.ResponseWriter, r *http.Request) {
	patchNode(a, w, r, layers.Key, "no key with that id",
		func(ctx context.Context, held *accountLock, id string) (layers.Tree, error) {
			k, err := a.lockedKey(ctx, held, id)
			if err != nil {
				return layers.Tree{}, err
			}
			t, _, err := a.accountTree(ctx, k.AccountID)
			if err == nil && !k.RevokedAt.IsZero() { // not among the active keys: checked all the same
				st, serr := storedSettings(layers.Key, id, k.Settings)
				addKey(&t, k.WorkspaceID, layers.Node{ID: id, Settings: st})
				err = serr
			}
			return t, err
		},
		func(ctx context.Context, id string, apply func(*string, *json.RawMessage)) (*accounts.Key, error) {
			k, err := a.Store.UpdateKey(ctx, id, func(k *accounts.Key) error {
				apply(&k.Name, &k.Settings)
				return nil
			})
			if err == nil {
				a.Cache.PutKey(k) // a revoked key stays out
			}
			return k, err
		},
		func(k *accounts.Key) any { return keyJSON(k) })
}

// revokeKey evicts the key from this process's cache first, so that it stops working before
// the answer whatever the store does, then records the revocation in the store (other
// replicas drop it at their next reload).
func (a *api) revokeKey(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	a.Cache.Evict(id)
	ctx, cancel := storeCtx(r)
	defer cancel()
	now := time.Now().UTC()
	_, err := a.Store.UpdateKey(ctx, id, func(k *accounts.Key) error {
		if k.RevokedAt.IsZero() {
			k.RevokedAt = now
		}
		return nil
	})
	if err != nil {
		a.fail(w, err, "no key with that id")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
