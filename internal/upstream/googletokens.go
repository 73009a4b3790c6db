package upstream

import (
	"context"
	"errors"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"
)

// CloudPlatformScope is the OAuth2 scope of the access tokens the gateway asks Google for.
const CloudPlatformScope = "https://www.googleapis.com/auth/cloud-platform"

// Token timing of googleTokens.
const (
	// tokenRefreshAhead: a token this close to its expiry is replaced in the background while
	// requests go on using it.
	tokenRefreshAhead = 5 * time.Minute
	// tokenExpiryMargin: a token this close to its expiry is no longer sent; a request then
	// waits for the fetch of a new one.
	tokenExpiryMargin = 5 * time.Second
	// tokenRetryAfter: after a failed fetch, requests get the same failure for this long
	// without another fetch, so that a broken credential does not hammer the token endpoint;
	// a background refresh that failed is retried after it as well.
	tokenRetryAfter = time.Second
	// tokenFetchTimeout bounds one fetch.
	tokenFetchTimeout = 30 * time.Second
)

// googleTokens holds one deployment's Google OAuth2 access token (vertex.credentials_file, or
// Application Default Credentials: GOOGLE_APPLICATION_CREDENTIALS, gcloud's
// application_default_credentials.json, the metadata server) and keeps it fresh: a request
// never waits for a token fetch while a valid token exists. Once the token is within
// tokenRefreshAhead of its expiry, the first request that sees it starts one background fetch
// and goes on with the current token; only when no token valid for tokenExpiryMargin more is
// held do requests wait, all for the same fetch. Safe for concurrent use.
type googleTokens struct {
	deployment, file string
	client           *http.Client // the token fetches' client: the deployment's transport
	now              func() time.Time

	cur atomic.Pointer[heldToken]

	mu       sync.Mutex // guards the fields below
	src      func() (*oauth2.Token, error)
	inflight chan struct{} // closed when the running fetch ends; nil when none runs
	lastErr  error
	failedAt time.Time
	// quietUntil: no background refresh starts before it (set after a failed fetch, and after
	// one that handed back the token already held).
	quietUntil time.Time
}

// heldToken is a token as requests use it: the Authorization header's value, built once.
type heldToken struct {
	auth   []string
	expiry time.Time
}

func newGoogleTokens(deployment, file string, tr *http.Transport) *googleTokens {
	return &googleTokens{deployment: deployment, file: file, now: time.Now,
		client: &http.Client{Transport: tr, Timeout: tokenFetchTimeout}}
}

// header returns the Authorization header value of a valid token. Its error is a
// *failure.Error (tokenFailure): upstream_auth when no token could be had.
func (g *googleTokens) header(ctx context.Context) ([]string, error) {
	now := g.now()
	if t := g.cur.Load(); t != nil && now.Before(t.expiry.Add(-tokenExpiryMargin)) {
		if !now.Before(t.expiry.Add(-tokenRefreshAhead)) {
			g.start(now, false) // in the background: this request goes on with t
		}
		return t.auth, nil
	}
	done, err := g.start(now, true)
	if err != nil {
		return nil, tokenFailure(ctx, err)
	}
	select {
	case <-done:
	case <-ctx.Done():
		return nil, tokenFailure(ctx, ctx.Err())
	}
	if t := g.cur.Load(); t != nil && g.now().Before(t.expiry.Add(-tokenExpiryMargin)) {
		return t.auth, nil
	}
	g.mu.Lock()
	err = g.lastErr
	g.mu.Unlock()
	if err == nil {
		err = &tokenError{deployment: g.deployment, cause: errors.New("the token endpoint answered no usable token")}
	}
	return nil, tokenFailure(ctx, err)
}

// start begins a fetch unless one runs, and returns the channel closed when the running fetch
// ends. Within tokenRetryAfter of a failed fetch it starts none: a waiting caller (wait true)
// gets the failure back; a background refresh does nothing.
func (g *googleTokens) start(now time.Time, wait bool) (<-chan struct{}, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.inflight != nil {
		return g.inflight, nil
	}
	if wait && g.lastErr != nil && now.Sub(g.failedAt) < tokenRetryAfter {
		return nil, g.lastErr
	}
	if !wait && now.Before(g.quietUntil) {
		return nil, nil
	}
	ch := make(chan struct{})
	g.inflight = ch
	go g.fetch(ch) // owned: ends within tokenFetchTimeout and closes ch
	return ch, nil
}

// fetch gets a new token from the credentials (read on the first fetch), stores it, and closes
// done.
func (g *googleTokens) fetch(done chan struct{}) {
	defer close(done)
	g.mu.Lock()
	src := g.src
	g.mu.Unlock()
	var err error
	if src == nil {
		src, err = g.source()
	}
	var tok *oauth2.Token
	if err == nil {
		tok, err = src()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.inflight = nil
	if src != nil {
		g.src = src
	}
	if err == nil && (tok == nil || tok.AccessToken == "") {
		err = errors.New("the token endpoint answered no access token")
	}
	if err != nil {
		g.lastErr, g.failedAt = g.explain(err), g.now()
		g.quietUntil = g.failedAt.Add(tokenRetryAfter)
		return
	}
	g.lastErr = nil
	exp := tok.Expiry
	if exp.IsZero() {
		exp = g.now().Add(time.Hour) // a token without an expiry: fetch a new one every hour
	}
	if cur := g.cur.Load(); cur != nil && cur.auth[0] == "Bearer "+tok.AccessToken {
		// The source handed back the token it caches (x/oauth2 renews those 10 s before their
		// expiry): keep it, and try again a little later.
		g.quietUntil = g.now().Add(tokenRetryAfter)
		return
	}
	g.cur.Store(&heldToken{auth: []string{"Bearer " + tok.AccessToken}, expiry: exp})
}

// explain turns a fetch error into a *tokenError for the logs: the token endpoint's status,
// OAuth2 error code and description (RFC 6749 §5.2's "error" and "error_description"), never
// its whole body.
func (g *googleTokens) explain(err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		code, desc := re.ErrorCode, re.ErrorDescription
		if code == "" && len(re.Body) <= 16<<10 { // x/oauth2/jwt leaves the OAuth2 error fields to read
			code, desc = gjson.GetBytes(re.Body, "error").Str, gjson.GetBytes(re.Body, "error_description").Str
		}
		te := &tokenError{deployment: g.deployment, code: printable(code, 64), desc: printable(desc, 200)}
		if re.Response != nil {
			te.status = re.Response.StatusCode
		}
		return te
	}
	return &tokenError{deployment: g.deployment, cause: err}
}

// source reads the credentials and returns the function that fetches a fresh token. A service
// account (the file's or ADC's) fetches with its JWT directly, so that every fetch is a new
// token; other kinds (a gcloud user, workload identity federation, the metadata server) go
// through x/oauth2's own token source.
func (g *googleTokens) source() (func() (*oauth2.Token, error), error) {
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, g.client)
	params := google.CredentialsParams{Scopes: []string{CloudPlatformScope}, EarlyTokenRefresh: 4 * time.Minute}
	var data []byte
	if g.file != "" {
		b, err := os.ReadFile(g.file)
		if err != nil {
			return nil, err
		}
		data = b
	} else {
		creds, err := google.FindDefaultCredentialsWithParams(ctx, params)
		if err != nil {
			return nil, err
		}
		if creds.JSON == nil { // the metadata server
			return creds.TokenSource.Token, nil
		}
		data = creds.JSON
	}
	typ := gjson.GetBytes(data, "type").Str
	if typ == "service_account" {
		cfg, err := google.JWTConfigFromJSON(data, CloudPlatformScope)
		if err != nil {
			return nil, err
		}
		return func() (*oauth2.Token, error) { return cfg.TokenSource(ctx).Token() }, nil
	}
	creds, err := google.CredentialsFromJSONWithTypeAndParams(ctx, data, google.CredentialsType(typ), params)
	if err != nil {
		return nil, err
	}
	return creds.TokenSource.Token, nil
}
