package fakeprovider

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/switchyard-gw/switchyard/internal/catalog"
)

// apiError is one error the provider answers, before it is encoded in a dialect's shape.
type apiError struct {
	status  int
	typ     string // OpenAI error.type / Anthropic error.type
	code    string // OpenAI error.code / Anthropic error.details.error_code; "" is null / absent
	param   string // OpenAI error.param; "" is null
	message string
}

// override applies a Behavior's ErrorType, ErrorCode and Message overrides to e. A code of
// insufficient_quota without a type override also gets OpenAI's type and message for it on the
// OpenAI dialect.
func (e apiError) override(d catalog.Dialect, b Behavior) apiError {
	if b.ErrorCode != "" {
		e.code = b.ErrorCode
		if b.ErrorCode == "insufficient_quota" && b.ErrorType == "" && d == catalog.OpenAI {
			e.typ = "insufficient_quota"
			e.message = "You exceeded your current quota, please check your plan and billing details."
		}
	}
	if b.ErrorType != "" {
		e.typ = b.ErrorType
	}
	if b.Message != "" {
		e.message = b.Message
	}
	return e
}

// statusError is the dialect's real error for an HTTP status, for model (for 404 and 429 texts).
func statusError(d catalog.Dialect, status int, model string) apiError {
	if d == catalog.Anthropic {
		return anthropicStatusError(status)
	}
	e := apiError{status: status, typ: "invalid_request_error"}
	switch {
	case status == http.StatusBadRequest:
		e.message = "Invalid request."
	case status == http.StatusUnauthorized:
		e.code, e.message = "invalid_api_key", "Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys."
	case status == http.StatusForbidden:
		e.code, e.message = "unsupported_country_region_territory", "Country, region, or territory not supported"
	case status == http.StatusNotFound:
		e.code, e.message = "model_not_found", fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", model)
	case status == http.StatusRequestEntityTooLarge:
		e.code, e.message = "request_too_large", "Request too large."
	case status == http.StatusTooManyRequests:
		e.typ, e.code = "requests", "rate_limit_exceeded"
		e.message = fmt.Sprintf("Rate limit reached for %s in organization org-fake on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 1s.", model)
	case status == http.StatusServiceUnavailable:
		e.typ, e.message = "server_error", "That model is currently overloaded with other requests. You can retry your request, or contact us through our help center at help.openai.com if the error persists."
	case status >= 500:
		e.typ, e.message = "server_error", "The server had an error while processing your request. Sorry about that!"
	default:
		e.message = http.StatusText(status)
	}
	return e
}

// anthropicStatusError is Anthropic's error type and message for an HTTP status.
func anthropicStatusError(status int) apiError {
	e := apiError{status: status}
	switch status {
	case http.StatusBadRequest:
		e.typ, e.message = "invalid_request_error", "Invalid request."
	case http.StatusUnauthorized:
		e.typ, e.message = "authentication_error", "invalid x-api-key"
	case http.StatusPaymentRequired:
		e.typ, e.message = "billing_error", "Your credit balance is too low to access the Anthropic API."
	case http.StatusForbidden:
		e.typ, e.message = "permission_error", "Your API key does not have permission to use the specified resource."
	case http.StatusNotFound:
		e.typ, e.message = "not_found_error", "The requested resource could not be found."
	case http.StatusConflict:
		e.typ, e.message = "conflict_error", "Conflict."
	case http.StatusRequestEntityTooLarge:
		e.typ, e.message = "request_too_large", "Request exceeds the maximum allowed number of bytes."
	case http.StatusTooManyRequests:
		e.typ, e.message = "rate_limit_error", "This request would exceed your organization's rate limit. Please try again later."
	case http.StatusGatewayTimeout:
		e.typ, e.message = "timeout_error", "Request timed out."
	case http.StatusServiceUnavailable, 529:
		e.typ, e.message = "overloaded_error", "Overloaded"
	default:
		if status >= 500 {
			e.typ, e.message = "api_error", "Internal server error"
		} else {
			e.typ, e.message = "invalid_request_error", http.StatusText(status)
		}
	}
	return e
}

// overloadError is the in-stream (and non-stream fallback) error of KindPreambleError.
func overloadError(d catalog.Dialect) apiError {
	if d == catalog.Anthropic {
		return anthropicStatusError(529)
	}
	return statusError(d, http.StatusServiceUnavailable, "")
}

// serverError is the in-stream (and non-stream fallback) error of KindStreamError.
func serverError(d catalog.Dialect) apiError {
	return statusError(d, http.StatusInternalServerError, "")
}

// contentPolicyError is the dialect's content-policy 400.
func contentPolicyError(d catalog.Dialect) apiError {
	if d == catalog.Anthropic {
		return apiError{status: 400, typ: "invalid_request_error", message: "Output blocked by content filtering policy"}
	}
	return apiError{status: 400, typ: "invalid_request_error", code: "content_policy_violation",
		message: "Your request was rejected as a result of our safety system. Your prompt may contain text that is not allowed by our safety system."}
}

// Context windows quoted in the context-overflow messages.
const (
	openAIContextWindow    = 128000
	anthropicContextWindow = 200000
)

// contextOverflowError is the dialect's context-overflow 400 for a prompt of promptTokens tokens:
// the reported size is the window plus promptTokens, so it always exceeds the window.
func contextOverflowError(d catalog.Dialect, promptTokens int) apiError {
	if d == catalog.Anthropic {
		return apiError{status: 400, typ: "invalid_request_error",
			message: fmt.Sprintf("prompt is too long: %d tokens > %d maximum", anthropicContextWindow+promptTokens, anthropicContextWindow)}
	}
	return apiError{status: 400, typ: "invalid_request_error", code: "context_length_exceeded", param: "messages",
		message: fmt.Sprintf("This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.",
			openAIContextWindow, openAIContextWindow+promptTokens)}
}

// Wire shapes of the two error bodies.
type (
	openAIErrorBody struct {
		Error openAIErrorObject `json:"error"`
	}
	openAIErrorObject struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	}
	anthropicErrorBody struct {
		Type      string               `json:"type"`
		Error     anthropicErrorObject `json:"error"`
		RequestID string               `json:"request_id"`
	}
	anthropicErrorObject struct {
		Type    string            `json:"type"`
		Message string            `json:"message"`
		Details *anthropicDetails `json:"details,omitempty"`
	}
	anthropicDetails struct {
		ErrorCode string `json:"error_code"`
	}
)

// nullable returns nil for "" so that it encodes as JSON null.
func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// errorBody encodes e as the dialect's error body (also the data of its in-stream error event).
func errorBody(d catalog.Dialect, e apiError, requestID string) []byte {
	var v any
	if d == catalog.Anthropic {
		ae := anthropicErrorBody{Type: "error", RequestID: requestID,
			Error: anthropicErrorObject{Type: e.typ, Message: e.message}}
		if e.code != "" {
			ae.Error.Details = &anthropicDetails{ErrorCode: e.code}
		}
		v = ae
	} else {
		v = openAIErrorBody{Error: openAIErrorObject{Message: e.message, Type: e.typ,
			Param: nullable(e.param), Code: nullable(e.code)}}
	}
	out, _ := json.Marshal(v) // plain structs of strings always marshal
	return out
}

// writeError answers e as a complete JSON error response, with Retry-After when retryAfter > 0.
func writeError(w http.ResponseWriter, d catalog.Dialect, e apiError, requestID string, retryAfter int) error {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(retryAfter))
	}
	body := errorBody(d, e, requestID)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(e.status)
	_, err := w.Write(body)
	return err
}
