package dialect

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/switchyard-gw/switchyard/internal/failure"
)

// Limits are the documented field limits of a target API that a translated request is held to
// (docs/translation.md "Target field limits"): a translation never makes a request that the
// target refuses over a limit the caller did not break in its own dialect.
type Limits struct {
	// ToolName is the longest tool name the target accepts, in bytes; a name must also match
	// ^[a-zA-Z0-9_-]+$ (OpenAI: 64, Anthropic: 128).
	ToolName int
	// User is the longest end-user identifier (OpenAI safety_identifier: 64; Anthropic
	// metadata.user_id: 256).
	User int
	// Stop is the most stop sequences the target takes; 0 means no limit (OpenAI chat: 4).
	Stop int
	// CallID is the longest tool call id the target takes in the conversation's history; 0
	// means no limit (OpenAI chat: 40).
	CallID int
}

// The limits of the two translation targets.
var (
	OpenAILimits    = Limits{ToolName: 64, User: 64, Stop: 4, CallID: 40}
	AnthropicLimits = Limits{ToolName: 128, User: 256}
)

// Changes are what Fit changed so that the request fits the target: each is listed in the
// audit's dropped_params under the caller's field name (docs/translation.md).
type Changes struct {
	UserHashed   bool // the end-user id was longer than Limits.User: sent as UserHash
	StopClamped  bool // more stop sequences than Limits.Stop: the first ones are sent
	ToolsRenamed bool // a tool name was flattened (namespace), or broke the target's pattern or length
	CallIDs      bool // a tool call id of the history was longer than Limits.CallID: hashed
	// DroppedTools are the hosted tools (Tool.Type set: web_search, file_search, custom, an
	// Anthropic server tool, ...) left out, as "tools.TYPE" or "tools.TYPE:NAME".
	DroppedTools []string
}

// ToolAlias maps a tool name sent upstream back to the caller's name and namespace, so that
// the model's calls come back in the form the caller's client sent.
type ToolAlias struct {
	Sent      string
	Name      string
	Namespace string
}

// Fit returns r held to the target's limits l: hosted tools (Tool.Type set) are dropped, since
// no chat or messages deployment runs them; namespace functions are flattened
// (FlatToolName); tool names that break the target's pattern or length are rewritten
// (SafeToolName), in Tools, ToolChoice and the history's tool calls alike; an end-user id
// over l.User is replaced by its UserHash; stop sequences over l.Stop are cut to the first
// l.Stop; history call ids over l.CallID are replaced by a hash (the same way in a call and its
// result). r itself is returned, unchanged, when nothing needs changing; otherwise a copy that
// shares nothing Fit changed with r (r serves the other candidates).
//
// aliases map every renamed tool back (nil when none). An error is a *failure.Error
// invalid_request: tool_choice names a dropped hosted tool, or demands a tool call when every
// tool was dropped.
func Fit(r *Request, l Limits) (out *Request, aliases []ToolAlias, ch Changes, err error) {
	needs := l.User > 0 && len(r.User) > l.User || l.Stop > 0 && len(r.Stop) > l.Stop ||
		r.ToolChoice.Namespace != "" || r.ToolChoice.Mode == "hosted"
	for i := 0; i < len(r.Tools) && !needs; i++ {
		t := &r.Tools[i]
		needs = t.Type != "" || t.Namespace != "" || !validToolName(t.Name, l.ToolName)
	}
	if !needs && !historyNeedsFit(r, l) {
		return r, nil, ch, nil
	}
	cp := *r
	out = &cp
	if l.User > 0 && len(r.User) > l.User {
		out.User, ch.UserHashed = UserHash(r.User, l.User), true
	}
	if l.Stop > 0 && len(r.Stop) > l.Stop {
		out.Stop, ch.StopClamped = r.Stop[:l.Stop:l.Stop], true
	}
	// Tools: drop the hosted ones, send the others under a name the target accepts.
	used := make(map[string]bool, len(r.Tools))
	out.Tools = make([]Tool, 0, len(r.Tools))
	var dropped []Tool
	for _, t := range r.Tools {
		if t.Type != "" {
			dropped = append(dropped, t)
			ch.DroppedTools = append(ch.DroppedTools, droppedToolName(t))
			continue
		}
		sent := SafeToolName(FlatToolName(t.Namespace, t.Name), l.ToolName)
		if used[sent] { // two names sanitised alike: the hash of the caller's name tells them apart
			sent = hashedToolName(t.Namespace+"\x00"+t.Name, l.ToolName)
		}
		used[sent] = true
		if sent != t.Name || t.Namespace != "" {
			aliases = append(aliases, ToolAlias{Sent: sent, Name: t.Name, Namespace: t.Namespace})
			ch.ToolsRenamed = true
			t.Name, t.Namespace = sent, ""
		}
		out.Tools = append(out.Tools, t)
	}
	if tc := &out.ToolChoice; tc.Mode == "tool" {
		for _, t := range dropped {
			if t.Name == tc.Name || t.Type == tc.Name {
				return nil, nil, ch, failure.Invalid("tool_choice", "tool_choice names "+strconvQuote(tc.Name)+
					", a tool hosted by the provider that this model's deployment cannot run")
			}
		}
		if sent, ok := sentName(aliases, tc.Name, tc.Namespace); ok {
			tc.Name = sent
		}
		tc.Namespace = ""
	} else if tc.Mode == "hosted" {
		return nil, nil, ch, failure.Invalid("tool_choice", "tool_choice names "+strconvQuote(tc.Name)+
			", a tool hosted by the provider that this model's deployment cannot run")
	}
	if len(out.Tools) == 0 && len(dropped) > 0 && (out.ToolChoice.Mode == "required" || out.ToolChoice.Mode == "tool") {
		return nil, nil, ch, failure.Invalid("tool_choice", "tool_choice requires a tool call, and every tool is hosted by the provider, which this model's deployment cannot run")
	}
	// The history: the calls of renamed tools and over-long call ids.
	if historyNeedsFit(r, l) || len(aliases) > 0 {
		out.Messages = make([]Message, len(r.Messages))
		for i, m := range r.Messages {
			out.Messages[i] = m
			if !messageNeedsFit(&m, l, aliases) {
				continue
			}
			parts := make([]Part, len(m.Parts))
			copy(parts, m.Parts)
			for j := range parts {
				p := &parts[j]
				if p.Type == PartToolCall {
					if sent, ok := sentName(aliases, p.ToolName, p.Namespace); ok {
						p.ToolName = sent
					} else if p.Namespace != "" || !validToolName(p.ToolName, l.ToolName) {
						// A call of a tool the request no longer lists: sent under a name the
						// target accepts all the same.
						p.ToolName = SafeToolName(FlatToolName(p.Namespace, p.ToolName), l.ToolName)
						ch.ToolsRenamed = true
					}
					p.Namespace = ""
				}
				if (p.Type == PartToolCall || p.Type == PartToolResult) && l.CallID > 0 && len(p.ToolCallID) > l.CallID {
					p.ToolCallID, ch.CallIDs = CallIDHash(p.ToolCallID, l.CallID), true
				}
			}
			out.Messages[i].Parts = parts
		}
	}
	return out, aliases, ch, nil
}

// historyNeedsFit reports whether a tool call of r's history has a namespace, a name the
// target refuses, or an id over l.CallID.
func historyNeedsFit(r *Request, l Limits) bool {
	for i := range r.Messages {
		if messageNeedsFit(&r.Messages[i], l, nil) {
			return true
		}
	}
	return false
}

func messageNeedsFit(m *Message, l Limits, aliases []ToolAlias) bool {
	for j := range m.Parts {
		p := &m.Parts[j]
		switch p.Type {
		case PartToolCall:
			if p.Namespace != "" || !validToolName(p.ToolName, l.ToolName) {
				return true
			}
			if _, ok := sentName(aliases, p.ToolName, p.Namespace); ok {
				return true
			}
		case PartToolResult:
		default:
			continue
		}
		if l.CallID > 0 && len(p.ToolCallID) > l.CallID {
			return true
		}
	}
	return false
}

// sentName is the name sent upstream for the caller's tool (name, namespace), when Fit renamed it.
func sentName(aliases []ToolAlias, name, namespace string) (string, bool) {
	for i := range aliases {
		if aliases[i].Name == name && aliases[i].Namespace == namespace {
			return aliases[i].Sent, true
		}
	}
	return "", false
}

// Unalias returns the caller's name and namespace of a tool name sent upstream: the alias
// whose Sent is sent, or sent itself with no namespace.
func Unalias(aliases []ToolAlias, sent string) (name, namespace string) {
	for i := range aliases {
		if aliases[i].Sent == sent {
			return aliases[i].Name, aliases[i].Namespace
		}
	}
	return sent, ""
}

// FlatToolName is the function name of a namespace tool: namespace + name when the namespace
// ends with "_" (Codex's "mcp__server__"), else namespace + "__" + name; name alone without a
// namespace.
func FlatToolName(namespace, name string) string {
	switch {
	case namespace == "":
		return name
	case strings.HasSuffix(namespace, "_"):
		return namespace + name
	}
	return namespace + "__" + name
}

// SafeToolName returns name when it matches ^[a-zA-Z0-9_-]{1,max}$; otherwise every other
// byte becomes "_", and a name still over max bytes keeps its first max-9 bytes followed by
// "_" and 8 hex digits of the SHA-256 of the original name (stable across requests).
func SafeToolName(name string, max int) string {
	if validToolName(name, max) {
		return name
	}
	b := []byte(name)
	for i, c := range b {
		if !toolNameByte(c) {
			b[i] = '_'
		}
	}
	if len(b) == 0 {
		return "tool"
	}
	if max > 0 && len(b) > max {
		return hashedToolName(name, max)
	}
	return string(b)
}

// hashedToolName is the sanitised prefix of name and 8 hex digits of its SHA-256, max bytes in all.
func hashedToolName(name string, max int) string {
	sum := sha256.Sum256([]byte(name))
	keep := max - 9
	b := make([]byte, 0, max)
	for i := 0; i < len(name) && len(b) < keep; i++ {
		c := name[i]
		if !toolNameByte(c) {
			c = '_'
		}
		b = append(b, c)
	}
	b = append(b, '_')
	return string(hex.AppendEncode(b, sum[:4]))
}

func validToolName(name string, max int) bool {
	if name == "" || max > 0 && len(name) > max {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !toolNameByte(name[i]) {
			return false
		}
	}
	return true
}

func toolNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// UserHash is the end-user id sent for one longer than max: "sha256:" and the first hex
// digits of its SHA-256, max characters in all (64 for max >= 71, the whole digest). The same
// id always gives the same hash, so the provider's per-user abuse signals still work.
func UserHash(id string, max int) string {
	sum := sha256.Sum256([]byte(id))
	h := "sha256:" + hex.EncodeToString(sum[:])
	if len(h) > max {
		h = h[:max]
	}
	return h
}

// CallIDHash is a tool call id for one longer than max: "call_" and hex digits of its SHA-256,
// max characters in all; the same id always gives the same hash, so a call and its result
// still match.
func CallIDHash(id string, max int) string {
	sum := sha256.Sum256([]byte(id))
	h := "call_" + hex.EncodeToString(sum[:])
	if len(h) > max {
		h = h[:max]
	}
	return h
}

func droppedToolName(t Tool) string {
	if t.Name != "" && t.Name != t.Type {
		return "tools." + t.Type + ":" + t.Name
	}
	return "tools." + t.Type
}

// strconvQuote quotes a caller's tool name or type for a message: only a plain identifier
// (letters, digits, "_", "-", ".", ":", at most 64 bytes) is named; anything else is "a tool".
func strconvQuote(s string) string {
	if s == "" || len(s) > 64 {
		return "a tool"
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !toolNameByte(c) && c != '.' && c != ':' {
			return "a tool"
		}
	}
	return "\"" + s + "\""
}
