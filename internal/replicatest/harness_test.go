// Package replicatest runs several real `switchyard serve` processes on one Postgres store and
// one Redis admission store, and checks that they act as one gateway (issue 10; docs/deploy.md):
// changes reach every replica within a second, a replica killed under load leaves every served
// request in the ledger, and the ledger reconciles. It needs SWITCHYARD_TEST_POSTGRES_URL and
// SWITCHYARD_TEST_REDIS_URL (.ci/run sets both) and skips without them.
package replicatest

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver

	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/fakeprovider"
	"github.com/switchyard-gw/switchyard/internal/store/storetest"
)

// EnvRedisURL names the Redis of the admission store, e.g. redis://127.0.0.1:6379/0. Every
// account and key of these tests has a fresh random id, so their Redis keys never meet another
// test's.
const EnvRedisURL = "SWITCHYARD_TEST_REDIS_URL"

const adminToken = "adm-replicas-secret-token"

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
	binDir    string
)

// binary builds ./cmd/switchyard once per test process (without -race: the replicas are the
// system under test, the race detector runs on the package tests) and returns its path.
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "switchyard-replicatest-")
		if buildErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "switchyard")
		out, err := exec.Command("go", "build", "-o", binPath, "github.com/switchyard-gw/switchyard/cmd/switchyard").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// cluster is N replicas of one configuration (one store, one admission store, one emulated
// provider), each on its own port.
type cluster struct {
	bin      string
	dir      string
	pgURL    string
	db       *sql.DB // the store's schema, for the ledger checks
	provider *fakeprovider.Provider
	reps     []*replica
}

// replica is one `switchyard serve` process; a restart keeps its port and configuration.
type replica struct {
	i    int
	url  string
	cfg  string
	log  string
	cmd  *exec.Cmd
	done chan struct{}
}

// newCluster skips t without the two stores, then starts n replicas and waits until each
// answers /readyz. Their reload poll is an hour: only the change feed can carry a change.
func newCluster(t *testing.T, n int) *cluster {
	t.Helper()
	return newClusterOn(t, n, os.Getenv(EnvRedisURL))
}

// newClusterOn is newCluster with the admission store at redisURL (a Redis of the test's own,
// which it may flush or kill; "" skips the test like newCluster).
func newClusterOn(t *testing.T, n int, redisURL string) *cluster {
	t.Helper()
	if os.Getenv(storetest.EnvPostgresURL) == "" || redisURL == "" {
		t.Skipf("the replica tests need %s and %s (.ci/run sets both): skipped", storetest.EnvPostgresURL, EnvRedisURL)
	}
	c := &cluster{bin: binary(t), dir: t.TempDir(), pgURL: storetest.PostgresURL(t)}
	db, err := sql.Open("pgx", c.pgURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	c.db = db
	c.provider = fakeprovider.New("oa", catalog.OpenAI)
	c.provider.DisableControl()
	c.provider.SetDefault(fakeprovider.Behavior{Delay: 20 * time.Millisecond})
	ps := httptest.NewServer(c.provider)
	t.Cleanup(ps.Close)

	for i := range n {
		port := freePort(t)
		r := &replica{i: i, url: "http://127.0.0.1:" + port, cfg: filepath.Join(c.dir, fmt.Sprintf("r%d.yaml", i)),
			log: filepath.Join(c.dir, fmt.Sprintf("r%d.log", i))}
		yaml := fmt.Sprintf(`server:
  listen: "127.0.0.1:%s"
  shutdown_grace: 2s
store:
  url: %q
  reload_interval: 1h
admission:
  url: %q
auth: {required: true}
admin:
  token: %s
models:
  - id: gpt-4o-mini
    price: {input: 1, output: 100}
deployments:
  - name: oa
    provider: openai
    dialect: openai
    base_url: "%s/v1"
    api_key: sk-emulated
    routes: [{model: gpt-4o-mini}]
`, port, c.pgURL, redisURL, adminToken, ps.URL)
		if err := os.WriteFile(r.cfg, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		c.reps = append(c.reps, r)
	}
	var wg sync.WaitGroup
	for _, r := range c.reps {
		wg.Go(func() { c.start(t, r) })
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, r := range c.reps {
			c.kill(r)
		}
		if t.Failed() {
			for _, r := range c.reps {
				b, _ := os.ReadFile(r.log)
				t.Logf("replica %d log:\n%s", r.i, tail(b, 4000))
			}
		}
	})
	if t.Failed() {
		t.FailNow()
	}
	return c
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// start runs r's process and waits (up to 60 s) until it answers /readyz; it reports failures
// with t.Errorf (it runs on several goroutines at once).
func (c *cluster) start(t *testing.T, r *replica) {
	logf, err := os.OpenFile(r.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Error(err)
		return
	}
	cmd := exec.Command(c.bin, "serve", "--config", r.cfg)
	// One working directory for all: the replicas share the default ledger journal directory
	// (switchyard-ledger), as replicas of one host do, and replay each other's after a kill.
	cmd.Dir = c.dir
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		t.Errorf("starting replica %d: %v", r.i, err)
		return
	}
	r.cmd, r.done = cmd, make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(r.done) }()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-r.done:
			b, _ := os.ReadFile(r.log)
			t.Errorf("replica %d exited at start:\n%s", r.i, tail(b, 4000))
			return
		default:
		}
		resp, err := http.Get(r.url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("replica %d not ready within 60 s", r.i)
}

// kill ends r's process with SIGKILL (kill -9: no drain, nothing flushed) and waits for it.
func (c *cluster) kill(r *replica) {
	if r.cmd == nil {
		return
	}
	_ = r.cmd.Process.Kill()
	<-r.done
	r.cmd = nil
}

// admin sends an admin API request to replica r and decodes the JSON answer into out (nil:
// ignored), failing t unless the status is want.
func (c *cluster) admin(t *testing.T, r *replica, want int, method, path, body string, out any) {
	t.Helper()
	req, _ := http.NewRequest(method, r.url+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+adminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %d %s; want %d", method, path, resp.StatusCode, b, want)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, path, err, b)
		}
	}
}

// account creates an account with settings (a JSON object) through replica 0, credits it
// creditUSD ("" credits nothing) and creates a key of it with keySettings; it returns the
// account id, the key id and its secret.
func (c *cluster) account(t *testing.T, settings, creditUSD, keySettings string) (acct, keyID, secret string) {
	t.Helper()
	var a struct{ ID string }
	c.admin(t, c.reps[0], 201, "POST", "/admin/v1/accounts", `{"name":"replicas","settings":`+settings+`}`, &a)
	if creditUSD != "" {
		c.admin(t, c.reps[0], 200, "POST", "/admin/v1/accounts/"+a.ID+"/credits", `{"amount_usd":`+creditUSD+`}`, nil)
	}
	var k struct{ ID, Secret string }
	c.admin(t, c.reps[0], 201, "POST", "/admin/v1/keys", `{"account_id":"`+a.ID+`","name":"k","settings":`+keySettings+`}`, &k)
	return a.ID, k.ID, k.Secret
}

// modelsStatus is the status of GET /v1/models with secret on r (an authenticated request that
// calls no provider), or 0 when r does not answer.
func modelsStatus(client *http.Client, r *replica, secret string) int {
	req, _ := http.NewRequest("GET", r.url+"/v1/models", nil)
	req.Header.Set("Authorization", "Bearer "+secret)
	resp, err := client.Do(req)
	if err != nil {
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// chatResult is one chat completion as the caller saw it.
type chatResult struct {
	replica   int
	status    int    // 0: the connection failed (a killed replica)
	requestID string // x-request-id
	served    bool   // 200 with a complete answer
}

// chat sends one non-streaming chat completion to r with secret.
func chat(ctx context.Context, client *http.Client, r *replica, secret string) chatResult {
	body := `{"model":"gpt-4o-mini","max_tokens":5,"messages":[{"role":"user","content":"Hello"}]}`
	req, _ := http.NewRequestWithContext(ctx, "POST", r.url+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+secret)
	req.Header.Set("Content-Type", "application/json")
	res := chatResult{replica: r.i}
	resp, err := client.Do(req)
	if err != nil {
		return res
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	res.status, res.requestID = resp.StatusCode, resp.Header.Get("X-Request-Id")
	res.served = err == nil && resp.StatusCode == 200 && bytes.Contains(b, []byte(`"finish_reason"`))
	return res
}

// ledgerRow is one ledger entry of an account, read from the store.
type ledgerRow struct {
	requestID, kind, mark, replica string
	micro                          int64
}

func (c *cluster) ledger(t *testing.T, acct string) []ledgerRow {
	t.Helper()
	rows, err := c.db.Query(`SELECT request_id, kind, mark, replica, amount_micro_usd FROM ledger WHERE account_id = $1 ORDER BY id`, acct)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []ledgerRow
	for rows.Next() {
		var r ledgerRow
		if err := rows.Scan(&r.requestID, &r.kind, &r.mark, &r.replica, &r.micro); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// openReserves counts the account's reserves not yet ended.
func (c *cluster) openReserves(t *testing.T, acct string) int {
	t.Helper()
	var n int
	if err := c.db.QueryRow(`SELECT COUNT(*) FROM ledger_open o JOIN ledger l ON l.request_id = o.request_id AND l.kind = 'reserve'
        WHERE l.account_id = $1`, acct).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func (c *cluster) balance(t *testing.T, acct string) int64 {
	t.Helper()
	var b int64
	if err := c.db.QueryRow(`SELECT balance_micro_usd FROM accounts WHERE id = $1`, acct).Scan(&b); err != nil {
		t.Fatal(err)
	}
	return b
}
