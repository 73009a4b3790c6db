package openai

import (
	"encoding/json"
	"strconv"

	"github.com/tidwall/gjson"

	"github.com/switchyard-gw/switchyard/internal/dialect"
	"github.com/switchyard-gw/switchyard/internal/failure"
)

// The tool, tool_choice and response_format parts of DecodeRequest.

func decodeTools(v gjson.Result, r *dialect.Request) error {
	if v.Type == gjson.Null {
		return nil
	}
	if !v.IsArray() {
		return failure.Invalid("tools", "tools must be an array")
	}
	var err error
	i := 0
	v.ForEach(func(_, t gjson.Result) bool {
		p := "tools[" + strconv.Itoa(i) + "]"
		i++
		switch typ := t.Get("type").Str; typ {
		case "function":
		case "custom":
			err = failure.Invalid(p+".type", "custom tools cannot be translated for this model")
			return false
		default:
			err = failure.Invalid(p+".type", "unsupported tool type")
			return false
		}
		err = appendTool(t.Get("function"), p+".function", r)
		return err == nil
	})
	return err
}

func decodeFunctions(v gjson.Result, r *dialect.Request) error {
	if !v.IsArray() {
		return failure.Invalid("functions", "functions must be an array")
	}
	var err error
	i := 0
	v.ForEach(func(_, f gjson.Result) bool {
		err = appendTool(f, "functions["+strconv.Itoa(i)+"]", r)
		i++
		return err == nil
	})
	return err
}

func appendTool(f gjson.Result, p string, r *dialect.Request) error {
	if !f.IsObject() {
		return failure.Invalid(p, "a function tool must be an object")
	}
	name := f.Get("name")
	if name.Type != gjson.String || name.Str == "" {
		return failure.Invalid(p+".name", "a function tool needs a name")
	}
	t := dialect.Tool{Name: name.Str}
	var err error
	if t.Description, err = dialect.StringField(f.Get("description"), p+".description"); err != nil {
		return err
	}
	if ps := f.Get("parameters"); ps.Exists() && ps.Type != gjson.Null {
		if !ps.IsObject() {
			return failure.Invalid(p+".parameters", "parameters must be a JSON schema object")
		}
		t.Parameters = json.RawMessage(ps.Raw)
	}
	if s := f.Get("strict"); s.Exists() && s.Type != gjson.Null {
		b, err := dialect.BoolField(s, p+".strict")
		if err != nil {
			return err
		}
		t.Strict = &b
	}
	r.Tools = append(r.Tools, t)
	return nil
}

func decodeToolChoice(v gjson.Result, param string, tc *dialect.ToolChoice) error {
	switch {
	case !v.Exists() || v.Type == gjson.Null:
		return nil
	case v.Type == gjson.String:
		switch v.Str {
		case "auto", "none", "required":
			tc.Mode = v.Str
			return nil
		}
		return failure.Invalid(param, param+" must be auto, none, required or a function")
	case v.IsObject():
		if param == "function_call" { // legacy {"name": "f"}
			if n := v.Get("name"); n.Type == gjson.String && n.Str != "" {
				tc.Mode, tc.Name = "tool", n.Str
				return nil
			}
			return failure.Invalid(param+".name", "function_call needs a name")
		}
		switch v.Get("type").Str {
		case "function":
			if n := v.Get("function.name"); n.Type == gjson.String && n.Str != "" {
				tc.Mode, tc.Name = "tool", n.Str
				return nil
			}
			return failure.Invalid(param+".function.name", "tool_choice needs a function name")
		case "allowed_tools", "custom":
			return failure.Invalid(param+".type", "this tool_choice cannot be translated for this model")
		}
	}
	return failure.Invalid(param, param+" is not a valid tool choice")
}

func decodeResponseFormat(v gjson.Result, r *dialect.Request) error {
	if v.Type == gjson.Null {
		return nil
	}
	if !v.IsObject() {
		return failure.Invalid("response_format", "response_format must be an object")
	}
	switch v.Get("type").Str {
	case "text":
		return nil
	case "json_object":
		r.Drop("response_format")
		return nil
	case "json_schema":
		js := v.Get("json_schema")
		s := js.Get("schema")
		if !s.IsObject() {
			return failure.Invalid("response_format.json_schema.schema", "json_schema needs a schema object")
		}
		r.ResponseFormat = &dialect.ResponseFormat{Name: js.Get("name").Str, Schema: json.RawMessage(s.Raw), Strict: js.Get("strict").Type == gjson.True}
		return nil
	}
	return failure.Invalid("response_format.type", "unsupported response_format type")
}
