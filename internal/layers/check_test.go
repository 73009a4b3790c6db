package layers

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/switchyard-gw/switchyard/internal/failure"
)

// tree: account acme (models m1..m3), workspace w1 (models m1,m2; keys k1 official, k2 models m2),
// workspace w2 (no constraint; key k3 value), account key k4 (models m3).
func tree() Tree {
	return Tree{
		Account: Node{ID: "acme", Settings: Settings{Models: []string{"m1", "m2", "m3"}}},
		Workspaces: []WorkspaceNode{
			{Node: Node{ID: "w1", Settings: Settings{Models: []string{"m1", "m2"}}}, Keys: []Node{
				{ID: "k1", Settings: Settings{TierScope: ScopeOfficial}},
				{ID: "k2", Settings: Settings{Models: []string{"m2"}}},
			}},
			{Node: Node{ID: "w2"}, Keys: []Node{
				{ID: "k3", Settings: Settings{TierScope: ScopeValue}},
			}},
		},
		Keys: []Node{{ID: "k4", Settings: Settings{Models: []string{"m3"}}}},
	}
}

func TestCheckSound(t *testing.T) {
	if err := Check(tree()); err != nil {
		t.Fatal(err)
	}
}

// TestPropose: R-KEY-3 — a change leaving any layer with no candidate is refused, naming the
// field and every workspace and key affected; narrowing an upper layer counts.
func TestPropose(t *testing.T) {
	for _, tc := range []struct {
		name  string
		layer Name
		id    string
		patch string
		want  []Conflict // nil: accepted
	}{
		{"narrow account models empties w1, k1, k2", Account, "acme", `{"models":["m3"]}`, []Conflict{
			{"models", Workspace, "w1", LayerSet(0).With(Account).With(Workspace)},
			{"models", Key, "k1", LayerSet(0).With(Account).With(Workspace)},
			{"models", Key, "k2", LayerSet(0).With(Account).With(Workspace).With(Key)},
		}},
		{"account tier official empties w2's value key", Account, "acme", `{"tier_scope":"official"}`, []Conflict{
			{"tier_scope", Key, "k3", LayerSet(0).With(Account).With(Key)},
		}},
		{"two fields at once, every layer named", Account, "acme", `{"models":["m1"],"tier_scope":"value"}`, []Conflict{
			{"tier_scope", Key, "k1", LayerSet(0).With(Account).With(Key)},
			{"models", Key, "k2", LayerSet(0).With(Account).With(Workspace).With(Key)},
			{"models", Key, "k4", LayerSet(0).With(Account).With(Key)},
		}},
		{"workspace narrowing empties its key only", Workspace, "w1", `{"models":["m1"]}`, []Conflict{
			{"models", Key, "k2", LayerSet(0).With(Account).With(Workspace).With(Key)},
		}},
		{"key outside the workspace floor", Key, "k2", `{"models":["m3"]}`, []Conflict{
			{"models", Key, "k2", LayerSet(0).With(Account).With(Workspace).With(Key)},
		}},
		{"workspace pins a provider nobody below pins", Workspace, "w2", `{"providers":["p"]}`, nil},
		{"widening below is harmless and stays narrowed", Key, "k2", `{"models":["m1","m2","m9"]}`, nil},
		{"clearing is fine", Account, "acme", `{"models":null}`, nil},
		{"narrow that leaves a candidate", Account, "acme", `{"models":["m2","m3"]}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := tree()
			before := tree()
			s, err := Propose(tr, tc.layer, tc.id, json.RawMessage(tc.patch))
			if !reflect.DeepEqual(tr, before) {
				t.Fatal("Propose modified the tree")
			}
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				want, _ := Apply(findSettings(tr, tc.layer, tc.id), json.RawMessage(tc.patch))
				if !reflect.DeepEqual(s, want) {
					t.Errorf("settings %+v, want %+v", s, want)
				}
				return
			}
			var ce *ConflictError
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want a conflict", err)
			}
			if !reflect.DeepEqual(ce.Conflicts, tc.want) {
				t.Errorf("conflicts\n got %+v\nwant %+v", ce.Conflicts, tc.want)
			}
		})
	}
}

func findSettings(t Tree, n Name, id string) Settings {
	s, _ := t.find(n, id)
	return s
}

func TestProposeErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		layer Name
		id    string
		patch string
	}{
		{"no such key", Key, "nope", `{}`},
		{"no such workspace", Workspace, "k1", `{}`},
		{"bad patch", Key, "k1", `{"models":1}`},
		{"billing on a key", Key, "k1", `{"billing":"prepaid"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Propose(tree(), tc.layer, tc.id, json.RawMessage(tc.patch))
			if fe := failure.From(err); fe == nil || fe.Class != failure.InvalidRequest {
				t.Fatalf("err = %v, want invalid_request", err)
			}
		})
	}
}

func TestConflictErrorMessageAndJSON(t *testing.T) {
	_, err := Propose(tree(), Account, "acme", json.RawMessage(`{"models":["m1"],"tier_scope":"value"}`))
	want := `conflict: tier_scope would leave key "k1" with no candidate; models would leave key "k2", key "k4" with no candidate`
	if err == nil || err.Error() != want {
		t.Errorf("Error() = %v\nwant %s", err, want)
	}
	b, _ := json.Marshal(err)
	wantJSON := `{"conflicts":[{"field":"tier_scope","layer":"key","id":"k1","fixed_by":["account","key"]},` +
		`{"field":"models","layer":"key","id":"k2","fixed_by":["account","workspace","key"]},` +
		`{"field":"models","layer":"key","id":"k4","fixed_by":["account","key"]}]}`
	if string(b) != wantJSON {
		t.Errorf("JSON %s\nwant %s", b, wantJSON)
	}
}
