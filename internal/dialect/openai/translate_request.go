package openai

import (
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/switchyard-gw/switchyard/internal/dialect"
	"github.com/switchyard-gw/switchyard/internal/failure"
)

// DecodeRequest fully decodes an OpenAI chat-completions request body into canonical form
// (R-DIALECT-2), for translation to another dialect. The returned Request owns its strings (one
// copy of body is taken); body may be reused afterwards.
//
// system and developer messages, wherever they appear, are hoisted into Request.System in order;
// consecutive tool (and legacy function) messages become ONE user message of tool-result parts;
// the legacy functions/function_call fields are mapped to tools and tool_choice, and a legacy
// assistant function_call gets the deterministic id "call_legacy_<message index>".
//
// Parameters the canonical form cannot carry (logprobs, seed, penalties, response_format
// json_object, image detail, a message name, ...) are listed in Request.Dropped when they are set
// to something other than null, false, 0 or "".
//
// Errors: a *failure.Error of class invalid_request whose Param names the offending field, for a
// body that is not a JSON object, a field of the wrong type, n > 1, an input_audio part, a file_id
// file, a custom tool or tool call, or an allowed_tools tool_choice (dropping those would change the
// meaning of the request, wire.md §5.7).
func DecodeRequest(body []byte) (*dialect.Request, error) {
	if err := dialect.CheckRequestJSON(body); err != nil {
		return nil, err
	}
	root := gjson.Parse(string(body)) // one copy: every string below is a view into it
	if !root.IsObject() {
		return nil, failure.Invalid("", "the request body must be a JSON object")
	}
	r := &dialect.Request{}
	var (
		err                  error
		maxTokens, maxCompl  gjson.Result
		toolChoice, legacyFC gjson.Result
		user, safety         string
		functions            gjson.Result
		haveMessages         bool
	)
	root.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "model":
			if v.Type != gjson.String {
				err = failure.Invalid("model", "model must be a string")
			}
			r.Model = v.Str
		case "messages":
			haveMessages = true
			err = decodeMessages(v, r)
		case "stream":
			r.Stream, err = dialect.BoolField(v, "stream")
		case "stream_options":
			if v.Type == gjson.Null {
				break
			}
			if !v.IsObject() {
				err = failure.Invalid("stream_options", "stream_options must be an object")
				break
			}
			r.IncludeUsage, err = dialect.BoolField(v.Get("include_usage"), "stream_options.include_usage")
		case "max_tokens":
			maxTokens = v
		case "max_completion_tokens":
			maxCompl = v
		case "n":
			if v.Type != gjson.Null {
				var n int64
				if n, err = dialect.IntField(v, "n"); err == nil && n > 1 {
					err = failure.Invalid("n", "n greater than 1 is not supported")
				}
			}
		case "temperature":
			r.Temperature, err = dialect.FloatField(v, "temperature")
		case "top_p":
			r.TopP, err = dialect.FloatField(v, "top_p")
		case "top_k": // a common extension of compatible servers; the canonical form carries it
			if v.Type != gjson.Null {
				var n int64
				n, err = dialect.IntField(v, "top_k")
				r.TopK = &n
			}
		case "stop":
			r.Stop, err = decodeStop(v)
		case "tools":
			err = decodeTools(v, r)
		case "functions":
			functions = v
		case "tool_choice":
			toolChoice = v
		case "function_call":
			legacyFC = v
		case "parallel_tool_calls":
			_, err = dialect.BoolField(v, "parallel_tool_calls")
			r.ToolChoice.DisableParallel = v.Type == gjson.False
		case "response_format":
			err = decodeResponseFormat(v, r)
		case "reasoning_effort":
			r.ReasoningEffort, err = dialect.StringField(v, "reasoning_effort")
		case "user":
			user, err = dialect.StringField(v, "user")
		case "safety_identifier":
			safety, err = dialect.StringField(v, "safety_identifier")
		case "prompt_cache_key":
			r.PromptCacheKey, err = dialect.StringField(v, "prompt_cache_key")
		default:
			if dialect.Meaningful(v) {
				r.Drop(k.Str)
			}
		}
		return err == nil
	})
	if err != nil {
		return nil, err
	}
	if !haveMessages {
		return nil, failure.Invalid("messages", "messages is required")
	}
	if functions.Exists() && functions.Type != gjson.Null {
		if err := decodeFunctions(functions, r); err != nil {
			return nil, err
		}
	}
	tc := toolChoice
	param := "tool_choice"
	if !tc.Exists() || tc.Type == gjson.Null {
		tc, param = legacyFC, "function_call"
	}
	if err := decodeToolChoice(tc, param, &r.ToolChoice); err != nil {
		return nil, err
	}
	mt := maxCompl
	param = "max_completion_tokens"
	if !mt.Exists() || mt.Type == gjson.Null {
		mt, param = maxTokens, "max_tokens"
	}
	if mt.Exists() && mt.Type != gjson.Null {
		if r.MaxTokens, err = dialect.IntField(mt, param); err != nil {
			return nil, err
		}
	}
	r.User = safety
	if r.User == "" {
		r.User = user
	}
	return r, nil
}

func decodeStop(v gjson.Result) ([]string, error) {
	switch {
	case v.Type == gjson.Null:
		return nil, nil
	case v.Type == gjson.String:
		return []string{v.Str}, nil
	case v.IsArray():
		var out []string
		var err error
		v.ForEach(func(_, s gjson.Result) bool {
			if s.Type != gjson.String {
				err = failure.Invalid("stop", "stop must be a string or an array of strings")
				return false
			}
			out = append(out, s.Str)
			return true
		})
		return out, err
	}
	return nil, failure.Invalid("stop", "stop must be a string or an array of strings")
}

// decodeMessages fills r.System and r.Messages from the messages array.
func decodeMessages(v gjson.Result, r *dialect.Request) error {
	if !v.IsArray() {
		return failure.Invalid("messages", "messages must be an array")
	}
	var (
		err        error
		i          = -1
		prevTool   bool   // the previous message was a tool or function result
		legacyCall string // id given to the last legacy assistant function_call
	)
	v.ForEach(func(_, m gjson.Result) bool {
		i++
		p := "messages[" + strconv.Itoa(i) + "]"
		if !m.IsObject() {
			err = failure.Invalid(p, "a message must be an object")
			return false
		}
		if dialect.Meaningful(m.Get("name")) {
			r.Drop("messages.name")
		}
		role := m.Get("role").Str
		isTool := role == "tool" || role == "function"
		switch role {
		case "system", "developer":
			var texts []string
			texts, err = textParts(m.Get("content"), p+".content")
			if s := strings.Join(texts, "\n"); err == nil && s != "" {
				r.System = append(r.System, s)
			}
		case "user":
			var parts []dialect.Part
			if parts, err = decodeUserContent(m.Get("content"), p+".content", r); err == nil && len(parts) > 0 {
				r.Messages = append(r.Messages, dialect.Message{Role: dialect.RoleUser, Parts: parts})
			}
		case "assistant":
			var msg dialect.Message
			msg, err = decodeAssistant(m, p, r)
			if fc := m.Get("function_call"); err == nil && fc.IsObject() {
				if fc.Get("name").Str == "" {
					err = failure.Invalid(p+".function_call.name", "a function_call needs a name")
					return false
				}
				legacyCall = "call_legacy_" + strconv.Itoa(i)
				msg.Parts = append(msg.Parts, dialect.Part{Type: dialect.PartToolCall, ToolCallID: legacyCall,
					ToolName: fc.Get("name").Str, Arguments: argsOrEmpty(fc.Get("arguments").Str), ArgumentsParam: p + ".function_call.arguments"})
			}
			if err == nil && len(msg.Parts) > 0 {
				r.Messages = append(r.Messages, msg)
			}
		case "tool", "function":
			id := legacyCall
			if role == "tool" {
				tid := m.Get("tool_call_id")
				if tid.Type != gjson.String || tid.Str == "" {
					err = failure.Invalid(p+".tool_call_id", "a tool message needs a tool_call_id")
					return false
				}
				id = tid.Str
			} else if id == "" {
				err = failure.Invalid(p+".role", "a function message must follow an assistant function_call")
				return false
			}
			var texts []string
			if texts, err = textParts(m.Get("content"), p+".content"); err != nil {
				return false
			}
			part := dialect.Part{Type: dialect.PartToolResult, ToolCallID: id}
			if s := strings.Join(texts, ""); s != "" {
				part.Content = []dialect.Part{{Type: dialect.PartText, Text: s}}
			}
			if n := len(r.Messages); prevTool && n > 0 {
				r.Messages[n-1].Parts = append(r.Messages[n-1].Parts, part)
			} else {
				r.Messages = append(r.Messages, dialect.Message{Role: dialect.RoleUser, Parts: []dialect.Part{part}})
			}
		default:
			err = failure.Invalid(p+".role", "unsupported message role")
		}
		prevTool = isTool
		return err == nil
	})
	return err
}

// textParts reads a content that is a string or an array of text parts (system, developer and
// tool messages).
func textParts(c gjson.Result, p string) ([]string, error) {
	switch {
	case c.Type == gjson.String:
		return []string{c.Str}, nil
	case c.Type == gjson.Null || !c.Exists():
		return nil, nil
	case c.IsArray():
		var out []string
		var err error
		c.ForEach(func(_, part gjson.Result) bool {
			if part.Get("type").Str != "text" || part.Get("text").Type != gjson.String {
				err = failure.Invalid(p, "this message takes text parts only")
				return false
			}
			out = append(out, part.Get("text").Str)
			return true
		})
		return out, err
	}
	return nil, failure.Invalid(p, "content must be a string or an array of parts")
}

func decodeUserContent(c gjson.Result, p string, r *dialect.Request) ([]dialect.Part, error) {
	switch {
	case c.Type == gjson.String:
		if c.Str == "" {
			return nil, nil
		}
		return []dialect.Part{{Type: dialect.PartText, Text: c.Str}}, nil
	case c.Type == gjson.Null || !c.Exists():
		return nil, nil
	case !c.IsArray():
		return nil, failure.Invalid(p, "content must be a string or an array of parts")
	}
	var (
		out []dialect.Part
		err error
		j   = -1
	)
	c.ForEach(func(_, part gjson.Result) bool {
		j++
		pp := p + "[" + strconv.Itoa(j) + "]"
		switch part.Get("type").Str {
		case "text":
			t := part.Get("text")
			if t.Type != gjson.String {
				err = failure.Invalid(pp+".text", "a text part needs text")
			} else if t.Str != "" {
				out = append(out, dialect.Part{Type: dialect.PartText, Text: t.Str})
			}
		case "image_url":
			u := part.Get("image_url.url")
			if u.Type != gjson.String || u.Str == "" {
				err = failure.Invalid(pp+".image_url.url", "an image part needs a url")
				break
			}
			if dialect.Meaningful(part.Get("image_url.detail")) {
				r.Drop("image_url.detail")
			}
			var img dialect.Part
			if img, err = urlPart(dialect.PartImage, u.Str, pp+".image_url.url"); err == nil {
				out = append(out, img)
			}
		case "file":
			f := part.Get("file")
			if dialect.Meaningful(f.Get("file_id")) {
				err = failure.Invalid(pp+".file.file_id", "file_id references cannot be translated for this model")
				break
			}
			d := f.Get("file_data")
			if d.Type != gjson.String || d.Str == "" {
				err = failure.Invalid(pp+".file.file_data", "a file part needs file_data")
				break
			}
			doc := dialect.Part{Type: dialect.PartDocument, MediaType: "application/pdf", Data: d.Str}
			if strings.HasPrefix(d.Str, "data:") {
				doc, err = urlPart(dialect.PartDocument, d.Str, pp+".file.file_data")
			}
			if err == nil && doc.MediaType != "application/pdf" {
				err = failure.Invalid(pp+".file.file_data", "only PDF files can be translated for this model")
			}
			out = append(out, doc)
		case "input_audio":
			err = failure.Invalid(pp+".type", "audio input cannot be translated for this model")
		default:
			err = failure.Invalid(pp+".type", "unsupported content part type")
		}
		return err == nil
	})
	return out, err
}

// urlPart turns a data: URL (base64) or an http(s) URL into an image or document part.
func urlPart(t dialect.PartType, u, p string) (dialect.Part, error) {
	if rest, ok := strings.CutPrefix(u, "data:"); ok {
		mt, data, ok := strings.Cut(rest, ",")
		mt, isB64 := strings.CutSuffix(mt, ";base64")
		if !ok || !isB64 || mt == "" || data == "" {
			return dialect.Part{}, failure.Invalid(p, "a data URL must be base64 with a media type")
		}
		return dialect.Part{Type: t, MediaType: mt, Data: data}, nil
	}
	if strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://") {
		return dialect.Part{Type: t, ImageURL: u}, nil
	}
	return dialect.Part{}, failure.Invalid(p, "the URL must be http(s) or a base64 data URL")
}

func decodeAssistant(m gjson.Result, p string, r *dialect.Request) (dialect.Message, error) {
	msg := dialect.Message{Role: dialect.RoleAssistant}
	c := m.Get("content")
	switch {
	case c.Type == gjson.String:
		if c.Str != "" {
			msg.Parts = append(msg.Parts, dialect.Part{Type: dialect.PartText, Text: c.Str})
		}
	case c.IsArray():
		var err error
		c.ForEach(func(_, part gjson.Result) bool {
			switch part.Get("type").Str {
			case "text":
				if s := part.Get("text").Str; s != "" {
					msg.Parts = append(msg.Parts, dialect.Part{Type: dialect.PartText, Text: s})
				}
			case "refusal":
				if s := part.Get("refusal").Str; s != "" {
					msg.Parts = append(msg.Parts, dialect.Part{Type: dialect.PartRefusal, Text: s})
				}
			default:
				err = failure.Invalid(p+".content", "assistant content takes text and refusal parts only")
			}
			return err == nil
		})
		if err != nil {
			return msg, err
		}
	case c.Exists() && c.Type != gjson.Null:
		return msg, failure.Invalid(p+".content", "content must be a string, an array of parts or null")
	}
	if s := m.Get("refusal"); s.Type == gjson.String && s.Str != "" {
		msg.Parts = append(msg.Parts, dialect.Part{Type: dialect.PartRefusal, Text: s.Str})
	}
	if dialect.Meaningful(m.Get("reasoning_content")) {
		r.Drop("messages.reasoning_content")
	}
	if dialect.Meaningful(m.Get("audio")) {
		r.Drop("messages.audio")
	}
	tcs := m.Get("tool_calls")
	if !tcs.Exists() || tcs.Type == gjson.Null {
		return msg, nil
	}
	if !tcs.IsArray() {
		return msg, failure.Invalid(p+".tool_calls", "tool_calls must be an array")
	}
	var err error
	k := -1
	tcs.ForEach(func(_, tc gjson.Result) bool {
		k++
		pp := p + ".tool_calls[" + strconv.Itoa(k) + "]"
		if typ := tc.Get("type").Str; typ != "function" && typ != "" {
			err = failure.Invalid(pp+".type", "only function tool calls can be translated for this model")
			return false
		}
		id, name := tc.Get("id"), tc.Get("function.name")
		if id.Type != gjson.String || id.Str == "" || name.Type != gjson.String || name.Str == "" {
			err = failure.Invalid(pp, "a tool call needs an id and a function name")
			return false
		}
		args := tc.Get("function.arguments")
		if args.Exists() && args.Type != gjson.String && args.Type != gjson.Null {
			err = failure.Invalid(pp+".function.arguments", "arguments must be a JSON string")
			return false
		}
		msg.Parts = append(msg.Parts, dialect.Part{Type: dialect.PartToolCall, ToolCallID: id.Str, ToolName: name.Str, Arguments: argsOrEmpty(args.Str),
			ArgumentsParam: pp + ".function.arguments"})
		return true
	})
	return msg, err
}

// argsOrEmpty returns tool-call arguments, with empty arguments as the empty object "{}".
func argsOrEmpty(s string) string {
	if strings.TrimSpace(s) == "" {
		return "{}"
	}
	return s
}
