package fakeprovider

import (
	"net/http"
	"strconv"

	"github.com/tidwall/gjson"

	"github.com/switchyard-gw/switchyard/internal/catalog"
)

// The real APIs' field limits the provider enforces (docs/fake-provider.md "Field limits"), so
// that a test catches a request the real service would refuse with a 400:
//
// OpenAI (chat completions and Responses): safety_identifier at most 64 characters; metadata at
// most 16 keys, keys at most 64 and string values at most 512 characters; at most 128 tools; a
// function name matching ^[a-zA-Z0-9_-]{1,64}$; chat: at most 4 stop sequences, tool call ids
// (messages[].tool_calls[].id, messages[].tool_call_id) at most 40 characters.
//
// Anthropic (messages and count_tokens): metadata.user_id at most 256 characters; a client
// tool's name matching ^[a-zA-Z0-9_-]{1,128}$; tool_use ids (and tool_result tool_use_id)
// matching ^[a-zA-Z0-9_-]+$.
const (
	oaMaxUser, oaMaxMetaKeys, oaMaxMetaKey, oaMaxMetaValue = 64, 16, 64, 512
	oaMaxTools, oaMaxToolName, oaMaxStop, oaMaxCallID      = 128, 64, 4, 40
	anMaxUser, anMaxToolName                               = 256, 128
)

// limitError is the 400 the real API answers for the first field of body over its limits, in
// its own wording, or nil when every field fits. path selects the API (chat, responses,
// messages); other paths are not checked.
func limitError(d catalog.Dialect, path string, body []byte) *apiError {
	root := gjson.ParseBytes(body)
	if d == catalog.Anthropic {
		if path != "/v1/messages" && path != "/messages" && path != countTokensPath {
			return nil
		}
		return anthropicLimits(root)
	}
	responses := isResponsesPath(path)
	if !responses && path != "/v1/chat/completions" && path != "/chat/completions" {
		return nil
	}
	if s := root.Get("safety_identifier"); len(s.Str) > oaMaxUser {
		return tooLong("safety_identifier", oaMaxUser, len(s.Str))
	}
	if e := openAIMetadata(root.Get("metadata")); e != nil {
		return e
	}
	tools := root.Get("tools").Array()
	if len(tools) > oaMaxTools {
		return &apiError{status: http.StatusBadRequest, typ: "invalid_request_error", param: "tools", code: "array_above_max_length",
			message: "Invalid 'tools': array too long. Expected an array with maximum length 128, but got an array with length " + strconv.Itoa(len(tools)) + " instead."}
	}
	for i, t := range tools {
		p, name := "tools["+strconv.Itoa(i)+"].function.name", t.Get("function.name")
		if responses {
			p, name = "tools["+strconv.Itoa(i)+"].name", t.Get("name")
			if t.Get("type").Str == "namespace" {
				for j, f := range t.Get("tools").Array() {
					if e := openAIToolName(p[:len(p)-5]+".tools["+strconv.Itoa(j)+"].name", f.Get("name").Str); e != nil {
						return e
					}
				}
				continue
			}
			if t.Get("type").Str != "function" {
				continue
			}
		}
		if e := openAIToolName(p, name.Str); e != nil {
			return e
		}
	}
	if responses {
		return nil
	}
	if st := root.Get("stop"); st.IsArray() && len(st.Array()) > oaMaxStop {
		return &apiError{status: http.StatusBadRequest, typ: "invalid_request_error", param: "stop", code: "array_above_max_length",
			message: "Invalid 'stop': array too long. Expected an array with maximum length 4, but got an array with length " + strconv.Itoa(len(st.Array())) + " instead."}
	}
	for i, m := range root.Get("messages").Array() {
		mp := "messages[" + strconv.Itoa(i) + "]"
		if id := m.Get("tool_call_id"); len(id.Str) > oaMaxCallID {
			return tooLong(mp+".tool_call_id", oaMaxCallID, len(id.Str))
		}
		for j, c := range m.Get("tool_calls").Array() {
			if id := c.Get("id"); len(id.Str) > oaMaxCallID {
				return tooLong(mp+".tool_calls["+strconv.Itoa(j)+"].id", oaMaxCallID, len(id.Str))
			}
		}
	}
	return nil
}

// isResponsesPath reports whether path is the Responses API's create endpoint.
func isResponsesPath(path string) bool { return path == "/v1/responses" || path == "/responses" }

func tooLong(param string, max, got int) *apiError {
	return &apiError{status: http.StatusBadRequest, typ: "invalid_request_error", param: param, code: "string_above_max_length",
		message: "Invalid '" + param + "': string too long. Expected a string with maximum length " + strconv.Itoa(max) +
			", but got a string with length " + strconv.Itoa(got) + " instead."}
}

func openAIToolName(param, name string) *apiError {
	if len(name) > oaMaxToolName {
		return tooLong(param, oaMaxToolName, len(name))
	}
	if !toolNameMatches(name) {
		return &apiError{status: http.StatusBadRequest, typ: "invalid_request_error", param: param, code: "invalid_value",
			message: "Invalid '" + param + "': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'."}
	}
	return nil
}

func openAIMetadata(md gjson.Result) *apiError {
	if !md.IsObject() {
		return nil
	}
	n := 0
	var e *apiError
	md.ForEach(func(k, v gjson.Result) bool {
		n++
		switch {
		case n > oaMaxMetaKeys:
			e = &apiError{status: http.StatusBadRequest, typ: "invalid_request_error", param: "metadata", code: "object_above_max_properties",
				message: "Invalid 'metadata': too many properties. Expected an object with at most 16 properties."}
		case len(k.Str) > oaMaxMetaKey:
			e = tooLong("metadata", oaMaxMetaKey, len(k.Str))
		case len(v.Str) > oaMaxMetaValue:
			e = tooLong("metadata."+k.Str, oaMaxMetaValue, len(v.Str))
		}
		return e == nil
	})
	return e
}

func anthropicLimits(root gjson.Result) *apiError {
	bad := func(msg string) *apiError {
		return &apiError{status: http.StatusBadRequest, typ: "invalid_request_error", message: msg}
	}
	if u := root.Get("metadata.user_id"); len(u.Str) > anMaxUser {
		return bad("metadata.user_id: String should have at most 256 characters")
	}
	for i, t := range root.Get("tools").Array() {
		if typ := t.Get("type").Str; typ != "" && typ != "custom" {
			continue // a server tool: its name is fixed by its type
		}
		if name := t.Get("name").Str; len(name) > anMaxToolName || !toolNameMatches(name) {
			return bad("tools." + strconv.Itoa(i) + ".custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'")
		}
	}
	for i, m := range root.Get("messages").Array() {
		for j, c := range m.Get("content").Array() {
			var id string
			switch c.Get("type").Str {
			case "tool_use":
				id = c.Get("id").Str
			case "tool_result":
				id = c.Get("tool_use_id").Str
			default:
				continue
			}
			if !toolNameMatches(id) {
				return bad("messages." + strconv.Itoa(i) + ".content." + strconv.Itoa(j) + "." + c.Get("type").Str +
					".id: String should match pattern '^[a-zA-Z0-9_-]+$'")
			}
		}
	}
	return nil
}

// toolNameMatches reports whether s is not empty and every byte is in [a-zA-Z0-9_-].
func toolNameMatches(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
