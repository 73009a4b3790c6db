package catalog

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/switchyard-gw/switchyard/internal/config"
)

// Catalog is an immutable snapshot of the models callers can name and the deployments and
// routes that serve them. Build it with New; nothing in it may be modified afterwards, so one
// *Catalog is safe for concurrent use and a reload swaps in a new one.
type Catalog struct {
	// Models in configuration order.
	Models []*Model
	// Deployments in configuration order; each route's Deployment points into this list.
	Deployments []*Deployment
	// Endpoints are the dedicated endpoints (R-KEY-6) in configuration order.
	Endpoints []*Endpoint

	names       map[string]name // model id or alias -> model
	deployments map[string]*Deployment
	endpoints   map[string]*Endpoint
}

// name is one entry of the name table: a model id (alias false) or an alias of Model.
type name struct {
	model *Model
	alias bool
}

// New builds a catalog from cfg (normally validated by config.Load). Model.Routes lists a
// model's routes in catalog order: deployment order in the configuration, then route order
// within the deployment. Provider defaults to the deployment name, UpstreamModel to the model
// id and a zero Weight to 1, so a Config built in Go needs no defaults pass.
//
// New rejects, with every problem joined: a nil cfg, an empty or duplicate model id, alias or
// deployment name, an alias equal to a model id, an unknown dialect, a route whose model is
// not a catalog model id or that its deployment already routes, and an endpoint whose id is
// empty, duplicate or a model name, whose model is not a model id, or that lists a deployment
// that does not exist, is not reserved or does not route the model. An endpoint's
// PublicFallback is config's default (true) when unset.
//
// With pricing.catalog (the default), each route without a price takes the price catalog's
// (the built-in one, or pricing.catalog_file, which must read and parse) for its deployment's
// CatalogProvider and upstream model, and a route whose own and whose model's context window
// are unset takes the catalog's window; the lookups happen here, once per load.
func New(cfg *config.Config) (*Catalog, error) {
	if cfg == nil {
		return nil, errors.New("catalog: nil configuration")
	}
	c := &Catalog{
		Models:      make([]*Model, 0, len(cfg.Models)),
		Deployments: make([]*Deployment, 0, len(cfg.Deployments)),
		names:       make(map[string]name, 2*len(cfg.Models)),
		deployments: make(map[string]*Deployment, len(cfg.Deployments)),
		endpoints:   make(map[string]*Endpoint, len(cfg.Endpoints)),
	}
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf("catalog: "+format, args...)) }
	pc, err := loadPriceCatalog(cfg)
	if err != nil {
		fail("%v", err)
		pc = nil
	}
	now := time.Now()

	for _, mc := range cfg.Models {
		if mc.ID == "" {
			fail("a model has an empty id")
			continue
		}
		if _, dup := c.names[mc.ID]; dup {
			fail("model %q is defined twice", mc.ID)
			continue
		}
		m := &Model{
			ID:                  mc.ID,
			Aliases:             append([]string(nil), mc.Aliases...),
			ContextWindowTokens: mc.ContextWindow,
			MaxOutputTokens:     mc.MaxOutputTokens,
			Reasoning:           mc.Reasoning,
			Price:               configPrice(mc.Price),
		}
		c.Models = append(c.Models, m)
		c.names[m.ID] = name{model: m}
	}
	for _, m := range c.Models {
		for _, a := range m.Aliases {
			switch prev, dup := c.names[a]; {
			case a == "":
				fail("model %q has an empty alias", m.ID)
			case dup && !prev.alias:
				fail("alias %q of model %q is a model id", a, m.ID)
			case dup:
				fail("alias %q is defined twice", a)
			default:
				c.names[a] = name{model: m, alias: true}
			}
		}
	}

	for _, dc := range cfg.Deployments {
		if dc.Name == "" {
			fail("a deployment has an empty name")
			continue
		}
		if _, dup := c.deployments[dc.Name]; dup {
			fail("deployment %q is defined twice", dc.Name)
			continue
		}
		d := &Deployment{
			Name:     dc.Name,
			Provider: dc.Provider,
			Dialect:  Dialect(dc.Dialect),
			BaseURL:  dc.BaseURL,
			APIKey:   dc.APIKey,
			Priority: dc.Priority,
			Tier:     dc.Tier,
			Region:   dc.Region,
			Reserved: dc.Reserved,
			Disabled: dc.Disabled,
			Routes:   make([]*Route, 0, len(dc.Routes)),
		}
		if d.Provider == "" {
			d.Provider = d.Name
		}
		d.Platform = Platform(dc.Platform)
		if d.Platform == "" {
			d.Platform = PlatformOpenAI
			if d.Dialect == Anthropic {
				d.Platform = PlatformAnthropic
			}
		}
		if dc.AWS != nil {
			d.AWS = AWS(*dc.AWS)
		}
		if dc.Vertex != nil {
			d.Vertex = Vertex(*dc.Vertex)
		}
		if dc.Azure != nil {
			d.Azure = Azure(*dc.Azure)
		}
		if dc.Responses != nil {
			d.Responses = *dc.Responses
		} else if d.Dialect == OpenAI {
			d.Responses = (d.Platform == PlatformAzure && d.Azure.ServesResponses()) || strings.TrimRight(d.BaseURL, "/") == "https://api.openai.com/v1"
		}
		if d.Dialect != OpenAI && d.Dialect != Anthropic {
			fail("deployment %q: unknown dialect %q", d.Name, dc.Dialect)
		}
		for _, rc := range dc.Routes {
			n, ok := c.names[rc.Model]
			switch {
			case !ok:
				fail("deployment %q routes model %q, which is not in the catalog", d.Name, rc.Model)
				continue
			case n.alias:
				fail("deployment %q routes %q, an alias of %q; routes name model ids", d.Name, rc.Model, n.model.ID)
				continue
			case d.routes(rc.Model):
				fail("deployment %q routes model %q twice", d.Name, rc.Model)
				continue
			}
			r := &Route{
				Deployment:              d,
				Model:                   rc.Model,
				UpstreamModel:           rc.UpstreamModel,
				Price:                   configPrice(rc.Price),
				Weight:                  rc.Weight,
				ContextWindowTokens:     rc.ContextWindow,
				UpstreamSnapshotPattern: rc.UpstreamSnapshotPattern,
				Disabled:                rc.Disabled,
				Region:                  rc.Region,
			}
			if r.Region == "" {
				r.Region = d.Region
			}
			for date, id := range rc.UpstreamSnapshots {
				compact, ok := config.SnapshotDate(date)
				if !ok {
					fail("deployment %q route %q: upstream_snapshots key %q is not a snapshot date", d.Name, rc.Model, date)
					continue
				}
				if r.UpstreamSnapshots == nil {
					r.UpstreamSnapshots = make(map[string]string, len(rc.UpstreamSnapshots))
				}
				r.UpstreamSnapshots[compact] = id
			}
			if r.UpstreamModel == "" {
				r.UpstreamModel = r.Model
			}
			if r.Weight == 0 {
				r.Weight = 1
			}
			applyPriceCatalog(pc, n.model, r, now)
			d.Routes = append(d.Routes, r)
			n.model.Routes = append(n.model.Routes, r)
		}
		c.Deployments = append(c.Deployments, d)
		c.deployments[d.Name] = d
	}
	for i := range cfg.Endpoints {
		c.addEndpoint(&cfg.Endpoints[i], fail)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return c, nil
}

// addEndpoint builds one dedicated endpoint, reporting what is wrong with it through fail.
func (c *Catalog) addEndpoint(ec *config.Endpoint, fail func(string, ...any)) {
	_, clash := c.names[ec.ID]
	_, dup := c.endpoints[ec.ID]
	switch {
	case ec.ID == "":
		fail("an endpoint has an empty id")
		return
	case clash:
		fail("endpoint %q is a model id or alias", ec.ID)
		return
	case dup:
		fail("endpoint %q is defined twice", ec.ID)
		return
	}
	m := c.Model(ec.Model)
	if m == nil {
		fail("endpoint %q serves model %q, which is not a catalog model id", ec.ID, ec.Model)
		return
	}
	e := &Endpoint{ID: ec.ID, Model: m, Accounts: append([]string(nil), ec.Accounts...), PublicFallback: ec.Fallback(),
		Reserved: make([]*Route, 0, len(ec.Deployments))}
	for _, name := range ec.Deployments {
		d := c.deployments[name]
		var rt *Route
		if d != nil {
			rt = d.route(m.ID)
		}
		switch {
		case d == nil:
			fail("endpoint %q lists deployment %q, which does not exist", ec.ID, name)
		case !d.Reserved:
			fail("endpoint %q lists deployment %q, which is not reserved", ec.ID, name)
		case rt == nil:
			fail("endpoint %q lists deployment %q, which does not route model %q", ec.ID, name, m.ID)
		case e.Lists(rt):
			fail("endpoint %q lists deployment %q twice", ec.ID, name)
		default:
			e.Reserved = append(e.Reserved, rt)
		}
	}
	c.Endpoints = append(c.Endpoints, e)
	c.endpoints[e.ID] = e
}

// route returns the deployment's route of model, or nil.
func (d *Deployment) route(model string) *Route {
	for _, r := range d.Routes {
		if r.Model == model {
			return r
		}
	}
	return nil
}

func (d *Deployment) routes(model string) bool {
	for _, r := range d.Routes {
		if r.Model == model {
			return true
		}
	}
	return false
}

// Deployment returns the deployment named name, or nil when there is none.
func (c *Catalog) Deployment(name string) *Deployment { return c.deployments[name] }

// Endpoint returns the dedicated endpoint whose id is exactly id, or nil when there is none.
// It does not check accounts (Endpoint.Allows does).
func (c *Catalog) Endpoint(id string) *Endpoint { return c.endpoints[id] }

// Model returns the model whose id is exactly id (no alias, no snapshot, case-sensitive), or
// nil when there is none. Use Resolve for what a caller sends.
func (c *Catalog) Model(id string) *Model {
	if n, ok := c.names[id]; ok && !n.alias {
		return n.model
	}
	return nil
}
