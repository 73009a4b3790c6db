package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/switchyard-gw/switchyard/internal/accounts"
	"github.com/switchyard-gw/switchyard/internal/audit"
	"github.com/switchyard-gw/switchyard/internal/store/postgres"
	"github.com/switchyard-gw/switchyard/internal/store/sqlite"
)

// DefaultURL is the store used when the configuration names none: switchyard.db in the
// working directory.
const DefaultURL = "sqlite://switchyard.db"

// Store is an open persistent store: every consumer's interface, plus health and lifetime.
type Store interface {
	audit.Store
	accounts.Store
	// Ping reports whether the store answers, for /readyz.
	Ping(ctx context.Context) error
	// Close releases the store; call it once, after the last use.
	Close() error
}

var (
	_ Store = (*sqlite.DB)(nil)
	_ Store = (*postgres.DB)(nil)
)

// Open opens the store named by url, creating and migrating it as needed; "" means
// DefaultURL. sqlite://path.db opens the embedded SQLite store (sqlite.Open); postgres://... and
// postgresql://... connect to Postgres (postgres.Open), ctx bounding the connection and
// migrations. Schemes are case-sensitive. It returns an error for any other scheme and for
// whatever the backend's Open returns; no error contains a postgres URL (it may carry a
// password).
func Open(ctx context.Context, url string) (Store, error) {
	if err := Check(url); err != nil {
		return nil, err
	}
	if url == "" {
		url = DefaultURL
	}
	scheme, _, ok := strings.Cut(url, "://")
	if !ok {
		// The url is not echoed: a mistyped postgres URL may carry a password.
		return nil, fmt.Errorf("store: url has no scheme (want sqlite://path.db or postgres://...)")
	}
	switch scheme {
	case "sqlite":
		db, err := sqlite.Open(ctx, url)
		if err != nil {
			return nil, err
		}
		return db, nil
	case "postgres", "postgresql":
		db, err := postgres.Open(ctx, url)
		if err != nil {
			return nil, err
		}
		return db, nil
	default:
		return nil, fmt.Errorf("store: unsupported url scheme %s:// (want sqlite:// or postgres://)", scheme)
	}
}

// Check reports whether url names a store this build can open, without opening it or
// connecting (for `switchyard check`): the scheme is supported and, for SQLite, the file's
// directory exists; a Postgres URL must parse (postgres.CheckURL), but whether the server
// answers is not checked. The error never contains a postgres URL.
func Check(url string) error {
	if url == "" {
		url = DefaultURL
	}
	scheme, rest, ok := strings.Cut(url, "://")
	if !ok {
		return fmt.Errorf("store: url has no scheme (want sqlite://path.db or postgres://...)")
	}
	switch scheme {
	case "sqlite":
		if rest == ":memory:" {
			return nil
		}
		dir := filepath.Dir(rest)
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return fmt.Errorf("store: the directory %q of the SQLite file does not exist", dir)
		}
		return nil
	case "postgres", "postgresql":
		return postgres.CheckURL(url)
	}
	return fmt.Errorf("store: unsupported url scheme %s:// (want sqlite:// or postgres://)", scheme)
}
