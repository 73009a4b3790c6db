package admin

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/switchyard-gw/switchyard/internal/accounts"
	"github.com/switchyard-gw/switchyard/internal/audit"
	"github.com/switchyard-gw/switchyard/internal/failure"
)

// AuditLog is the audit as the call log reads it (*audit.Recorder): a page of stored records,
// and one record by request id (queued or stored).
type AuditLog interface {
	List(ctx context.Context, f audit.Filter, after audit.Position, limit int) ([]*audit.Record, error)
	Lookup(ctx context.Context, requestID string) (*audit.Record, error)
}

// maxFilterBytes bounds a string filter of the call log.
const maxFilterBytes = 512

// parseRequestFilter reads the call log's filters (docs/admin-api.md "The call log"); it
// answers the 400 itself and reports false then.
func parseRequestFilter(w http.ResponseWriter, q url.Values) (audit.Filter, bool) {
	f := audit.Filter{Account: q.Get("account_id"), KeyID: q.Get("key_id"), Model: q.Get("model"), Deployment: q.Get("deployment"),
		RequestID: q.Get("request_id")}
	for _, p := range []string{"account_id", "key_id", "model", "deployment", "class", "request_id"} {
		if len(q.Get(p)) > maxFilterBytes {
			badRequest(w, p, "%s is longer than %d bytes", p, maxFilterBytes)
			return f, false
		}
	}
	if v := q.Get("status"); v != "" {
		lo, hi, ok := parseStatus(v)
		if !ok {
			badRequest(w, "status", "status must be an HTTP status code such as 429, or a class: 2xx, 4xx, 5xx")
			return f, false
		}
		f.StatusMin, f.StatusMax = lo, hi
	}
	if v := q.Get("class"); v != "" {
		f.HasErrorCode = true
		if v != "none" {
			f.ErrorCode = v
		}
	}
	for _, p := range []struct {
		name string
		dst  *time.Time
	}{{"since", &f.Since}, {"until", &f.Until}} {
		if v := q.Get(p.name); v != "" {
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				badRequest(w, p.name, "%s must be an RFC 3339 time such as 2026-12-02T14:00:00Z", p.name)
				return f, false
			}
			*p.dst = t
		}
	}
	return f, true
}

// parseStatus reads a status filter: a code 100..599 (lo = hi), or 1xx..5xx.
func parseStatus(v string) (lo, hi int, ok bool) {
	if len(v) == 3 && strings.HasSuffix(strings.ToLower(v), "xx") && v[0] >= '1' && v[0] <= '5' {
		c := int(v[0]-'0') * 100
		return c, c + 99, true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 100 || n > 599 {
		return 0, 0, false
	}
	return n, n, true
}

// listRequests serves GET /admin/v1/requests: the call log, newest first, a page at a time,
// each row the audit record with its attempts (the record GET /v1/generation shows).
func (a *api) listRequests(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p, ok := parsePage(w, q)
	if !ok {
		return
	}
	f, ok := parseRequestFilter(w, q)
	if !ok {
		return
	}
	if a.Audit == nil {
		writeError(w, http.StatusServiceUnavailable, &failure.Error{Class: failure.GatewayError, Msg: "the admin API has no audit log"})
		return
	}
	ctx, cancel := storeCtx(r)
	defer cancel()
	recs, err := a.Audit.List(ctx, f, audit.Position{CreatedAt: p.After.CreatedAt, RequestID: p.After.ID}, p.Limit+1)
	if err != nil {
		a.Logf("admin: audit: %v", err)
		writeError(w, http.StatusServiceUnavailable, &failure.Error{Class: failure.GatewayError, Msg: "the audit store did not answer"})
		return
	}
	out := listPage{Data: make([]any, 0, min(len(recs), p.Limit))}
	if len(recs) > p.Limit {
		recs = recs[:p.Limit]
		last := recs[p.Limit-1]
		c := encodeCursor(accounts.Position{CreatedAt: last.CreatedAt, ID: last.RequestID})
		out.NextCursor = &c
	}
	for _, rec := range recs {
		out.Data = append(out.Data, rec)
	}
	writeJSON(w, http.StatusOK, out)
}

// getRequest serves GET /admin/v1/requests/{id}: one audit record of any account, or 404.
func (a *api) getRequest(w http.ResponseWriter, r *http.Request) {
	if a.Audit == nil {
		writeError(w, http.StatusServiceUnavailable, &failure.Error{Class: failure.GatewayError, Msg: "the admin API has no audit log"})
		return
	}
	ctx, cancel := storeCtx(r)
	defer cancel()
	rec, err := a.Audit.Lookup(ctx, r.PathValue("id"))
	switch {
	case errors.Is(err, audit.ErrNotFound):
		writeError(w, http.StatusNotFound, &failure.Error{Class: failure.InvalidRequest, Msg: "no request with that id"})
		return
	case err != nil:
		a.Logf("admin: audit: %v", err)
		writeError(w, http.StatusServiceUnavailable, &failure.Error{Class: failure.GatewayError, Msg: "the audit store did not answer"})
		return
	}
	writeJSON(w, http.StatusOK, rec)
}
