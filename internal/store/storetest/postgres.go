package storetest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"net/url"
	"os"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
)

// EnvPostgresURL is the environment variable naming the Postgres server of the Postgres store
// tests, e.g. postgres://postgres@127.0.0.1:5432/switchyard_ci?sslmode=disable. .ci/run sets
// it to a database it creates for the run.
const EnvPostgresURL = "SWITCHYARD_TEST_POSTGRES_URL"

// SkipMessage is the reason a Postgres test is skipped when EnvPostgresURL is unset.
const SkipMessage = EnvPostgresURL + " is not set: Postgres store tests skipped; .ci/run sets it"

// PostgresURL returns a URL of the server named by EnvPostgresURL whose connections use a new,
// empty schema of their own (a random name, set as search_path), so that tests never see each
// other's tables. The schema is dropped, with everything in it, by a t.Cleanup registered
// here: close the store in a cleanup registered afterwards. It skips t when EnvPostgresURL is
// unset and fails it when the server cannot create the schema.
func PostgresURL(t testing.TB) string {
	t.Helper()
	base := os.Getenv(EnvPostgresURL)
	if base == "" {
		t.Skip(SkipMessage)
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("%s is not a URL: %v", EnvPostgresURL, err)
	}
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	schema := "switchyard_test_" + strings.ToLower(rand.Text()) // letters and digits only
	if _, err := admin.ExecContext(context.Background(), "CREATE SCHEMA "+schema); err != nil {
		admin.Close()
		t.Fatalf("creating test schema: %v", err)
	}
	t.Cleanup(func() {
		defer admin.Close()
		if _, err := admin.ExecContext(context.Background(), "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("dropping test schema %s: %v", schema, err)
		}
	})
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}
