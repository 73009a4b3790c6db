package accountsql

import (
	"context"
	"database/sql"
	"time"

	"github.com/switchyard-gw/switchyard/internal/accounts"
)

var _ accounts.RoutableStore = (*Store)(nil)

// RoutableOverrides implements accounts.RoutableStore.
func (s *Store) RoutableOverrides(ctx context.Context) ([]accounts.RoutableOverride, error) {
	return list(ctx, s.rdb, `SELECT deployment, model, disabled, updated_at FROM routable_overrides`,
		"reading routable overrides", func(sc scanner) (*accounts.RoutableOverride, error) {
			var o accounts.RoutableOverride
			var at sql.NullInt64
			if err := sc.Scan(&o.Deployment, &o.Model, &o.Disabled, &at); err != nil {
				return nil, err
			}
			o.UpdatedAt = fromNanos(at)
			return &o, nil
		})
}

// SetRoutable implements accounts.RoutableStore: one upsert and its change notice
// (ChangeRoutable, id the deployment) in one transaction.
func (s *Store) SetRoutable(ctx context.Context, o accounts.RoutableOverride) error {
	if o.UpdatedAt.IsZero() {
		o.UpdatedAt = time.Now()
	}
	return wrap("storing routable override", s.inTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, s.q(`INSERT INTO routable_overrides (deployment, model, disabled, updated_at) VALUES (?, ?, ?, ?)
            ON CONFLICT (deployment, model) DO UPDATE SET disabled = excluded.disabled, updated_at = excluded.updated_at`),
			o.Deployment, o.Model, o.Disabled, o.UpdatedAt.UnixNano())
		if err != nil {
			return err
		}
		return s.notify(ctx, tx, accounts.ChangeRoutable, o.Deployment)
	}))
}

// ClearRoutable implements accounts.RoutableStore: one DELETE and its change notice.
func (s *Store) ClearRoutable(ctx context.Context, deployment, model string) error {
	return wrap("clearing routable override", s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM routable_overrides WHERE deployment = ? AND model = ?`), deployment, model); err != nil {
			return err
		}
		return s.notify(ctx, tx, accounts.ChangeRoutable, deployment)
	}))
}
