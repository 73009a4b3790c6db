package fakeprovider

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/switchyard-gw/switchyard/internal/catalog"
)

// defaultDeltas is the number of content deltas when Behavior.Deltas is zero.
const defaultDeltas = 3

// answer is one dialect-neutral successful answer, computed before anything is written so that
// both the streaming and the non-streaming encoders (and a cut after N deltas) agree on it.
type answer struct {
	id      string // response id: chatcmpl-… or msg_…; one id for the whole stream
	model   string // echoes the request's model
	created int64  // unix seconds (OpenAI "created")
	text    string // the whole text; empty for a tool answer
	pieces  []string
	calls   []toolCall
	// Usage, see usageFor: promptTokens includes cachedTokens (OpenAI semantics).
	promptTokens, cachedTokens, outputTokens int
	// cacheWrite and cacheWrite1h are the cache writes reported (Behavior.Usage; Anthropic
	// only), included in promptTokens.
	cacheWrite, cacheWrite1h int
	// webSearches is the web searches reported (Behavior.Usage; Anthropic only).
	webSearches  int
	includeUsage bool // OpenAI stream_options.include_usage
	// hosted puts a completed web_search_call item before the answer (Responses API only,
	// Behavior.HostedToolCall).
	hosted bool
}

// scriptUsage replaces a's reported usage with u (Behavior.Usage).
func (a *answer) scriptUsage(u *ScriptedUsage) {
	if u == nil {
		return
	}
	a.promptTokens = u.Input + u.CacheRead + u.CacheWrite
	a.cachedTokens, a.cacheWrite, a.cacheWrite1h, a.outputTokens = u.CacheRead, u.CacheWrite, u.CacheWrite1h, u.Output
	a.webSearches = u.WebSearchRequests
}

// toolCall is one tool call of an answer.
type toolCall struct {
	id, name  string
	namespace string   // the Responses namespace of the called function, when it had one
	args      string   // the complete arguments, valid JSON
	pieces    []string // args split into deltas; concatenated they give args
}

// deltaCount is the number of content deltas of the answer: text pieces, or argument fragments
// of every tool call.
func (a *answer) deltaCount() int {
	if len(a.calls) == 0 {
		return len(a.pieces)
	}
	n := 0
	for _, c := range a.calls {
		n += len(c.pieces)
	}
	return n
}

// promptTokens is the deterministic prompt size of a request body: ceil(len(body)/4).
func promptTokens(body []byte) int { return (len(body) + 3) / 4 }

// buildAnswer computes the answer to the request body for behavior b. seq makes ids unique per
// provider; name is the provider name used in the default text.
func buildAnswer(d catalog.Dialect, name string, seq int64, created int64, body []byte, b Behavior) *answer {
	a := &answer{
		model:        gjson.GetBytes(body, "model").String(),
		created:      created,
		includeUsage: gjson.GetBytes(body, "stream_options.include_usage").Bool(),
		promptTokens: promptTokens(body),
	}
	s := strconv.FormatInt(seq, 10)
	callPrefix := "call_fake" + s + "_"
	if d == catalog.Anthropic {
		a.id = "msg_fake" + s
		callPrefix = "toolu_fake" + s + "_"
	} else {
		a.id = "chatcmpl-fake" + s
	}
	a.cachedTokens = min(b.CachedTokens, a.promptTokens)
	a.hosted = b.HostedToolCall
	deltas := b.Deltas
	if deltas <= 0 {
		deltas = defaultDeltas
	}
	if !b.isToolAnswer() {
		a.text = b.Text
		if a.text == "" {
			a.text = "Hello from " + name + "."
		}
		a.pieces = split(a.text, deltas)
		a.outputTokens = len(a.pieces)
		a.scriptUsage(b.Usage)
		return a
	}
	tools := requestTools(d, body)
	n := max(b.ParallelToolCalls, 1)
	for i := range n {
		t := tool{name: "fake_tool"}
		if len(tools) > 0 {
			t = tools[i%len(tools)]
		}
		c := toolCall{id: callPrefix + strconv.Itoa(i), name: t.name, namespace: t.namespace}
		if b.BigArgumentBytes > 0 {
			c.args = bigArguments(t.schema, b.BigArgumentBytes)
			c.pieces = []string{c.args}
		} else {
			c.args = schemaArguments(t.schema)
			c.pieces = split(c.args, deltas)
		}
		a.outputTokens += (len(c.args) + 3) / 4
		a.calls = append(a.calls, c)
	}
	a.scriptUsage(b.Usage)
	return a
}

// split cuts s into n pieces of about equal length on rune boundaries; n is capped at the number
// of runes so that no piece is empty. An empty s gives one empty piece.
func split(s string, n int) []string {
	runes := utf8.RuneCountInString(s)
	n = min(n, runes)
	if n <= 1 {
		return []string{s}
	}
	pieces := make([]string, 0, n)
	start, r := 0, 0
	for i := 1; i <= n; i++ {
		end := runes * i / n // rune index where piece i ends
		j := start
		for r < end {
			_, size := utf8.DecodeRuneInString(s[j:])
			j += size
			r++
		}
		pieces = append(pieces, s[start:j])
		start = j
	}
	return pieces
}

// tool is one tool declared in the request.
type tool struct {
	name      string
	namespace string       // a Responses namespace tool's name, for its functions
	schema    gjson.Result // JSON schema of the arguments; may not exist
}

// requestTools lists the request's tools in order: OpenAI tools[].function{name,parameters} (or
// the flat {name,parameters} form), Anthropic tools[]{name,input_schema}.
func requestTools(d catalog.Dialect, body []byte) []tool {
	var out []tool
	gjson.GetBytes(body, "tools").ForEach(func(_, v gjson.Result) bool {
		var t tool
		switch {
		case d == catalog.Anthropic:
			t = tool{name: v.Get("name").String(), schema: v.Get("input_schema")}
		case v.Get("function").Exists():
			t = tool{name: v.Get("function.name").String(), schema: v.Get("function.parameters")}
		case v.Get("type").Str == "namespace": // Responses: its functions, in order
			ns := v.Get("name").Str
			v.Get("tools").ForEach(func(_, f gjson.Result) bool {
				if f.Get("type").Str == "function" && f.Get("name").Str != "" {
					out = append(out, tool{name: f.Get("name").Str, namespace: ns, schema: f.Get("parameters")})
				}
				return true
			})
			return true
		case v.Get("type").Str != "" && v.Get("type").Str != "function":
			return true // a hosted or custom tool: not called as a function
		default:
			t = tool{name: v.Get("name").String(), schema: v.Get("parameters")}
		}
		if t.name != "" {
			out = append(out, t)
		}
		return true
	})
	return out
}

// argField is one property of generated tool arguments, in schema order.
type argField struct {
	key   string
	value json.RawMessage
}

// schemaFields builds one value per property of an object schema: the first enum value if any,
// else "example" for strings, 1 for numbers and integers, true for booleans, [] for arrays, {}
// for objects and null otherwise.
func schemaFields(schema gjson.Result) []argField {
	var out []argField
	schema.Get("properties").ForEach(func(k, v gjson.Result) bool {
		var val string
		switch {
		case v.Get("enum.0").Exists():
			val = v.Get("enum.0").Raw
		case v.Get("const").Exists():
			val = v.Get("const").Raw
		default:
			switch v.Get("type").String() {
			case "string":
				val = `"example"`
			case "number", "integer":
				val = "1"
			case "boolean":
				val = "true"
			case "array":
				val = "[]"
			case "object":
				val = "{}"
			default:
				val = "null"
			}
		}
		out = append(out, argField{key: k.String(), value: json.RawMessage(val)})
		return true
	})
	return out
}

// encodeFields writes fields as one compact JSON object.
func encodeFields(fields []argField) string {
	var sb strings.Builder
	sb.WriteByte('{')
	for i, f := range fields {
		if i > 0 {
			sb.WriteByte(',')
		}
		k, _ := json.Marshal(f.key) // a string always marshals
		sb.Write(k)
		sb.WriteByte(':')
		sb.Write(f.value)
	}
	sb.WriteByte('}')
	return sb.String()
}

// schemaArguments builds valid JSON arguments for a tool schema (see schemaFields).
func schemaArguments(schema gjson.Result) string { return encodeFields(schemaFields(schema)) }

// bigArguments builds valid JSON arguments of about size bytes: the schema's arguments with its
// first string property (or an added "data" property) padded with 'x'.
func bigArguments(schema gjson.Result, size int) string {
	fields := schemaFields(schema)
	at := -1
	for i, f := range fields {
		if string(f.value) == `"example"` {
			at = i
			break
		}
	}
	if at < 0 {
		fields = append(fields, argField{key: "data", value: json.RawMessage(`""`)})
		at = len(fields) - 1
	}
	fields[at].value = json.RawMessage(`""`)
	pad := max(size-len(encodeFields(fields)), 0)
	fields[at].value = json.RawMessage(`"` + strings.Repeat("x", pad) + `"`)
	return encodeFields(fields)
}
