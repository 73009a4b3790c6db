package admin

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/switchyard-gw/switchyard/internal/accounts"
	"github.com/switchyard-gw/switchyard/internal/failure"
)

// List pagination (docs/admin-api.md "Lists"): limit 1..MaxLimit rows a page, DefaultLimit
// when absent.
const (
	DefaultLimit = 50
	MaxLimit     = 500
	// maxCursorID bounds the id a cursor carries.
	maxCursorID = 512
)

// listPage is the answer of every list: the rows, newest first, and the cursor of the next
// page (null on the last).
type listPage struct {
	Data       []any   `json:"data"`
	NextCursor *string `json:"next_cursor"`
}

// parsePage reads limit and cursor from q; it answers the 400 itself and reports false then.
func parsePage(w http.ResponseWriter, q url.Values) (accounts.Page, bool) {
	p := accounts.Page{Limit: DefaultLimit}
	if v := q.Get("limit"); v != "" || q.Has("limit") {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxLimit {
			badRequest(w, "limit", "limit must be an integer from 1 to %d", MaxLimit)
			return p, false
		}
		p.Limit = n
	}
	if v := q.Get("cursor"); v != "" || q.Has("cursor") {
		pos, ok := decodeCursor(v)
		if !ok {
			badRequest(w, "cursor", "cursor is not a cursor of this list: pass the next_cursor of the previous page unchanged")
			return p, false
		}
		p.After = pos
	}
	return p, true
}

// encodeCursor is the opaque cursor of the position after which the next page starts:
// base64url("<created_at Unix nanoseconds>:<id>").
func encodeCursor(p accounts.Position) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(p.CreatedAt.UnixNano(), 10) + ":" + p.ID))
}

func decodeCursor(s string) (accounts.Position, bool) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return accounts.Position{}, false
	}
	n, id, ok := strings.Cut(string(b), ":")
	if !ok || id == "" || len(id) > maxCursorID {
		return accounts.Position{}, false
	}
	nanos, err := strconv.ParseInt(n, 10, 64)
	if err != nil || nanos <= 0 {
		return accounts.Position{}, false
	}
	return accounts.Position{CreatedAt: time.Unix(0, nanos).UTC(), ID: id}, true
}

// parseRevoked reads the revoked filter: exclude (default), include or only.
func parseRevoked(w http.ResponseWriter, q url.Values) (accounts.Revoked, bool) {
	switch v := q.Get("revoked"); v {
	case "", "exclude":
		return accounts.RevokedExclude, true
	case "include":
		return accounts.RevokedInclude, true
	case "only":
		return accounts.RevokedOnly, true
	default:
		badRequest(w, "revoked", "revoked must be exclude (the default), include or only")
		return 0, false
	}
}

// servePage answers one page: fetch reads up to Limit+1 rows after the page's position (the
// extra row says that another page follows), pos is a row's position and row its JSON.
func servePage[T any](a *api, w http.ResponseWriter, r *http.Request, p accounts.Page,
	fetch func(ctx context.Context, ls accounts.ListStore, p accounts.Page) ([]T, error),
	pos func(*T) accounts.Position, row func(*T) any) {
	ls, ok := a.Store.(accounts.ListStore)
	if !ok {
		writeError(w, http.StatusServiceUnavailable, &failure.Error{Class: failure.GatewayError, Msg: "the store cannot list"})
		return
	}
	ctx, cancel := storeCtx(r)
	defer cancel()
	limit := p.Limit
	p.Limit++
	rows, err := fetch(ctx, ls, p)
	if err != nil {
		a.fail(w, err, "")
		return
	}
	out := listPage{Data: make([]any, 0, min(len(rows), limit))}
	if len(rows) > limit {
		rows = rows[:limit]
		c := encodeCursor(pos(&rows[limit-1]))
		out.NextCursor = &c
	}
	for i := range rows {
		out.Data = append(out.Data, row(&rows[i]))
	}
	writeJSON(w, http.StatusOK, out)
}

func (a *api) listAccounts(w http.ResponseWriter, r *http.Request) {
	p, ok := parsePage(w, r.URL.Query())
	if !ok {
		return
	}
	a.flushLedger(r.Context()) // balances as of the settles queued so far
	servePage(a, w, r, p, func(ctx context.Context, ls accounts.ListStore, p accounts.Page) ([]accounts.Account, error) {
		return ls.ListAccounts(ctx, p)
	}, accountPos,
		func(x *accounts.Account) any { return accountJSON(x) })
}

func (a *api) listWorkspaces(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p, ok := parsePage(w, q)
	if !ok {
		return
	}
	acct := q.Get("account_id")
	servePage(a, w, r, p, func(ctx context.Context, ls accounts.ListStore, p accounts.Page) ([]accounts.Workspace, error) {
		return ls.ListWorkspaces(ctx, acct, p)
	}, workspacePos,
		func(x *accounts.Workspace) any { return workspaceJSON(x) })
}

// listKeys never shows a secret: keyJSON carries the display prefix only (the store keeps the
// secret's SHA-256, which is not shown either).
func (a *api) listKeys(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p, ok := parsePage(w, q)
	if !ok {
		return
	}
	revoked, ok := parseRevoked(w, q)
	if !ok {
		return
	}
	f := accounts.KeyFilter{AccountID: q.Get("account_id"), WorkspaceID: q.Get("workspace_id"), Revoked: revoked}
	servePage(a, w, r, p, func(ctx context.Context, ls accounts.ListStore, p accounts.Page) ([]accounts.Key, error) {
		return ls.ListKeys(ctx, f, p)
	}, keyPos,
		func(x *accounts.Key) any { return keyJSON(x) })
}

func (a *api) listPolicies(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p, ok := parsePage(w, q)
	if !ok {
		return
	}
	acct := q.Get("account_id")
	servePage(a, w, r, p, func(ctx context.Context, ls accounts.ListStore, p accounts.Page) ([]accounts.Policy, error) {
		return ls.ListPolicies(ctx, acct, p)
	}, policyPos,
		func(x *accounts.Policy) any { return policyJSON(x) })
}

// listConnections never shows the api_key: connectionJSON leaves it out; usable says whether
// it opens with this gateway's store.secret_key.
func (a *api) listConnections(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p, ok := parsePage(w, q)
	if !ok {
		return
	}
	revoked, ok := parseRevoked(w, q)
	if !ok {
		return
	}
	key := q.Get("key_id")
	servePage(a, w, r, p, func(ctx context.Context, ls accounts.ListStore, p accounts.Page) ([]accounts.Connection, error) {
		return ls.ListConnections(ctx, key, revoked, p)
	}, connectionPos,
		func(x *accounts.Connection) any {
			c := connectionJSON(x)
			_, err := a.Box.Open(x.APIKey)
			c["usable"] = err == nil
			c["revoked_at"] = timeOrNil(x.RevokedAt)
			return c
		})
}

// The positions of the listed rows: their creation time and id.
func accountPos(x *accounts.Account) accounts.Position {
	return accounts.Position{CreatedAt: x.CreatedAt, ID: x.ID}
}
func workspacePos(x *accounts.Workspace) accounts.Position {
	return accounts.Position{CreatedAt: x.CreatedAt, ID: x.ID}
}
func keyPos(x *accounts.Key) accounts.Position {
	return accounts.Position{CreatedAt: x.CreatedAt, ID: x.ID}
}
func policyPos(x *accounts.Policy) accounts.Position {
	return accounts.Position{CreatedAt: x.CreatedAt, ID: x.ID}
}
func connectionPos(x *accounts.Connection) accounts.Position {
	return accounts.Position{CreatedAt: x.CreatedAt, ID: x.ID}
}
