package console

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeAdmin records the requests the console hands to the admin API.
type fakeAdmin struct {
	mu   sync.Mutex
	seen []*http.Request
	body []string
}

func (f *fakeAdmin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.seen = append(f.seen, r)
	f.body = append(f.body, string(b))
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"data":[],"next_cursor":null}`))
}

func (f *fakeAdmin) last() (*http.Request, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.seen) == 0 {
		return nil, ""
	}
	return f.seen[len(f.seen)-1], f.body[len(f.body)-1]
}

type rig struct {
	c     *Console
	admin *fakeAdmin
	now   time.Time
}

func newRig(token string) *rig {
	r := &rig{admin: new(fakeAdmin), now: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)}
	r.c = New(Options{Token: token, Admin: r.admin, Now: func() time.Time { return r.now },
		NotFound: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "gateway 404", http.StatusNotFound) })})
	return r
}

// do serves one request; cookie, when not nil, is sent.
func (r *rig) do(method, target string, body string, cookie *http.Cookie, hdr map[string]string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, "http://127.0.0.1:8080"+target, strings.NewReader(body))
	req.RemoteAddr = "127.0.0.1:5555"
	if method == http.MethodPost && strings.HasPrefix(target, "/console/login") {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if cookie != nil {
		req.AddCookie(cookie)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	r.c.ServeHTTP(w, req)
	return w
}

// login posts the token and returns the session cookie set.
func (r *rig) login(t *testing.T, token string, hdr map[string]string) *http.Cookie {
	t.Helper()
	w := r.do(http.MethodPost, "/console/login", url.Values{"token": {token}}.Encode(), nil, hdr)
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/console/" {
		t.Fatalf("login: %d %q, want 303 to /console/", w.Code, w.Header().Get("Location"))
	}
	for _, c := range w.Result().Cookies() {
		if c.Name == CookieName {
			return c
		}
	}
	t.Fatal("login set no session cookie")
	return nil
}

// csrfOf reads the CSRF token from the application page.
func (r *rig) csrfOf(t *testing.T, ck *http.Cookie) string {
	t.Helper()
	w := r.do(http.MethodGet, "/console/logs", "", ck, nil)
	if w.Code != 200 {
		t.Fatalf("GET /console/logs with a session: %d", w.Code)
	}
	m := regexp.MustCompile(`name="csrf-token" content="([^"]+)"`).FindStringSubmatch(w.Body.String())
	if m == nil {
		t.Fatal("no csrf-token meta in the page")
	}
	return m[1]
}

func TestConsoleOffWithoutToken(t *testing.T) {
	r := newRig("")
	for _, p := range []string{"/console", "/console/", "/console/login", "/console/login.css", "/console/api/admin/v1/accounts"} {
		w := r.do(http.MethodGet, p, "", nil, nil)
		if w.Code != 404 || !strings.Contains(w.Body.String(), "gateway 404") {
			t.Errorf("GET %s without admin.token: %d %q, want the gateway's 404", p, w.Code, w.Body.String())
		}
	}
	if w := r.do(http.MethodPost, "/console/login", "token=", nil, nil); w.Code != 404 {
		t.Errorf("POST /console/login without admin.token: %d, want 404", w.Code)
	}
}

func TestNothingWithoutSession(t *testing.T) {
	r := newRig("admin-secret")
	for _, p := range []string{"/console/", "/console/logs", "/console/models", "/console/keys", "/console/assets/app.js", "/console/assets/app.css"} {
		w := r.do(http.MethodGet, p, "", nil, nil)
		if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/console/login" {
			t.Errorf("GET %s without a session: %d %q, want 303 to the login", p, w.Code, w.Header().Get("Location"))
		}
		if strings.Contains(w.Body.String(), "csrf") || strings.Contains(w.Body.String(), "function") {
			t.Errorf("GET %s without a session leaked the page: %q", p, w.Body.String())
		}
	}
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPatch, http.MethodDelete} {
		w := r.do(m, "/console/api/admin/v1/accounts", "{}", nil, nil)
		if w.Code != http.StatusUnauthorized {
			t.Errorf("%s /console/api/admin/v1/accounts without a session: %d, want 401", m, w.Code)
		}
	}
	bad := []*http.Cookie{
		{Name: CookieName, Value: "v1.9999999999.AAAA.forged"},
		{Name: CookieName, Value: "garbage"},
	}
	other := newRig("another-token")
	bad = append(bad, other.login(t, "another-token", nil)) // signed under another admin.token
	for _, ck := range bad {
		if w := r.do(http.MethodGet, "/console/api/admin/v1/accounts", "", ck, nil); w.Code != 401 {
			t.Errorf("cookie %q: %d, want 401", ck.Value, w.Code)
		}
	}
	if got, _ := r.admin.last(); got != nil {
		t.Errorf("the admin API was called without a session: %s", got.URL)
	}
	// The login page and its stylesheet are public.
	for _, p := range []string{"/console/login", "/console/login.css"} {
		if w := r.do(http.MethodGet, p, "", nil, nil); w.Code != 200 {
			t.Errorf("GET %s: %d, want 200", p, w.Code)
		}
	}
}

func TestLoginCookie(t *testing.T) {
	r := newRig("admin-secret")
	if w := r.do(http.MethodPost, "/console/login", "token=wrong", nil, nil); w.Code != 401 || len(w.Result().Cookies()) != 0 {
		t.Fatalf("wrong token: %d, cookies %v; want 401 and none", w.Code, w.Result().Cookies())
	}
	ck := r.login(t, "admin-secret", nil)
	if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/console/" || ck.MaxAge != int(SessionLifetime/time.Second) {
		t.Errorf("cookie %+v: want HttpOnly, SameSite=Strict, Path /console/, Max-Age %v", ck, SessionLifetime)
	}
	if ck.Secure {
		t.Error("cookie over plain http is Secure: the browser would drop it")
	}
	if strings.Contains(ck.Value, "admin-secret") {
		t.Error("the cookie holds the admin token")
	}
	if sc := r.login(t, "admin-secret", map[string]string{"X-Forwarded-Proto": "https"}); !sc.Secure {
		t.Error("cookie over https (X-Forwarded-Proto) is not Secure")
	}
	// A login posted from another site is refused (login CSRF).
	w := r.do(http.MethodPost, "/console/login", "token=admin-secret", nil, map[string]string{"Sec-Fetch-Site": "cross-site"})
	if w.Code != 403 || len(w.Result().Cookies()) != 0 {
		t.Errorf("cross-site login: %d, want 403 and no cookie", w.Code)
	}
	// The same cookie works on another replica (another Console with the token) and after a restart.
	r2 := newRig("admin-secret")
	if w := r2.do(http.MethodGet, "/console/api/session", "", ck, nil); w.Code != 200 {
		t.Errorf("the session on another replica: %d, want 200", w.Code)
	}
	// It expires.
	r.now = r.now.Add(SessionLifetime - time.Second)
	if w := r.do(http.MethodGet, "/console/api/session", "", ck, nil); w.Code != 200 {
		t.Errorf("1 s before expiry: %d, want 200", w.Code)
	}
	r.now = r.now.Add(time.Second)
	if w := r.do(http.MethodGet, "/console/api/session", "", ck, nil); w.Code != 401 {
		t.Errorf("at expiry: %d, want 401", w.Code)
	}
	if w := r.do(http.MethodGet, "/console/logs", "", ck, nil); w.Code != http.StatusSeeOther {
		t.Errorf("page at expiry: %d, want 303 to the login", w.Code)
	}
}

func TestProxyAndCSRF(t *testing.T) {
	r := newRig("admin-secret")
	ck := r.login(t, "admin-secret", nil)
	tok := r.csrfOf(t, ck)

	w := r.do(http.MethodGet, "/console/api/admin/v1/requests?model=a&limit=5", "", ck, map[string]string{"Cookie": CookieName + "=" + ck.Value})
	if w.Code != 200 {
		t.Fatalf("GET through the console: %d", w.Code)
	}
	got, _ := r.admin.last()
	if got.URL.Path != "/admin/v1/requests" || got.URL.RawQuery != "model=a&limit=5" || got.Header.Get("Authorization") != "Bearer admin-secret" || got.Header.Get("Cookie") != "" {
		t.Errorf("admin saw %s ?%s Authorization %q Cookie %q", got.URL.Path, got.URL.RawQuery, got.Header.Get("Authorization"), got.Header.Get("Cookie"))
	}

	n := len(r.admin.seen)
	for name, hdr := range map[string]map[string]string{
		"no token":     {},
		"wrong token":  {CSRFHeader: tok + "x"},
		"cross-site":   {CSRFHeader: tok, "Sec-Fetch-Site": "cross-site"},
		"other origin": {CSRFHeader: tok, "Origin": "http://evil.example"},
	} {
		for _, m := range []string{http.MethodPost, http.MethodPatch, http.MethodDelete} {
			if w := r.do(m, "/console/api/admin/v1/keys/key_1", `{"name":"x"}`, ck, hdr); w.Code != 403 {
				t.Errorf("%s %s: %d, want 403", name, m, w.Code)
			}
		}
	}
	if len(r.admin.seen) != n {
		t.Fatal("a refused write reached the admin API")
	}
	// Another session's CSRF token does not fit this session.
	ck2 := r.login(t, "admin-secret", nil)
	if w := r.do(http.MethodPatch, "/console/api/admin/v1/keys/key_1", `{}`, ck2, map[string]string{CSRFHeader: tok}); w.Code != 403 {
		t.Errorf("another session's CSRF token: %d, want 403", w.Code)
	}
	w = r.do(http.MethodPatch, "/console/api/admin/v1/keys/key_1", `{"settings":{"strategy":"latency"}}`, ck,
		map[string]string{CSRFHeader: tok, "Origin": "http://127.0.0.1:8080", "Sec-Fetch-Site": "same-origin", "Content-Type": "application/json"})
	if w.Code != 200 {
		t.Fatalf("same-origin write with the CSRF token: %d %s", w.Code, w.Body)
	}
	got, body := r.admin.last()
	if got.Method != http.MethodPatch || got.URL.Path != "/admin/v1/keys/key_1" || body != `{"settings":{"strategy":"latency"}}` || got.Header.Get(CSRFHeader) != "" {
		t.Errorf("admin saw %s %s %q (csrf header %q)", got.Method, got.URL.Path, body, got.Header.Get(CSRFHeader))
	}
	// Logout: CSRF-checked, then the cookie is cleared.
	if w := r.do(http.MethodPost, "/console/logout", "", ck, nil); w.Code != 403 {
		t.Errorf("logout without the CSRF token: %d, want 403", w.Code)
	}
	w = r.do(http.MethodPost, "/console/logout", "", ck, map[string]string{CSRFHeader: tok})
	cl := w.Result().Cookies()
	if w.Code != 204 || len(cl) != 1 || cl[0].Name != CookieName || cl[0].MaxAge >= 0 {
		t.Errorf("logout: %d %v, want 204 clearing the cookie", w.Code, cl)
	}
}

func TestRouteProxy(t *testing.T) {
	var seen *http.Request
	var body string
	r := newRig("admin-secret")
	r.c.o.Route = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		seen, body = req, string(b)
		_, _ = w.Write([]byte(`{"candidates":[]}`))
	})
	ck := r.login(t, "admin-secret", nil)
	tok := r.csrfOf(t, ck)
	if w := r.do(http.MethodPost, "/console/api/route", `{"model":"m"}`, ck, nil); w.Code != 403 || seen != nil {
		t.Fatalf("route without the CSRF token: %d, want 403 and no call", w.Code)
	}
	if w := r.do(http.MethodPost, "/console/api/route", `{"model":"m"}`, ck, map[string]string{CSRFHeader: tok}); w.Code != 200 {
		t.Fatalf("route: %d", w.Code)
	}
	if seen.URL.Path != "/v1/route" || body != `{"model":"m"}` || seen.Header.Get("Cookie") != "" {
		t.Errorf("route handler saw %s %q cookie %q", seen.URL.Path, body, seen.Header.Get("Cookie"))
	}
}

func TestLoopbackHost(t *testing.T) {
	for h, want := range map[string]bool{"127.0.0.1:8080": true, "localhost": true, "[::1]:80": true, "127.1.2.3": true,
		"example.com": false, "10.0.0.1:8080": false, "localhost.evil.com": false} {
		if got := loopbackHost(h); got != want {
			t.Errorf("loopbackHost(%q) = %v, want %v", h, got, want)
		}
	}
}
