package console

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// sessionKeys are the keys derived from the admin token: mac signs session cookies and their
// CSRF tokens, token is the token's SHA-256 (the login compares against it in constant time).
type sessionKeys struct {
	mac   []byte
	token [sha256.Size]byte
}

// deriveKeys derives the session keys from admin.token: HMAC-SHA-256(token, a fixed label), so
// that every replica configured with the token derives the same keys and a new token makes
// every earlier cookie invalid.
func deriveKeys(token string) sessionKeys {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("switchyard console session v1"))
	return sessionKeys{mac: m.Sum(nil), token: sha256.Sum256([]byte(token))}
}

// session is a verified session cookie.
type session struct {
	value   string // the cookie value as sent
	expires time.Time
}

// tokenOK reports whether t is the admin token (constant time, of the SHA-256s).
func (k sessionKeys) tokenOK(t string) bool {
	sum := sha256.Sum256([]byte(t))
	return t != "" && subtle.ConstantTimeCompare(sum[:], k.token[:]) == 1
}

// sign is the base64url HMAC of msg under the session key.
func (k sessionKeys) sign(msg string) string {
	m := hmac.New(sha256.New, k.mac)
	m.Write([]byte(msg))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// mint returns a new session cookie value: "v1.<expiry unix seconds>.<nonce>.<mac>", the nonce
// 16 random bytes in base64url, the mac over everything before it.
func (k sessionKeys) mint(now time.Time) session {
	var n [16]byte
	_, _ = rand.Read(n[:])
	exp := now.Add(SessionLifetime).Truncate(time.Second)
	body := "v1." + strconv.FormatInt(exp.Unix(), 10) + "." + base64.RawURLEncoding.EncodeToString(n[:])
	return session{value: body + "." + k.sign(body), expires: exp}
}

// verify checks a cookie value: its mac, and an expiry after now (and no further than
// SessionLifetime ahead).
func (k sessionKeys) verify(v string, now time.Time) (session, bool) {
	i := strings.LastIndexByte(v, '.')
	if i < 0 || len(v) > 200 {
		return session{}, false
	}
	body, mac := v[:i], v[i+1:]
	if !hmac.Equal([]byte(mac), []byte(k.sign(body))) {
		return session{}, false
	}
	parts := strings.Split(body, ".")
	if len(parts) != 3 || parts[0] != "v1" {
		return session{}, false
	}
	sec, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil {
		return session{}, false
	}
	exp := time.Unix(sec, 0)
	if !now.Before(exp) || exp.Sub(now) > SessionLifetime {
		return session{}, false
	}
	return session{value: v, expires: exp}, true
}

// csrf is the CSRF token of session s: the mac of "csrf." and its cookie value. The page
// receives it in its HTML (readable by the console's own script only: the same-origin policy
// keeps other sites from reading the page) and sends it back in CSRFHeader.
func (k sessionKeys) csrf(s session) string { return k.sign("csrf." + s.value) }

// csrfOK reports whether t is the CSRF token of s.
func (k sessionKeys) csrfOK(s session, t string) bool {
	return t != "" && hmac.Equal([]byte(t), []byte(k.csrf(s)))
}

// session returns the request's valid session, if any.
func (c *Console) session(r *http.Request) (session, bool) {
	ck, err := r.Cookie(CookieName)
	if err != nil {
		return session{}, false
	}
	return c.keys.verify(ck.Value, c.o.Now())
}

// setCookie sets the session cookie: Path /console/, HttpOnly, SameSite=Strict, Max-Age the
// session's lifetime, Secure when the request came over https (docs/console.md "Sessions").
func (c *Console) setCookie(w http.ResponseWriter, r *http.Request, s session) {
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: s.value, Path: "/console/",
		MaxAge: int(SessionLifetime / time.Second), HttpOnly: true, Secure: secureRequest(r), SameSite: http.SameSiteStrictMode})
}

// clearCookie tells the browser to forget the session cookie.
func (c *Console) clearCookie(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: "", Path: "/console/", MaxAge: -1,
		HttpOnly: true, Secure: secureRequest(r), SameSite: http.SameSiteStrictMode})
}

// secureRequest reports whether the browser reached the console over https: TLS at this
// listener, or a proxy that terminated it and says so in X-Forwarded-Proto. (A client that
// forges the header only gets a Secure cookie its plain-http browser will not send back.)
func secureRequest(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(strings.TrimSpace(r.Header.Get("X-Forwarded-Proto")), "https")
}

// loopbackHost reports whether the Host header names this machine (localhost, 127.0.0.0/8,
// ::1), port or not.
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
