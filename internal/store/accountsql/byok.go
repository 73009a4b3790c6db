package accountsql

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/switchyard-gw/switchyard/internal/accounts"
)

const (
	policyCols     = `id, account_id, name, CAST("order" AS TEXT), funding, attempt_limit, created_at`
	connectionCols = `id, key_id, provider, dialect, base_url, api_key, CAST(models AS TEXT), created_at, revoked_at`
)

func jsonList(v []string) (string, error) {
	if v == nil {
		v = []string{}
	}
	b, err := json.Marshal(v)
	return string(b), err
}

func scanPolicy(r scanner) (*accounts.Policy, error) {
	var p accounts.Policy
	var order, funding string
	var created sql.NullInt64
	if err := r.Scan(&p.ID, &p.AccountID, &p.Name, &order, &funding, &p.AttemptLimit, &created); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(order), &p.Order); err != nil {
		return nil, fmt.Errorf("policy %s: stored order: %w", p.ID, err)
	}
	if p.Order == nil {
		p.Order = []string{}
	}
	p.Funding, p.CreatedAt = accounts.Funding(funding), fromNanos(created)
	return &p, nil
}

func scanConnection(r scanner) (*accounts.Connection, error) {
	var c accounts.Connection
	var models string
	var created, revoked sql.NullInt64
	if err := r.Scan(&c.ID, &c.KeyID, &c.Provider, &c.Dialect, &c.BaseURL, &c.APIKey, &models, &created, &revoked); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(models), &c.Models); err != nil {
		return nil, fmt.Errorf("connection %s: stored models: %w", c.ID, err)
	}
	if c.Models == nil {
		c.Models = []string{}
	}
	c.CreatedAt, c.RevokedAt = fromNanos(created), fromNanos(revoked)
	return &c, nil
}

// CreatePolicy implements accounts.PolicyStore.
func (s *Store) CreatePolicy(ctx context.Context, p *accounts.Policy) error {
	funding, err := accounts.ParseFunding(string(p.Funding))
	if err != nil {
		return wrap("creating policy", err)
	}
	order, err := jsonList(p.Order)
	if err != nil {
		return wrap("creating policy", err)
	}
	return wrap("creating policy", s.inTx(ctx, func(tx *sql.Tx) error {
		if ok, err := s.exists(ctx, tx, `SELECT 1 FROM accounts WHERE id = ?`+s.forShare(), p.AccountID); err != nil || !ok {
			return notFoundErr(ok, err, "account")
		}
		if ok, err := s.exists(ctx, tx, `SELECT 1 FROM policies WHERE id = ?`, p.ID); err != nil || ok {
			return existsErr(ok, err)
		}
		_, err := tx.ExecContext(ctx, s.q(`INSERT INTO policies (id, account_id, name, "order", funding, attempt_limit, created_at)
            VALUES (?, ?, ?, ?, ?, ?, ?)`), p.ID, p.AccountID, p.Name, order, string(funding), p.AttemptLimit, createdAt(p.CreatedAt))
		if err != nil {
			return err
		}
		return s.notify(ctx, tx, accounts.ChangePolicy, p.ID)
	}))
}

// Policy implements accounts.PolicyStore.
func (s *Store) Policy(ctx context.Context, id string) (*accounts.Policy, error) {
	p, err := one(s.rdb.QueryRowContext(ctx, s.q(`SELECT `+policyCols+` FROM policies WHERE id = ?`), id), scanPolicy)
	return p, wrap("reading policy", err)
}

// Policies implements accounts.PolicyStore.
func (s *Store) Policies(ctx context.Context) ([]accounts.Policy, error) {
	return list(ctx, s.rdb, `SELECT `+policyCols+` FROM policies`, "reading policies", scanPolicy)
}

// AccountPolicies implements accounts.PolicyStore, through the index policies_account_created.
func (s *Store) AccountPolicies(ctx context.Context, accountID string) ([]accounts.Policy, error) {
	ps, err := list(ctx, s.rdb, s.q(`SELECT `+policyCols+` FROM policies WHERE account_id = ? ORDER BY created_at, id`),
		"reading policies", scanPolicy, accountID)
	if ps == nil && err == nil {
		ps = []accounts.Policy{}
	}
	return ps, err
}

// UpdatePolicy implements accounts.PolicyStore.
func (s *Store) UpdatePolicy(ctx context.Context, id string, f func(*accounts.Policy) error) (*accounts.Policy, error) {
	var out *accounts.Policy
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		p, err := one(tx.QueryRowContext(ctx, s.q(`SELECT `+policyCols+` FROM policies WHERE id = ?`+s.forUpdate), id), scanPolicy)
		if err != nil {
			return err
		}
		kept := *p
		if err := f(p); err != nil {
			return err
		}
		p.ID, p.AccountID, p.CreatedAt = kept.ID, kept.AccountID, kept.CreatedAt
		if p.Funding, err = accounts.ParseFunding(string(p.Funding)); err != nil {
			return err
		}
		if p.Order == nil {
			p.Order = []string{}
		}
		order, err := jsonList(p.Order)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.q(`UPDATE policies SET name = ?, "order" = ?, funding = ?, attempt_limit = ? WHERE id = ?`),
			p.Name, order, string(p.Funding), p.AttemptLimit, id); err != nil {
			return err
		}
		out = p
		return s.notify(ctx, tx, accounts.ChangePolicy, id)
	})
	if err != nil {
		return nil, wrap("updating policy", err)
	}
	return out, nil
}

// CreateConnection implements accounts.PolicyStore. The API key is stored as given (in the
// clear in this version).
func (s *Store) CreateConnection(ctx context.Context, c *accounts.Connection) error {
	models, err := jsonList(c.Models)
	if err != nil {
		return wrap("creating connection", err)
	}
	return wrap("creating connection", s.inTx(ctx, func(tx *sql.Tx) error {
		if ok, err := s.exists(ctx, tx, `SELECT 1 FROM keys WHERE id = ?`+s.forShare(), c.KeyID); err != nil || !ok {
			return notFoundErr(ok, err, "key")
		}
		if ok, err := s.exists(ctx, tx, `SELECT 1 FROM connections WHERE id = ?`, c.ID); err != nil || ok {
			return existsErr(ok, err)
		}
		_, err := tx.ExecContext(ctx, s.q(`INSERT INTO connections (id, key_id, provider, dialect, base_url, api_key, models, created_at, revoked_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`), c.ID, c.KeyID, c.Provider, c.Dialect, c.BaseURL, c.APIKey, models,
			createdAt(c.CreatedAt), nanos(c.RevokedAt))
		if err != nil {
			return err
		}
		return s.notify(ctx, tx, accounts.ChangeConnection, c.ID)
	}))
}

// DeletePolicy implements accounts.PolicyStore: one DELETE of the policy's row (and its
// change notice, in the same transaction).
func (s *Store) DeletePolicy(ctx context.Context, id string) error {
	return wrap("deleting policy", s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, s.q(`DELETE FROM policies WHERE id = ?`), id)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("no policy %q: %w", id, accounts.ErrNotFound)
		}
		return s.notify(ctx, tx, accounts.ChangePolicy, id)
	}))
}

// RevokeConnection implements accounts.PolicyStore: one UPDATE of the connection's row while it
// is the key's and active.
func (s *Store) RevokeConnection(ctx context.Context, keyID, connID string, at time.Time) error {
	return wrap("revoking connection", s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, s.q(`UPDATE connections SET revoked_at = ? WHERE id = ? AND key_id = ? AND revoked_at IS NULL`),
			createdAt(at), connID, keyID)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("no active connection %q of key %q: %w", connID, keyID, accounts.ErrNotFound)
		}
		return s.notify(ctx, tx, accounts.ChangeConnection, connID)
	}))
}

// ActiveConnections implements accounts.PolicyStore.
func (s *Store) ActiveConnections(ctx context.Context) ([]accounts.Connection, error) {
	return list(ctx, s.rdb, `SELECT `+connectionCols+` FROM connections WHERE revoked_at IS NULL`, "reading connections", scanConnection)
}

func list[T any](ctx context.Context, db *sql.DB, query, what string, scan func(scanner) (*T, error), args ...any) ([]T, error) {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, wrap(what, err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, wrap(what, err)
		}
		out = append(out, *v)
	}
	return out, wrap(what, rows.Err())
}
