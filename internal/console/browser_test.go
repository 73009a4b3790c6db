package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
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

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/switchyard-gw/switchyard/internal/audit"
	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/config"
	"github.com/switchyard-gw/switchyard/internal/fakeprovider"
	"github.com/switchyard-gw/switchyard/internal/server"
	"github.com/switchyard-gw/switchyard/internal/store/sqlite"
)

// ChromiumEnv names the Chromium (or Chrome) executable the browser tests drive; .ci/run sets
// it. Unset, the tests look for /usr/bin/chromium, then chromium, chromium-browser and
// google-chrome on PATH, and skip when none is found.
const ChromiumEnv = "SWITCHYARD_CHROMIUM"

// ScreenshotEnv names the directory the browser tests save their screenshots in (never in git:
// docs/console.md); unset, a fresh temporary directory, named in the test log (go test -v).
const ScreenshotEnv = "SWITCHYARD_SCREENSHOT_DIR"

const adminToken = "console-admin-token-0123456789"

// stepTimeout bounds one step of a browser test (a navigation, a wait, a poll): a failing step
// fails its subtest, not the whole run.
const stepTimeout = 40 * time.Second

// browser is the one headless Chromium of the test binary, started by the first test that needs
// it and stopped by TestMain.
var browser struct {
	once sync.Once
	ctx  context.Context // a browser context; tabs are chromedp.NewContext(ctx)
	stop func()
	skip string // why there is no browser
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if browser.stop != nil {
		browser.stop()
	}
	os.Exit(code)
}

// chromiumPath finds the browser; "" with the reason when there is none.
func chromiumPath() (string, string, error) {
	if p := os.Getenv(ChromiumEnv); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", "", fmt.Errorf("%s=%s: %v", ChromiumEnv, p, err)
		}
		return p, "", nil
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium", "", nil
	}
	for _, n := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(n); err == nil {
			return p, "", nil
		}
	}
	return "", "no Chromium found (set " + ChromiumEnv + ", or apt-get install chromium): the browser tests are skipped", nil
}

// startBrowser returns the shared browser context, starting Chromium on first use; it skips t
// when there is no Chromium.
func startBrowser(t *testing.T) context.Context {
	t.Helper()
	browser.once.Do(func() {
		path, skip, err := chromiumPath()
		if err != nil || skip != "" {
			browser.skip, browser.err = skip, err
			return
		}
		dir, err := os.MkdirTemp("", "switchyard-chromium-")
		if err != nil {
			browser.err = err
			return
		}
		opts := []chromedp.ExecAllocatorOption{
			chromedp.ExecPath(path), chromedp.UserDataDir(dir),
			chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
			chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
			chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
			chromedp.Flag("disable-extensions", true), chromedp.Flag("disable-default-apps", true),
			chromedp.Flag("disable-dev-shm-usage", true), chromedp.WindowSize(1280, 900),
		}
		actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
		bctx, bcancel := chromedp.NewContext(actx)
		if err := chromedp.Do(bctx); err != nil {
			bcancel()
			acancel()
			_ = os.RemoveAll(dir)
			browser.err = fmt.Errorf("start %s: %w", path, err)
			return
		}
		browser.ctx = bctx
		browser.stop = func() { bcancel(); acancel(); _ = os.RemoveAll(dir) }
	})
	if browser.err != nil {
		t.Fatalf("browser: %v", browser.err)
	}
	if browser.skip != "" {
		t.Skip(browser.skip)
	}
	return browser.ctx
}

// pageEvents collects what the page reported to its console: console.error and
// console.warn calls, uncaught exceptions, and error log entries (network entries aside: a 409
// the test provokes is logged by Chromium as a failed resource, which is the point).
type pageEvents struct {
	mu   sync.Mutex
	errs []string
}

func (p *pageEvents) listen(ev any) {
	var msg string
	switch e := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeWarning || e.Type == runtime.ConsoleAPICalledTypeAssert {
			var parts []string
			for _, a := range e.Args {
				parts = append(parts, string(a.Value)+a.Description)
			}
			msg = fmt.Sprintf("console.%s: %s", e.Type, strings.Join(parts, " "))
		}
	case *runtime.EventExceptionThrown:
		msg = "exception: " + e.ExceptionDetails.Text
		if e.ExceptionDetails.Exception != nil {
			msg += " " + e.ExceptionDetails.Exception.Description
		}
	case *cdplog.EventEntryAdded:
		if e.Entry.Level == cdplog.EntryLevelError && e.Entry.Source != cdplog.EntrySourceNetwork {
			msg = fmt.Sprintf("log %s: %s (%s)", e.Entry.Source, e.Entry.Text, e.Entry.URL)
		}
	}
	if msg != "" {
		p.mu.Lock()
		p.errs = append(p.errs, msg)
		p.mu.Unlock()
	}
}

// take returns and forgets what was collected.
func (p *pageEvents) take() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.errs
	p.errs = nil
	return e
}

// consoleGateway is the real server with two emulated OpenAI deployments of one model
// (oa-primary, cheaper, tried first; oa-backup), admin.token set and keys in SQLite.
type consoleGateway struct {
	URL   string
	Fakes map[string]*fakeprovider.Provider
}

const consoleYAML = `
admin: {token: ` + adminToken + `}
routing:
  timeouts: {headers: 5s, stream_headers: 5s, stream_idle: 5s}
models:
  - id: gpt-4o-mini
deployments:
  - name: oa-primary
    provider: openai
    dialect: openai
    base_url: "{{oa-primary}}"
    api_key: sk-house-primary
    routes: [{model: gpt-4o-mini, price: {input: 0.15, output: 0.6}}]
  - name: oa-backup
    provider: reseller
    dialect: openai
    base_url: "{{oa-backup}}"
    api_key: sk-house-backup
    routes: [{model: gpt-4o-mini, price: {input: 0.2, output: 0.8}}]
`

func startConsoleGateway(t *testing.T, yaml string) *consoleGateway {
	t.Helper()
	g := &consoleGateway{Fakes: map[string]*fakeprovider.Provider{}}
	for _, name := range []string{"oa-primary", "oa-backup"} {
		p := fakeprovider.New(name, catalog.OpenAI)
		ts := httptest.NewServer(p)
		t.Cleanup(ts.Close)
		yaml = strings.ReplaceAll(yaml, "{{"+name+"}}", ts.URL+"/v1")
		g.Fakes[name] = p
	}
	cfg, err := config.Parse("console.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(context.Background(), "sqlite://:memory:")
	if err != nil {
		t.Fatal(err)
	}
	rec := audit.NewRecorder(st, audit.Options{FlushInterval: 5 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = rec.Run(ctx) })
	srv, err := server.New(cfg, cat, server.Options{Recorder: rec, Ready: st.Ping, Accounts: st, Logf: t.Logf})
	if err != nil {
		cancel()
		wg.Wait()
		_ = st.Close()
		t.Fatal(err)
	}
	wg.Go(func() { _ = srv.Run(ctx) })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := srv.HTTPServer()
	go func() { _ = hs.Serve(srv.Listener(ln)) }()
	g.URL = "http://" + ln.Addr().String()
	t.Cleanup(func() {
		sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer scancel()
		_ = hs.Shutdown(sctx)
		srv.Close()
		cancel()
		wg.Wait()
		_ = st.Close()
	})
	return g
}

// admin calls the admin API with the token; out, when not nil, receives the JSON answer.
func (g *consoleGateway) admin(t *testing.T, method, path string, body any, out any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, g.URL+path, rd)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
	}
}

// chat sends one chat completion with the official OpenAI SDK and key secret; it returns the
// request id and the error.
func (g *consoleGateway) chat(secret string) (string, error) {
	c := openai.NewClient(option.WithBaseURL(g.URL+"/v1/"), option.WithAPIKey(secret), option.WithMaxRetries(0))
	var raw *http.Response
	_, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:    "gpt-4o-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello")},
	}, option.WithResponseInto(&raw))
	if raw == nil {
		return "", err
	}
	return raw.Header.Get("X-Request-Id"), err
}

type idOnly struct {
	ID     string `json:"id"`
	Secret string `json:"secret"`
}

// screenshots is the directory of this run's screenshots.
func screenshots(t *testing.T) string {
	t.Helper()
	dir := os.Getenv(ScreenshotEnv)
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "switchyard-console-screenshots-"); err != nil {
			t.Fatal(err)
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots in %s", dir)
	return dir
}

// TestConsoleMount: on the real gateway, the console is the gateway's 404 without admin.token;
// with it, the admin token as a bearer is no session (the console's data needs the cookie), and
// the operator's plan is served through the console.
func TestConsoleMount(t *testing.T) {
	off := startConsoleGateway(t, strings.Replace(consoleYAML, "admin: {token: "+adminToken+"}", "", 1))
	for _, p := range []string{"/console", "/console/", "/console/login", "/console/api/admin/v1/accounts"} {
		resp, err := http.Get(off.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 404 || !strings.Contains(string(b), "no such endpoint") || resp.Header.Get("X-Request-Id") == "" {
			t.Errorf("GET %s without admin.token: %d %s, want the gateway's 404", p, resp.StatusCode, b)
		}
	}

	g := startConsoleGateway(t, consoleYAML)
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, _ := http.NewRequest("GET", g.URL+"/console/api/admin/v1/accounts", nil)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("console data with the admin bearer and no session: %d, want 401", resp.StatusCode)
	}
	resp, err = noRedirect.PostForm(g.URL+"/console/login", map[string][]string{"token": {adminToken}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var ck *http.Cookie
	for _, c := range resp.Cookies() {
		ck = c
	}
	if resp.StatusCode != http.StatusSeeOther || ck == nil {
		t.Fatalf("login: %d, cookie %v", resp.StatusCode, ck)
	}
	page, _ := http.NewRequest("GET", g.URL+"/console/models", nil)
	page.AddCookie(ck)
	resp, err = noRedirect.Do(page)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	i := bytes.Index(b, []byte(`name="csrf-token" content="`))
	if resp.StatusCode != 200 || i < 0 {
		t.Fatalf("models page: %d", resp.StatusCode)
	}
	csrf := string(b[i+len(`name="csrf-token" content="`):])
	csrf = csrf[:strings.IndexByte(csrf, '"')]
	// The plan as the operator: a strategy suffix is allowed without any key.
	plan, _ := http.NewRequest("POST", g.URL+"/console/api/route", strings.NewReader(`{"model":"gpt-4o-mini:@latency","messages":[{"role":"user","content":"Hello"}]}`))
	plan.AddCookie(ck)
	plan.Header.Set("X-Switchyard-Csrf", csrf)
	resp, err = noRedirect.Do(plan)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	var rp struct {
		Strategy     string `json:"strategy"`
		DegradedFrom string `json:"degraded_from"`
		Candidates   []struct {
			Deployment string `json:"deployment"`
		} `json:"candidates"`
	}
	if err := json.Unmarshal(b, &rp); err != nil || resp.StatusCode != 200 || len(rp.Candidates) != 2 || (rp.Strategy != "latency" && rp.DegradedFrom != "latency") {
		t.Errorf("console plan: %d %s", resp.StatusCode, b)
	}
	// The same body to the public POST /v1/route without a key is refused: the console's plan
	// is the operator's only.
	resp, err = http.Post(g.URL+"/v1/route", "application/json", strings.NewReader(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hello"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("POST /v1/route without a key: %d, want 401", resp.StatusCode)
	}
}

// TestConsoleInBrowser drives the console in headless Chromium against the real gateway: log
// in; a request that fails over appears in Logs with both attempts and opens in the detail
// view; a route's uptime appears only from 100 counted requests; a field fixed by the account
// is read-only on the key; an edit that empties the models is refused with its conflict named;
// a key created shows its secret once and works; a key revoked is refused to the SDK. Every
// page is keyboard-reachable, labels its inputs, fits a narrow window, and reports no console
// error.
func TestConsoleInBrowser(t *testing.T) {
	bctx := startBrowser(t)
	g := startConsoleGateway(t, consoleYAML)
	shots := screenshots(t)
	tab, cancel := chromedp.NewContext(bctx)
	defer cancel()
	events := new(pageEvents)
	if err := chromedp.Listen(tab, events.listen); err != nil {
		t.Fatal(err)
	}
	run := func(t *testing.T, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		ctx, cancel := context.WithTimeout(tab, stepTimeout)
		defer cancel()
		if err := chromedp.Do(ctx, steps...); err != nil {
			body, _ := chromedp.Run(tab, chromedp.Text(chromedp.CSS("body")))
			t.Fatalf("browser: %v\npage text:\n%s", err, body)
		}
	}
	text := func(t *testing.T, sel chromedp.CSS) string {
		t.Helper()
		return get(t, tab, chromedp.Text(sel))
	}
	shot := func(t *testing.T, name string) {
		t.Helper()
		png := get(t, tab, chromedp.FullScreenshot(100))
		if err := os.WriteFile(filepath.Join(shots, name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	noErrors := func(t *testing.T) {
		t.Helper()
		if errs := events.take(); len(errs) > 0 {
			t.Errorf("the page reported errors:\n%s", strings.Join(errs, "\n"))
		}
	}
	// accessible checks that every input, select and textarea has a label and that the
	// document does not scroll sideways at the current width.
	accessible := func(t *testing.T, page string) {
		t.Helper()
		unlabelled := get(t, tab, chromedp.Evaluate[[]string](`[...document.querySelectorAll('input,select,textarea')]
			.filter(e => e.type !== 'hidden' && !(e.labels && e.labels.length) && !e.getAttribute('aria-label'))
			.map(e => e.outerHTML)`))
		if len(unlabelled) > 0 {
			t.Errorf("%s: inputs without a label: %v", page, unlabelled)
		}
		if bad := get(t, tab, chromedp.Evaluate[string](`(document.querySelector('main').innerText.match(/\b(null|undefined|NaN|\[object Object\])\b/) || [''])[0]`)); bad != "" {
			t.Errorf("%s: the page shows %q", page, bad)
		}
		if get(t, tab, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth + 1`)) {
			t.Errorf("%s: the page scrolls sideways at this width", page)
		}
	}
	js := func(t *testing.T, expr string) string {
		t.Helper()
		return get(t, tab, chromedp.Evaluate[string](expr))
	}
	poll := func(expr string, d time.Duration) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(d))(ctx, tg)
			return err
		})
	}

	// Fixtures through the admin API: account A (key k1 sends traffic); account B with
	// strategy latency, models [gpt-4o-mini] and tier_scope official set on the account, and its
	// key k2.
	var acctA, acctB, k1, k2 idOnly
	g.admin(t, "POST", "/admin/v1/accounts", map[string]any{"name": "Acme"}, &acctA)
	g.admin(t, "POST", "/admin/v1/keys", map[string]any{"account_id": acctA.ID, "name": "traffic"}, &k1)
	g.admin(t, "POST", "/admin/v1/accounts", map[string]any{"name": "Beta",
		"settings": map[string]any{"strategy": "latency", "models": []string{"gpt-4o-mini"}, "tier_scope": "official"}}, &acctB)
	g.admin(t, "POST", "/admin/v1/keys", map[string]any{"account_id": acctB.ID, "name": "narrow"}, &k2)

	t.Run("login", func(t *testing.T) {
		run(t, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(g.URL+"/console/logs"), chromedp.WaitVisible(chromedp.ID("token")))
		if loc := get(t, tab, chromedp.Location()); !strings.HasSuffix(loc, "/console/login") {
			t.Fatalf("without a session the console sent the browser to %s, want the login", loc)
		}
		shot(t, "01-login")
		run(t, chromedp.SendKeys(chromedp.ID("token"), "wrong-token"), chromedp.Submit(chromedp.ID("token")),
			chromedp.WaitVisible(chromedp.ID("login-error")))
		// The overview is the landing page (issue 23); the logs are one click away.
		run(t, chromedp.SendKeys(chromedp.ID("token"), adminToken), chromedp.Submit(chromedp.ID("token")),
			chromedp.WaitVisible(chromedp.ID("overview")), chromedp.Navigate(g.URL+"/console/logs"), chromedp.WaitVisible(chromedp.ID("logs")))
		// The session cookie is HttpOnly: the page's script cannot read it.
		if c := js(t, `document.cookie`); strings.Contains(c, "switchyard_console") {
			t.Errorf("document.cookie shows the session cookie: %q", c)
		}
		noErrors(t)
	})

	var failedOver string
	t.Run("logs show a failover with both attempts", func(t *testing.T) {
		g.Fakes["oa-primary"].Script(fakeprovider.Behavior{Kind: fakeprovider.KindStatus, Status: 500})
		id, err := g.chat(k1.Secret)
		if err != nil {
			t.Fatalf("chat: %v", err)
		}
		failedOver = id
		// Auto-refresh brings it in without a reload.
		run(t, chromedp.WaitVisible(chromedp.ID("req-"+id)))
		row := js(t, `document.getElementById('req-`+id+`').closest('tr').innerText`)
		// The key by its name (issue 23), and its account.
		for _, want := range []string{"traffic", acctA.ID, "gpt-4o-mini", "200", "2 (1 failed)", "oa-backup"} {
			if !strings.Contains(row, want) {
				t.Errorf("log row %q lacks %q", row, want)
			}
		}
		accessible(t, "logs")
		shot(t, "02-logs")
		// Keyboard: the first Tab reaches the skip link, the next one the first page.
		run(t, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := chromedp.Evaluate[chromedp.Void](`document.activeElement && document.activeElement.blur(), window.scrollTo(0, 0)`)(ctx, tg)
			return err
		}), chromedp.KeyEvent(kb.Tab))
		if f := js(t, `document.activeElement.textContent`); f != "Skip to content" {
			t.Errorf("first Tab focuses %q, want the skip link", f)
		}
		run(t, chromedp.KeyEvent(kb.Tab))
		if f := js(t, `document.activeElement.textContent`); f != "Overview" {
			t.Errorf("second Tab focuses %q, want the first page's link (Overview)", f)
		}
		// A filter that excludes it.
		run(t, chromedp.Navigate(g.URL+"/console/logs?deployment=nowhere"), chromedp.WaitVisible(chromedp.CSS("#logs p")))
		if none := text(t, "#logs"); !strings.Contains(none, "No requests match") {
			t.Errorf("filtered log: %q", none)
		}
		noErrors(t)
	})

	t.Run("detail lists each attempt", func(t *testing.T) {
		if failedOver == "" {
			t.Skip("no request")
		}
		run(t, chromedp.Navigate(g.URL+"/console/logs"), chromedp.WaitVisible(chromedp.ID("req-"+failedOver)),
			chromedp.Click(chromedp.ID("req-"+failedOver)), chromedp.WaitVisible(chromedp.ID("request-summary")))
		main := text(t, "main")
		for _, want := range []string{failedOver + " / 1", failedOver + " / 2", "oa-primary", "oa-backup", "failed", "completed",
			"upstream_error", "500", "Served by", "Cost breakdown", "Attempt 2 (oa-backup): price from config, base prices"} {
			if !strings.Contains(main, want) {
				t.Errorf("detail lacks %q:\n%s", want, main)
			}
		}
		accessible(t, "detail")
		shot(t, "03-request-detail")
		noErrors(t)
	})

	t.Run("uptime appears from 100 counted requests", func(t *testing.T) {
		run(t, chromedp.Navigate(g.URL+"/console/models"), chromedp.WaitVisible(chromedp.CSS(`[data-uptime="oa-primary"]`)))
		if up := text(t, `[data-uptime="oa-primary"]`); strings.TrimSpace(up) != "" {
			t.Errorf("uptime of oa-primary after 1 counted request: %q, want blank", up)
		}
		for i := 0; i < 99; i++ { // with the failed attempt: 100 counted on oa-primary
			if _, err := g.chat(k1.Secret); err != nil {
				t.Fatalf("request %d: %v", i, err)
			}
		}
		// Auto-refresh shows it: 99 of 100 succeeded.
		run(t, poll(`document.querySelector('[data-uptime="oa-primary"]').textContent === '99.00%'`, 30*time.Second))
		// The plan of a sample request.
		run(t, chromedp.Click(chromedp.CSS(`#plan-h ~ form button[type=submit]`)), chromedp.WaitVisible(chromedp.CSS("#plan table")))
		if plan := text(t, "#plan"); !strings.Contains(plan, "oa-primary") || !strings.Contains(plan, "oa-backup") || !strings.Contains(plan, "Strategy price") {
			t.Errorf("plan: %q", plan)
		}
		accessible(t, "models")
		shot(t, "04-models")
		noErrors(t)
	})

	t.Run("each field states its layer rule; a 409 names its conflict", func(t *testing.T) {
		// Issue 25 item 4, seed 001 ("The interface shows that value directly and states which
		// layer fixed it"): the rule follows the axis (docs/layers.md). tier_scope fixed by the
		// account (a constraint: the key can only narrow, and official leaves nothing to choose)
		// is shown as its value, not a dropdown; the strategy the account set is a preference the
		// key may override, so it keeps a control that says what it inherits; models keeps an input
		// to narrow within the account's list; every field has its rule beside it.
		run(t, chromedp.Navigate(g.URL+"/console/keys?account="+acctB.ID+"&key="+k2.ID), chromedp.WaitVisible(chromedp.ID("settings-key")))
		tag := func(id string) string { return js(t, `document.getElementById('`+id+`').tagName`) }
		if got, txt := tag("s-key-tier_scope"), text(t, "#s-key-tier_scope"); got != "SPAN" || !strings.Contains(txt, "official") || !strings.Contains(txt, "fixed by account") {
			t.Errorf("tier_scope on the key: <%s> %q, want official shown directly, fixed by account", got, txt)
		}
		if got := tag("s-key-strategy"); got != "SELECT" {
			t.Errorf("strategy on the key: <%s>, want a select (the key may override the account)", got)
		}
		if rule := text(t, "#s-key-strategy-rule"); !strings.Contains(rule, "inherits latency from account") || !strings.Contains(rule, "overrides") {
			t.Errorf("strategy's rule %q, want it to name the account's latency and the override", rule)
		}
		if inh := js(t, `document.getElementById('s-key-strategy').options[0].textContent`); !strings.Contains(inh, "latency") {
			t.Errorf("strategy's empty option %q, want it to show the inherited latency", inh)
		}
		if got, rule := tag("s-key-models"), text(t, "#s-key-models-rule"); got != "INPUT" || !strings.Contains(rule, "narrows account's gpt-4o-mini") {
			t.Errorf("models on the key: <%s> rule %q, want an input that narrows the account's list", got, rule)
		}
		if n := js(t, `String(document.querySelectorAll('#settings-key tbody tr').length)`); n != js(t, `String(document.querySelectorAll('#settings-key tbody .rule').length)`) {
			t.Errorf("not every field states its layer rule (%s rows)", n)
		}
		run(t, chromedp.SendKeys(chromedp.ID("s-key-models"), "no-such-model"), chromedp.Click(chromedp.ID("save-key")),
			chromedp.WaitVisible(chromedp.CSS(`#settings-msg-key [role=alert]`)))
		if msg := text(t, "#settings-msg-key"); !strings.Contains(msg, "conflict") || !strings.Contains(msg, "models") || !strings.Contains(msg, k2.ID) {
			t.Errorf("409 message %q: want the conflict on models naming key %s", msg, k2.ID)
		}
		accessible(t, "key")
		shot(t, "05-key-settings-409")
		var k struct {
			Settings map[string]any `json:"settings"`
		}
		g.admin(t, "GET", "/admin/v1/keys/"+k2.ID, nil, &k)
		if len(k.Settings) != 0 {
			t.Errorf("the refused edit changed the key: %v", k.Settings)
		}
		noErrors(t)
	})

	t.Run("create a key, revoke one", func(t *testing.T) {
		run(t, chromedp.Navigate(g.URL+"/console/keys?account="+acctA.ID), chromedp.WaitVisible(chromedp.ID("new-key")),
			chromedp.SendKeys(chromedp.ID("new-key"), "from-console"), chromedp.Click(chromedp.ID("create-key")),
			chromedp.WaitVisible(chromedp.ID("new-secret")))
		secret := text(t, "#new-secret")
		if !strings.HasPrefix(secret, "sk-sy-") {
			t.Fatalf("secret shown: %q", secret)
		}
		if _, err := g.chat(secret); err != nil {
			t.Errorf("the key created in the console: %v", err)
		}
		accessible(t, "account")
		shot(t, "06-account")

		run(t, chromedp.Navigate(g.URL+"/console/keys?account="+acctA.ID+"&key="+k1.ID), chromedp.WaitVisible(chromedp.ID("revoke")),
			chromedp.Click(chromedp.ID("revoke")), chromedp.WaitVisible(chromedp.ID("revoke-confirm")),
			chromedp.Click(chromedp.ID("revoke-confirm")),
			poll(`!!document.getElementById('key-state') && document.getElementById('key-state').textContent.startsWith('revoked')`, 10*time.Second))
		_, err := g.chat(k1.Secret)
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusUnauthorized {
			t.Errorf("a request with the revoked key: %v, want 401", err)
		}
		noErrors(t)
	})

	t.Run("narrow window", func(t *testing.T) {
		run(t, chromedp.EmulateViewport(420, 800))
		for _, p := range []string{"logs", "models", "keys?account=" + acctA.ID} {
			run(t, chromedp.Navigate(g.URL+"/console/"+p), chromedp.WaitVisible(chromedp.CSS("main h1")),
				poll(`!document.querySelector('main').textContent.includes('Loading')`, 10*time.Second))
			accessible(t, "narrow "+p)
		}
		shot(t, "07-keys-narrow")
		run(t, chromedp.EmulateViewport(1280, 900))
		noErrors(t)
	})

	t.Run("logout", func(t *testing.T) {
		run(t, chromedp.Navigate(g.URL+"/console/logs"), chromedp.WaitVisible(chromedp.ID("logout")),
			chromedp.Click(chromedp.ID("logout")), chromedp.WaitVisible(chromedp.ID("token")))
		status := get(t, tab, chromedp.Evaluate[int](`fetch('/console/api/session').then(r => r.status)`, chromedp.EvalAwaitPromise))
		if status != http.StatusUnauthorized {
			t.Errorf("after logout /console/api/session is %d, want 401", status)
		}
		events.take() // that 401 is expected
	})
}

// get runs action a on tab and returns its value, failing t on an error.
func get[T any](t *testing.T, tab context.Context, a chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("browser: %v", err)
	}
	return v
}
