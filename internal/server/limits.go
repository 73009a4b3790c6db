package server

import (
	"context"
	"errors"
	"math"
	"strings"
	"time"

	"github.com/switchyard-gw/switchyard/internal/accounts"
	"github.com/switchyard-gw/switchyard/internal/admission"
	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/config"
	"github.com/switchyard-gw/switchyard/internal/plan"
)

// newAdmission builds the admission store admission.url names: memory:// is an in-memory store
// on the clock now; redis:// and rediss:// the shared Redis store (docs/limits.md), tuned by
// admission.redis (docs/deploy.md). Both seed
// spend and balances from seeder.
func newAdmission(c config.Admission, now func() time.Time, seeder admission.Seeder, logf func(string, ...any)) (admission.Store, error) {
	scheme, _, _ := strings.Cut(c.URL, "://")
	switch scheme {
	case "", "memory":
		return admission.NewMemory(now, seeder), nil
	case "redis", "rediss":
		rc := &c.Redis // admission.redis; zero fields are the store's defaults
		var flush func(context.Context) error
		if ls, ok := seeder.(ledgerSeeder); ok {
			flush = ls.flushLedger
		}
		return admission.OpenRedis(c.URL, admission.RedisOptions{Now: now, Seeder: seeder, Logf: logf, Timeout: rc.Timeout.D(),
			LeaseTTL: rc.LeaseTTL.D(), Prefix: rc.Prefix, PoolSize: rc.PoolSize, MinIdleConns: rc.MinIdleConns, Flush: flush})
	}
	return nil, errors.New("admission: unsupported admission.url scheme " + scheme)
}

// ledgerSeeder reads the admission store's seeds from the store of accounts and this process's
// ledger writer (accounts.Seeder, R-BILL-4): a layer's spend is its settles in the ledger plus
// those still queued, a prepaid balance the stored balance minus the queued settles. Without a
// store of accounts (or one that cannot sum its ledger) every counter starts at zero. It reads
// the server's fields at each seed, as they are set after the admission store is built.
type ledgerSeeder struct{ s *Server }

func (l ledgerSeeder) seeder() accounts.Seeder {
	sd := accounts.Seeder{Store: l.s.accts, Writer: l.s.ledger, Timeout: storeTimeout}
	if c := l.s.cache; c != nil {
		sd.Workspace = c.KeyWorkspace
	}
	return sd
}

// SpentMicroUSD implements admission.Seeder.
func (l ledgerSeeder) SpentMicroUSD(ctx context.Context, scope admission.Scope, id string, from time.Time, exclude []string) (int64, error) {
	return l.seeder().SpentMicroUSD(ctx, scope, id, from, exclude)
}

// BalanceMicroUSD implements admission.Seeder.
func (l ledgerSeeder) BalanceMicroUSD(ctx context.Context, accountID string, exclude []string) (int64, error) {
	return l.seeder().BalanceMicroUSD(ctx, accountID, exclude)
}

// flushLedger makes the settles this process charged so far durable (the Redis store's
// RedisOptions.Flush, when Redis lost its data): it waits for the settles whose admission store
// call is done and whose ledger entry is not queued yet (settling), then for the ledger writer
// to write every entry queued; nil without a ledger.
func (l ledgerSeeder) flushLedger(ctx context.Context) error {
	if l.s.ledger == nil {
		return nil
	}
	if m := l.s.settling; m != nil {
		m.Lock()
		m.Unlock() // a barrier: the settles under way have queued their entries
	}
	return l.s.ledger.Flush(ctx)
}

// toLimits converts a validated configuration layer's limits.
func toLimits(l *config.Limits) admission.Limits {
	p, _ := admission.ParsePeriod(l.BudgetPeriod) // validated by config
	return admission.Limits{
		RPM: int64(l.RPM), TPM: int64(l.TPM), Concurrency: int64(l.Concurrency),
		BudgetMicroUSD: admission.MicroUSD(l.BudgetUSD), BudgetPeriod: p,
	}
}

// accountLimits maps account ids to their limits (accounts[] of the configuration).
func accountLimits(accounts []config.Account) map[string]admission.Limits {
	m := make(map[string]admission.Limits, len(accounts))
	for i := range accounts {
		if l := toLimits(&accounts[i].Limits); !l.IsZero() {
			m[accounts[i].ID] = l
		}
	}
	return m
}

// keyLayers are the layers a static key is held to: its own limits, then its account's; nil
// when neither has any, so that the request path skips the admission store altogether.
func keyLayers(k *config.Key, accounts map[string]admission.Limits) []admission.Layer {
	var ls []admission.Layer
	if l := toLimits(&k.Limits); !l.IsZero() {
		ls = append(ls, admission.Layer{Scope: admission.ScopeKey, ID: k.Name, Limits: l})
	}
	if l, ok := accounts[k.Account]; ok {
		ls = append(ls, admission.Layer{Scope: admission.ScopeAccount, ID: k.Account, Limits: l})
	}
	return ls
}

// charge is what a routed request asks of the admission store (contract.md "Billing",
// docs/limits.md): the tpm charge (input estimate + output basis) and the reserve, the most any
// of its plans can cost. Each plan (the requested model's and each fallback's) is priced at its
// catalog model's price when set, else at the most expensive price among its candidates' routes,
// input and output each, so that failover to a dearer route is covered. Input is reserved at the
// highest input-side price (input, cache_read, cache_write, cache_write_1h) of the long-context
// tier the input estimate reaches, output at that tier's output price, so that no cache split
// the provider reports can cost more than the reserve (docs/pricing.md); the settle charges the
// real split. The caller's own
// connections (BYOK) cost nothing: a plan of BYOK routes only reserves 0. Only model calls have
// an output; embeddings and token counts are charged their input. An images request's output
// basis is ImageOutputTokens per image asked (n), and its reserve adds n x the price's per-image
// USD (docs/routing.md "Images").
func charge(cs *callState, pr *prepared, protocol catalog.Protocol) (tokens, reserveMicroUSD int64) {
	in := int64(pr.inputTokens)
	var outMax int64
	one := func(m *catalog.Model, p *plan.Plan) {
		if m == nil || len(p.Candidates) == 0 {
			return // a plan that cannot run costs nothing
		}
		var out int64
		images := protocol == catalog.ProtocolImages || protocol == catalog.ProtocolImageEdits
		switch {
		case protocol == catalog.ProtocolModel:
			out = admission.OutputTokens(pr.info.MaxTokens, int64(m.MaxOutputTokens))
		case images:
			out = int64(max(pr.info.Images, 1)) * ImageOutputTokens
		}
		outMax = max(outMax, out)
		var pin, pout, pimg float64
		house := false // the caller's own connections cost the house nothing (R-POLICY)
		for _, c := range p.Candidates {
			if c.Route.Deployment.BYOK {
				continue
			}
			house = true
			if rp := c.Route.Price; rp != nil && m.Price == nil {
				r := rp.Rates(in)
				pin, pout, pimg = max(pin, r.MaxInput()), max(pout, r.Output), max(pimg, rp.PerImageUSD)
			}
		}
		if !house {
			return
		}
		if m.Price != nil {
			r := m.Price.Rates(in)
			pin, pout, pimg = r.MaxInput(), r.Output, m.Price.PerImageUSD
		}
		cost := admission.CostMicroUSD(in, out, pin, pout)
		if images && pimg > 0 {
			cost = satAdd(cost, admission.MicroUSD(float64(max(pr.info.Images, 1))*pimg))
		}
		reserveMicroUSD = max(reserveMicroUSD, cost)
	}
	one(pr.res.Model, &cs.plan)
	for i := range cs.fallbacks {
		one(cs.fallbacks[i].Resolution.Model, cs.fallbacks[i].Plan)
	}
	return in + outMax, reserveMicroUSD
}

// ImageOutputTokens is the output basis of one image in the reserve and the tpm charge of an
// images request: the most output tokens one GPT image model image is billed (gpt-image-1 at
// high quality, 1024x1536 or 1536x1024: 6,240).
const ImageOutputTokens = 6240

// satAdd adds two non-negative micro-USD amounts, saturating at math.MaxInt64.
func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
