package admin

import (
	"context"
	"encoding/json"
	"errors"
	"hash/maphash"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/switchyard-gw/switchyard/internal/accounts"
	"github.com/switchyard-gw/switchyard/internal/failure"
	"github.com/switchyard-gw/switchyard/internal/layers"
)

// settingsFields are the members a `settings` object may hold (contract.md "settings fields").
var settingsFields = []string{"allow_request_override", "billing", "limits", "models", "policy",
	"preferred_providers", "providers", "strategy", "tier_scope"}

// errSettings is a settings refusal already shaped for the answer: status and error body, and
// for a conflict (R-KEY-3) the layers left with no candidate, sent beside the error as the
// body's top-level "conflicts" member.
type errSettings struct {
	status    int
	fe        *failure.Error
	conflicts []conflictJSON
}

// conflictJSON is one entry of a 409's "conflicts": the field, the layer (account, workspace or
// key) it would leave with no candidate, and the layers whose constraints intersect to nothing
// (layers.Conflict). The layer being created has no id (it was never saved) and "new": true.
type conflictJSON struct {
	Field   string          `json:"field"`
	Layer   layers.Name     `json:"layer"`
	ID      string          `json:"id,omitempty"`
	New     bool            `json:"new,omitempty"`
	FixedBy layers.LayerSet `json:"fixed_by"`
}

func (e *errSettings) Error() string { return e.fe.Msg }

// settingsError turns an error of the layers package into the admin answer: a conflict is 409
// naming the field and every layer it would leave with no candidate (R-KEY-3), in the message
// and in "conflicts"; an invalid setting 400 naming it; anything else is a store error. When
// created is not Default, the node of that layer with id newID is being created: it is named
// "the new workspace" (key, account), not by the id it was never saved under.
func settingsError(err error, created layers.Name, newID string) error {
	var ce *layers.ConflictError
	if errors.As(err, &ce) {
		out := make([]conflictJSON, len(ce.Conflicts))
		for i, c := range ce.Conflicts {
			out[i] = conflictJSON{Field: c.Field, Layer: c.Layer, ID: c.ID, FixedBy: c.FixedBy}
			if created != layers.Default && c.Layer == created && c.ID == newID {
				out[i].ID, out[i].New = "", true
			}
		}
		return &errSettings{status: http.StatusConflict, fe: &failure.Error{Class: failure.InvalidRequest,
			Param: "settings." + ce.Fields()[0], Msg: conflictMessage(ce.Fields(), out)}, conflicts: out}
	}
	var fe *failure.Error
	if errors.As(err, &fe) && fe.Class == failure.InvalidRequest {
		return &errSettings{status: http.StatusBadRequest, fe: fe}
	}
	return err
}

// conflictMessage names each field and the layers it leaves with no candidate, as
// layers.ConflictError does, the new layer as "the new key" (workspace, account): e.g.
// `conflict: models would leave workspace "ws_1", the new key with no candidate`.
func conflictMessage(fields []string, cs []conflictJSON) string {
	var b strings.Builder
	b.WriteString("conflict: ")
	for i, f := range fields {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(f + " would leave ")
		n := 0
		for _, c := range cs {
			if c.Field != f {
				continue
			}
			if n > 0 {
				b.WriteString(", ")
			}
			n++
			switch {
			case c.New:
				b.WriteString("the new " + c.Layer.String())
			case c.ID != "":
				b.WriteString(c.Layer.String() + " " + strconv.Quote(c.ID))
			default:
				b.WriteString(c.Layer.String())
			}
		}
		b.WriteString(" with no candidate")
	}
	return b.String()
}

// parsePatch reads a request's `settings` (absent or null: nil, no change), refusing a
// non-object and naming every unknown field (sorted) in a 400.
func parsePatch(raw json.RawMessage) (json.RawMessage, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, &errSettings{status: http.StatusBadRequest, fe: &failure.Error{Class: failure.InvalidRequest,
			Param: "settings", Msg: "settings must be a JSON object"}}
	}
	var unknown []string
	for k := range m {
		if !slices.Contains(settingsFields, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return nil, &errSettings{status: http.StatusBadRequest, fe: &failure.Error{Class: failure.InvalidRequest,
			Param: "settings." + unknown[0], Msg: "unknown settings fields: " + strings.Join(unknown, ", ") +
				" (allowed: " + strings.Join(settingsFields, ", ") + ")"}}
	}
	return raw, nil
}

// storedSettings reads a stored settings object; one the layers package refuses (stored before
// settings were validated) is a 409 naming the layer.
func storedSettings(n layers.Name, id string, raw json.RawMessage) (layers.Settings, error) {
	st, err := accounts.ParseSettings(raw)
	if err != nil {
		return st, &errSettings{status: http.StatusConflict, fe: &failure.Error{Class: failure.InvalidRequest,
			Msg: "the stored settings of " + n.String() + " " + id + " are not valid settings: " + err.Error()}}
	}
	return st, nil
}

// accountTree reads the settings tree of an account for the conflict check (R-KEY-3): the
// account, every one of its workspaces (with or without keys, wherever created) and its active
// keys, workspaces sorted by id. The caller holds the account's settings lock ([lockAccount]) from
// this read until its change is saved, so that no other write of this process interleaves.
func (a *api) accountTree(ctx context.Context, acctID string) (layers.Tree, *accounts.Account, error) {
	acct, err := a.Store.Account(ctx, acctID)
	if err != nil {
		return layers.Tree{}, nil, err
	}
	t := layers.Tree{Account: layers.Node{ID: acct.ID}}
	if t.Account.Settings, err = storedSettings(layers.Account, acct.ID, acct.Settings); err != nil {
		return t, nil, err
	}
	wss, err := a.Store.Workspaces(ctx, acctID)
	if err != nil {
		return t, nil, err
	}
	slices.SortFunc(wss, func(x, y accounts.Workspace) int { return strings.Compare(x.ID, y.ID) })
	for i := range wss {
		ws := &wss[i]
		a.Cache.PutWorkspace(ws) // the freshest read: this process's keys in it see it at once
		st, err := storedSettings(layers.Workspace, ws.ID, ws.Settings)
		if err != nil {
			return t, nil, err
		}
		t.Workspaces = append(t.Workspaces, layers.WorkspaceNode{Node: layers.Node{ID: ws.ID, Settings: st}})
	}
	keys, err := a.Store.ActiveKeys(ctx)
	if err != nil {
		return t, nil, err
	}
	for i := range keys {
		k := &keys[i]
		if k.AccountID != acctID {
			continue
		}
		st, err := storedSettings(layers.Key, k.ID, k.Settings)
		if err != nil {
			return t, nil, err
		}
		addKey(&t, k.WorkspaceID, layers.Node{ID: k.ID, Settings: st})
	}
	return t, acct, nil
}

// stripedLocks are mutexes for string ids: each id hashes onto one of a fixed set of stripes,
// so two ids may share one (and then wait for each other) and the table never grows.
type stripedLocks struct {
	seed    maphash.Seed
	stripes [64]sync.Mutex
}

// of returns the mutex of id.
func (l *stripedLocks) of(id string) *sync.Mutex {
	return &l.stripes[maphash.String(l.seed, id)%uint64(len(l.stripes))]
}

// settingsLocks serialise the admin API's settings writes per account within this process
// (R-KEY-3): every create or PATCH of an account's workspace or key, and every PATCH of the
// account, holds its account's lock from reading the account's tree until the change is saved,
// so two concurrent writes can never each pass the conflict check against a tree that lacks the
// other's change. Other processes do not see these locks (docs/layers.md "Concurrent writes").
var settingsLocks = &stripedLocks{seed: maphash.MakeSeed()}

// accountLock is the settings lock of one account held by one admin request; the zero value
// holds none. One request uses it, never concurrently.
type accountLock struct{ mu *sync.Mutex }

// lockAccount waits for and returns the settings lock of account acctID; use it as
// `defer lockAccount(id).unlock()` before reading the account's tree.
func lockAccount(acctID string) *accountLock {
	l := new(accountLock)
	l.lock(acctID)
	return l
}

// lock waits for the settings lock of account acctID. l must hold none: a request that locked
// two accounts could deadlock with another, so that is a programming error (panic).
func (l *accountLock) lock(acctID string) {
	if l.mu != nil {
		panic("admin: an admin request locks a second account")
	}
	l.mu = settingsLocks.of(acctID)
	l.mu.Lock()
}

// unlock releases the lock held, if any.
func (l *accountLock) unlock() {
	if l.mu != nil {
		l.mu.Unlock()
		l.mu = nil
	}
}

// lockedWorkspace reads workspace id, takes its account's settings lock into held, and reads
// the workspace again under it (a workspace never changes account), so the caller's check and
// save see no change made before the lock was taken.
func (a *api) lockedWorkspace(ctx context.Context, held *accountLock, id string) (*accounts.Workspace, error) {
	ws, err := a.Store.Workspace(ctx, id)
	if err != nil {
		return nil, err
	}
	held.lock(ws.AccountID)
	return a.Store.Workspace(ctx, id)
}

// lockedKey is lockedWorkspace for key id.
func (a *api) lockedKey(ctx context.Context, held *accountLock, id string) (*accounts.Key, error) {
	k, err := a.Store.Key(ctx, id)
	if err != nil {
		return nil, err
	}
	held.lock(k.AccountID)
	return a.Store.Key(ctx, id)
}

// addKey puts key node n under its workspace in t (at the top when wsID is "" or unknown).
func addKey(t *layers.Tree, wsID string, n layers.Node) {
	for i := range t.Workspaces {
		if t.Workspaces[i].ID == wsID {
			t.Workspaces[i].Keys = append(t.Workspaces[i].Keys, n)
			return
		}
	}
	t.Keys = append(t.Keys, n)
}

// proposeCreate checks that a new workspace (n Workspace) or key (n Key, under wsID) with the
// given settings patch leaves no layer of its account with no candidate, and returns its
// settings in their canonical JSON form.
func (a *api) proposeCreate(ctx context.Context, acctID string, n layers.Name, id, wsID string, patch json.RawMessage) (json.RawMessage, error) {
	t, _, err := a.accountTree(ctx, acctID)
	if err != nil {
		return nil, err
	}
	if err := a.checkPolicyRef(ctx, acctID, patch); err != nil {
		return nil, err
	}
	if n == layers.Workspace {
		t.Workspaces = append(t.Workspaces, layers.WorkspaceNode{Node: layers.Node{ID: id}})
	} else {
		addKey(&t, wsID, layers.Node{ID: id})
	}
	return propose(t, n, id, patch, true)
}

// propose applies patch (nil: none) to node id of layer n in t and checks the tree; created
// says that the node is being created (a conflict names it "the new ...", not by id).
func propose(t layers.Tree, n layers.Name, id string, patch json.RawMessage, created bool) (json.RawMessage, error) {
	if patch == nil {
		patch = json.RawMessage(`{}`)
	}
	st, err := layers.Propose(t, n, id, patch)
	if err != nil {
		if !created {
			return nil, settingsError(err, layers.Default, "")
		}
		return nil, settingsError(err, n, id)
	}
	b, err := json.Marshal(st)
	if err != nil {
		return nil, err
	}
	return b, nil
}
