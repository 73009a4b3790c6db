package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Load reads the YAML configuration file at path, interpolates ${ENV} references from the
// process environment, decodes it strictly, applies defaults and validates it.
//
// It returns nil and every problem found, joined with errors.Join, each a *Problem printed as
// "FILE:LINE: PATH: MSG". Unknown fields, mistyped values, bad durations, unset variables and
// every rule of Validate are problems. A file that cannot be read is a plain error.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return Parse(path, data)
}

// Parse is Load from bytes; name is used as FILE in problems and stored in Config.File.
func Parse(name string, data []byte) (*Config, error) {
	return parse(name, data, os.LookupEnv)
}

// isSecretField reports whether key names a credential: api_key, secret, token or secret_key
// (store.secret_key: unset means BYOK credentials are stored in the clear). When such a
// value is written exactly as "${VAR}" and VAR is unset, the value is "" rather than a
// problem: the built-in catalog names OPENAI_API_KEY and ANTHROPIC_API_KEY, and the gateway
// must start with either unset. Validate still rejects an empty key secret while auth is
// required, naming the variable. Anything else around the reference ("Bearer ${T}") or any
// other field makes an unset variable a problem.
func isSecretField(key string) bool {
	switch key {
	case "api_key", "secret", "token", "secret_key":
		return true
	}
	return false
}

// parse is Parse with an injected environment.
//
// The stages are: yaml syntax into a yaml.Node tree; a walk of that tree against the Config
// types that interpolates ${ENV} in scalar values in place (so lines stay those of the file)
// and rejects unknown fields; node.Decode into Config, which reports mistyped values and bad
// durations; applyDefaults; Validate. Problems of the walk and the decode are all reported
// together with Validate's, in line order, except a Validate problem on a line that already
// has one (it is most likely a consequence of the first).
//
// Strictness note: yaml.Decoder.KnownFields(true) decodes from bytes, so it cannot see values
// interpolated in the tree, and node.Decode ignores unknown fields (go-yaml/yaml#460). The walk
// therefore checks known fields itself, by the same rule: a mapping key must name a yaml tag of
// the target struct.
func parse(name string, data []byte, lookup lookupFunc) (*Config, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return nil, syntaxProblem(name, data, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, yamlProblems(name, nil, err)
		}
		return nil, &Problem{File: name, Line: extra.Line, Msg: "a configuration file holds one YAML document; found a second"}
	}

	cfg := &Config{File: name, pos: newPositions(name)}
	w := walker{pos: cfg.pos, lookup: lookup, seen: make(map[*yaml.Node]bool)}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind != 0 && !isNull(root) {
		w.walk(root, reflect.TypeOf(Config{}), "", "")
		if err := root.Decode(cfg); err != nil {
			w.problems = append(w.problems, yamlProblems(name, cfg.pos, err))
		}
	}
	applyDefaults(cfg)
	problems := w.problems
	bad := make(map[int]bool, len(problems))
	for _, p := range flatten(problems) {
		if p.Line > 0 {
			bad[p.Line] = true
		}
	}
	for _, p := range flatten([]error{cfg.Validate()}) {
		if p.Line == 0 || !bad[p.Line] {
			problems = append(problems, p)
		}
	}
	if len(problems) > 0 {
		all := flatten(problems)
		sort.SliceStable(all, func(i, j int) bool { return all[i].Line < all[j].Line })
		out := make([]error, len(all))
		for i, p := range all {
			out[i] = p
		}
		return nil, errors.Join(out...)
	}
	return cfg, nil
}

// walker interpolates and checks a yaml.Node tree against the Config types.
type walker struct {
	pos      *positions
	lookup   lookupFunc
	seen     map[*yaml.Node]bool // scalars already interpolated or reported (reached again through an alias)
	problems []error
}

var unmarshalerType = reflect.TypeOf((*yaml.Unmarshaler)(nil)).Elem()

// walk visits n, whose Go target type is t, at path; key is the mapping key n is the value of.
func (w *walker) walk(n *yaml.Node, t reflect.Type, path, key string) {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if isNull(n) {
		return
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.ScalarNode {
		w.pos.record(path, n.Line, true)
		w.interpolate(n, path, key)
		return
	}
	w.pos.record(path, n.Line, false)
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		return // a custom scalar (Duration) given a collection; its UnmarshalYAML reports it
	}
	switch {
	case n.Kind == yaml.MappingNode && t.Kind() == reflect.Struct:
		w.mapping(n, t, path)
	case n.Kind == yaml.SequenceNode && t.Kind() == reflect.Slice:
		for i, item := range n.Content {
			w.walk(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i), "")
		}
	}
	// Any other shape is a type mismatch that node.Decode reports with its line.
}

func (w *walker) mapping(n *yaml.Node, t reflect.Type, path string) {
	fields := yamlFields(t)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.Value == "<<" && (k.Tag == "" || k.Tag == "!!merge") {
			// A merge key: its value is a mapping (or a list of them) of the same struct.
			for v.Kind == yaml.AliasNode && v.Alias != nil {
				v = v.Alias
			}
			if v.Kind == yaml.SequenceNode {
				for _, m := range v.Content {
					w.walk(m, t, path, "")
				}
			} else {
				w.walk(v, t, path, "")
			}
			continue
		}
		ft, ok := fields[k.Value]
		if !ok || k.Kind != yaml.ScalarNode {
			if w.seen[k] {
				continue // reached again through an alias or merge key
			}
			w.seen[k] = true
			where := "the top level"
			if path != "" {
				where = path
			}
			w.problems = append(w.problems, &Problem{
				File: w.pos.file, Line: k.Line,
				Msg: fmt.Sprintf("unknown field %q in %s (known fields: %s)", k.Value, where, knownList(fields)),
			})
			continue
		}
		w.walk(v, ft, joinPath(path, k.Value), k.Value)
	}
}

// interpolate expands ${ENV} in scalar n in place. A plain scalar is re-resolved afterwards
// (its tag cleared), so "max_body_bytes: ${MAX}" decodes as an integer; a quoted one stays a
// string.
func (w *walker) interpolate(n *yaml.Node, path, key string) {
	if w.seen[n] || !strings.Contains(n.Value, "$") {
		return
	}
	w.seen[n] = true
	if isSecretField(key) {
		if name, ok := wholeVar(n.Value); ok {
			v, set := w.lookup(name)
			if !set {
				n.Value = ""
				w.pos.unsetVars[path] = name
				return
			}
			if strings.TrimSpace(v) == "" {
				w.pos.emptyVars[path] = name
			}
		}
	}
	v, err := expand(n.Value, w.lookup)
	if err != nil {
		for _, e := range unjoin(err) {
			w.problems = append(w.problems, &Problem{File: w.pos.file, Line: n.Line, Path: path, Msg: e.Error()})
		}
		n.Value = ""
		return
	}
	n.Value = v
	if n.Style&(yaml.SingleQuotedStyle|yaml.DoubleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle|yaml.TaggedStyle) == 0 {
		n.Tag = ""
	}
}

// yamlFields maps the yaml names of t's fields to their types.
func yamlFields(t reflect.Type) map[string]reflect.Type {
	m := make(map[string]reflect.Type, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		m[name] = f.Type
	}
	return m
}

func knownList(fields map[string]reflect.Type) string {
	names := make([]string, 0, len(fields))
	for n := range fields {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

func joinPath(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// maxSyntaxSearch caps the lines syntaxProblem searches (each probe parses a prefix).
const maxSyntaxSearch = 20000

// syntaxProblem reports a YAML syntax error err of data at the line where the problem is. The
// yaml package names the line where the enclosing block starts ("line 1: did not find expected
// key" for a mis-indented line 3), so the line is found again: the shortest prefix of whole
// lines that fails with the same message ends on the offending line. A prefix that fails
// differently (a flow collection or a quoted string cut open) does not count, and the search
// never goes before the yaml package's line.
func syntaxProblem(name string, data []byte, err error) error {
	p := lineProblem(name, nil, strings.TrimPrefix(err.Error(), "yaml: "))
	if p.Line == 0 {
		return p
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	if len(lines) > maxSyntaxSearch {
		return p
	}
	fails := func(n int) bool { // the first n lines fail with p's message
		var node yaml.Node
		e := yaml.NewDecoder(bytes.NewReader(bytes.Join(lines[:n], nil))).Decode(&node)
		if e == nil || errors.Is(e, io.EOF) {
			return false
		}
		q := lineProblem(name, nil, strings.TrimPrefix(e.Error(), "yaml: "))
		return q.Msg == p.Msg
	}
	// Binary search for the shortest failing prefix between the reported line and the end.
	lo, hi := p.Line, len(lines)
	if lo > hi || !fails(hi) {
		return p
	}
	for lo < hi {
		mid := (lo + hi) / 2
		if fails(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	p.Line = lo
	return p
}

// yamlProblems converts a yaml error ("yaml: line 3: ..." or a *yaml.TypeError whose entries
// are "line 3: ...") into *Problems of file name; pos, when known, names the path on a line.
func yamlProblems(name string, pos *positions, err error) error {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		out := make([]error, 0, len(te.Errors))
		for _, e := range te.Errors {
			out = append(out, lineProblem(name, pos, e))
		}
		return errors.Join(out...)
	}
	return lineProblem(name, pos, strings.TrimPrefix(err.Error(), "yaml: "))
}

// lineProblem parses yaml's "line N: msg" form.
func lineProblem(name string, pos *positions, s string) *Problem {
	p := &Problem{File: name, Msg: s}
	if rest, ok := strings.CutPrefix(s, "line "); ok {
		num, msg, ok := strings.Cut(rest, ": ")
		if n, err := strconv.Atoi(num); ok && err == nil {
			p.Line, p.Msg = n, msg
			if pos != nil {
				p.Path = pos.byLine[n]
			}
		}
	}
	return p
}

// unjoin returns the errors joined in err, or err alone.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// flatten returns the *Problems inside errs (joined errors are opened, nil ones skipped).
func flatten(errs []error) []*Problem {
	var out []*Problem
	for _, err := range errs {
		if err == nil {
			continue
		}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			out = append(out, flatten(j.Unwrap())...)
			continue
		}
		var p *Problem
		if errors.As(err, &p) {
			out = append(out, p)
		}
	}
	return out
}
