// Package pricedata is Switchyard's built-in price catalog (docs/pricing.md; contract.md
// "Additions pinned in round 4"): the list prices and context windows of the models of the
// providers Switchyard names, generated from the npm package @pydantic/genai-prices (MIT; see
// LICENSE.genai-prices and tools/pricecatalog) and embedded in the binary, so that no price is
// fetched at run time. A file in the same format (pricing.catalog_file) replaces it.
//
// Lookups match an upstream model id the way genai-prices does: the id is lowercased and
// trimmed, the provider's models are tried in order and the first whose match rule holds wins,
// then the provider's fallback providers; when nothing matches, a dated suffix -YYYYMMDD is
// respelled -YYYY-MM-DD and the search runs once more. Lookups happen when a configuration
// loads (catalog.New), never per request.
package pricedata

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"
)

//go:embed prices.json
var builtin []byte

// Provider ids of the catalog (contract.md "Additions pinned in round 4"): a deployment's
// provider, or failing that its platform, names one of these.
const (
	OpenAI    = "openai"
	Anthropic = "anthropic"
	Google    = "google" // the Gemini API
	Bedrock   = "bedrock"
	Vertex    = "vertex"
	Azure     = "azure"
)

// MaxFileBytes bounds a catalog_file (the built-in one is about 60 KB).
const MaxFileBytes = 16 << 20

// Source names where a catalog's data comes from.
type Source struct {
	Package  string `json:"package"`
	Version  string `json:"version"`
	License  string `json:"license"`
	Date     string `json:"date"` // YYYY-MM-DD the file was generated
	Homepage string `json:"homepage"`
}

// Price is one model's list price in USD per million tokens (WebSearch: USD per server-side web
// search call). A nil field is not listed: the billing defaults apply (contract.md: cache_read
// and cache_write default to input, cache_write_1h to cache_write).
type Price struct {
	Input        *float64 `json:"input"`
	Output       *float64 `json:"output"`
	CacheRead    *float64 `json:"cache_read"`
	CacheWrite   *float64 `json:"cache_write"`
	CacheWrite1h *float64 `json:"cache_write_1h"`
	WebSearch    *float64 `json:"web_search"`
	// Tiers, by ascending AboveInputTokens, price every token of a request whose input tokens
	// are above the threshold; a nil field keeps the base price's value.
	Tiers []Tier `json:"tiers"`
}

// Tier is a long-context tier of a Price.
type Tier struct {
	AboveInputTokens int64    `json:"above_input_tokens"`
	Input            *float64 `json:"input"`
	Output           *float64 `json:"output"`
	CacheRead        *float64 `json:"cache_read"`
	CacheWrite       *float64 `json:"cache_write"`
	CacheWrite1h     *float64 `json:"cache_write_1h"`
}

// Entry is what a lookup finds: the catalog's model id, its context window (0: not listed) and
// the price in force at the lookup's time.
type Entry struct {
	// Provider is the catalog provider whose list matched (a fallback provider's id when the
	// match came from one).
	Provider      string
	ModelID       string
	ContextWindow int
	Price         Price
}

// Catalog is a parsed price catalog; immutable and safe for concurrent use.
type Catalog struct {
	Source    Source
	aliases   map[string]string
	providers map[string]*provider
}

type provider struct {
	id        string
	fallbacks []string
	models    []model
}

type model struct {
	ID            string   `json:"id"`
	Match         *matcher `json:"match"`
	ContextWindow int      `json:"context_window"`
	Price         Price    `json:"price"`
	Changes       []change `json:"changes"`
}

// change is a dated price change: Price is in force from From (UTC midnight) on.
type change struct {
	From  string `json:"from"`
	Price Price  `json:"price"`
	at    time.Time
}

type file struct {
	Source    Source            `json:"source"`
	Aliases   map[string]string `json:"aliases"`
	Providers []struct {
		ID        string   `json:"id"`
		Fallbacks []string `json:"fallbacks"`
		Models    []model  `json:"models"`
	} `json:"providers"`
}

var (
	builtinOnce sync.Once
	builtinCat  *Catalog
	builtinErr  error
)

// Builtin returns the embedded catalog, parsed once.
func Builtin() (*Catalog, error) {
	builtinOnce.Do(func() { builtinCat, builtinErr = Parse(builtin) })
	return builtinCat, builtinErr
}

// Load reads and parses a catalog file (pricing.catalog_file), at most MaxFileBytes.
func Load(path string) (*Catalog, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("pricing.catalog_file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("pricing.catalog_file: %w", err)
	}
	if st.Size() > MaxFileBytes {
		return nil, fmt.Errorf("pricing.catalog_file %s: larger than %d bytes", path, MaxFileBytes)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("pricing.catalog_file: %w", err)
	}
	c, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("pricing.catalog_file %s: %w", path, err)
	}
	return c, nil
}

// Parse reads a catalog in the format of prices.json. Every price must be finite and
// non-negative, every tier threshold positive and ascending, every change date YYYY-MM-DD.
func Parse(data []byte) (*Catalog, error) {
	var f file
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("price catalog: %w", err)
	}
	c := &Catalog{Source: f.Source, aliases: f.Aliases, providers: make(map[string]*provider, len(f.Providers))}
	for _, p := range f.Providers {
		if p.ID == "" {
			return nil, errors.New("price catalog: a provider has no id")
		}
		for i := range p.Models {
			m := &p.Models[i]
			if m.Match == nil {
				return nil, fmt.Errorf("price catalog: %s model %q has no match rule", p.ID, m.ID)
			}
			if err := m.Price.check(); err != nil {
				return nil, fmt.Errorf("price catalog: %s model %q: %w", p.ID, m.ID, err)
			}
			for j := range m.Changes {
				ch := &m.Changes[j]
				t, err := time.Parse(time.DateOnly, ch.From)
				if err != nil {
					return nil, fmt.Errorf("price catalog: %s model %q: change date %q is not YYYY-MM-DD", p.ID, m.ID, ch.From)
				}
				ch.at = t
				if err := ch.Price.check(); err != nil {
					return nil, fmt.Errorf("price catalog: %s model %q from %s: %w", p.ID, m.ID, ch.From, err)
				}
			}
		}
		c.providers[p.ID] = &provider{id: p.ID, fallbacks: p.Fallbacks, models: p.Models}
	}
	return c, nil
}

func (p *Price) check() error {
	for _, v := range [...]*float64{p.Input, p.Output, p.CacheRead, p.CacheWrite, p.CacheWrite1h, p.WebSearch} {
		if v != nil && !(*v >= 0 && !math.IsInf(*v, 0)) {
			return fmt.Errorf("price %v is not a finite number >= 0", *v)
		}
	}
	var last int64
	for _, t := range p.Tiers {
		if t.AboveInputTokens <= last {
			return fmt.Errorf("tier thresholds must be positive and ascending, got %d after %d", t.AboveInputTokens, last)
		}
		last = t.AboveInputTokens
		for _, v := range [...]*float64{t.Input, t.Output, t.CacheRead, t.CacheWrite, t.CacheWrite1h} {
			if v != nil && !(*v >= 0 && !math.IsInf(*v, 0)) {
				return fmt.Errorf("tier price %v is not a finite number >= 0", *v)
			}
		}
	}
	return nil
}

// HasProvider reports whether the catalog lists provider id (an alias included).
func (c *Catalog) HasProvider(id string) bool {
	if a, ok := c.aliases[id]; ok {
		id = a
	}
	_, ok := c.providers[id]
	return ok
}

// Lookup finds the price of upstream model id at provider (a catalog provider id or alias), in
// force at time at; ok is false when the catalog has no such provider or no model matches.
func (c *Catalog) Lookup(providerID, id string, at time.Time) (Entry, bool) {
	if c == nil {
		return Entry{}, false
	}
	if a, ok := c.aliases[providerID]; ok {
		providerID = a
	}
	p := c.providers[providerID]
	if p == nil {
		return Entry{}, false
	}
	id = strings.ToLower(strings.TrimSpace(id))
	prov, m := c.find(p, id, true)
	if m == nil {
		if d := dashDates(id); d != id {
			prov, m = c.find(p, d, true)
		}
	}
	if m == nil {
		return Entry{}, false
	}
	e := Entry{Provider: prov, ModelID: m.ID, ContextWindow: m.ContextWindow, Price: m.Price}
	for _, ch := range m.Changes { // ascending dates; the last in force wins
		if !at.Before(ch.at) {
			e.Price = ch.Price
		}
	}
	return e, true
}

func (c *Catalog) find(p *provider, id string, fallbacks bool) (string, *model) {
	for i := range p.models {
		if p.models[i].Match.match(id) {
			return p.id, &p.models[i]
		}
	}
	if !fallbacks {
		return "", nil
	}
	for _, f := range p.fallbacks {
		if fp := c.providers[f]; fp != nil {
			if id, m := c.find(fp, id, false); m != nil {
				return id, m
			}
		}
	}
	return "", nil
}

var datePattern = regexp.MustCompile(`-(20\d{2})(0[1-9]|1[0-2])(0[1-9]|[12]\d|3[01])(-|:|$)`)

// dashDates respells each valid date suffix -YYYYMMDD (followed by -, : or the end) as
// -YYYY-MM-DD, as genai-prices does before its second search.
func dashDates(id string) string {
	// Replace repeatedly: the trailing separator is consumed by a match, so adjacent dates
	// need a second pass.
	for range 4 {
		out := datePattern.ReplaceAllStringFunc(id, func(s string) string {
			g := datePattern.FindStringSubmatch(s)
			if _, err := time.Parse("20060102", g[1]+g[2]+g[3]); err != nil {
				return s
			}
			return "-" + g[1] + "-" + g[2] + "-" + g[3] + g[4]
		})
		if out == id {
			return out
		}
		id = out
	}
	return id
}

// matcher is a genai-prices match rule: exactly one of equals, starts_with, ends_with,
// contains, regex, or, and, not (not: Switchyard's port of a leading negative lookahead).
type matcher struct {
	equals, startsWith, endsWith, contains *string
	re                                     *regexp.Regexp
	badRegex                               bool // a pattern RE2 cannot compile: matches nothing
	or, and                                []*matcher
	not                                    *matcher
}

func (m *matcher) UnmarshalJSON(b []byte) error {
	var raw struct {
		Equals     *string    `json:"equals"`
		StartsWith *string    `json:"starts_with"`
		EndsWith   *string    `json:"ends_with"`
		Contains   *string    `json:"contains"`
		Regex      *string    `json:"regex"`
		Or         []*matcher `json:"or"`
		And        []*matcher `json:"and"`
		Not        *matcher   `json:"not"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	m.equals, m.startsWith, m.endsWith, m.contains = raw.Equals, raw.StartsWith, raw.EndsWith, raw.Contains
	m.or, m.and, m.not = raw.Or, raw.And, raw.Not
	if raw.Regex != nil {
		re, err := regexp.Compile(*raw.Regex)
		if err != nil {
			m.badRegex = true
		} else {
			m.re = re
		}
	}
	n := 0
	for _, set := range [...]bool{m.equals != nil, m.startsWith != nil, m.endsWith != nil, m.contains != nil,
		raw.Regex != nil, m.or != nil, m.and != nil, m.not != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return fmt.Errorf("a match rule has %d conditions, want exactly 1: %s", n, b)
	}
	return nil
}

func (m *matcher) match(s string) bool {
	switch {
	case m == nil:
		return false
	case m.equals != nil:
		return s == *m.equals
	case m.startsWith != nil:
		return strings.HasPrefix(s, *m.startsWith)
	case m.endsWith != nil:
		return strings.HasSuffix(s, *m.endsWith)
	case m.contains != nil:
		return strings.Contains(s, *m.contains)
	case m.re != nil:
		return m.re.MatchString(s)
	case m.badRegex:
		return false
	case m.not != nil:
		return !m.not.match(s)
	case m.or != nil:
		for _, o := range m.or {
			if o.match(s) {
				return true
			}
		}
		return false
	case m.and != nil:
		for _, a := range m.and {
			if !a.match(s) {
				return false
			}
		}
		return len(m.and) > 0
	}
	return false
}

// badRegexes lists the patterns of c that RE2 cannot compile (they match nothing).
func (c *Catalog) badRegexes() []string {
	var out []string
	var walk func(p, id string, m *matcher)
	walk = func(p, id string, m *matcher) {
		if m == nil {
			return
		}
		if m.badRegex {
			out = append(out, p+"/"+id)
		}
		for _, o := range m.or {
			walk(p, id, o)
		}
		for _, a := range m.and {
			walk(p, id, a)
		}
		walk(p, id, m.not)
	}
	for _, p := range c.providers {
		for _, m := range p.models {
			walk(p.id, m.ID, m.Match)
		}
	}
	return out
}
