package anthropic

import (
	"encoding/json"
	"strconv"

	"github.com/tidwall/gjson"

	"github.com/switchyard-gw/switchyard/internal/dialect"
	"github.com/switchyard-gw/switchyard/internal/failure"
)

// invalid returns a typed 400 (invalid_request, never fails over) naming param. msg must not
// carry caller text: only field paths and fixed wording.
func invalid(param, msg string) error {
	return failure.Invalid(param, param+": "+msg)
}

// DecodeRequest fully decodes an Anthropic messages request body into canonical form
// (R-DIALECT-2), for an upstream of another dialect.
//
// Mapping (docs/translation.md): `system` (string or text blocks) and role "system"
// messages are hoisted into Request.System in order; content blocks text, image (base64 or
// url), document (base64 PDF, url, or a plain-text source, which becomes text), tool_use,
// tool_result, thinking and redacted_thinking become parts; tools keep their input_schema as
// Parameters and a server tool keeps its type in Tool.Type (the OpenAI encoder refuses it);
// tool_choice any becomes "required"; metadata.user_id becomes User; thinking enabled/adaptive
// become ThinkingBudget/ThinkingAdaptive; output_config.effort and output_config.format
// json_schema become ReasoningEffort and ResponseFormat (named "response", strict).
//
// Recorded in Request.Dropped because no canonical field can carry them: cache_control
// (anywhere), citations on text blocks, thinking.display, service_tier, container, speed,
// inference_geo, diagnostics, context_management and any other unknown top-level field.
//
// Errors are *failure.Error invalid_request naming the field: a body that is not a JSON
// object, a missing model or messages, a missing or non-integer max_tokens (required by this
// dialect), wrong types, an unknown role, a content block type the canonical form cannot carry
// (server-tool blocks, search_result, container_upload...), mcp_servers.
func DecodeRequest(body []byte) (*dialect.Request, error) {
	if err := dialect.CheckRequestJSON(body); err != nil {
		return nil, err
	}
	root := gjson.ParseBytes(body) // copies once: the canonical strings must outlive body
	if !root.IsObject() {
		return nil, &failure.Error{Class: failure.InvalidRequest, Msg: "the request body must be a JSON object"}
	}
	r := &dialect.Request{}
	d := decoder{r: r}
	var err error
	root.ForEach(func(k, v gjson.Result) bool {
		err = d.field(k.Str, v)
		return err == nil
	})
	if err != nil {
		return nil, err
	}
	switch {
	case r.Model == "":
		return nil, invalid("model", "a non-empty string is required")
	case !d.sawMessages:
		return nil, invalid("messages", "an array is required")
	case !d.sawMaxTokens:
		return nil, invalid("max_tokens", "a non-negative integer is required")
	}
	return r, nil
}

type decoder struct {
	r                         *dialect.Request
	sawMessages, sawMaxTokens bool
	droppedCache, droppedCite bool
}

func (d *decoder) drop(name string) {
	for _, n := range d.r.Dropped {
		if n == name {
			return
		}
	}
	d.r.Dropped = append(d.r.Dropped, name)
}

// noteBlockExtras records the per-block fields the canonical form drops.
func (d *decoder) noteBlockExtras(b gjson.Result) {
	if !d.droppedCache && b.Get("cache_control").Exists() {
		d.droppedCache = true
		d.drop("cache_control")
	}
	if !d.droppedCite && b.Get("citations").Exists() {
		d.droppedCite = true
		d.drop("citations")
	}
}

func (d *decoder) field(key string, v gjson.Result) error {
	r := d.r
	switch key {
	case "model":
		if v.Type != gjson.String {
			return invalid("model", "a non-empty string is required")
		}
		r.Model = v.Str
	case "messages":
		if !v.IsArray() {
			return invalid("messages", "an array is required")
		}
		d.sawMessages = true
		return d.messages(v)
	case "system":
		return d.system(v, "system")
	case "max_tokens":
		if v.Type != gjson.Number || v.Num < 0 || v.Num != float64(int64(v.Num)) {
			return invalid("max_tokens", "a non-negative integer is required")
		}
		d.sawMaxTokens = true
		r.MaxTokens = int64(v.Num)
	case "stream":
		if !isBool(v) && v.Type != gjson.Null {
			return invalid("stream", "a boolean is required")
		}
		r.Stream = v.Type == gjson.True
	case "temperature", "top_p":
		if v.Type == gjson.Null {
			return nil
		}
		if v.Type != gjson.Number {
			return invalid(key, "a number is required")
		}
		f := v.Num
		if key == "temperature" {
			r.Temperature = &f
		} else {
			r.TopP = &f
		}
	case "top_k":
		if v.Type == gjson.Null {
			return nil
		}
		if v.Type != gjson.Number || v.Num != float64(int64(v.Num)) {
			return invalid("top_k", "an integer is required")
		}
		k := int64(v.Num)
		r.TopK = &k
	case "stop_sequences":
		if v.Type == gjson.Null {
			return nil
		}
		if !v.IsArray() {
			return invalid("stop_sequences", "an array of strings is required")
		}
		var err error
		v.ForEach(func(_, s gjson.Result) bool {
			if s.Type != gjson.String {
				err = invalid("stop_sequences", "an array of strings is required")
				return false
			}
			r.Stop = append(r.Stop, s.Str)
			return true
		})
		return err
	case "tools":
		return d.tools(v)
	case "tool_choice":
		return d.toolChoice(v)
	case "metadata":
		if u := v.Get("user_id"); u.Type == gjson.String {
			r.User = u.Str
		}
	case "thinking":
		return d.thinking(v)
	case "output_config":
		return d.outputConfig(v)
	case "mcp_servers":
		return invalid("mcp_servers", "MCP servers cannot be translated to another dialect")
	default:
		d.drop(key)
	}
	return nil
}

func isBool(v gjson.Result) bool { return v.Type == gjson.True || v.Type == gjson.False }

// system decodes a system value (string or text blocks) into Request.System.
func (d *decoder) system(v gjson.Result, param string) error {
	switch {
	case v.Type == gjson.Null:
	case v.Type == gjson.String:
		if v.Str != "" {
			d.r.System = append(d.r.System, v.Str)
		}
	case v.IsArray():
		var err error
		v.ForEach(func(_, b gjson.Result) bool {
			if b.Get("type").Str != "text" || b.Get("text").Type != gjson.String {
				err = invalid(param, "text blocks are required")
				return false
			}
			d.noteBlockExtras(b)
			if t := b.Get("text").Str; t != "" {
				d.r.System = append(d.r.System, t)
			}
			return true
		})
		return err
	default:
		return invalid(param, "a string or an array of text blocks is required")
	}
	return nil
}

func (d *decoder) messages(v gjson.Result) error {
	var err error
	i := 0
	v.ForEach(func(_, m gjson.Result) bool {
		p := "messages." + strconv.Itoa(i)
		i++
		if !m.IsObject() {
			err = invalid(p, "an object is required")
			return false
		}
		var role dialect.Role
		switch m.Get("role").Str {
		case "user":
			role = dialect.RoleUser
		case "assistant":
			role = dialect.RoleAssistant
		case "system":
			err = d.system(m.Get("content"), p+".content")
			return err == nil
		default:
			err = invalid(p+".role", `"user", "assistant" or "system" is required`)
			return false
		}
		msg := dialect.Message{Role: role}
		msg.Parts, err = d.content(m.Get("content"), p+".content", role, false)
		if err != nil {
			return false
		}
		d.r.Messages = append(d.r.Messages, msg)
		return true
	})
	return err
}

// content decodes a content value (string or blocks). inResult restricts the blocks to those
// a tool_result may hold (text, image, document).
func (d *decoder) content(v gjson.Result, param string, role dialect.Role, inResult bool) ([]dialect.Part, error) {
	switch {
	case v.Type == gjson.String:
		return []dialect.Part{{Type: dialect.PartText, Text: v.Str}}, nil
	case v.Type == gjson.Null && inResult:
		return nil, nil
	case !v.IsArray():
		return nil, invalid(param, "a string or an array of content blocks is required")
	}
	var parts []dialect.Part
	var err error
	j := 0
	v.ForEach(func(_, b gjson.Result) bool {
		bp := param + "." + strconv.Itoa(j)
		j++
		var p dialect.Part
		p, err = d.block(b, bp, role, inResult)
		if err == nil {
			parts = append(parts, p)
		}
		return err == nil
	})
	return parts, err
}

func (d *decoder) block(b gjson.Result, param string, role dialect.Role, inResult bool) (dialect.Part, error) {
	var p dialect.Part
	if !b.IsObject() {
		return p, invalid(param, "a content block object is required")
	}
	d.noteBlockExtras(b)
	typ := b.Get("type").Str
	if inResult && typ != "text" && typ != "image" && typ != "document" {
		return p, invalid(param+".type", "a tool_result holds text, image or document blocks only")
	}
	switch typ {
	case "text":
		t := b.Get("text")
		if t.Type != gjson.String {
			return p, invalid(param+".text", "a string is required")
		}
		p = dialect.Part{Type: dialect.PartText, Text: t.Str}
	case "image", "document":
		return d.source(b, param, typ)
	case "tool_use":
		id, name, in := b.Get("id"), b.Get("name"), b.Get("input")
		if id.Type != gjson.String || name.Type != gjson.String {
			return p, invalid(param, "tool_use needs a string id and name")
		}
		args := "{}"
		if in.Exists() {
			if !in.IsObject() {
				return p, invalid(param+".input", "an object is required")
			}
			args = in.Raw
		}
		p = dialect.Part{Type: dialect.PartToolCall, ToolCallID: id.Str, ToolName: name.Str, Arguments: args}
	case "tool_result":
		id := b.Get("tool_use_id")
		if id.Type != gjson.String {
			return p, invalid(param+".tool_use_id", "a string is required")
		}
		c, err := d.content(b.Get("content"), param+".content", role, true)
		if err != nil {
			return p, err
		}
		p = dialect.Part{Type: dialect.PartToolResult, ToolCallID: id.Str, IsError: b.Get("is_error").Type == gjson.True, Content: c}
	case "thinking":
		p = dialect.Part{Type: dialect.PartThinking, Text: b.Get("thinking").Str, Signature: b.Get("signature").Str}
	case "redacted_thinking":
		p = dialect.Part{Type: dialect.PartRedactedThinking, Data: b.Get("data").Str}
	default:
		return p, invalid(param+".type", "this content block type cannot be translated to another dialect")
	}
	return p, nil
}

// source decodes an image or document block's source.
func (d *decoder) source(b gjson.Result, param, typ string) (dialect.Part, error) {
	pt := dialect.PartImage
	if typ == "document" {
		pt = dialect.PartDocument
	}
	p := dialect.Part{Type: pt}
	s := b.Get("source")
	switch s.Get("type").Str {
	case "base64":
		p.MediaType, p.Data = s.Get("media_type").Str, s.Get("data").Str
		if p.MediaType == "" || p.Data == "" {
			return p, invalid(param+".source", "media_type and data are required")
		}
	case "url":
		p.ImageURL = s.Get("url").Str
		if p.ImageURL == "" {
			return p, invalid(param+".source.url", "a URL is required")
		}
	case "text":
		if typ == "document" {
			return dialect.Part{Type: dialect.PartText, Text: s.Get("data").Str}, nil
		}
		fallthrough
	default:
		return p, invalid(param+".source.type", "base64 or url is required")
	}
	return p, nil
}

func (d *decoder) tools(v gjson.Result) error {
	if v.Type == gjson.Null {
		return nil
	}
	if !v.IsArray() {
		return invalid("tools", "an array is required")
	}
	var err error
	i := 0
	v.ForEach(func(_, t gjson.Result) bool {
		p := "tools." + strconv.Itoa(i)
		i++
		name := t.Get("name")
		if !t.IsObject() || name.Type != gjson.String || name.Str == "" {
			err = invalid(p+".name", "a non-empty string is required")
			return false
		}
		d.noteBlockExtras(t)
		tool := dialect.Tool{Name: name.Str, Description: t.Get("description").Str}
		if typ := t.Get("type").Str; typ != "" && typ != "custom" {
			tool.Type = typ // a server tool: kept so that the other encoder can refuse it
		}
		if s := t.Get("input_schema"); s.Exists() && s.Type != gjson.Null {
			if !s.IsObject() {
				err = invalid(p+".input_schema", "an object is required")
				return false
			}
			tool.Parameters = json.RawMessage(s.Raw)
		}
		if st := t.Get("strict"); isBool(st) {
			b := st.Type == gjson.True
			tool.Strict = &b
		}
		d.r.Tools = append(d.r.Tools, tool)
		return true
	})
	return err
}

func (d *decoder) toolChoice(v gjson.Result) error {
	if v.Type == gjson.Null {
		return nil
	}
	tc := &d.r.ToolChoice
	switch v.Get("type").Str {
	case "auto":
		tc.Mode = "auto"
	case "any":
		tc.Mode = "required"
	case "none":
		tc.Mode = "none"
	case "tool":
		n := v.Get("name")
		if n.Type != gjson.String || n.Str == "" {
			return invalid("tool_choice.name", "a non-empty string is required")
		}
		tc.Mode, tc.Name = "tool", n.Str
	default:
		return invalid("tool_choice.type", `"auto", "any", "tool" or "none" is required`)
	}
	tc.DisableParallel = v.Get("disable_parallel_tool_use").Type == gjson.True
	return nil
}

func (d *decoder) thinking(v gjson.Result) error {
	switch v.Get("type").Str {
	case "enabled":
		b := v.Get("budget_tokens")
		if b.Type != gjson.Number || b.Num < 1 || b.Num != float64(int64(b.Num)) {
			return invalid("thinking.budget_tokens", "a positive integer is required")
		}
		d.r.ThinkingBudget = int64(b.Num)
	case "adaptive":
		d.r.ThinkingAdaptive = true
	case "disabled":
	default:
		if v.Type == gjson.Null {
			return nil
		}
		return invalid("thinking.type", `"enabled", "adaptive" or "disabled" is required`)
	}
	if v.Get("display").Exists() {
		d.drop("thinking.display")
	}
	return nil
}

func (d *decoder) outputConfig(v gjson.Result) error {
	if v.Type == gjson.Null {
		return nil
	}
	if e := v.Get("effort"); e.Type == gjson.String {
		d.r.ReasoningEffort = e.Str
	}
	f := v.Get("format")
	if !f.Exists() || f.Type == gjson.Null {
		return nil
	}
	s := f.Get("schema")
	if f.Get("type").Str != "json_schema" || !s.IsObject() {
		return invalid("output_config.format", `{"type":"json_schema","schema":{...}} is required`)
	}
	d.r.ResponseFormat = &dialect.ResponseFormat{Name: "response", Schema: json.RawMessage(s.Raw), Strict: true}
	return nil
}

// isToolID reports whether id matches Anthropic's tool id pattern ^[a-zA-Z0-9_-]+$.
func isToolID(id string) bool {
	if id == "" {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// appendToolID appends id as a JSON string, rewritten deterministically when it does not match
// ^[a-zA-Z0-9_-]+$: every other byte becomes '_' and "_" + 16 hex digits of the FNV-1a hash of
// the original are appended, so that distinct ids stay distinct and a tool_use id and the
// tool_use_id of its result are rewritten alike (wire.md §4.3).
func appendToolID(dst []byte, id string) []byte {
	dst = append(dst, '"')
	if isToolID(id) {
		dst = append(dst, id...)
		return append(dst, '"')
	}
	if id == "" {
		dst = append(dst, "toolu"...)
	}
	h := uint64(14695981039346656037)
	for i := 0; i < len(id); i++ {
		c := id[i]
		h = (h ^ uint64(c)) * 1099511628211
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			c = '_'
		}
		dst = append(dst, c)
	}
	dst = append(dst, '_')
	const hex = "0123456789abcdef"
	for s := 60; s >= 0; s -= 4 {
		dst = append(dst, hex[(h>>uint(s))&0xf])
	}
	return append(dst, '"')
}

// toolIDString is appendToolID as a string (for the non-hot paths and tests).
func toolIDString(id string) string {
	b := appendToolID(nil, id)
	return string(b[1 : len(b)-1])
}
