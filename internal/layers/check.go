package layers

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/switchyard-gw/switchyard/internal/failure"
)

// Node is one saved account, workspace or key: its id and its own settings.
type Node struct {
	ID       string
	Settings Settings
}

// WorkspaceNode is a saved workspace and the keys that belong to it.
type WorkspaceNode struct {
	Node
	Keys []Node
}

// Tree is an account with everything below it: its workspaces (each with its keys) and its keys
// that belong to no workspace. It is what a save is checked against ([Check], [Propose]).
type Tree struct {
	Account    Node
	Workspaces []WorkspaceNode
	// Keys are the account's keys outside any workspace.
	Keys []Node
}

// Conflict is one layer left with no candidate by one field (R-KEY-3).
type Conflict struct {
	// Field is "models", "providers" or "tier_scope".
	Field string `json:"field"`
	// Layer and ID name the account, workspace or key left with no candidate.
	Layer Name   `json:"layer"`
	ID    string `json:"id,omitempty"`
	// FixedBy are the layers whose constraints intersect to nothing.
	FixedBy LayerSet `json:"fixed_by"`
}

// ConflictError is an empty or conflicting intersection: the 409 of contract.md's PATCH, naming
// each field and every workspace and key it would leave with no candidate. Conflicts are in tree
// order (the account, then each workspace followed by its keys, then the account's own keys),
// and for one layer in the order models, providers, tier_scope.
type ConflictError struct {
	Conflicts []Conflict `json:"conflicts"`
}

// Fields returns the distinct fields in conflict, in first-seen order.
func (e *ConflictError) Fields() []string {
	var out []string
	for _, c := range e.Conflicts {
		if !oneOf(c.Field, out...) {
			out = append(out, c.Field)
		}
	}
	return out
}

// Error names each field and the layers it leaves with no candidate, e.g.
// `conflict: models would leave workspace "w1", key "k1" with no candidate`.
func (e *ConflictError) Error() string {
	var b strings.Builder
	b.WriteString("conflict: ")
	for i, f := range e.Fields() {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(f + " would leave ")
		n := 0
		for _, c := range e.Conflicts {
			if c.Field != f {
				continue
			}
			if n > 0 {
				b.WriteString(", ")
			}
			n++
			b.WriteString(c.Layer.String())
			if c.ID != "" {
				b.WriteString(" " + strconv.Quote(c.ID))
			}
		}
		b.WriteString(" with no candidate")
	}
	return b.String()
}

// Check validates every node of t for its layer and returns a *[ConflictError] listing every
// layer — the account, each workspace, each key — whose effective constraints (the intersection
// down from the account) are empty, naming the field (R-KEY-3). A change to an upper layer is
// thus refused when it would empty any layer below it. A node whose settings fail
// [Settings.Validate] gives that [failure.Error] (invalid_request) instead. nil when t is sound.
func Check(t Tree) error {
	if err := t.Account.Settings.Validate(Account); err != nil {
		return err
	}
	var out []Conflict
	acct := newAcc()
	acct.add(Account, &t.Account.Settings)
	out = acct.conflicts(out, Account, t.Account.ID)
	keys := func(above acc, ks []Node) error {
		for i := range ks {
			if err := ks[i].Settings.Validate(Key); err != nil {
				return err
			}
			a := above
			a.add(Key, &ks[i].Settings)
			out = a.conflicts(out, Key, ks[i].ID)
		}
		return nil
	}
	for i := range t.Workspaces {
		w := &t.Workspaces[i]
		if err := w.Settings.Validate(Workspace); err != nil {
			return err
		}
		a := acct
		a.add(Workspace, &w.Settings)
		out = a.conflicts(out, Workspace, w.ID)
		if err := keys(a, w.Keys); err != nil {
			return err
		}
	}
	if err := keys(acct, t.Keys); err != nil {
		return err
	}
	if out != nil {
		return &ConflictError{Conflicts: out}
	}
	return nil
}

// Propose applies patch ([Apply]) to the settings of the node of layer n (Account, Workspace or
// Key) with the given id in t, checks the resulting tree ([Check]) and returns the node's new
// settings. t is not modified. Errors: invalid_request [failure.Error] when no such node exists
// or the patch is invalid; *[ConflictError] when the change would leave any layer of the tree
// with no candidate.
func Propose(t Tree, n Name, id string, patch json.RawMessage) (Settings, error) {
	cur, set := t.find(n, id)
	if set == nil {
		return Settings{}, failure.Newf(failure.InvalidRequest, "no %s %q in this account", n, id)
	}
	next, err := Apply(cur, patch)
	if err != nil {
		return Settings{}, err
	}
	set(next)
	if err := Check(t); err != nil {
		return Settings{}, err
	}
	return next, nil
}

// find returns the node's settings and a setter that replaces them in t, copying the slices it
// touches so that the caller's tree is not modified. set is nil when there is no such node.
func (t *Tree) find(n Name, id string) (Settings, func(Settings)) {
	switch n {
	case Account:
		if t.Account.ID == id {
			return t.Account.Settings, func(s Settings) { t.Account.Settings = s }
		}
	case Workspace:
		for i := range t.Workspaces {
			if t.Workspaces[i].ID == id {
				return t.Workspaces[i].Settings, func(s Settings) {
					t.Workspaces = append([]WorkspaceNode(nil), t.Workspaces...)
					t.Workspaces[i].Settings = s
				}
			}
		}
	case Key:
		for i := range t.Keys {
			if t.Keys[i].ID == id {
				return t.Keys[i].Settings, func(s Settings) {
					t.Keys = append([]Node(nil), t.Keys...)
					t.Keys[i].Settings = s
				}
			}
		}
		for i := range t.Workspaces {
			for j := range t.Workspaces[i].Keys {
				if t.Workspaces[i].Keys[j].ID == id {
					return t.Workspaces[i].Keys[j].Settings, func(s Settings) {
						t.Workspaces = append([]WorkspaceNode(nil), t.Workspaces...)
						ks := append([]Node(nil), t.Workspaces[i].Keys...)
						ks[j].Settings = s
						t.Workspaces[i].Keys = ks
					}
				}
			}
		}
	}
	return Settings{}, nil
}
