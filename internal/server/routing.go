package server

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/dialect"
	"github.com/switchyard-gw/switchyard/internal/dialect/form"
	"github.com/switchyard-gw/switchyard/internal/dialect/openai"
	"github.com/switchyard-gw/switchyard/internal/failure"
	"github.com/switchyard-gw/switchyard/internal/plan"
)

// maxFallbacks bounds the fallback models one request may name (extra.fallbacks plus models).
const maxFallbacks = 8

// routeHints is what routing reads from a request body beyond dialect.RequestInfo: the
// request's provider preferences, its fallback models, the session key and the input estimate.
type routeHints struct {
	prefs     plan.Preferences
	fallbacks []string
	// consumed says the body holds members the gateway consumes (provider, models, extra):
	// they are cut out of the body before it is forwarded or translated.
	consumed bool
	// sessionKey is R-ORDER-5's key: "k:" + a hash of prompt_cache_key, else "c:" + a hash of the
	// stable start of the conversation (system prompt and first user message), else "".
	sessionKey string
	// inputTokens is the estimate of convoHints, for the context-fit filter (R-ADMIT-4).
	inputTokens int
	// debug says extra.debug asks for the routing category (readDebug; issue 11 item 4).
	debug bool
}

// consumedMembers are the top-level members of a request body that the gateway consumes and
// never forwards upstream: the OpenRouter-style provider preferences and models list, and
// extra (extra.fallbacks). POST /v1/route's surface field is read there and never forwarded.
var consumedMembers = [...]string{"provider", "models", "extra"}

// readHints reads the routing hints of body (already checked by the surface's ParseRequest)
// in one pass over its top-level members, without decoding it. Errors are invalid_request
// *failure.Error naming the field.
func readHints(body []byte, sf *surface) (routeHints, error) {
	var h routeHints
	var provider, models, extra, pck, convo, system, tools, functions, prompt gjson.Result
	dialect.ScanObject(gjson.Parse(dialect.View(body)), func(k string, v gjson.Result) {
		switch k {
		case "provider":
			provider, h.consumed = v, true
		case "models":
			models, h.consumed = v, true
		case "extra":
			extra, h.consumed = v, true
		case "prompt_cache_key":
			pck = v
		case "messages", "input":
			convo = v
		case "system", "instructions":
			system = v
		case "tools":
			tools = v
		case "functions":
			functions = v
		case "prompt":
			prompt = v
		}
	})
	if err := hintsFrom(&h, provider, models, extra); err != nil {
		return h, err
	}
	switch sf.protocol {
	case catalog.ProtocolEmbeddings:
		return h, nil // no conversation and no context fit for embeddings
	case catalog.ProtocolImages:
		h.inputTokens = len(prompt.Raw) / 4
		return h, nil
	}
	h.sessionKey, h.inputTokens = convoHints(pck, system, convo, tools, functions)
	return h, nil
}

// DebugRouting is the debug category of extra.debug that returns the plan and its attempts in
// the response (issue 11 item 4; docs/routing.md "Debug mode").
const DebugRouting = "routing"

// readDebug reads extra.debug: an object of categories to booleans ({"routing": true}) or an
// array of category names (["routing"]); null or absent is off. Categories other than routing
// are accepted and ignored (other gateways define more); any other shape is an
// invalid_request naming extra.debug.
func readDebug(v gjson.Result) (bool, error) {
	const msg = "`extra.debug` must be an object of categories to booleans ({\"routing\": true}) or an array of category names ([\"routing\"])"
	switch {
	case !v.Exists() || v.Type == gjson.Null:
		return false, nil
	case v.IsObject():
		on := false
		var err error
		v.ForEach(func(k, m gjson.Result) bool {
			if m.Type != gjson.True && m.Type != gjson.False && m.Type != gjson.Null {
				err = failure.Invalid("extra.debug", msg)
				return false
			}
			if k.Str == DebugRouting && m.Type == gjson.True {
				on = true
			}
			return true
		})
		return on, err
	case v.IsArray():
		on := false
		var err error
		v.ForEach(func(_, e gjson.Result) bool {
			if e.Type != gjson.String {
				err = failure.Invalid("extra.debug", msg)
				return false
			}
			on = on || e.Str == DebugRouting
			return true
		})
		return on, err
	}
	return false, failure.Invalid("extra.debug", msg)
}

// hintsFrom reads the provider preferences, the fallback models (extra.fallbacks, then
// models) and extra.debug into h.
func hintsFrom(h *routeHints, provider, models, extra gjson.Result) error {
	if err := readProvider(provider, &h.prefs); err != nil {
		return err
	}
	var err error
	if extra.Exists() && extra.Type != gjson.Null {
		if !extra.IsObject() {
			return failure.Invalid("extra", "`extra` must be an object")
		}
		if h.fallbacks, err = appendModelList(h.fallbacks, extra.Get("fallbacks"), "extra.fallbacks"); err != nil {
			return err
		}
		if h.debug, err = readDebug(extra.Get("debug")); err != nil {
			return err
		}
	}
	h.fallbacks, err = appendModelList(h.fallbacks, models, "models")
	return err
}

// readFormHints is readHints for a multipart surface (POST /v1/images/edits): the form fields
// extra, provider and models hold the JSON the JSON surfaces take in the members of those
// names (each a valid JSON value nested at most dialect.MaxDepth levels, else 400), and the
// input estimate is the prompt's bytes / 4 plus mediaTokens per image or mask file. cs.form
// keeps the consumed parts for the strip.
func readFormHints(cs *callState, body []byte) (routeHints, error) {
	var h routeHints
	e, err := openai.ParseImageEdit(body, cs.form)
	cs.form = e.Consumed
	if err != nil {
		return h, err
	}
	h.consumed = len(e.Consumed) > 0
	var vals [3]gjson.Result
	for i, name := range [...]string{"provider", "models", "extra"} {
		v, ok := e.Get(body, name)
		if !ok {
			continue
		}
		if !dialect.ValidString(v) {
			return h, failure.Invalid(name, "the form field `"+name+"` must be JSON (nested at most 128 levels)")
		}
		vals[i] = gjson.Parse(v)
	}
	if err := hintsFrom(&h, vals[0], vals[1], vals[2]); err != nil {
		return h, err
	}
	h.inputTokens = e.PromptBytes/4 + e.Files*mediaTokens
	return h, nil
}

// stripForm appends the multipart body without its consumed parts (cs.form, from
// readFormHints) to dst: every other byte is the caller's.
func stripForm(dst, body []byte, parts []form.Part) []byte {
	var edits [3]form.Edit
	for i := range parts {
		edits[i] = form.Edit{Start: parts[i].Start, End: parts[i].End, Drop: true}
	}
	return form.AppendEdited(dst, body, edits[:len(parts)])
}

// readProvider fills p from the request's provider object (R-ORDER-6): order, only and ignore
// (arrays of provider or deployment names), allow_fallbacks (a boolean) and sort (a strategy).
// Other members (OpenRouter has more) are consumed and ignored.
func readProvider(v gjson.Result, p *plan.Preferences) error {
	if !v.Exists() || v.Type == gjson.Null {
		return nil
	}
	if !v.IsObject() {
		return failure.Invalid("provider", "`provider` must be an object")
	}
	var err error
	v.ForEach(func(k, m gjson.Result) bool {
		switch k.Str {
		case "order":
			p.Order, err = stringList(m, "provider.order")
		case "only":
			p.Only, err = stringList(m, "provider.only")
		case "ignore":
			p.Ignore, err = stringList(m, "provider.ignore")
		case "allow_fallbacks":
			switch m.Type {
			case gjson.Null:
			case gjson.True, gjson.False:
				b := m.Type == gjson.True
				p.AllowFallbacks = &b
			default:
				err = failure.Invalid("provider.allow_fallbacks", "`provider.allow_fallbacks` must be a boolean")
			}
		case "sort":
			switch {
			case m.Type == gjson.Null:
			case m.Type != gjson.String || !catalog.ValidStrategy(m.Str):
				err = failure.Invalid("provider.sort", "`provider.sort` must be one of price, latency, throughput, reliability, balanced, priority")
			default:
				p.Sort = m.Str
			}
		}
		return err == nil
	})
	return err
}

// stringList reads an array of non-empty strings (null is an empty list).
func stringList(v gjson.Result, param string) ([]string, error) {
	if v.Type == gjson.Null {
		return nil, nil
	}
	if !v.IsArray() {
		return nil, failure.Invalid(param, "`"+param+"` must be an array of strings")
	}
	var out []string
	var err error
	v.ForEach(func(_, e gjson.Result) bool {
		if e.Type != gjson.String || e.Str == "" {
			err = failure.Invalid(param, "`"+param+"` must be an array of non-empty strings")
			return false
		}
		out = append(out, strings.Clone(e.Str)) // e.Str may alias the pooled body buffer
		return true
	})
	return out, err
}

// appendModelList appends the model ids of a fallbacks list to dst, skipping repeats.
func appendModelList(dst []string, v gjson.Result, param string) ([]string, error) {
	if !v.Exists() {
		return dst, nil
	}
	ids, err := stringList(v, param)
	if err != nil {
		return dst, err
	}
next:
	for _, id := range ids {
		for _, have := range dst {
			if have == id {
				continue next
			}
		}
		dst = append(dst, id)
	}
	if len(dst) > maxFallbacks {
		return dst, failure.Invalid(param, fmt.Sprintf("at most %d fallback models may be named", maxFallbacks))
	}
	return dst, nil
}

// convoHints reads the conversation once for two hints: R-ORDER-5's session key and R-ADMIT-4's
// input estimate in tokens.
//
// The session key never holds prompt text: it is a hash (16 hex digits of SHA-256), prefixed
// "k:" when it comes from prompt_cache_key and "c:" when it comes from the stable start of the
// conversation: the system prompt (system, or instructions on the Responses surface; OpenAI
// system and developer messages before the first user message) and the first user message, as
// raw JSON, each followed by a 0 byte. Later turns append messages after these, so every turn
// of a conversation gets the same key. "" when there is neither.
//
// The estimate is the byte length of the system prompt, the conversation (messages or input)
// and the tool definitions, divided by 4, where every media part (image, audio, file, document)
// counts mediaTokens instead of its bytes (a base64 image is megabytes of few tokens); the
// conversation's bytes are convoBytes's. Its error: JSON syntax and keys are counted, so English
// text is overestimated by about 10-30%; text that tokenizes densely (code, CJK: ~1 token per
// 1-3 bytes) is underestimated by up to 2-3x; media are a flat guess. The filter admits a route
// whenever the estimate falls short of its window, so an underestimate lets the provider answer
// context_overflow itself, and an overestimate on a route just below the window is the only way
// to drop wrongly.
//
// One pass: each message's members are read once for its role, type and content (the key's
// stable start and the byte count both need them); the hashed start is gathered in a stack
// buffer and hashed once.
func convoHints(pck, system, convo, tools, functions gjson.Result) (key string, tokens int) {
	var stack [1024]byte
	start := stack[:0] // the stable start to hash; nil once prompt_cache_key gave the key
	if pck.Type == gjson.String && pck.Str != "" {
		key, start = "k:"+hashHex(pck.Raw), nil
	}
	hashed := false
	add := func(raw string) {
		if start != nil {
			start = append(append(start, raw...), 0)
			hashed = true
		}
	}
	if system.Exists() && system.Type != gjson.Null {
		add(system.Raw)
	}
	n := len(system.Raw) + len(tools.Raw) + len(functions.Raw)
	switch {
	case convo.Type == gjson.String: // a Responses input given as one string
		add(convo.Raw)
		n += len(convo.Raw)
	case convo.IsArray():
		n += 2
		open := start != nil // still before the first user message
		convo.ForEach(func(_, m gjson.Result) bool {
			role, typ, content := members(m)
			if open {
				switch role.Str {
				case "system", "developer":
					add(m.Raw)
				case "user":
					add(m.Raw)
					open = false
				}
			}
			n += partBytes(m, typ, content, 1) + 1
			return true
		})
	default:
		n += convoBytes(convo, 0)
	}
	if hashed {
		sum := sha256.Sum256(start)
		key = "c:" + hex.EncodeToString(sum[:8])
	}
	return key, n / 4
}

// members returns the role, type and content members of v when it is an object (the first of
// each, as gjson's Get would), in one pass over its members.
func members(v gjson.Result) (role, typ, content gjson.Result) {
	if !v.IsObject() {
		return
	}
	v.ForEach(func(k, m gjson.Result) bool {
		switch k.Str {
		case "role":
			if !role.Exists() {
				role = m
			}
		case "type":
			if !typ.Exists() {
				typ = m
			}
		case "content":
			if !content.Exists() {
				content = m
			}
		}
		return true
	})
	return
}

func hashHex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:8])
}

// mediaTokens is the estimate charged for one image, audio, file or document part: about what
// a large image costs at both providers (OpenAI high detail ~1,100, Anthropic up to ~1,600).
const mediaTokens = 1600

// convoBytes is the byte count of v with media parts counted at mediaTokens*4; it descends
// into arrays and content arrays, up to a small depth (messages, content, tool_result content).
func convoBytes(v gjson.Result, depth int) int {
	if depth < 4 && v.IsObject() {
		_, typ, content := members(v)
		return partBytes(v, typ, content, depth)
	}
	if depth < 4 && v.IsArray() {
		n := 2
		v.ForEach(func(_, e gjson.Result) bool {
			n += convoBytes(e, depth+1) + 1
			return true
		})
		return n
	}
	return len(v.Raw)
}

// partBytes is convoBytes of v at depth given its type and content members (members).
func partBytes(v, typ, content gjson.Result, depth int) int {
	if depth >= 4 || !v.IsObject() {
		return convoBytes(v, depth)
	}
	switch typ.Str {
	case "image_url", "image", "input_image", "input_audio", "file", "input_file", "document":
		return mediaTokens * 4
	}
	if content.IsArray() {
		return len(v.Raw) - len(content.Raw) + convoBytes(content, depth+1)
	}
	return len(v.Raw)
}

// stripConsumed appends body without its consumed top-level members (consumedMembers) to dst:
// byte surgery, every other byte is the caller's. body must be a valid JSON object.
func stripConsumed(dst, body []byte) []byte {
	keep := 0      // body[:keep] is dealt with
	prevEnd := -1  // end of the previous member
	kept := false  // some earlier member stays
	leadFrom := -1 // start of a run of removed leading members, not yet cut
	cut := func(from, to int) {
		dst = append(dst, body[keep:from]...)
		keep = to
	}
	gjson.Parse(dialect.View(body)).ForEach(func(k, v gjson.Result) bool {
		start, end := k.Index, v.Index+len(v.Raw)
		switch {
		case !isConsumed(k.Str):
			if leadFrom >= 0 { // `{"provider":{..}, "model":..` -> `{"model":..`
				cut(leadFrom, start)
				leadFrom = -1
			}
			kept = true
		case kept: // `.., "provider":{..}` -> `..`
			cut(prevEnd, end)
		case leadFrom < 0:
			leadFrom = start
		}
		prevEnd = end
		return true
	})
	if leadFrom >= 0 { // nothing but consumed members: `{}`
		cut(leadFrom, prevEnd)
	}
	return append(dst, body[keep:]...)
}

func isConsumed(k string) bool {
	for _, c := range consumedMembers {
		if k == c {
			return true
		}
	}
	return false
}

// hidden reports whether id names a dedicated endpoint that the caller may not use.
func (s *Server) hidden(id string, who caller) bool {
	e := s.cat.Endpoint(id)
	return e != nil && !who.mayUse(e)
}

// prepared is one model call routed: the body to forward, what the surface parser read, and
// the plans of the requested model and of its fallbacks, in the order they are tried.
type prepared struct {
	info dialect.RequestInfo
	body []byte
	res  catalog.Resolution
	// attemptLimit is routing.attempt_limit (R-FAIL-10); 0 is unlimited.
	attemptLimit int
	// inputTokens is the request's input estimate (convoHints); 0 for embeddings.
	inputTokens int
	// refused says route's error is an admission refusal (allowlist, the key's providers
	// against a pin, or an empty pool: Plan.Refusal), which POST /v1/route explains with a 200
	// instead of answering it (issue 11 item 10). For a refusal before planning, refusedModel
	// is the resolved model and refusedReason the reason every one of its routes is dropped
	// with; refusedModel.Model is nil when the plan was built.
	refused       bool
	refusedModel  catalog.Resolution
	refusedReason string
	// planned says the plan of the requested model was built (cs.plan and cs.fallbacks are
	// this request's; before, they may hold a pooled earlier request's).
	planned bool
	// debug says the request asked for its routing debug (extra.debug; issue 11 item 4).
	debug bool
}

// route is the request path's routing half, shared by model calls and POST /v1/route so that
// the plan explained is the plan used: what the caller asks for (resolveCall), then the plans
// that serve it (planCall, plan.go). info is filled as far as it was read, also on error (the
// audit wants the model and stream flag).
func (s *Server) route(cs *callState, who caller, sf *surface, body []byte, pr *prepared) error {
	var ask asked
	if err := s.resolveCall(cs, who, sf, body, pr, &ask); err != nil {
		return err
	}
	return s.planCall(cs, who, sf, pr, &ask)
}

// asked is what resolveCall read of a request beyond prepared: the model's suffix and the
// routing hints, the plan step's input.
type asked struct {
	sx catalog.Suffix
	h  routeHints
}

// resolveCall reads what the caller asks for into pr and ask: parse, resolve with suffixes
// (R-SUFFIX, R-MODEL-5) and dedicated endpoints (R-KEY-6: one the caller's account may not use
// is a 404 as for an unknown model), the caller's models allowlist and providers (R-ADMIT-1,
// R-SUFFIX-3), the override lock (R-SUFFIX-2), the hints (R-ORDER-5/6, R-ADMIT-4, R-FAIL-8) and
// the body cut (pr.body: the body without the gateway's own members).
func (s *Server) resolveCall(cs *callState, who caller, sf *surface, body []byte, pr *prepared, ask *asked) error {
	info, err := sf.codec.ParseRequest(body)
	pr.info = info
	if err != nil {
		return err
	}
	// A dedicated endpoint the caller may not use does not exist for it (R-KEY-6): answered
	// before suffix parsing, so no suffix error reveals it. Endpoint ids hold no ':'.
	if id, _, _ := strings.Cut(info.Model, ":"); s.hidden(id, who) {
		return catalog.UnknownModel(info.Model)
	}
	res, sx, err := s.cat.ResolveSuffixed(info.Model)
	if err != nil {
		return err
	}
	if err := allowModel(who, res, "model"); err != nil {
		pr.refused, pr.refusedModel, pr.refusedReason = true, res, plan.ReasonModels
		return err
	}
	h := &ask.h
	if sf.form {
		*h, err = readFormHints(cs, body)
	} else {
		*h, err = readHints(body, sf)
	}
	if err != nil {
		return err
	}
	if err := allowPin(who, res, sx.Pin); err != nil {
		pr.refused, pr.refusedModel, pr.refusedReason = true, res, plan.ReasonProviders
		return err
	}
	if (sx.Strategy != "" || h.prefs.Sort != "") && !who.allowOverride {
		param := "provider.sort"
		if sx.Strategy != "" {
			param = "model"
		}
		return &failure.Error{Class: failure.InvalidRequest, Param: param,
			Msg: "this API key may not override the routing strategy (allow_request_override is off)"}
	}
	if sx.Strategy != "" && h.prefs.Sort != "" && sx.Strategy != h.prefs.Sort {
		return failure.Invalid("provider.sort", "`provider.sort` contradicts the model's :@"+sx.Strategy+" suffix")
	}
	if h.consumed {
		if sf.form {
			cs.stripped = stripForm(cs.stripped[:0], body, cs.form)
		} else {
			cs.stripped = stripConsumed(cs.stripped[:0], body)
		}
		body = cs.stripped
		if info, err = sf.codec.ParseRequest(body); err != nil {
			return err
		}
		pr.info = info
	}
	ask.sx = sx
	pr.body, pr.res, pr.inputTokens, pr.debug = body, res, h.inputTokens, h.debug
	return nil
}

// allowModel refuses, 403 permission, a model outside the caller's effective models allowlist
// (R-ADMIT-1; contract.md "Refusals before routing"). The allowlist names catalog model ids (an
// alias or a dated snapshot of an allowed model is allowed) or dedicated endpoint ids; an
// unconstrained allowlist allows every model. param names the request field.
func allowModel(who caller, res catalog.Resolution, param string) error {
	e := who.settings
	if e == nil || e.Models.FixedBy.Empty() {
		return nil
	}
	for _, m := range e.Models.Value {
		if m == res.Model.ID || (res.Endpoint != nil && m == res.Endpoint.ID) {
			return nil
		}
	}
	return &failure.Error{Class: failure.Permission, Param: param,
		Msg: fmt.Sprintf("this API key may not use model %q (its models allowlist excludes it)", res.Requested)}
}

// allowPin refuses, 400 invalid_request, a `model:provider` pin to a provider outside the
// caller's effective providers (R-SUFFIX-3: a suffix never widens the configured scope).
func allowPin(who caller, res catalog.Resolution, pin string) error {
	e := who.settings
	if pin == "" || e == nil || e.Providers.FixedBy.Empty() {
		return nil
	}
	for _, rt := range res.Model.Routes { // names match a deployment's provider or its name
		d := rt.Deployment
		if (pin == d.Provider || pin == d.Name) && (slices.Contains(e.Providers.Value, d.Provider) || slices.Contains(e.Providers.Value, d.Name)) {
			return nil
		}
	}
	return &failure.Error{Class: failure.InvalidRequest, Param: "model",
		Msg: fmt.Sprintf("this API key may not use provider %q (its providers setting excludes it)", pin)}
}
