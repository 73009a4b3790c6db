package responses

import (
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/switchyard-gw/switchyard/internal/dialect"
	"github.com/switchyard-gw/switchyard/internal/failure"
)

// The input-item part of DecodeRequest.

// inputState tracks which canonical message the previous item extended, so that consecutive
// assistant items and consecutive tool results merge.
type inputState struct {
	r    *dialect.Request
	last int // 0: none, lastAssistant or lastToolResult
}

const (
	lastAssistant = iota + 1
	lastToolResult
)

func decodeInput(v gjson.Result, r *dialect.Request) error {
	st := inputState{r: r}
	var err error
	i := -1
	v.ForEach(func(_, it gjson.Result) bool {
		i++
		err = st.item(it, "input["+strconv.Itoa(i)+"]")
		return err == nil
	})
	return err
}

// appendTo appends part to the message the previous item opened when it was of kind, or to a
// new message of role.
func (st *inputState) appendTo(kind int, role dialect.Role, part dialect.Part) {
	r := st.r
	if n := len(r.Messages); st.last == kind && n > 0 {
		r.Messages[n-1].Parts = append(r.Messages[n-1].Parts, part)
		return
	}
	r.Messages = append(r.Messages, dialect.Message{Role: role, Parts: []dialect.Part{part}})
	st.last = kind
}

func (st *inputState) item(it gjson.Result, p string) error {
	if !it.IsObject() {
		return failure.Invalid(p, "an input item must be an object")
	}
	typ := it.Get("type")
	if typ.Type != gjson.String && typ.Exists() && typ.Type != gjson.Null {
		return failure.Invalid(p+".type", "type must be a string")
	}
	kind := typ.Str
	if kind == "" && it.Get("role").Exists() {
		kind = "message" // the easy input message has no type
	}
	switch kind {
	case "message":
		return st.message(it, p)
	case "function_call":
		id, name := it.Get("call_id"), it.Get("name")
		if id.Type != gjson.String || id.Str == "" || name.Type != gjson.String || name.Str == "" {
			return failure.Invalid(p, "a function_call item needs a call_id and a name")
		}
		args := it.Get("arguments")
		if args.Exists() && args.Type != gjson.String && args.Type != gjson.Null {
			return failure.Invalid(p+".arguments", "arguments must be a JSON string")
		}
		st.appendTo(lastAssistant, dialect.RoleAssistant, dialect.Part{Type: dialect.PartToolCall,
			ToolCallID: id.Str, ToolName: name.Str, Namespace: it.Get("namespace").Str,
			Arguments: argsOrEmpty(args.Str), ArgumentsParam: p + ".arguments"})
	case "function_call_output":
		id := it.Get("call_id")
		if id.Type != gjson.String || id.Str == "" {
			return failure.Invalid(p+".call_id", "a function_call_output item needs a call_id")
		}
		part := dialect.Part{Type: dialect.PartToolResult, ToolCallID: id.Str}
		switch out := it.Get("output"); {
		case out.Type == gjson.String:
			if out.Str != "" {
				part.Content = []dialect.Part{{Type: dialect.PartText, Text: out.Str}}
			}
		case out.IsArray():
			var err error
			if part.Content, err = st.inputParts(out, p+".output"); err != nil {
				return err
			}
		default:
			return failure.Invalid(p+".output", "output must be a string or an array of parts")
		}
		st.appendTo(lastToolResult, dialect.RoleUser, part)
	case "reasoning":
		part := dialect.Part{Type: dialect.PartThinking, Text: joinTexts(it.Get("content"), "reasoning_text")}
		if part.Text == "" {
			part.Text = joinTexts(it.Get("summary"), "summary_text")
		}
		if s := it.Get("encrypted_content"); s.Type == gjson.String {
			part.Signature = s.Str
		}
		if part.Text != "" || part.Signature != "" {
			st.appendTo(lastAssistant, dialect.RoleAssistant, part)
		}
	case "item_reference":
		return failure.Invalid(p+".type", "item references need items stored by the provider; send the items themselves")
	default:
		return failure.Invalid(p+".type", "unsupported input item type: only messages, function_call, function_call_output and reasoning items can be served")
	}
	return nil
}

// joinTexts joins the text of the parts of type typ in the array arr.
func joinTexts(arr gjson.Result, typ string) string {
	var b strings.Builder
	arr.ForEach(func(_, c gjson.Result) bool {
		if c.Get("type").Str == typ {
			b.WriteString(c.Get("text").Str)
		}
		return true
	})
	return b.String()
}

func (st *inputState) message(it gjson.Result, p string) error {
	c := it.Get("content")
	switch role := it.Get("role").Str; role {
	case "system", "developer":
		texts, err := systemTexts(c, p+".content")
		if err != nil {
			return err
		}
		if s := strings.Join(texts, "\n"); s != "" {
			st.r.System = append(st.r.System, s)
		}
		// a hoisted message leaves the merge state as it was
	case "user":
		var parts []dialect.Part
		switch {
		case c.Type == gjson.String:
			if c.Str != "" {
				parts = []dialect.Part{{Type: dialect.PartText, Text: c.Str}}
			}
		case c.IsArray():
			var err error
			if parts, err = st.inputParts(c, p+".content"); err != nil {
				return err
			}
		default:
			return failure.Invalid(p+".content", "content must be a string or an array of parts")
		}
		if len(parts) > 0 {
			st.r.Messages = append(st.r.Messages, dialect.Message{Role: dialect.RoleUser, Parts: parts})
			st.last = 0
		}
	case "assistant":
		switch {
		case c.Type == gjson.String:
			if c.Str != "" {
				st.appendTo(lastAssistant, dialect.RoleAssistant, dialect.Part{Type: dialect.PartText, Text: c.Str})
			}
		case c.IsArray():
			var err error
			j := -1
			c.ForEach(func(_, part gjson.Result) bool {
				j++
				pp := p + ".content[" + strconv.Itoa(j) + "]"
				switch part.Get("type").Str {
				case "output_text", "input_text":
					if t := part.Get("text"); t.Type != gjson.String {
						err = failure.Invalid(pp+".text", "a text part needs text")
					} else if t.Str != "" {
						st.appendTo(lastAssistant, dialect.RoleAssistant, dialect.Part{Type: dialect.PartText, Text: t.Str})
					}
				case "refusal":
					if s := part.Get("refusal").Str; s != "" {
						st.appendTo(lastAssistant, dialect.RoleAssistant, dialect.Part{Type: dialect.PartRefusal, Text: s})
					}
				default:
					err = failure.Invalid(pp+".type", "assistant content takes output_text and refusal parts only")
				}
				return err == nil
			})
			return err
		default:
			return failure.Invalid(p+".content", "content must be a string or an array of parts")
		}
	default:
		return failure.Invalid(p+".role", "unsupported message role")
	}
	return nil
}

// systemTexts reads system or developer content: a string or input_text parts.
func systemTexts(c gjson.Result, p string) ([]string, error) {
	switch {
	case c.Type == gjson.String:
		return []string{c.Str}, nil
	case c.Type == gjson.Null || !c.Exists():
		return nil, nil
	case c.IsArray():
		var out []string
		var err error
		c.ForEach(func(_, part gjson.Result) bool {
			t := part.Get("text")
			if part.Get("type").Str != "input_text" || t.Type != gjson.String {
				err = failure.Invalid(p, "system and developer messages take input_text parts only")
				return false
			}
			out = append(out, t.Str)
			return true
		})
		return out, err
	}
	return nil, failure.Invalid(p, "content must be a string or an array of parts")
}

// inputParts reads user content or a function_call_output's output: input_text, input_image
// and input_file parts.
func (st *inputState) inputParts(c gjson.Result, p string) ([]dialect.Part, error) {
	var (
		out []dialect.Part
		err error
		j   = -1
	)
	c.ForEach(func(_, part gjson.Result) bool {
		j++
		pp := p + "[" + strconv.Itoa(j) + "]"
		switch part.Get("type").Str {
		case "input_text":
			t := part.Get("text")
			if t.Type != gjson.String {
				err = failure.Invalid(pp+".text", "an input_text part needs text")
			} else if t.Str != "" {
				out = append(out, dialect.Part{Type: dialect.PartText, Text: t.Str})
			}
		case "input_image":
			if dialect.Meaningful(part.Get("file_id")) {
				err = failure.Invalid(pp+".file_id", "file_id references cannot be translated for this model")
				break
			}
			u := part.Get("image_url")
			if u.Type != gjson.String || u.Str == "" {
				err = failure.Invalid(pp+".image_url", "an input_image part needs an image_url")
				break
			}
			if d := part.Get("detail").Str; d != "" && d != "auto" {
				st.r.Drop("input_image.detail")
			}
			var img dialect.Part
			if img, err = urlPart(dialect.PartImage, u.Str, pp+".image_url"); err == nil {
				out = append(out, img)
			}
		case "input_file":
			var doc dialect.Part
			if doc, err = filePart(part, pp); err == nil {
				out = append(out, doc)
			}
		case "input_audio":
			err = failure.Invalid(pp+".type", "audio input cannot be translated for this model")
		default:
			err = failure.Invalid(pp+".type", "unsupported content part type")
		}
		return err == nil
	})
	return out, err
}

// filePart reads an input_file part: file_data (a base64 data URL, or bare base64 taken as a
// PDF) or file_url; only PDFs translate, and file_id references are refused.
func filePart(part gjson.Result, p string) (dialect.Part, error) {
	if dialect.Meaningful(part.Get("file_id")) {
		return dialect.Part{}, failure.Invalid(p+".file_id", "file_id references cannot be translated for this model")
	}
	if u := part.Get("file_url"); u.Type == gjson.String && u.Str != "" {
		return urlPart(dialect.PartDocument, u.Str, p+".file_url")
	}
	d := part.Get("file_data")
	if d.Type != gjson.String || d.Str == "" {
		return dialect.Part{}, failure.Invalid(p+".file_data", "an input_file part needs file_data or file_url")
	}
	doc := dialect.Part{Type: dialect.PartDocument, MediaType: "application/pdf", Data: d.Str}
	if strings.HasPrefix(d.Str, "data:") {
		var err error
		if doc, err = urlPart(dialect.PartDocument, d.Str, p+".file_data"); err != nil {
			return doc, err
		}
	}
	if doc.MediaType != "application/pdf" {
		return dialect.Part{}, failure.Invalid(p+".file_data", "only PDF files can be translated for this model")
	}
	return doc, nil
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

// argsOrEmpty returns tool-call arguments, with empty arguments as the empty object "{}".
func argsOrEmpty(s string) string {
	if strings.TrimSpace(s) == "" {
		return "{}"
	}
	return s
}
