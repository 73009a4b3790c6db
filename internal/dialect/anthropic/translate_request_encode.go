package anthropic

import (
	"cmp"
	"math"
	"strconv"
	"strings"

	"github.com/switchyard-gw/switchyard/internal/dialect"
)

// DefaultMaxTokens is the max_tokens sent to an Anthropic upstream when the request set none
// and the catalog does not know the model's output limit (wire.md §5.8).
const DefaultMaxTokens = 4096

// AppendRequest appends r encoded as an Anthropic messages request body for upstreamModel to
// dst (R-DIALECT-2; the field table is docs/translation.md).
//
// max_tokens is r.MaxTokens, or maxOutputTokens (the catalog model's output limit) when the
// request set none, or DefaultMaxTokens when that is 0 too; a defaulted value that does not
// exceed ThinkingBudget becomes ThinkingBudget + DefaultMaxTokens. System texts are joined with
// "\n" into the top-level system; consecutive same-role messages are merged and tool results
// come first in their user message; empty text blocks and thinking without a signature are not
// sent; tool ids that do not match ^[a-zA-Z0-9_-]+$ are rewritten deterministically (the same
// way in tool_use.id and tool_result.tool_use_id); temperature is clamped to [0,1]; the caller's
// PromptCacheKey is consumed by the gateway and not sent.
//
// It appends to r.Dropped "response_format" for a ResponseFormat without a schema (JSON mode
// has no Anthropic equivalent). It returns a *failure.Error invalid_request, and dst unchanged,
// where dropping would change the meaning of the request: tool-call arguments that are not a
// JSON object (param messages), an image that is not jpeg/png/gif/webp or a URL that is neither
// http(s) nor a base64 data URL, a document that is not a PDF, a tool whose Type is not a client
// function (tools).
func AppendRequest(dst []byte, r *dialect.Request, upstreamModel string, maxOutputTokens int64) ([]byte, error) {
	start := len(dst)
	out, err := appendRequest(dst, r, upstreamModel, maxOutputTokens)
	if err != nil {
		return dst[:start], err
	}
	return out, nil
}

func appendRequest(b []byte, r *dialect.Request, model string, maxOut int64) ([]byte, error) {
	b = append(b, `{"model":`...)
	b = dialect.AppendJSONString(b, model)
	b = append(b, `,"max_tokens":`...)
	b = strconv.AppendInt(b, maxTokens(r, maxOut), 10)
	if len(r.System) > 0 {
		b = append(b, `,"system":`...)
		b = dialect.AppendJSONString(b, strings.Join(r.System, "\n"))
	}
	b = append(b, `,"messages":`...)
	var err error
	if b, err = appendMessages(b, r.Messages); err != nil {
		return b, err
	}
	if r.Stream {
		b = append(b, `,"stream":true`...)
	}
	if t := r.Temperature; t != nil && !math.IsNaN(*t) {
		b = append(b, `,"temperature":`...)
		b = strconv.AppendFloat(b, math.Min(math.Max(*t, 0), 1), 'g', -1, 64)
	}
	if p := r.TopP; p != nil && !math.IsNaN(*p) && !math.IsInf(*p, 0) {
		b = append(b, `,"top_p":`...)
		b = strconv.AppendFloat(b, *p, 'g', -1, 64)
	}
	if k := r.TopK; k != nil {
		b = append(b, `,"top_k":`...)
		b = strconv.AppendInt(b, *k, 10)
	}
	if stops := nonEmpty(r.Stop); stops > 0 {
		b = append(b, `,"stop_sequences":[`...)
		n := 0
		for _, s := range r.Stop {
			if s == "" {
				continue
			}
			if n > 0 {
				b = append(b, ',')
			}
			n++
			b = dialect.AppendJSONString(b, s)
		}
		b = append(b, ']')
	}
	if b, err = appendTools(b, r); err != nil {
		return b, err
	}
	if r.User != "" {
		b = append(b, `,"metadata":{"user_id":`...)
		b = dialect.AppendJSONString(b, r.User)
		b = append(b, '}')
	}
	switch {
	case r.ThinkingBudget > 0:
		b = append(b, `,"thinking":{"type":"enabled","budget_tokens":`...)
		b = strconv.AppendInt(b, r.ThinkingBudget, 10)
		b = append(b, '}')
	case r.ThinkingAdaptive:
		b = append(b, `,"thinking":{"type":"adaptive"}`...)
	}
	return append(appendOutputConfig(b, r), '}'), nil
}

func maxTokens(r *dialect.Request, maxOut int64) int64 {
	if r.MaxTokens > 0 {
		return r.MaxTokens
	}
	n := maxOut
	if n <= 0 {
		n = DefaultMaxTokens
	}
	if r.ThinkingBudget > 0 && n <= r.ThinkingBudget {
		n = r.ThinkingBudget + DefaultMaxTokens
	}
	return n
}

func nonEmpty(ss []string) int {
	n := 0
	for _, s := range ss {
		if s != "" {
			n++
		}
	}
	return n
}

func appendOutputConfig(b []byte, r *dialect.Request) []byte {
	effort := r.ReasoningEffort
	switch effort {
	case "none":
		effort = "" // no thinking: Anthropic's default
	case "minimal":
		effort = "low"
	}
	rf := r.ResponseFormat
	if rf != nil && len(rf.Schema) == 0 {
		r.Drop("response_format")
		rf = nil
	}
	if effort == "" && rf == nil {
		return b
	}
	b = append(b, `,"output_config":{`...)
	if effort != "" {
		b = append(b, `"effort":`...)
		b = dialect.AppendJSONString(b, effort)
		if rf != nil {
			b = append(b, ',')
		}
	}
	if rf != nil {
		b = append(b, `"format":{"type":"json_schema","schema":`...)
		b = append(b, rf.Schema...)
		b = append(b, '}')
	}
	return append(b, '}')
}

func appendTools(b []byte, r *dialect.Request) ([]byte, error) {
	if len(r.Tools) > 0 {
		b = append(b, `,"tools":[`...)
		for i, t := range r.Tools {
			if t.Type != "" && t.Type != "function" {
				return b, invalid("tools."+strconv.Itoa(i)+".type", "this tool type has no Anthropic equivalent")
			}
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"name":`...)
			b = dialect.AppendJSONString(b, t.Name)
			if t.Description != "" {
				b = append(b, `,"description":`...)
				b = dialect.AppendJSONString(b, t.Description)
			}
			b = append(b, `,"input_schema":`...)
			if len(t.Parameters) > 0 && dialect.Valid(t.Parameters) {
				b = append(b, t.Parameters...)
			} else {
				b = append(b, `{"type":"object","properties":{}}`...)
			}
			if t.Strict != nil {
				b = append(b, `,"strict":`...)
				b = strconv.AppendBool(b, *t.Strict)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	tc := r.ToolChoice
	mode := tc.Mode
	if mode == "" && tc.DisableParallel {
		mode = "auto"
	}
	if len(r.Tools) == 0 && (mode == "auto" || mode == "none") {
		return b, nil // no tools: the choice says nothing
	}
	switch mode {
	case "":
		return b, nil
	case "auto":
		b = append(b, `,"tool_choice":{"type":"auto"`...)
	case "required":
		b = append(b, `,"tool_choice":{"type":"any"`...)
	case "none":
		return append(b, `,"tool_choice":{"type":"none"}`...), nil
	case "tool":
		b = append(b, `,"tool_choice":{"type":"tool","name":`...)
		b = dialect.AppendJSONString(b, tc.Name)
	default:
		return b, invalid("tool_choice", "an unknown tool choice mode")
	}
	if tc.DisableParallel {
		b = append(b, `,"disable_parallel_tool_use":true`...)
	}
	return append(b, '}'), nil
}

// sendable reports whether p produces a block on the Anthropic wire.
func sendable(p *dialect.Part) bool {
	switch p.Type {
	case dialect.PartText, dialect.PartRefusal:
		return p.Text != ""
	case dialect.PartThinking:
		return p.Signature != "" // Anthropic rejects thinking it did not sign
	case dialect.PartRedactedThinking:
		return p.Data != ""
	}
	return true
}

func hasSendable(m *dialect.Message) bool {
	for i := range m.Parts {
		if sendable(&m.Parts[i]) {
			return true
		}
	}
	return false
}

// appendMessages merges consecutive same-role turns (after dropping turns with nothing to
// send) and puts tool results first in each user turn.
func appendMessages(b []byte, msgs []dialect.Message) ([]byte, error) {
	b = append(b, '[')
	first := true
	for i := 0; i < len(msgs); {
		if !hasSendable(&msgs[i]) {
			i++
			continue
		}
		role := msgs[i].Role
		j := i + 1
		for j < len(msgs) && (msgs[j].Role == role || !hasSendable(&msgs[j])) {
			j++
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		if role == dialect.RoleAssistant {
			b = append(b, `{"role":"assistant","content":[`...)
		} else {
			b = append(b, `{"role":"user","content":[`...)
		}
		n := 0
		var err error
		for pass := 0; pass < 2; pass++ { // user turns: tool results first
			for k := i; k < j; k++ {
				if msgs[k].Role != role {
					continue
				}
				for x := range msgs[k].Parts {
					p := &msgs[k].Parts[x]
					isResult := p.Type == dialect.PartToolResult
					if !sendable(p) || (pass == 0) != isResult {
						continue
					}
					if n > 0 {
						b = append(b, ',')
					}
					n++
					if b, err = appendPart(b, p, "messages."+strconv.Itoa(k)+".content."+strconv.Itoa(x)); err != nil {
						return b, err
					}
				}
			}
		}
		b = append(b, "]}"...)
		i = j
	}
	return append(b, ']'), nil
}

// checkArguments refuses tool call arguments an Anthropic tool_use cannot carry as its input:
// JSON nested deeper than dialect.MaxDepth (named as such), or anything but a JSON object. The
// error names the caller's own path of the arguments (Part.ArgumentsParam) when the decoder set
// it, else the canonical path of the part.
func checkArguments(args, callerParam, param string) error {
	where := cmp.Or(callerParam, param)
	if dialect.TooDeepString(args) {
		return invalid(where, "the tool call arguments are "+dialect.DepthLimit+" of arrays and objects")
	}
	if !dialect.ValidString(args) || args[0] != '{' {
		return invalid(where, "tool call arguments must be a JSON object")
	}
	return nil
}

func appendPart(b []byte, p *dialect.Part, param string) ([]byte, error) {
	switch p.Type {
	case dialect.PartText, dialect.PartRefusal:
		b = append(b, `{"type":"text","text":`...)
		b = dialect.AppendJSONString(b, p.Text)
		return append(b, '}'), nil
	case dialect.PartImage:
		return appendSource(b, "image", p, param)
	case dialect.PartDocument:
		return appendSource(b, "document", p, param)
	case dialect.PartToolCall:
		args := strings.TrimSpace(p.Arguments)
		if args == "" {
			args = "{}"
		}
		if err := checkArguments(args, p.ArgumentsParam, param); err != nil {
			return b, err
		}
		b = append(b, `{"type":"tool_use","id":`...)
		b = appendToolID(b, p.ToolCallID)
		b = append(b, `,"name":`...)
		b = dialect.AppendJSONString(b, p.ToolName)
		b = append(b, `,"input":`...)
		b = append(b, args...)
		return append(b, '}'), nil
	case dialect.PartToolResult:
		b = append(b, `{"type":"tool_result","tool_use_id":`...)
		b = appendToolID(b, p.ToolCallID)
		n := 0
		for i := range p.Content {
			c := &p.Content[i]
			if !sendable(c) {
				continue
			}
			switch c.Type {
			case dialect.PartText, dialect.PartRefusal, dialect.PartImage, dialect.PartDocument:
			default:
				return b, invalid(param+".content."+strconv.Itoa(i), "a tool result holds text, images and documents only")
			}
			if n == 0 {
				b = append(b, `,"content":[`...)
			} else {
				b = append(b, ',')
			}
			n++
			var err error
			if b, err = appendPart(b, c, param+".content."+strconv.Itoa(i)); err != nil {
				return b, err
			}
		}
		if n > 0 {
			b = append(b, ']')
		}
		if p.IsError {
			b = append(b, `,"is_error":true`...)
		}
		return append(b, '}'), nil
	case dialect.PartThinking:
		b = append(b, `{"type":"thinking","thinking":`...)
		b = dialect.AppendJSONString(b, p.Text)
		b = append(b, `,"signature":`...)
		b = dialect.AppendJSONString(b, p.Signature)
		return append(b, '}'), nil
	case dialect.PartRedactedThinking:
		b = append(b, `{"type":"redacted_thinking","data":`...)
		b = dialect.AppendJSONString(b, p.Data)
		return append(b, '}'), nil
	}
	return b, invalid(param, "a content part type that cannot be sent to Anthropic")
}

// imageTypes are the image media types Anthropic accepts (wire.md §4.3); image/jpg is a common
// alias of image/jpeg.
func imageMediaType(mt string) (string, bool) {
	switch mt = strings.ToLower(mt); mt {
	case "image/jpeg", "image/png", "image/gif", "image/webp":
		return mt, true
	case "image/jpg":
		return "image/jpeg", true
	}
	return "", false
}

// parseDataURL splits "data:<media type>[;params];base64,<data>".
func parseDataURL(u string) (mediaType, data string, ok bool) {
	rest, found := strings.CutPrefix(u, "data:")
	if !found {
		return "", "", false
	}
	meta, data, found := strings.Cut(rest, ",")
	if !found || !strings.HasSuffix(meta, ";base64") || data == "" {
		return "", "", false
	}
	mediaType, _, _ = strings.Cut(meta, ";")
	return mediaType, data, true
}

func appendSource(b []byte, typ string, p *dialect.Part, param string) ([]byte, error) {
	mt, data, url := p.MediaType, p.Data, ""
	if p.ImageURL != "" {
		if m, d, ok := parseDataURL(p.ImageURL); ok {
			mt, data = m, d
		} else if lu := strings.ToLower(p.ImageURL); strings.HasPrefix(lu, "https://") || strings.HasPrefix(lu, "http://") {
			url = p.ImageURL
		} else {
			return b, invalid(param, "an http(s) URL or a base64 data URL is required")
		}
	}
	if url == "" {
		ok := false
		if typ == "image" {
			mt, ok = imageMediaType(mt)
		} else {
			ok = strings.EqualFold(mt, "application/pdf")
			mt = "application/pdf"
		}
		if !ok || data == "" {
			if typ == "image" {
				return b, invalid(param, "Anthropic accepts jpeg, png, gif and webp images only")
			}
			return b, invalid(param, "Anthropic accepts PDF documents only")
		}
	}
	b = append(b, `{"type":"`...)
	b = append(b, typ...)
	if url != "" {
		b = append(b, `","source":{"type":"url","url":`...)
		b = dialect.AppendJSONString(b, url)
	} else {
		b = append(b, `","source":{"type":"base64","media_type":`...)
		b = dialect.AppendJSONString(b, mt)
		b = append(b, `,"data":`...)
		b = dialect.AppendJSONString(b, data)
	}
	return append(b, "}}"...), nil
}
