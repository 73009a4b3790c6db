// Package console is the operators' web console at /console (docs/console.md): the call log
// with each request's routing attempts, the models' deployments with their uptime, circuits and
// a sample plan, and the accounts, workspaces and keys with their settings by layer. It is plain
// HTML, CSS and JavaScript embedded in the binary (no build step) that reads and writes through
// the admin API.
//
// Access is the admin token's (admin.token): a login form posts it, and the console answers a
// session cookie (HttpOnly, SameSite=Strict, Secure over https) whose value is an expiry and a
// random nonce signed with an HMAC keyed by the admin token, so every replica that has the token
// accepts it, a restart keeps it, and rotating the token ends every session; nothing is stored.
// Every page, asset (but the login page's stylesheet) and datum needs a valid session; writes
// also need the session's CSRF token in a header and pass net/http's cross-origin protection
// (Sec-Fetch-Site, Origin). The console's JavaScript calls the admin API through
// /console/api/admin/..., which the console hands in-process to the admin handler with the
// admin token as its bearer, so the admin API's own authentication is unchanged. With no admin
// token configured the console is off: every /console path is the gateway's 404.
package console

import (
	"bytes"
	"embed"
	"encoding/json"
	"html"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"
)

// SessionLifetime is how long a session cookie is valid after the login that set it; the
// console then asks for the token again.
const SessionLifetime = 12 * time.Hour

// CookieName is the session cookie's name.
const CookieName = "switchyard_console"

// CSRFHeader is the request header that carries the session's CSRF token on every write
// (POST, PATCH, DELETE) under /console/.
const CSRFHeader = "X-Switchyard-Csrf"

// maxLoginBody caps the login form (the token and little else).
const maxLoginBody = 16 << 10

//go:embed web
var web embed.FS

// Options are the console's collaborators.
type Options struct {
	// Token is admin.token; "" turns the console off (every path answers NotFound).
	Token string
	// Admin is the admin API's handler (the one mounted at /admin/): /console/api/admin/X is
	// served by it as /admin/X with "Authorization: Bearer Token".
	Admin http.Handler
	// Route serves the operator's POST /v1/route (the plan of a sample request on the live
	// gateway, with an operator's rights: any strategy override, every dedicated endpoint);
	// /console/api/route is served by it. Nil answers 404 there.
	Route http.Handler
	// NotFound answers every path when the console is off, and unknown paths (the gateway's 404).
	NotFound http.Handler
	// Now is the clock of session expiry; nil is time.Now.
	Now func() time.Time
}

// Console serves /console and everything under it. Create it with New.
type Console struct {
	o      Options
	on     bool
	keys   sessionKeys
	static fs.FS
	cop    *http.CrossOriginProtection
	app    []byte // web/index.html, the CSRF placeholder still in it
	login  []byte // web/login.html
}

// New returns the console of Options o.
func New(o Options) *Console {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.NotFound == nil {
		o.NotFound = http.NotFoundHandler()
	}
	c := &Console{o: o, on: o.Token != "", cop: http.NewCrossOriginProtection()}
	c.cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusForbidden, "cross-origin request refused")
	}))
	if c.on {
		c.keys = deriveKeys(o.Token)
	}
	c.static, _ = fs.Sub(web, "web")
	c.app, _ = fs.ReadFile(c.static, "index.html")
	c.login, _ = fs.ReadFile(c.static, "login.html")
	return c
}

// ServeHTTP serves the console's paths: /console/login (GET the form, POST the token),
// /console/logout (POST), /console/login.css (public), and, with a valid session, the
// application (/console/ and its pages), its assets (/console/assets/...) and its data
// (/console/api/...).
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !c.on {
		c.o.NotFound.ServeHTTP(w, r)
		return
	}
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "+
		"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	p := r.URL.Path
	switch p {
	case "/console":
		http.Redirect(w, r, "/console/", http.StatusFound)
		return
	case "/console/login":
		c.serveLogin(w, r)
		return
	case "/console/login.css":
		c.serveAsset(w, r, "login.css")
		return
	}
	sess, ok := c.session(r)
	if !ok {
		if strings.HasPrefix(p, "/console/api/") {
			writeError(w, http.StatusUnauthorized, "no console session: log in at /console/login")
			return
		}
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			http.Redirect(w, r, "/console/login", http.StatusSeeOther)
			return
		}
		writeError(w, http.StatusUnauthorized, "no console session: log in at /console/login")
		return
	}
	if !safeMethod(r.Method) {
		if err := c.cop.Check(r); err != nil {
			writeError(w, http.StatusForbidden, "cross-origin request refused")
			return
		}
		if !c.keys.csrfOK(sess, r.Header.Get(CSRFHeader)) {
			writeError(w, http.StatusForbidden, "missing or wrong "+CSRFHeader+" header")
			return
		}
	}
	switch {
	case p == "/console/logout" && r.Method == http.MethodPost:
		c.clearCookie(w, r)
		w.WriteHeader(http.StatusNoContent)
	case p == "/console/api/session" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, map[string]any{"expires_at": sess.expires.UTC().Format(time.RFC3339)})
	case strings.HasPrefix(p, "/console/api/admin/"):
		c.proxyAdmin(w, r)
	case p == "/console/api/route":
		c.proxyRoute(w, r)
	case strings.HasPrefix(p, "/console/api/"):
		writeError(w, http.StatusNotFound, "no such console endpoint")
	case strings.HasPrefix(p, "/console/assets/") && safeMethod(r.Method):
		c.serveAsset(w, r, strings.TrimPrefix(p, "/console/"))
	case safeMethod(r.Method) && isPage(p):
		c.serveApp(w, sess)
	default:
		c.o.NotFound.ServeHTTP(w, r)
	}
}

// isPage reports whether p is one of the application's pages (served by index.html, whose
// script shows the page the path names).
func isPage(p string) bool {
	switch p {
	case "/console/", "/console/overview", "/console/logs", "/console/models", "/console/keys":
		return true
	}
	return false
}

func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// serveApp answers the application page with the session's CSRF token in its
// <meta name="csrf-token">.
func (c *Console) serveApp(w http.ResponseWriter, s session) {
	body := bytes.Replace(c.app, []byte("{{CSRF}}"), []byte(html.EscapeString(c.keys.csrf(s))), 1)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(body)
}

// serveAsset answers one embedded file (path relative to web/); unknown files are 404.
func (c *Console) serveAsset(w http.ResponseWriter, r *http.Request, name string) {
	name = path.Clean(name)
	b, err := fs.ReadFile(c.static, name)
	if err != nil || strings.HasSuffix(name, ".html") {
		c.o.NotFound.ServeHTTP(w, r)
		return
	}
	ct := mime.TypeByExtension(path.Ext(name))
	if ct == "" {
		ct = "application/octet-stream"
	}
	w.Header().Set("Content-Type", ct)
	// The assets change only with the binary; a session-gated asset is still not worth caching
	// across logins (no-store, set above), and they are small (docs/console.md "Page weight").
	_, _ = w.Write(b)
}

// proxyAdmin serves /console/api/admin/X with the admin handler as /admin/X, authenticated
// with the admin token; the browser's cookies and CSRF header are not passed on.
func (c *Console) proxyAdmin(w http.ResponseWriter, r *http.Request) {
	if c.o.Admin == nil {
		writeError(w, http.StatusNotFound, "no admin API")
		return
	}
	r2 := inner(r, "/admin/"+strings.TrimPrefix(r.URL.Path, "/console/api/admin/"))
	r2.Header.Set("Authorization", "Bearer "+c.o.Token)
	c.o.Admin.ServeHTTP(w, r2)
}

// proxyRoute serves /console/api/route (POST) with the operator's plan handler.
func (c *Console) proxyRoute(w http.ResponseWriter, r *http.Request) {
	if c.o.Route == nil || r.Method != http.MethodPost {
		writeError(w, http.StatusNotFound, "no such console endpoint")
		return
	}
	c.o.Route.ServeHTTP(w, inner(r, "/v1/route"))
}

// inner is r for an in-process handler at path p: the same context, method, query and body,
// only its Content-Type and Accept headers (no cookie, no CSRF token).
func inner(r *http.Request, p string) *http.Request {
	r2 := r.Clone(r.Context())
	r2.URL.Path, r2.URL.RawPath = p, ""
	r2.RequestURI = p
	if r.URL.RawQuery != "" {
		r2.RequestURI += "?" + r.URL.RawQuery
	}
	r2.Header = http.Header{}
	for _, k := range []string{"Content-Type", "Accept"} {
		if v := r.Header.Get(k); v != "" {
			r2.Header.Set(k, v)
		}
	}
	return r2
}

// serveLogin answers GET /console/login with the form, and POST with a session cookie and a
// redirect to /console/ when the token is admin.token (the form again with an error otherwise).
func (c *Console) serveLogin(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		if _, ok := c.session(r); ok {
			http.Redirect(w, r, "/console/", http.StatusSeeOther)
			return
		}
		c.writeLogin(w, r, http.StatusOK, "")
	case http.MethodPost:
		if err := c.cop.Check(r); err != nil {
			c.writeLogin(w, r, http.StatusForbidden, "Cross-origin login refused.")
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxLoginBody)
		if err := r.ParseForm(); err != nil {
			c.writeLogin(w, r, http.StatusBadRequest, "The form could not be read.")
			return
		}
		if !c.keys.tokenOK(r.PostForm.Get("token")) {
			c.writeLogin(w, r, http.StatusUnauthorized, "That is not the admin token (admin.token).")
			return
		}
		c.setCookie(w, r, c.keys.mint(c.o.Now()))
		http.Redirect(w, r, "/console/", http.StatusSeeOther)
	default:
		w.Header().Set("Allow", "GET, POST")
		writeError(w, http.StatusMethodNotAllowed, "GET or POST")
	}
}

// writeLogin answers the login form with message msg (none when ""), and a notice when the
// connection is plain http to a host other than loopback: the token would cross the network in
// the clear.
func (c *Console) writeLogin(w http.ResponseWriter, r *http.Request, status int, msg string) {
	var note string
	if msg != "" {
		note = `<p class="error" role="alert" id="login-error">` + html.EscapeString(msg) + `</p>`
	}
	if !secureRequest(r) && !loopbackHost(r.Host) {
		note += `<p class="warn" role="note">This connection is not encrypted: the admin token and the session ` +
			`cookie cross the network in the clear. Put TLS in front of the gateway (docs/production.md).</p>`
	}
	body := bytes.Replace(c.login, []byte("{{NOTE}}"), []byte(note), 1)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// writeError answers a console API error: {"error": {"message"}}, the admin API's shape.
func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]string{"message": msg}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
