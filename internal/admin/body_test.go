package admin_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/switchyard-gw/switchyard/internal/accounts"
	"github.com/switchyard-gw/switchyard/internal/admin"
	"github.com/switchyard-gw/switchyard/internal/audit"
	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/store/postgres"
	"github.com/switchyard-gw/switchyard/internal/store/sqlite"
	"github.com/switchyard-gw/switchyard/internal/store/storetest"
)

const token = "adm-test-token"

// newAPI serves the admin API over a fresh in-memory SQLite store, with a real key cache.
func newAPI(t *testing.T) (http.Handler, accounts.Store) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), "sqlite://:memory:")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return apiOn(st), st
}

// apiOn serves the admin API over st, with a real key cache, an empty catalog and, when st is
// an audit store too, the call log of an audit.Recorder over it (not running: records are
// written to st directly).
func apiOn(st accounts.Store) http.Handler {
	o := admin.Options{Token: token, Store: st, Cache: accounts.NewCache(st, accounts.CacheOptions{}),
		Catalog: &catalog.Catalog{}, NotFound: http.NotFoundHandler()}
	if as, ok := st.(audit.Store); ok {
		o.Audit = audit.NewRecorder(as, audit.Options{})
	}
	return admin.New(o)
}

// eachStore runs f on a fresh SQLite file store and, with SWITCHYARD_TEST_POSTGRES_URL set, a
// fresh Postgres schema.
func eachStore(t *testing.T, f func(t *testing.T, h http.Handler, st accounts.Store)) {
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		st, err := sqlite.Open(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "sy.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		f(t, apiOn(st), st)
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		url := storetest.PostgresURL(t)
		st, err := postgres.Open(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		f(t, apiOn(st), st)
	})
}

func do(t *testing.T, h http.Handler, method, path, body string) (int, gjson.Result) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code, gjson.ParseBytes(rec.Body.Bytes())
}

// TestBodyDepth: an admin body nested deeper than dialect.MaxDepth (128) is 400 before any
// parse, naming the limit, and changes nothing; 128 levels are parsed (and refused for what
// they say, not for their depth); a body over 1 MiB is 413.
func TestBodyDepth(t *testing.T) {
	t.Parallel()
	h, st := newAPI(t)
	nest := func(n int) string { return strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n) }
	// the body object is level 1, settings level 2: 127 more levels inside settings.limits is 129
	code, b := do(t, h, "POST", "/admin/v1/accounts", `{"name":"deep","settings":{"limits":`+nest(127)+`}}`)
	if code != http.StatusBadRequest || !strings.Contains(b.Get("error.message").Str, "128") {
		t.Fatalf("129 levels: %d %s; want 400 naming the depth limit", code, b.Raw)
	}
	code, b = do(t, h, "POST", "/admin/v1/accounts", `{"name":"deep","settings":{"limits":`+nest(126)+`}}`)
	if code != http.StatusBadRequest || strings.Contains(b.Get("error.message").Str, "128") {
		t.Fatalf("128 levels: %d %s; want a 400 about the settings, not the depth", code, b.Raw)
	}
	code, b = do(t, h, "POST", "/admin/v1/accounts", `{"name":"`+strings.Repeat("x", admin.MaxBody)+`"}`)
	if code != http.StatusRequestEntityTooLarge {
		t.Fatalf("over 1 MiB: %d %s; want 413", code, b.Raw)
	}
	if as, err := st.Accounts(context.Background()); err != nil || len(as) != 0 {
		t.Fatalf("accounts after refused bodies: %v %v; want none", as, err)
	}
	if code, b = do(t, h, "POST", "/admin/v1/accounts", `{"name":"ok"}`); code != http.StatusCreated {
		t.Fatalf("a plain account: %d %s", code, b.Raw)
	}
}
