package accounts

import (
	"context"
	"fmt"
	"time"
)

// Funding is where a routing policy's deployments come from (R-KEY-5, R-POLICY).
type Funding string

// The funding modes. The zero value is not valid; [ParseFunding] maps "" to FundingHouse.
const (
	// FundingHouse: the catalog's deployments only, billed at the house price.
	FundingHouse Funding = "house"
	// FundingBYOK: the key's own connections only; nothing is billed at the house price.
	FundingBYOK Funding = "byok"
	// FundingBYOKWithHouseFallback: the key's connections first, then the house deployments.
	FundingBYOKWithHouseFallback Funding = "byok_with_house_fallback"
)

// ParseFunding reads a policy's funding: "" and "house" are FundingHouse, "byok" and
// "byok_with_house_fallback" the others; anything else is an error.
func ParseFunding(s string) (Funding, error) {
	switch Funding(s) {
	case "", FundingHouse:
		return FundingHouse, nil
	case FundingBYOK, FundingBYOKWithHouseFallback:
		return Funding(s), nil
	}
	return "", fmt.Errorf("funding must be house, byok or byok_with_house_fallback, not %q", s)
}

// ConnectionPrefix starts the deployment name of a BYOK connection: "byok:" + its id.
const ConnectionPrefix = "byok:"

// Policy is a saved routing policy of an account (R-POLICY; contract.md "Admin API"). A key or
// an account attaches it by id with settings.policy.
type Policy struct {
	ID        string // opaque, "pol_..."
	AccountID string
	Name      string
	// Order is the saved deployment order (R-ORDER-7): deployment names, "byok:<id>" for a
	// connection, tried first in this order. Never nil once stored.
	Order []string
	// Funding is FundingHouse, FundingBYOK or FundingBYOKWithHouseFallback.
	Funding Funding
	// AttemptLimit caps a request's attempts; 0 is unlimited.
	AttemptLimit int
	CreatedAt    time.Time
}

// Connection is a key's own provider credential (BYOK, R-KEY-5): an extra deployment named
// ConnectionPrefix + ID, used under a policy whose funding is byok or byok_with_house_fallback.
type Connection struct {
	ID       string // opaque, "conn_..."
	KeyID    string
	Provider string
	Dialect  string // "openai" or "anthropic"
	BaseURL  string
	// APIKey is the provider credential. It is stored in the clear in this version, sent only
	// to BaseURL, and never returned by the admin API nor logged.
	APIKey string
	// Models are the catalog model ids the connection serves. Never nil once stored.
	Models []string
	// RevokedAt is when the connection was revoked; the zero time while it is active.
	RevokedAt time.Time
	CreatedAt time.Time
}

// Deployment is the connection's deployment name: "byok:" + its id.
func (c *Connection) Deployment() string { return ConnectionPrefix + c.ID }

// PolicyStore is what routing policies and BYOK connections need of the persistent store. The
// SQL stores implement it next to [Store]; methods return the context's error when ctx is done.
type PolicyStore interface {
	// CreatePolicy stores p (nil Order stored as []). ErrNotFound when its account does not
	// exist, ErrExists when the id is taken; an error for an invalid Funding.
	CreatePolicy(ctx context.Context, p *Policy) error
	// Policy returns one policy by id, or ErrNotFound.
	Policy(ctx context.Context, id string) (*Policy, error)
	// Policies returns every policy, in no particular order.
	Policies(ctx context.Context) ([]Policy, error)
	// AccountPolicies returns the policies of the account accountID, oldest first (by
	// CreatedAt, then ID): an empty slice when it has none, including when no such account
	// exists (no ErrNotFound).
	AccountPolicies(ctx context.Context, accountID string) ([]Policy, error)
	// UpdatePolicy reads the policy, calls f on it and writes back Name, Order (nil stored as
	// []), Funding and AttemptLimit, all in one transaction that holds the row (concurrent
	// updates serialise); ID, AccountID and CreatedAt are kept whatever f does. It returns the
	// policy written, ErrNotFound, f's error (nothing is written then), or an error for an
	// invalid Funding ("" is stored as FundingHouse, as by CreatePolicy).
	UpdatePolicy(ctx context.Context, id string, f func(*Policy) error) (*Policy, error)
	// DeletePolicy removes the policy id. ErrNotFound when there is none. Settings that still
	// name it are the caller's to check first (a missing policy routes as no policy).
	DeletePolicy(ctx context.Context, id string) error
	// CreateConnection stores c (nil Models stored as []). ErrNotFound when its key does not
	// exist, ErrExists when the id is taken.
	CreateConnection(ctx context.Context, c *Connection) error
	// RevokeConnection sets the RevokedAt of the connection connID of the key keyID to at, so
	// that ActiveConnections leaves it out from then on. ErrNotFound when no such connection
	// belongs to that key, or it is revoked already (its RevokedAt is kept).
	RevokeConnection(ctx context.Context, keyID, connID string, at time.Time) error
	// ActiveConnections returns every connection not revoked (API keys included: for the
	// request path only), in no particular order.
	ActiveConnections(ctx context.Context) ([]Connection, error)
}
