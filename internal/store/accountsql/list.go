package accountsql

import (
	"context"
	"strings"

	"github.com/switchyard-gw/switchyard/internal/accounts"
)

var _ accounts.ListStore = (*Store)(nil)

// page runs SELECT cols FROM table WHERE <conds> ORDER BY created_at DESC, id DESC LIMIT n:
// conds are the filters (each "column = ?" with its argument in args, or a condition without
// one) and, after p.After, the keyset condition that starts the page strictly after it. Every
// filter of the lists has an index ending in (created_at, id) (migration "lists"), so a
// page reads its rows in index order and stops at the limit.
func page[T any](ctx context.Context, s *Store, table, cols string, scan func(scanner) (*T, error), p accounts.Page, conds []string, args ...any) ([]T, error) {
	if !p.After.CreatedAt.IsZero() || p.After.ID != "" {
		n := p.After.CreatedAt.UnixNano()
		conds = append(conds, "(created_at < ? OR (created_at = ? AND id < ?))")
		args = append(args, n, n, p.After.ID)
	}
	q := `SELECT ` + cols + ` FROM ` + table
	if len(conds) > 0 {
		q += ` WHERE ` + strings.Join(conds, " AND ")
	}
	q += ` ORDER BY created_at DESC, id DESC LIMIT ?`
	args = append(args, p.Limit)
	out, err := list(ctx, s.rdb, s.q(q), "listing "+table, scan, args...) // a read: never behind the writer
	if out == nil && err == nil {
		out = []T{}
	}
	return out, err
}

// revokedCond is the condition of r on column revoked_at, or "" for RevokedInclude.
func revokedCond(r accounts.Revoked) string {
	switch r {
	case accounts.RevokedInclude:
		return ""
	case accounts.RevokedOnly:
		return "revoked_at IS NOT NULL"
	}
	return "revoked_at IS NULL"
}

// filters builds the conditions and arguments of the non-empty "column = ?" filters, then the
// extra conditions that are not empty.
func filters(eq [][2]string, extra ...string) ([]string, []any) {
	var conds []string
	var args []any
	for _, f := range eq {
		if f[1] != "" {
			conds = append(conds, f[0]+" = ?")
			args = append(args, f[1])
		}
	}
	for _, c := range extra {
		if c != "" {
			conds = append(conds, c)
		}
	}
	return conds, args
}

// ListAccounts implements accounts.ListStore.
func (s *Store) ListAccounts(ctx context.Context, p accounts.Page) ([]accounts.Account, error) {
	return page(ctx, s, "accounts", accountCols, scanAccount, p, nil)
}

// ListWorkspaces implements accounts.ListStore.
func (s *Store) ListWorkspaces(ctx context.Context, accountID string, p accounts.Page) ([]accounts.Workspace, error) {
	conds, args := filters([][2]string{{"account_id", accountID}})
	return page(ctx, s, "workspaces", workspaceCols, scanWorkspace, p, conds, args...)
}

// ListKeys implements accounts.ListStore.
func (s *Store) ListKeys(ctx context.Context, f accounts.KeyFilter, p accounts.Page) ([]accounts.Key, error) {
	conds, args := filters([][2]string{{"account_id", f.AccountID}, {"workspace_id", f.WorkspaceID}}, revokedCond(f.Revoked))
	return page(ctx, s, "keys", keyCols, scanKey, p, conds, args...)
}

// ListPolicies implements accounts.ListStore.
func (s *Store) ListPolicies(ctx context.Context, accountID string, p accounts.Page) ([]accounts.Policy, error) {
	conds, args := filters([][2]string{{"account_id", accountID}})
	return page(ctx, s, "policies", policyCols, scanPolicy, p, conds, args...)
}

// ListConnections implements accounts.ListStore.
func (s *Store) ListConnections(ctx context.Context, keyID string, revoked accounts.Revoked, p accounts.Page) ([]accounts.Connection, error) {
	conds, args := filters([][2]string{{"key_id", keyID}}, revokedCond(revoked))
	return page(ctx, s, "connections", connectionCols, scanConnection, p, conds, args...)
}
