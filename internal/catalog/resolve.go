package catalog

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/switchyard-gw/switchyard/internal/failure"
)

// Resolution is what a caller's model string resolved to.
type Resolution struct {
	// Requested is the caller's string, as sent; responses echo it (R-MODEL-6).
	Requested string
	// Model is the catalog model that routes and bills the request; never nil on success.
	Model *Model
	// SnapshotSuffix is the date suffix ("-20251001" or "-2025-10-01") when the caller named a
	// dated snapshot; the provider still receives the caller's id (R-MODEL-3) unless the route
	// maps the date (see UpstreamModel). "" otherwise.
	SnapshotSuffix string
	// Alias is true when the name (or the name before a snapshot suffix) is an alias: the
	// request is routed, billed and sent upstream as the target model (R-MODEL-4).
	Alias bool
	// Endpoint is the dedicated endpoint the caller named (R-KEY-6), whose Model is Model;
	// nil for a request to a model. The caller must check Endpoint.Allows: Resolve does not
	// know the caller.
	Endpoint *Endpoint
}

// Serves reports whether route rt of the resolved model may serve this request (R-KEY-6): a
// public route serves a model request and, when the endpoint has PublicFallback, an endpoint
// request; a reserved route serves only requests through an endpoint that lists it.
func (r *Resolution) Serves(rt *Route) bool {
	if rt.Deployment.Reserved {
		return r.Endpoint != nil && r.Endpoint.Lists(rt)
	}
	return r.Endpoint == nil || r.Endpoint.PublicFallback
}

// UpstreamModel is the model id sent to the provider on route rt (R-MODEL-3, issue 11 item 2).
// Without a snapshot suffix it is rt.UpstreamModel. For a dated snapshot, in order:
//
//  1. the route's UpstreamSnapshots entry for the date (either spelling);
//  2. the route's UpstreamSnapshotPattern with "{date}" replaced by the caller's date as written;
//  3. otherwise the caller's dated id: the catalog model id plus SnapshotSuffix (for an alias,
//     its target's id: R-MODEL-4). The route's own upstream_model is not dated by the gateway,
//     which could only guess an id nobody serves.
//
// It does not allocate without a suffix or for a map entry.
func (r Resolution) UpstreamModel(rt *Route) string {
	if r.SnapshotSuffix == "" {
		return rt.UpstreamModel
	}
	date := r.SnapshotSuffix[1:]
	if rt.UpstreamSnapshots != nil {
		var b [8]byte
		if len(date) == 10 { // YYYY-MM-DD
			copy(b[:4], date[:4])
			copy(b[4:6], date[5:7])
			copy(b[6:], date[8:])
		} else {
			copy(b[:], date)
		}
		if id, ok := rt.UpstreamSnapshots[string(b[:])]; ok {
			return id
		}
	}
	if p := rt.UpstreamSnapshotPattern; p != "" {
		return strings.Replace(p, "{date}", date, 1)
	}
	return rt.Model + r.SnapshotSuffix
}

// Resolve maps the model string a caller sent to a catalog model (R-MODEL-1..5), in order:
//
//  1. the exact string as a model id (ids may hold '/' and ':'; case matters);
//  2. the exact string as an alias;
//  3. the exact string as a dedicated endpoint id (R-KEY-6): the endpoint's model, with
//     Resolution.Endpoint set (the caller checks Endpoint.Allows; to a caller it does not allow,
//     answer UnknownModel(id));
//  4. a dated snapshot: a suffix "-YYYYMMDD" or "-YYYY-MM-DD" that is a valid calendar date,
//     after an id or an alias (looked up exactly, as in 1 and 2). Endpoint ids take no
//     snapshot suffix.
//
// There is never a closest match, a default model or a substitution. A `model:provider` or
// `model:@strategy` suffix (R-SUFFIX, R-MODEL-5) is not split off here: ResolveSuffixed does
// that, after this whole-string lookup misses.
//
// An unknown id returns a *failure.Error of class failure.ModelUnavailable (404) with Param
// "model" and a message that quotes the id (%q, so control characters are escaped; ids longer
// than 256 bytes are cut) and points at GET /v1/models. An empty id is failure.InvalidRequest.
// Resolve does not allocate on success.
func (c *Catalog) Resolve(id string) (Resolution, error) {
	if n, ok := c.names[id]; ok {
		return Resolution{Requested: id, Model: n.model, Alias: n.alias}, nil
	}
	if e, ok := c.endpoints[id]; ok {
		return Resolution{Requested: id, Model: e.Model, Endpoint: e}, nil
	}
	if k := snapshotSuffixLen(id); k > 0 {
		if n, ok := c.names[id[:len(id)-k]]; ok {
			return Resolution{Requested: id, Model: n.model, Alias: n.alias, SnapshotSuffix: id[len(id)-k:]}, nil
		}
	}
	if id == "" {
		return Resolution{}, &failure.Error{
			Class: failure.InvalidRequest, Param: "model",
			Msg: "the request names no model; GET /v1/models lists the available models",
		}
	}
	return Resolution{}, UnknownModel(id)
}

// UnknownModel is the error for a model string that names nothing the caller may use: a
// *failure.Error of class failure.ModelUnavailable (404), Param "model", quoting id (cut at
// 256 bytes) and pointing at GET /v1/models. A dedicated endpoint the caller's account may not
// use gets exactly this error, so its existence is not revealed (R-KEY-6).
func UnknownModel(id string) error {
	return &failure.Error{
		Class: failure.ModelUnavailable, Param: "model",
		Msg: fmt.Sprintf("model %q is not served here; GET /v1/models lists the available models", clip(id, maxQuotedID)),
	}
}

// maxQuotedID bounds how much of an unknown id is echoed in the error message, in bytes.
const maxQuotedID = 256

// clip cuts s to at most n bytes on a rune boundary, marking the cut with "...".
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}

// snapshotSuffixLen returns the length of a trailing dated-snapshot suffix of id: 9 for
// "-YYYYMMDD", 11 for "-YYYY-MM-DD", 0 when there is none, the date is not a real calendar
// date, or nothing precedes the suffix.
func snapshotSuffixLen(id string) int {
	if n := len(id); n > 9 && id[n-9] == '-' && digits(id[n-8:]) {
		if validDate(num(id[n-8:n-4]), num(id[n-4:n-2]), num(id[n-2:])) {
			return 9
		}
		return 0
	}
	if n := len(id); n > 11 && id[n-11] == '-' && id[n-6] == '-' && id[n-3] == '-' &&
		digits(id[n-10:n-6]) && digits(id[n-5:n-3]) && digits(id[n-2:]) {
		if validDate(num(id[n-10:n-6]), num(id[n-5:n-3]), num(id[n-2:])) {
			return 11
		}
	}
	return 0
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// num parses a run of ASCII digits (already checked by digits).
func num(s string) int {
	v := 0
	for i := 0; i < len(s); i++ {
		v = v*10 + int(s[i]-'0')
	}
	return v
}

// validDate reports whether y-m-d is a date of the proleptic Gregorian calendar with a year in
// 1900..9999 (a snapshot date; "-00000000" is a version number, not a date).
func validDate(y, m, d int) bool {
	if y < 1900 || m < 1 || m > 12 || d < 1 {
		return false
	}
	days := [...]int{31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}[m-1]
	if m == 2 && y%4 == 0 && (y%100 != 0 || y%400 == 0) {
		days = 29
	}
	return d <= days
}
