package server_test

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/switchyard-gw/switchyard/internal/admission"
	"github.com/switchyard-gw/switchyard/internal/fakeprovider"
)

// burstCatalog: gpt-4o-mini billed at its catalog price, 1 and 100 micro-USD a token in and
// out, served by one emulated OpenAI deployment whose circuit the burst's scripted failures do
// not open; authentication on; the admin API on. The accounts and keys of the burst are stored
// ones, created through the admin API.
const burstCatalog = `
auth: {required: true}
routing:
  timeouts: {headers: 5s, stream_headers: 5s, stream_idle: 5s}
  circuit: {failures: 1000}
models:
  - id: gpt-4o-mini
    price: {input: 1, output: 100}
deployments:
  - name: oa-primary
    provider: openai
    dialect: openai
    base_url: "{{oa-primary}}"
    routes: [{model: gpt-4o-mini, price: {input: 0.15, output: 0.6}}]
admin:
  token: adm-secret-token
`

// burstOutcome is one request of the burst as the caller saw it.
type burstOutcome struct {
	key    int // index into the burst's keys
	status int
	hdr    http.Header
	body   []byte
	err    error
}

// burstPost sends one model request with a stored key, from any goroutine: errors are
// returned, not fatal. Even requests use the Chat Completions surface, odd ones Messages;
// stream says whether it streams. max_tokens is 5, so each reserve is the input estimate plus
// 500 micro-USD.
func burstPost(url, secret string, i int, stream bool) burstOutcome {
	path, body := "/v1/chat/completions",
		fmt.Sprintf(`{"model":"gpt-4o-mini","max_tokens":5,"messages":[{"role":"user","content":"Hello %d"}],"stream":%t}`, i%10, stream)
	hdr := [][2]string{{"Authorization", "Bearer " + secret}}
	if i%2 == 1 {
		path = "/v1/messages"
		hdr = [][2]string{{"x-api-key", secret}, {"anthropic-version", "2023-06-01"}}
	}
	req, err := http.NewRequest(http.MethodPost, url+path, strings.NewReader(body))
	if err != nil {
		return burstOutcome{err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	for _, h := range hdr {
		req.Header.Set(h[0], h[1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return burstOutcome{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return burstOutcome{status: resp.StatusCode, hdr: resp.Header, body: b, err: err}
}

// burstKey is one of the burst's stored keys and what the checks expect of it.
type burstKey struct {
	name      string
	acctID    string
	secret    string
	keyID     string
	limitKind string // x-switchyard-limit-kind of its refusals
	// capMicroUSD is what it may spend: the prepaid credit, or the key's budget_usd.
	capMicroUSD int64

	served, refused, failed int
	chargedMicroUSD         int64            // sum of the audited costs of its served requests
	maxReserveMicroUSD      int64            // the largest reserve of its served requests
	costByRequestID         map[string]int64 // audited cost of each served request, micro-USD
	// reserveByRequestID is the audited reserve of each admitted request (served or failed).
	reserveByRequestID   map[string]int64
	minObservedBalance   int64 // lowest stored balance polled during the burst
	observedBalanceCount int
}

// TestBillingBurst is the concurrency proof of R-BILL-1, R-BILL-2 and R-BILL-4, on every store
// backend (SQLite; Postgres when SWITCHYARD_TEST_POSTGRES_URL is set). 300 requests, at most 60
// in flight, streamed and not, on both surfaces, are shared between a stored key of a prepaid
// account credited with about twenty requests' worth, and a stored key of an unmetered account
// whose own settings set limits.budget_usd (period total) to about a dozen requests' worth.
// The first burstFailures requests to reach the provider fail (500: the only deployment fails,
// 502 to the caller). Then each key sends sequential requests until one is refused.
//
//   - R-BILL-1 (reserve before dispatch, no overspend): for each key, what was settled is at
//     most its credit or budget plus one request's reserve (and what is left, once a request
//     with nothing in flight was refused, is less than one), and the prepaid account's stored
//     balance, polled throughout the burst and read at the end, never goes below minus one
//     reserve; every refusal is a 402 insufficient_credit with limit kind credit (prepaid) or
//     budget (the key's budget), zero attempts, and no refused request reached the provider.
//   - R-BILL-2 (bill the serving attempt's reported usage): each served request's audited
//     cost is exactly its audited tokens at the model price, and the sum of all of them equals
//     the sum, over the requests the emulated provider received, of its usage formula
//     (docs/fake-provider.md: ceil(body bytes / 4) input tokens, 3 output tokens).
//   - R-BILL-4 (the ledger balances to the micro-dollar): GET /admin/v1/accounts/{id}/ledger
//     has exactly one settle entry per served request, each of its audited cost; their sum is
//     the credits minus the balance; the budget key's admission counter spent the same sum and
//     holds no reserve or slot once the burst is over.
//   - R-BILL-1 in the ledger: every admitted request has a reserve entry of its audited reserve
//     and exactly one entry ending it, written after it: a settle when served, a release of the
//     whole reserve when it failed; refused requests have none; reserves and releases change no
//     balance.
func TestBillingBurst(t *testing.T) {
	t.Parallel()
	for _, be := range storeBackends {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			testBillingBurst(t, be)
		})
	}
}

func testBillingBurst(t *testing.T, be storeBackend) {
	const (
		n           = 300
		parallel    = 60
		creditUSD   = "0.007" // about 20 requests at ~330 micro-USD each
		creditMicro = 7000
		budgetUSD   = "0.004" // about 12 requests
		budgetMicro = 4000
		// burstFailures is how many of the first requests to reach the provider fail; fewer
		// than the burst admits (each key admits several at once, and a failure returns its
		// reserve), so that none is left for the sequential requests after the burst.
		burstFailures = 12
	)
	g := startGatewayStore(t, be.open(t), burstCatalog, oa("oa-primary"))
	for range burstFailures {
		g.Fakes["oa-primary"].Script(fakeprovider.Behavior{Kind: fakeprovider.KindStatus, Status: 500})
	}

	prepaid := &burstKey{name: "prepaid", limitKind: "credit", capMicroUSD: creditMicro}
	prepaid.acctID = mustAdmin(t, g, 201, "POST", "/admin/v1/accounts", `{"name":"prepaid","settings":{"billing":"prepaid"}}`).Get("id").String()
	k := mustAdmin(t, g, 201, "POST", "/admin/v1/keys", `{"account_id":"`+prepaid.acctID+`","name":"burst"}`)
	prepaid.secret, prepaid.keyID = k.Get("secret").String(), k.Get("id").String()
	mustAdmin(t, g, 200, "POST", "/admin/v1/accounts/"+prepaid.acctID+"/credits", `{"amount_usd":`+creditUSD+`}`)

	budget := &burstKey{name: "budget", limitKind: "budget", capMicroUSD: budgetMicro}
	budget.acctID = mustAdmin(t, g, 201, "POST", "/admin/v1/accounts", `{"name":"unmetered"}`).Get("id").String()
	k = mustAdmin(t, g, 201, "POST", "/admin/v1/keys", `{"account_id":"`+budget.acctID+`","name":"capped",`+
		`"settings":{"limits":{"budget_usd":`+budgetUSD+`,"budget_period":"total"}}}`)
	budget.secret, budget.keyID = k.Get("secret").String(), k.Get("id").String()
	keys := []*burstKey{prepaid, budget}
	for _, bk := range keys {
		bk.costByRequestID = map[string]int64{}
		bk.reserveByRequestID = map[string]int64{}
		bk.minObservedBalance = 1 << 62
	}

	// Poll the prepaid account's stored balance for the whole burst (each read flushes the
	// queued settles, so it also races the ledger writer against the requests).
	stopPoll, pollDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(pollDone)
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stopPoll:
				return
			case <-tick.C:
			}
			resp, b := adminDoTry(g, "GET", "/admin/v1/accounts/"+prepaid.acctID)
			if resp != 200 {
				continue // reported by the final reads; this goroutine must not fail t
			}
			if bal, ok := microOfTry(gjson.GetBytes(b, "balance_usd").Raw); ok {
				prepaid.minObservedBalance = min(prepaid.minObservedBalance, bal)
				prepaid.observedBalanceCount++
			}
		}
	}()

	outs := make([]burstOutcome, n)
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			key := i % 2 // chat and messages for both keys: burstPost picks the surface from i/2 parity
			o := burstPost(g.URL, keys[key].secret, i/2, (i/4)%2 == 0)
			o.key = key
			outs[i] = o
		})
	}
	wg.Wait()
	close(stopPoll)
	<-pollDone
	// A request refused while others held reserves could have been served once they settled
	// below them. With nothing in flight, one more request per key (every request of the burst
	// has the same reserve: same input estimate, same max_tokens) is refused exactly when what
	// is left is below a reserve: send them until one is, so that the check below is exact.
	for key, bk := range keys {
		for i := 0; ; i++ {
			o := burstPost(g.URL, bk.secret, i, false)
			o.key = key
			outs = append(outs, o)
			if (o.status != 200 && o.status != 502) || i == 20 {
				break
			}
		}
	}

	// The audit record of a request is queued after its settle is queued, so once every record
	// is found, every settle is in the ledger writer's queue (and the ledger read flushes it).
	for i, o := range outs {
		bk := keys[o.key]
		if o.err != nil {
			t.Errorf("request %d: %v", i, o.err)
			continue
		}
		rid := o.hdr.Get("X-Request-Id")
		rec := g.generation(t, rid)
		if rec.Account != bk.acctID {
			t.Errorf("request %s: audit account %q, want %q", rid, rec.Account, bk.acctID)
		}
		switch o.status {
		case 200:
			bk.served++
			if len(rec.Attempts) != 1 {
				t.Errorf("served request %s: %d attempts", rid, len(rec.Attempts))
				continue
			}
			a := rec.Attempts[0]
			tk := a.Tokens
			if a.UsageProvenance != "observed" || tk.Input == 0 || tk.Output != 3 || tk.Cached != 0 || tk.CacheWrite != 0 {
				t.Errorf("served request %s: usage %+v (%s); want the provider's, 3 output tokens", rid, tk, a.UsageProvenance)
			}
			cost := admission.MicroUSD(a.CostUSD)
			if want := tk.Input*1 + tk.Output*100; cost != want {
				t.Errorf("served request %s: cost %d micro-USD, want %d (tokens %+v at the model price)", rid, cost, want, tk)
			}
			reserve := admission.MicroUSD(a.ReservedMaxUSD)
			if reserve < cost {
				t.Errorf("served request %s: reserve %d below its cost %d", rid, reserve, cost)
			}
			bk.chargedMicroUSD += cost
			bk.maxReserveMicroUSD = max(bk.maxReserveMicroUSD, reserve)
			bk.costByRequestID[rid] = cost
			bk.reserveByRequestID[rid] = reserve
		case 502:
			bk.failed++
			if len(rec.Attempts) != 1 || rec.ErrorCode != "upstream_error" {
				t.Errorf("failed request %s: %q with %d attempts; want upstream_error after 1", rid, rec.ErrorCode, len(rec.Attempts))
				continue
			}
			if a := rec.Attempts[0]; a.CostUSD != 0 || a.ReservedMaxUSD <= 0 {
				t.Errorf("failed request %s: cost %v, reserve %v; want 0 and a reserve", rid, a.CostUSD, a.ReservedMaxUSD)
			}
			bk.reserveByRequestID[rid] = admission.MicroUSD(rec.Attempts[0].ReservedMaxUSD)
		case 402:
			bk.refused++
			if errorType(o.body) != "insufficient_credit" || o.hdr.Get("X-Switchyard-Error-Code") != "insufficient_credit" ||
				o.hdr.Get("X-Switchyard-Limit-Kind") != bk.limitKind || o.hdr.Get("X-Switchyard-Attempts") != "0" {
				t.Errorf("%s refusal %s: limit-kind %q attempts %q body %s; want insufficient_credit, %s, 0",
					bk.name, rid, o.hdr.Get("X-Switchyard-Limit-Kind"), o.hdr.Get("X-Switchyard-Attempts"), o.body, bk.limitKind)
			}
			if rec.Status != 402 || rec.ErrorCode != "insufficient_credit" || len(rec.Attempts) != 0 {
				t.Errorf("%s refusal %s: audit status %d %q with %d attempts", bk.name, rid, rec.Status, rec.ErrorCode, len(rec.Attempts))
			}
		default:
			t.Errorf("%s request %s: status %d %s", bk.name, rid, o.status, o.body)
		}
	}

	// R-BILL-1: refusals reached no provider; R-BILL-2: what was billed is what the provider
	// reported, by the fake's usage formula over the requests it answered, and the requests
	// it failed billed nothing.
	var providerMicroUSD int64
	answered, failed := 0, 0
	for _, r := range g.Fakes["oa-primary"].Requests() {
		if r.Kind != fakeprovider.KindOK {
			failed++
			continue
		}
		answered++
		providerMicroUSD += int64(len(r.Body)+3)/4*1 + 3*100
	}
	if answered != prepaid.served+budget.served || failed != burstFailures || prepaid.failed+budget.failed != burstFailures {
		t.Errorf("the provider answered %d requests and failed %d; %d were served and %d failed (%d failures scripted): "+
			"a refusal reached it, or a serve or failure did not", answered, failed, prepaid.served+budget.served,
			prepaid.failed+budget.failed, burstFailures)
	}
	if sum := prepaid.chargedMicroUSD + budget.chargedMicroUSD; sum != providerMicroUSD {
		t.Errorf("audited costs sum to %d micro-USD; the provider's reported usage prices at %d", sum, providerMicroUSD)
	}

	for _, bk := range keys {
		t.Logf("%s (%s): served %d, refused %d, failed %d, charged %d of %d micro-USD (max reserve %d)",
			bk.name, be.name, bk.served, bk.refused, bk.failed, bk.chargedMicroUSD, bk.capMicroUSD, bk.maxReserveMicroUSD)
		if bk.served == 0 || bk.refused == 0 {
			t.Fatalf("%s: served %d, refused %d: the burst did not exhaust it", bk.name, bk.served, bk.refused)
		}
		// R-BILL-1: no overspend beyond one reserve; and, the last request having been refused
		// with nothing in flight, what is left is less than a reserve.
		if bk.chargedMicroUSD > bk.capMicroUSD+bk.maxReserveMicroUSD {
			t.Errorf("%s overspent: %d micro-USD settled against %d (one reserve is %d)",
				bk.name, bk.chargedMicroUSD, bk.capMicroUSD, bk.maxReserveMicroUSD)
		}
		if left := bk.capMicroUSD - bk.chargedMicroUSD; left >= bk.maxReserveMicroUSD {
			t.Errorf("%s: %d micro-USD left, at least a reserve (%d), yet %d requests were refused", bk.name, left, bk.maxReserveMicroUSD, bk.refused)
		}
		checkLedger(t, g, bk)
	}
	if prepaid.observedBalanceCount > 0 && prepaid.minObservedBalance < -prepaid.maxReserveMicroUSD {
		t.Errorf("prepaid balance went down to %d micro-USD during the burst (one reserve is %d)",
			prepaid.minObservedBalance, prepaid.maxReserveMicroUSD)
	}
	t.Logf("prepaid balance polled %d times during the burst, lowest %d micro-USD", prepaid.observedBalanceCount, prepaid.minObservedBalance)

	// R-BILL-4 on the admission side: the key's budget counter spent exactly what was billed and
	// holds nothing once every request is over.
	u, err := g.Admission.Usage(t.Context(), admission.Layer{Scope: admission.ScopeKey, ID: budget.keyID, Limits: admission.Limits{BudgetPeriod: admission.PeriodTotal}})
	if err != nil {
		t.Fatal(err)
	}
	if u.SpentMicroUSD != budget.chargedMicroUSD || u.ReservedMicroUSD != 0 || u.InFlight != 0 {
		t.Errorf("budget key's admission usage %+v; its audited costs sum to %d micro-USD", u, budget.chargedMicroUSD)
	}
}

// checkLedger verifies R-BILL-4 for one key's account through the admin API: one settle entry
// per served request, each of that request's audited cost; credits minus settles is the
// balance, in the ledger answer and on the account. And R-BILL-1: one reserve entry per
// admitted request (served or failed), of its audited reserve, ended by exactly one later
// settle (served) or release of the whole reserve (failed).
func checkLedger(t *testing.T, g *gateway, bk *burstKey) {
	t.Helper()
	ledger := mustAdmin(t, g, 200, "GET", "/admin/v1/accounts/"+bk.acctID+"/ledger?limit=10000", "")
	var credits, settles int64
	seen := map[string]bool{}
	// The entries of each request id by kind, as (position in the answer, newest first; entry).
	type pos struct {
		i int
		e gjson.Result
	}
	byKind := map[string]map[string][]pos{"reserve": {}, "settle": {}, "release": {}}
	for i, e := range ledger.Get("entries").Array() {
		micro := e.Get("cost_micro_usd").Int()
		if got := microOf(t, e.Get("cost_usd").Raw); got != micro {
			t.Errorf("%s ledger entry %s: cost_usd is %d micro-USD, cost_micro_usd %d", bk.name, e.Raw, got, micro)
		}
		kind, rid := e.Get("kind").String(), e.Get("request_id").String()
		if m, ok := byKind[kind]; ok {
			m[rid] = append(m[rid], pos{i, e})
			if e.Get("key_id").String() != bk.keyID {
				t.Errorf("%s ledger entry %s; key %s", bk.name, e.Raw, bk.keyID)
			}
		}
		switch kind {
		case "credit":
			credits += micro
		case "settle":
			settles += micro
			want, ok := bk.costByRequestID[rid]
			switch {
			case !ok:
				t.Errorf("%s ledger settles %s, not a served request of this key", bk.name, rid)
			case seen[rid]:
				t.Errorf("%s ledger settles %s twice", bk.name, rid)
			case micro != want:
				t.Errorf("%s ledger entry %s; audited cost %d micro-USD", bk.name, e.Raw, want)
			}
			seen[rid] = true
		case "reserve", "release":
		default:
			t.Errorf("%s ledger entry of kind %q: %s", bk.name, e.Get("kind").String(), e.Raw)
		}
	}
	if len(seen) != bk.served || settles != bk.chargedMicroUSD {
		t.Errorf("%s ledger: %d settles summing to %d micro-USD; %d requests served, audited costs %d",
			bk.name, len(seen), settles, bk.served, bk.chargedMicroUSD)
	}
	// Every reserve is of an admitted request and ended exactly once, after it; no end lacks
	// its reserve.
	for rid, rs := range byKind["reserve"] {
		want, ok := bk.reserveByRequestID[rid]
		if !ok || len(rs) != 1 || rs[0].e.Get("cost_micro_usd").Int() != want {
			t.Errorf("%s ledger: %d reserves of %s; want one of its audited reserve %d micro-USD (admitted: %t)", bk.name, len(rs), rid, want, ok)
			continue
		}
		st, rel := byKind["settle"][rid], byKind["release"][rid]
		_, served := bk.costByRequestID[rid]
		var end pos
		switch {
		case served && len(st) == 1 && len(rel) == 0:
			end = st[0]
		case !served && len(st) == 0 && len(rel) == 1:
			end = rel[0]
			if rel[0].e.Get("cost_micro_usd").Int() != want {
				t.Errorf("%s ledger: release %s does not return the reserve %d", bk.name, rel[0].e.Raw, want)
			}
		default:
			t.Errorf("%s ledger: request %s (served %t) has %d settles and %d releases; want exactly one of the right kind",
				bk.name, rid, served, len(st), len(rel))
			continue
		}
		if end.i >= rs[0].i || end.e.Get("at").Time().Before(rs[0].e.Get("at").Time()) {
			t.Errorf("%s ledger: %s is not after its reserve %s", bk.name, end.e.Raw, rs[0].e.Raw)
		}
	}
	// An end without its reserve took the reserve's place (written before the reserve reached
	// the store: one row, issue 27 item 2): it is of an admitted request, and a release returns
	// the whole reserve.
	inPlace := 0
	for _, kind := range []string{"settle", "release"} {
		for rid, es := range byKind[kind] {
			if byKind["reserve"][rid] != nil {
				continue
			}
			want, ok := bk.reserveByRequestID[rid]
			switch {
			case !ok:
				t.Errorf("%s ledger: a %s of %s, not an admitted request", bk.name, kind, rid)
			case kind == "release" && es[0].e.Get("cost_micro_usd").Int() != want:
				t.Errorf("%s ledger: release %s in its reserve's place does not return the reserve %d", bk.name, es[0].e.Raw, want)
			case kind == "release" && len(byKind["settle"][rid]) > 0:
				t.Errorf("%s ledger: request %s settled and released", bk.name, rid)
			}
			inPlace++
		}
	}
	if n := len(byKind["reserve"]); n+inPlace != len(bk.reserveByRequestID) || len(byKind["release"]) != bk.failed {
		t.Errorf("%s ledger: %d reserves, %d ends in their reserve's place and %d releases; %d requests admitted, %d failed",
			bk.name, n, inPlace, len(byKind["release"]), len(bk.reserveByRequestID), bk.failed)
	}
	wantCredits := int64(0)
	if bk.limitKind == "credit" {
		wantCredits = bk.capMicroUSD
	}
	if credits != wantCredits {
		t.Errorf("%s ledger credits %d micro-USD, want %d", bk.name, credits, wantCredits)
	}
	acct := mustAdmin(t, g, 200, "GET", "/admin/v1/accounts/"+bk.acctID, "")
	for what, raw := range map[string]string{"ledger": ledger.Get("balance_usd").Raw, "account": acct.Get("balance_usd").Raw} {
		if got := microOf(t, raw); got != credits-settles {
			t.Errorf("%s %s balance %d micro-USD; credits %d minus settles %d is %d", bk.name, what, got, credits, settles, credits-settles)
		}
	}
	if bk.limitKind == "credit" {
		if bal := credits - settles; bal < -bk.maxReserveMicroUSD {
			t.Errorf("%s balance %d micro-USD, below minus one reserve (%d)", bk.name, bal, bk.maxReserveMicroUSD)
		}
	}
}

// adminDoTry is an admin GET for goroutines other than the test's: no failure, status 0 on a
// transport error.
func adminDoTry(g *gateway, method, path string) (int, []byte) {
	req, err := http.NewRequest(method, g.URL+path, nil)
	if err != nil {
		return 0, nil
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil
	}
	return resp.StatusCode, b
}

// microOfTry is microOf that reports failure instead of failing a test.
func microOfTry(raw string) (int64, bool) {
	neg := strings.HasPrefix(raw, "-")
	whole, frac, _ := strings.Cut(strings.TrimPrefix(raw, "-"), ".")
	if len(frac) > 6 {
		return 0, false
	}
	w, err1 := strconv.ParseInt(whole, 10, 64)
	f, err2 := strconv.ParseInt((frac + "000000")[:6], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	if neg {
		return -(w*1_000_000 + f), true
	}
	return w*1_000_000 + f, true
}
