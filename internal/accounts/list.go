package accounts

import (
	"context"
	"time"
)

// Position is a row's place in a list, newest first: lists order by CreatedAt, then ID, both
// descending. A page that starts after a Position holds the rows strictly older than it (an
// older CreatedAt, or the same CreatedAt and a smaller ID), so paging by the last row's
// Position never loses or repeats a row while rows are created (a new row is newer than every
// Position already handed out).
type Position struct {
	CreatedAt time.Time
	ID        string
}

// Page selects one page of a list: at most Limit rows (Limit > 0), newest first, after After
// (the zero Position: from the newest row).
type Page struct {
	Limit int
	After Position
}

// Revoked selects keys or connections by their revocation.
type Revoked int

const (
	RevokedExclude Revoked = iota // only active rows (revoked_at NULL): the default
	RevokedInclude                // active and revoked rows
	RevokedOnly                   // only revoked rows
)

// KeyFilter selects keys: each non-empty member must match.
type KeyFilter struct {
	AccountID   string
	WorkspaceID string
	Revoked     Revoked
}

// ListStore lists the stored rows a page at a time, for the admin API's lists
// (docs/admin-api.md "Lists"). The SQL stores (SQLite, Postgres) implement it, with an index
// for each filter (migration "lists").
type ListStore interface {
	ListAccounts(ctx context.Context, p Page) ([]Account, error)
	// ListWorkspaces lists the workspaces of account accountID, or of every account when "".
	ListWorkspaces(ctx context.Context, accountID string, p Page) ([]Workspace, error)
	ListKeys(ctx context.Context, f KeyFilter, p Page) ([]Key, error)
	// ListPolicies lists the policies of account accountID, or of every account when "".
	ListPolicies(ctx context.Context, accountID string, p Page) ([]Policy, error)
	// ListConnections lists the connections of key keyID, or of every key when "".
	ListConnections(ctx context.Context, keyID string, revoked Revoked, p Page) ([]Connection, error)
}
