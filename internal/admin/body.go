package admin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/switchyard-gw/switchyard/internal/accounts"
	"github.com/switchyard-gw/switchyard/internal/dialect"
	"github.com/switchyard-gw/switchyard/internal/dialect/openai"
	"github.com/switchyard-gw/switchyard/internal/failure"
)

// writeError writes fe with status in the OpenAI error shape (openai.AppendErrorBody, the body
// the relay writes on the OpenAI surface; the admin API does not import the relay).
func writeError(w http.ResponseWriter, status int, fe *failure.Error) {
	writeConflicts(w, status, fe, nil)
}

// writeConflicts is writeError with, when conflicts is not empty, a top-level "conflicts"
// member after "request_id" (R-KEY-3: the layers a settings change would leave with no
// candidate); the OpenAI shape of "error" is unchanged.
func writeConflicts(w http.ResponseWriter, status int, fe *failure.Error, conflicts []conflictJSON) {
	b := openai.AppendErrorBody(nil, fe, requestID(w))
	if len(conflicts) > 0 {
		if cs, err := json.Marshal(conflicts); err == nil && len(b) > 0 && b[len(b)-1] == '}' {
			b = append(append(append(b[:len(b)-1], `,"conflicts":`...), cs...), '}')
		}
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Switchyard-Error-Code", string(fe.Class))
	h.Set("X-Should-Retry", strconv.FormatBool(fe.ShouldRetry()))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// requestID is the id the gateway minted for this response (its x-request-id header).
func requestID(w http.ResponseWriter) string {
	if v := w.Header()["X-Request-Id"]; len(v) > 0 {
		return v[0]
	}
	return ""
}

func badRequest(w http.ResponseWriter, param, format string, args ...any) {
	writeError(w, http.StatusBadRequest, &failure.Error{Class: failure.InvalidRequest, Param: param, Msg: fmt.Sprintf(format, args...)})
}

// errInvalid is a 400 naming param, for a body refused by a check that runs before the store.
func errInvalid(param, format string, args ...any) error {
	return &errSettings{status: http.StatusBadRequest, fe: &failure.Error{Class: failure.InvalidRequest, Param: param, Msg: fmt.Sprintf(format, args...)}}
}

// errBadPatch marks an update refused for its body (400 naming settings) inside the store's
// update function, not by the store.
type errBadPatch struct{ error }

// fail answers err, the one error path of every handler: an *errSettings as shaped (400 naming
// the field, or 409 with its "conflicts", R-KEY-3), an errBadPatch as a 400 naming settings,
// and anything else as a store error: 404 for accounts.ErrNotFound (notFound says what), 409
// for accounts.ErrExists and accounts.ErrBalanceLimit (a credit above the balance cap), else
// 503 (the error is logged, not shown).
func (a *api) fail(w http.ResponseWriter, err error, notFound string) {
	var es *errSettings
	var bad errBadPatch
	switch {
	case errors.As(err, &es):
		writeConflicts(w, es.status, es.fe, es.conflicts)
	case errors.As(err, &bad):
		badRequest(w, "settings", "%v", bad.error)
	case errors.Is(err, accounts.ErrNotFound):
		writeError(w, http.StatusNotFound, &failure.Error{Class: failure.InvalidRequest, Msg: notFound})
	case errors.Is(err, accounts.ErrExists):
		writeError(w, http.StatusConflict, &failure.Error{Class: failure.InvalidRequest, Msg: "the id is already taken"})
	case errors.Is(err, accounts.ErrBalanceLimit):
		writeError(w, http.StatusConflict, &failure.Error{Class: failure.InvalidRequest, Param: "amount_usd",
			Msg: "the credit would take the balance above the limit of 1000000000000 USD (1e12); nothing was credited"})
	default:
		a.Logf("admin: store: %v", err)
		writeError(w, http.StatusServiceUnavailable, &failure.Error{Class: failure.GatewayError, Msg: "the store did not answer"})
	}
}

// checker is a decoded body that validates itself without the store: it returns the
// parameter and message of its first problem, or "" and "".
type checker interface {
	check() (param, msg string)
}

// decode reads a JSON object into dst, refusing members not in allowed (all named in the 400,
// sorted) and members in required that are absent or null, and then runs dst's check when it
// has one. A body over MaxBody is 413; one nested deeper than dialect.MaxDepth is 400, before
// any parse. It answers the error itself and reports false then.
func decode(w http.ResponseWriter, r *http.Request, dst any, allowed []string, required ...string) bool {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeError(w, http.StatusRequestEntityTooLarge, &failure.Error{Class: failure.RequestTooLarge, Msg: "the body is larger than 1 MiB"})
			return false
		}
		badRequest(w, "", "the body could not be read")
		return false
	}
	if dialect.TooDeep(body) {
		writeError(w, http.StatusBadRequest, dialect.RequestTooDeep())
		return false
	}
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&raw); err != nil || raw == nil || dec.More() {
		badRequest(w, "", "the body must be one JSON object")
		return false
	}
	var unknown []string
	for k := range raw {
		if !slices.Contains(allowed, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		badRequest(w, unknown[0], "unknown fields: %s (allowed: %s)", strings.Join(unknown, ", "), strings.Join(allowed, ", "))
		return false
	}
	for _, k := range required {
		if v, ok := raw[k]; !ok || string(v) == "null" {
			badRequest(w, k, "%s is required", k)
			return false
		}
	}
	b, _ := json.Marshal(raw)
	if err := json.Unmarshal(b, dst); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			got, _, _ := strings.Cut(te.Value, " ") // "number -5": the kind only
			if got == "bool" {
				got = "boolean"
			}
			badRequest(w, te.Field, "%s has the wrong type: want %s, not %s", te.Field, jsonTypeName(te.Type), got)
			return false
		}
		badRequest(w, "", "the body is not valid: %v", err)
		return false
	}
	if c, ok := dst.(checker); ok {
		if param, msg := c.check(); msg != "" {
			badRequest(w, param, "%s", msg)
			return false
		}
	}
	return true
}

// jsonTypeName names the JSON type that decodes into t, for a 400: string, boolean, integer,
// number, object, array of strings (of integers, of objects...), array; "a JSON value" for
// anything else.
func jsonTypeName(t reflect.Type) string {
	if t == nil {
		return "a JSON value"
	}
	switch t.Kind() {
	case reflect.Pointer:
		return jsonTypeName(t.Elem())
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice, reflect.Array:
		switch e := jsonTypeName(t.Elem()); {
		case e == "a JSON value":
			return "array"
		case strings.HasPrefix(e, "array"):
			return "array of arrays" + strings.TrimPrefix(e, "array")
		default:
			return "array of " + e + "s"
		}
	case reflect.Map, reflect.Struct:
		return "object"
	}
	return "a JSON value"
}

// maxNameBytes bounds the name of an account, workspace, key or policy.
const maxNameBytes = 256

// checkName validates a name given to an account, workspace, key or policy: at most
// maxNameBytes bytes and no control characters (C0, DEL, C1). It returns the 400's message, or
// "" when the name is acceptable.
func checkName(name string) string {
	if len(name) > maxNameBytes {
		return fmt.Sprintf("name is %d bytes long; at most %d", len(name), maxNameBytes)
	}
	if strings.ContainsFunc(name, unicode.IsControl) {
		return "name must not contain control characters (newlines, tabs, NUL...)"
	}
	return ""
}

// clip shortens an echoed value to 64 bytes.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
