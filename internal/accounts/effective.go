package accounts

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/switchyard-gw/switchyard/internal/admission"
	"github.com/switchyard-gw/switchyard/internal/failure"
	"github.com/switchyard-gw/switchyard/internal/layers"
)

// workspace is the cache's view of a workspace: its account and settings.
type workspace struct {
	accountID string
	settings  json.RawMessage
}

// PutWorkspace records w's settings; when they differ from those held (or the workspace was
// not held), the effective settings of its keys are recomputed.
func (c *Cache) PutWorkspace(w *Workspace) {
	c.mu.Lock()
	if old := c.wss[w.ID]; old == nil || old.accountID != w.AccountID || !bytes.Equal(old.settings, w.Settings) {
		c.wss[w.ID] = &workspace{accountID: w.AccountID, settings: w.Settings}
		c.rederiveLocked(func(k *KeyInfo) bool { return k.WorkspaceID == w.ID })
	}
	c.mu.Unlock()
}

// loadWorkspaces reads the workspaces the keys belong to (one store read each: the Store lists
// workspaces per account only). A workspace that no longer exists is left out.
func (c *Cache) loadWorkspaces(ctx context.Context, keys []Key) ([]Workspace, error) {
	seen := map[string]bool{}
	var out []Workspace
	for i := range keys {
		id := keys[i].WorkspaceID
		if id == "" || seen[id] {
			continue
		}
		seen[id] = true
		w, err := c.st.Workspace(ctx, id)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("accounts: reloading workspaces: %w", err)
		}
		out = append(out, *w)
	}
	return out, nil
}

// rederiveLocked replaces the KeyInfo of every key that match selects with a recomputed one
// (a KeyInfo is never modified once published).
func (c *Cache) rederiveLocked(match func(*KeyInfo) bool) {
	for _, e := range c.keys {
		if !match(e.info) {
			continue
		}
		info := &KeyInfo{ID: e.info.ID, AccountID: e.info.AccountID, WorkspaceID: e.info.WorkspaceID,
			Name: e.info.Name, Settings: e.info.Settings}
		c.deriveLocked(info)
		e.info = info
	}
}

// deriveLocked fills k's Effective, EffectiveErr and Layers from the settings of its account,
// workspace and its own.
func (c *Cache) deriveLocked(k *KeyInfo) {
	var acct, ws json.RawMessage
	if a := c.accts[k.AccountID]; a != nil {
		acct = a.settings
	}
	if k.WorkspaceID != "" {
		w := c.wss[k.WorkspaceID]
		if w == nil {
			k.EffectiveErr = &failure.Error{Class: failure.GatewayError,
				Msg: "this key's workspace is not loaded yet; retry shortly"}
			return
		}
		ws = w.settings
	}
	k.Effective, k.EffectiveErr = Effective(k.AccountID, acct, k.WorkspaceID, ws, k.ID, k.Settings)
	if k.EffectiveErr != nil {
		return
	}
	l := &k.Effective.Limits
	for _, x := range []struct {
		scope admission.Scope
		id    string
		l     layers.Limits
	}{
		{admission.ScopeKey, k.ID, l[layers.Key]},
		{admission.ScopeWorkspace, k.WorkspaceID, l[layers.Workspace]},
		{admission.ScopeAccount, k.AccountID, l[layers.Account]},
	} {
		if !x.l.IsZero() {
			k.Layers = append(k.Layers, admission.Layer{Scope: x.scope, ID: x.id, Limits: AdmissionLimits(x.l)})
		}
	}
	k.Layers = append(k.Layers, c.extra(k.AccountID)...)
}

// AdmissionLimits converts one settings layer's limits (validated: the period is "", day, month
// or total) to the admission store's.
func AdmissionLimits(l layers.Limits) admission.Limits {
	p, _ := admission.ParsePeriod(l.BudgetPeriod)
	return admission.Limits{RPM: l.RPM, TPM: l.TPM, Concurrency: l.Concurrency,
		BudgetMicroUSD: l.BudgetMicroUSD, BudgetPeriod: p}
}

// ParseSettings reads a stored settings object (absent, empty or null is no settings) strictly
// into layers.Settings. The error is the layers package's invalid_request *failure.Error.
func ParseSettings(raw json.RawMessage) (layers.Settings, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return layers.Settings{}, nil
	}
	return layers.Apply(layers.Settings{}, raw)
}

// Effective merges stored settings, account -> workspace (skipped when wsID is "") -> key, with
// layers.Effective. Errors: an invalid stored settings object (invalid_request naming the layer)
// or a *layers.ConflictError.
func Effective(acctID string, acct json.RawMessage, wsID string, ws json.RawMessage, keyID string, key json.RawMessage) (layers.Merged, error) {
	ls := make([]layers.Layer, 0, 3)
	add := func(n layers.Name, id string, raw json.RawMessage) error {
		st, err := ParseSettings(raw)
		if err != nil {
			return fmt.Errorf("the stored settings of %s %s: %w", n, id, err)
		}
		ls = append(ls, layers.Layer{Name: n, ID: id, Settings: st})
		return nil
	}
	if err := add(layers.Account, acctID, acct); err != nil {
		return layers.Merged{}, err
	}
	if wsID != "" {
		if err := add(layers.Workspace, wsID, ws); err != nil {
			return layers.Merged{}, err
		}
	}
	if err := add(layers.Key, keyID, key); err != nil {
		return layers.Merged{}, err
	}
	return layers.Effective(ls...)
}
