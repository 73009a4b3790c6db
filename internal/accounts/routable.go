package accounts

import (
	"context"
	"time"
)

// RoutableOverride is an operator's live override of the configuration's disabled flag
// (issue 11 item 3): of a whole deployment when Model is "", else of the route (Deployment,
// Model). It is stored in the shared store so every replica applies it (the reload poll and
// the change feed, ChangeRoutable).
type RoutableOverride struct {
	Deployment string
	// Model is the catalog model id of the route; "" for the deployment.
	Model string
	// Disabled true takes the deployment or route out of routing; false puts it back even when
	// the configuration says disabled: true.
	Disabled  bool
	UpdatedAt time.Time
}

// RoutableStore holds the routable overrides. The SQL stores (SQLite, Postgres) implement it;
// a store without it has no live routable state (the configuration's flags alone).
type RoutableStore interface {
	// RoutableOverrides returns every override, in no particular order.
	RoutableOverrides(ctx context.Context) ([]RoutableOverride, error)
	// SetRoutable stores o, replacing the override of the same (Deployment, Model).
	SetRoutable(ctx context.Context, o RoutableOverride) error
	// ClearRoutable removes the override of (deployment, model), if any: the configuration's
	// flag applies again.
	ClearRoutable(ctx context.Context, deployment, model string) error
}
