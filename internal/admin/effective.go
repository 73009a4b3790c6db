package admin

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/switchyard-gw/switchyard/internal/config"
	"github.com/switchyard-gw/switchyard/internal/failure"
	"github.com/switchyard-gw/switchyard/internal/layers"
)

// effective answers a key's effective settings (contract.md: each field with value and
// fixed_by), merged by layers.Effective from the gateway's defaults (the default layer:
// routing.strategy, "price" when unset), its account's, workspace's and own settings. A
// stored settings object that the layers package refuses (settings are stored as opaque JSON
// objects until the admin API validates them with it) is a 409 naming the layer.
func (a *api) effective(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := storeCtx(r)
	defer cancel()
	k, err := a.Store.Key(ctx, r.PathValue("id"))
	if err != nil {
		a.fail(w, err, "no key with that id")
		return
	}
	acct, err := a.Store.Account(ctx, k.AccountID)
	if err != nil {
		a.fail(w, err, "the key's account no longer exists")
		return
	}
	type raw struct {
		name     layers.Name
		id       string
		settings json.RawMessage
	}
	in := []raw{{layers.Account, acct.ID, acct.Settings}}
	if k.WorkspaceID != "" {
		ws, err := a.Store.Workspace(ctx, k.WorkspaceID)
		if err != nil {
			a.fail(w, err, "the key's workspace no longer exists")
			return
		}
		in = append(in, raw{layers.Workspace, ws.ID, ws.Settings})
	}
	in = append(in, raw{layers.Key, k.ID, k.Settings})
	// The default layer carries the gateway's routing.strategy, which a key's requests follow
	// when no layer sets one: the answer reports it, fixed_by "default".
	strategy := a.Strategy
	if strategy == "" {
		strategy = config.DefaultStrategy
	}
	ls := make([]layers.Layer, 0, len(in)+1)
	ls = append(ls, layers.Layer{Name: layers.Default, Settings: layers.Settings{Strategy: &strategy}})
	for _, l := range in {
		st, err := layers.Apply(layers.Settings{}, l.settings)
		if err != nil {
			writeError(w, http.StatusConflict, &failure.Error{Class: failure.InvalidRequest,
				Msg: fmt.Sprintf("the stored settings of %s %s are not valid settings: %v", l.name, l.id, err)})
			return
		}
		ls = append(ls, layers.Layer{Name: l.name, ID: l.id, Settings: st})
	}
	m, err := layers.Effective(ls...)
	if err != nil {
		var es *errSettings
		if errors.As(settingsError(err, layers.Default, ""), &es) && es.conflicts != nil {
			writeConflicts(w, http.StatusConflict, es.fe, es.conflicts)
			return
		}
		writeError(w, http.StatusConflict, &failure.Error{Class: failure.InvalidRequest, Msg: err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, m)
}
