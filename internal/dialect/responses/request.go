package responses

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/switchyard-gw/switchyard/internal/dialect"
	"github.com/switchyard-gw/switchyard/internal/failure"
)

// ParseRequest reads the fields routing needs from a Responses request body without decoding
// it (R-DIALECT-3): model (with its byte offsets), stream, and max_output_tokens as MaxTokens.
// IncludeUsage is always true: the Responses API reports usage in its terminal event whatever
// the caller sent.
//
// Errors are *failure.Error of class invalid_request naming the field: a body that is not a
// JSON object, a missing or non-string model, a non-boolean stream, a non-integer
// max_output_tokens, or an input that is neither a string nor an array.
func ParseRequest(body []byte) (dialect.RequestInfo, error) {
	var info dialect.RequestInfo
	var m, in, stream, maxOut gjson.Result
	if err := dialect.ScanBody(body, func(k string, v gjson.Result) {
		switch k {
		case "model":
			m = v
		case "input":
			in = v
		case "stream":
			stream = v
		case "max_output_tokens":
			maxOut = v
		}
	}); err != nil {
		return info, err // not JSON, not an object, or a duplicated key
	}
	if m.Type != gjson.String || m.Str == "" {
		return info, failure.Invalid("model", "`model` is required and must be a non-empty string")
	}
	info.Model = strings.Clone(m.Str) // m.Str aliases the body
	info.ModelStart, info.ModelEnd = m.Index, m.Index+len(m.Raw)
	if in.Type != gjson.String && !in.IsArray() {
		return info, failure.Invalid("input", "`input` is required and must be a string or an array of items")
	}
	var err error
	if info.Stream, err = dialect.BoolField(stream, "stream"); err != nil {
		return info, err
	}
	if maxOut.Exists() && maxOut.Type != gjson.Null {
		if info.MaxTokens, err = dialect.IntField(maxOut, "max_output_tokens"); err != nil {
			return info, err
		}
	}
	info.IncludeUsage = true
	return info, nil
}

// refused are the top-level parameters that need state the provider keeps (a stored response,
// conversation or prompt template) or a job the gateway does not run: dropping them would
// change the meaning of the request, and no chat or messages deployment can honour them.
var refused = [...]struct{ name, msg string }{
	{"previous_response_id", "previous_response_id needs a response stored by the provider; send the whole conversation in input instead"},
	{"conversation", "conversation needs a conversation stored by the provider; send the whole conversation in input instead"},
	{"background", "background responses are not supported; use stream or a plain request"},
	{"prompt", "stored prompt templates are not supported; send instructions and input instead"},
}

// DecodeRequest fully decodes a Responses request body into canonical form (R-DIALECT-2), for
// encoding to a chat-completions or messages upstream. The returned Request owns its strings
// (one copy of body is taken); body may be reused afterwards.
//
//   - input: a string is one user message. An array holds items: messages (role user, assistant,
//     system or developer; content a string or input_text, input_image, input_file parts, and for
//     the assistant output_text and refusal parts), function_call, function_call_output and
//     reasoning items. Consecutive assistant items (message, reasoning, function_call) become one
//     assistant message, and consecutive function_call_output items one user message of tool
//     results, as the canonical form keeps them. system and developer messages are hoisted into
//     System after instructions. A reasoning item becomes a thinking part whose text is its
//     reasoning_text content (or its summary) and whose signature is its encrypted_content.
//   - instructions -> System[0]; max_output_tokens -> MaxTokens; temperature, top_p,
//     reasoning.effort, parallel_tool_calls (false -> DisableParallel), stream, prompt_cache_key;
//     safety_identifier (else user) -> User; text.format json_schema -> ResponseFormat.
//   - tools: function tools {type:"function", name, description, parameters, strict}, flat or
//     in a namespace tool (Tool.Namespace); every other tool (hosted or custom) is kept by type
//     for dialect.Fit to drop.
//
// Parameters the canonical form cannot carry (store, include, truncation, metadata,
// text.verbosity, reasoning.summary, text.format json_object, input_image detail, ...) are listed
// in Request.Dropped when set to something other than null, false, 0, "" or an empty container.
//
// Errors: a *failure.Error of class invalid_request whose Param names the offending field, for a
// body that is not a JSON object, a missing model or input, a field of the wrong type,
// previous_response_id, conversation, background:true or prompt (they need provider-side state),
// an allowed_tools tool_choice, an input item other than those above (item_reference, hosted tool calls), a
// file_id reference, audio input, or a non-PDF file.
func DecodeRequest(body []byte) (*dialect.Request, error) {
	if err := dialect.CheckRequestJSON(body); err != nil {
		return nil, err
	}
	root := gjson.Parse(string(body)) // one copy: every string below is a view into it
	if !root.IsObject() {
		return nil, failure.Invalid("", "the request body must be a JSON object")
	}
	r := &dialect.Request{IncludeUsage: true}
	var (
		err                error
		input, toolChoice  gjson.Result
		instructions, user string
		safety             string
		haveModel          bool
	)
	root.ForEach(func(k, v gjson.Result) bool {
		for _, ref := range refused {
			if k.Str == ref.name {
				if dialect.Meaningful(v) {
					err = failure.Invalid(ref.name, ref.msg)
				}
				return err == nil
			}
		}
		switch k.Str {
		case "model":
			if v.Type != gjson.String || v.Str == "" {
				err = failure.Invalid("model", "`model` is required and must be a non-empty string")
			}
			r.Model, haveModel = v.Str, true
		case "input":
			input = v
		case "instructions":
			instructions, err = dialect.StringField(v, "instructions")
		case "stream":
			r.Stream, err = dialect.BoolField(v, "stream")
		case "max_output_tokens":
			if v.Type != gjson.Null {
				r.MaxTokens, err = dialect.IntField(v, "max_output_tokens")
			}
		case "temperature":
			r.Temperature, err = dialect.FloatField(v, "temperature")
		case "top_p":
			r.TopP, err = dialect.FloatField(v, "top_p")
		case "tools":
			err = decodeTools(v, r)
		case "tool_choice":
			toolChoice = v
		case "parallel_tool_calls":
			_, err = dialect.BoolField(v, "parallel_tool_calls")
			r.ToolChoice.DisableParallel = v.Type == gjson.False
		case "reasoning":
			err = decodeReasoning(v, r)
		case "text":
			err = decodeText(v, r)
		case "user":
			user, err = dialect.StringField(v, "user")
		case "safety_identifier":
			safety, err = dialect.StringField(v, "safety_identifier")
		case "prompt_cache_key":
			r.PromptCacheKey, err = dialect.StringField(v, "prompt_cache_key")
		default: // store, include, truncation, metadata, stream_options, service_tier, top_logprobs, ...
			if dialect.Meaningful(v) {
				r.Drop(k.Str)
			}
		}
		return err == nil
	})
	if err != nil {
		return nil, err
	}
	if !haveModel {
		return nil, failure.Invalid("model", "`model` is required and must be a non-empty string")
	}
	switch {
	case input.Type == gjson.String:
		if input.Str != "" {
			r.Messages = append(r.Messages, dialect.Message{Role: dialect.RoleUser, Parts: []dialect.Part{{Type: dialect.PartText, Text: input.Str}}})
		}
	case input.IsArray():
		if err := decodeInput(input, r); err != nil {
			return nil, err
		}
	default:
		return nil, failure.Invalid("input", "`input` is required and must be a string or an array of items")
	}
	if instructions != "" {
		r.System = append([]string{instructions}, r.System...)
	}
	if err := decodeToolChoice(toolChoice, &r.ToolChoice); err != nil {
		return nil, err
	}
	r.User = safety
	if r.User == "" {
		r.User = user
	}
	return r, nil
}

func decodeReasoning(v gjson.Result, r *dialect.Request) error {
	if v.Type == gjson.Null {
		return nil
	}
	if !v.IsObject() {
		return failure.Invalid("reasoning", "reasoning must be an object")
	}
	var err error
	if r.ReasoningEffort, err = dialect.StringField(v.Get("effort"), "reasoning.effort"); err != nil {
		return err
	}
	for _, k := range [...]string{"summary", "generate_summary"} {
		if dialect.Meaningful(v.Get(k)) {
			r.Drop("reasoning." + k)
		}
	}
	return nil
}

func decodeText(v gjson.Result, r *dialect.Request) error {
	if v.Type == gjson.Null {
		return nil
	}
	if !v.IsObject() {
		return failure.Invalid("text", "text must be an object")
	}
	if dialect.Meaningful(v.Get("verbosity")) {
		r.Drop("text.verbosity")
	}
	f := v.Get("format")
	if !f.Exists() || f.Type == gjson.Null {
		return nil
	}
	if !f.IsObject() {
		return failure.Invalid("text.format", "text.format must be an object")
	}
	switch f.Get("type").Str {
	case "text":
		return nil
	case "json_object":
		r.Drop("text.format")
		return nil
	case "json_schema":
		s := f.Get("schema")
		if !s.IsObject() {
			return failure.Invalid("text.format.schema", "a json_schema format needs a schema object")
		}
		if dialect.Meaningful(f.Get("description")) {
			r.Drop("text.format.description")
		}
		r.ResponseFormat = &dialect.ResponseFormat{Name: f.Get("name").Str, Schema: json.RawMessage(s.Raw), Strict: f.Get("strict").Type == gjson.True}
		return nil
	}
	return failure.Invalid("text.format.type", "unsupported text.format type")
}

// decodeTools reads the function tools, flat or grouped in a `namespace` tool ({type:
// "namespace", name, description, tools: [function tools]}: each function keeps its namespace
// in Tool.Namespace, and dialect.Fit flattens it). Every other tool type is run by the provider
// (web_search, file_search, code_interpreter, image_generation, computer_use, local_shell, mcp,
// ...) or is free-form (custom): it is kept with its Type, so that dialect.Fit drops it and lists
// it in the audit, and refuses a tool_choice that names it.
func decodeTools(v gjson.Result, r *dialect.Request) error {
	if v.Type == gjson.Null {
		return nil
	}
	if !v.IsArray() {
		return failure.Invalid("tools", "tools must be an array")
	}
	var err error
	i := -1
	v.ForEach(func(_, t gjson.Result) bool {
		i++
		p := "tools[" + strconv.Itoa(i) + "]"
		if !t.IsObject() {
			err = failure.Invalid(p, "a tool must be an object")
			return false
		}
		switch typ := t.Get("type"); typ.Str {
		case "function":
			err = decodeFunction(t, p, "", r)
		case "namespace":
			ns := t.Get("name")
			if ns.Type != gjson.String || ns.Str == "" {
				err = failure.Invalid(p+".name", "a namespace tool needs a name")
				return false
			}
			inner := t.Get("tools")
			if !inner.IsArray() {
				err = failure.Invalid(p+".tools", "a namespace tool needs an array of tools")
				return false
			}
			j := -1
			inner.ForEach(func(_, f gjson.Result) bool {
				j++
				q := p + ".tools[" + strconv.Itoa(j) + "]"
				if !f.IsObject() {
					err = failure.Invalid(q, "a tool must be an object")
					return false
				}
				if f.Get("type").Str != "function" {
					r.Tools = append(r.Tools, dialect.Tool{Type: hostedType(f.Get("type").Str), Name: ns.Str + "." + f.Get("name").Str})
					return true
				}
				err = decodeFunction(f, q, ns.Str, r)
				return err == nil
			})
		default:
			if typ.Type != gjson.String || typ.Str == "" {
				err = failure.Invalid(p+".type", "a tool needs a type")
				return false
			}
			name := t.Get("name").Str // a custom tool's name; hosted tools have none
			r.Tools = append(r.Tools, dialect.Tool{Type: typ.Str, Name: name})
		}
		return err == nil
	})
	return err
}

// hostedType is the Type of a tool that is not a function ("custom" when the type is missing).
func hostedType(typ string) string {
	if typ == "" {
		return "custom"
	}
	return typ
}

// decodeFunction reads one function tool at param p, in namespace ns ("" when top-level).
func decodeFunction(t gjson.Result, p, ns string, r *dialect.Request) error {
	name := t.Get("name")
	if name.Type != gjson.String || name.Str == "" {
		return failure.Invalid(p+".name", "a function tool needs a name")
	}
	tool := dialect.Tool{Name: name.Str, Namespace: ns}
	var err error
	if tool.Description, err = dialect.StringField(t.Get("description"), p+".description"); err != nil {
		return err
	}
	if ps := t.Get("parameters"); ps.Exists() && ps.Type != gjson.Null {
		if !ps.IsObject() {
			return failure.Invalid(p+".parameters", "parameters must be a JSON schema object")
		}
		tool.Parameters = json.RawMessage(ps.Raw)
	}
	if s := t.Get("strict"); s.Exists() && s.Type != gjson.Null {
		var b bool
		if b, err = dialect.BoolField(s, p+".strict"); err != nil {
			return err
		}
		tool.Strict = &b
	}
	r.Tools = append(r.Tools, tool)
	return nil
}

func decodeToolChoice(v gjson.Result, tc *dialect.ToolChoice) error {
	switch {
	case !v.Exists() || v.Type == gjson.Null:
		return nil
	case v.Type == gjson.String:
		switch v.Str {
		case "auto", "none", "required":
			tc.Mode = v.Str
			return nil
		}
		return failure.Invalid("tool_choice", "tool_choice must be auto, none, required or a function")
	case v.IsObject():
		switch typ := v.Get("type").Str; typ {
		case "function":
			if n := v.Get("name"); n.Type == gjson.String && n.Str != "" {
				tc.Mode, tc.Name, tc.Namespace = "tool", n.Str, v.Get("namespace").Str
				return nil
			}
			return failure.Invalid("tool_choice.name", "tool_choice needs a function name")
		case "allowed_tools":
			return failure.Invalid("tool_choice.type", "an allowed_tools tool_choice cannot be translated for this model")
		case "":
			return failure.Invalid("tool_choice.type", "tool_choice needs a type")
		default: // a hosted or custom tool: dialect.Fit refuses it, naming it
			tc.Mode, tc.Name = "hosted", typ
			if n := v.Get("name"); n.Type == gjson.String && n.Str != "" {
				tc.Name = n.Str
			}
			return nil
		}
	}
	return failure.Invalid("tool_choice", "tool_choice is not a valid tool choice")
}
