package circuit

import (
	"cmp"
	"errors"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchyard-gw/switchyard/internal/failure"
)

// Bounds of the provider pause that follows an upstream 429 (R-CIRCUIT-4).
const (
	MinPause = time.Second
	MaxPause = 60 * time.Second
)

// ErrPaused is returned (wrapped in a [*PausedError]) when the provider of a deployment is paused
// after an upstream 429 (R-CIRCUIT-4).
var ErrPaused = errors.New("circuit: provider paused")

// PausedError is the refusal of [Set.Admit] while a provider is paused. errors.Is(err, ErrPaused)
// holds for it.
type PausedError struct {
	Provider string
	// Until is when the pause ends; Until minus now is the retry-after.
	Until time.Time
}

// Error implements error.
func (e *PausedError) Error() string { return ErrPaused.Error() + ": " + strconv.Quote(e.Provider) }

// Unwrap returns ErrPaused.
func (e *PausedError) Unwrap() error { return ErrPaused }

// OpenError is the refusal of [Set.Admit] by a circuit. errors.Is(err, ErrOpen) holds for it.
type OpenError struct {
	Deployment string
	// Model is the model of the refusing (deployment, model) circuit; "" when the deployment
	// circuit refused.
	Model string
	// Until is the end of the cooldown; zero when the circuit is half-open with its probe in
	// flight.
	Until time.Time
}

// Error implements error.
func (e *OpenError) Error() string {
	if e.Model == "" {
		return ErrOpen.Error() + ": deployment " + strconv.Quote(e.Deployment)
	}
	return ErrOpen.Error() + ": deployment " + strconv.Quote(e.Deployment) + " model " + strconv.Quote(e.Model)
}

// Unwrap returns ErrOpen.
func (e *OpenError) Unwrap() error { return ErrOpen }

// StateInfo is one circuit in a [Set.States] snapshot.
type StateInfo struct {
	Deployment string
	// Model is "" for a deployment circuit and the model id for a (deployment, model) circuit.
	Model string
	State State
	// OpenUntil is the end of the cooldown; zero unless State is Open.
	OpenUntil time.Time
}

type routeKey struct{ deployment, model string }

// pause is a provider's admission pause. until is stored as an offset from the Set's epoch so
// reads are lock-free and keep the clock's monotonic reading.
type pause struct {
	until atomic.Int64 // nanoseconds since Set.epoch; the pause is active while now is before it
}

// Set holds every circuit of a gateway: one [Breaker] per deployment, one per (deployment,
// model) for hangs (R-CIRCUIT-5), and the provider pauses (R-CIRCUIT-4). Breakers are created
// lazily on first use and removed only by [Set.Forget], so keys must come from the catalog, never from caller
// input. A Set is safe for concurrent use; the zero value is not usable, use [NewSet].
type Set struct {
	deployment Settings
	model      Settings
	now        func() time.Time
	epoch      time.Time // origin of pause offsets

	// onPause, when set, hears every pause this Set starts after an upstream 429 (not those
	// applied with PauseUntil), so that other replicas can skip the provider too.
	onPause atomic.Pointer[func(provider string, until time.Time)]

	// notClosed counts the breakers of the maps that are not closed, and pauseEnd is the
	// latest end of any pause (offset from epoch; 0: never paused): while no breaker is open
	// and no pause is in force, Open answers without a lock or a map lookup.
	notClosed atomic.Int64
	pauseEnd  atomic.Int64

	mu          sync.RWMutex // guards the following maps (not the values they point to)
	deployments map[string]*Breaker
	models      map[routeKey]*Breaker
	pauses      map[string]*pause
}

// NewSet returns an empty Set. deployment configures the deployment circuits and model the
// (deployment, model) hang circuits; zero fields take the defaults of [Settings]. Provider
// pauses use deployment.Now (model.Now when that is nil, else time.Now).
func NewSet(deployment, model Settings) *Set {
	now := deployment.Now
	if now == nil {
		now = model.Now
	}
	deployment, model = deployment.withDefaults(), model.withDefaults()
	if now == nil {
		now = time.Now
	}
	return &Set{
		deployment:  deployment,
		model:       model,
		now:         now,
		epoch:       now(),
		deployments: make(map[string]*Breaker),
		models:      make(map[routeKey]*Breaker),
		pauses:      make(map[string]*pause),
	}
}

// Ticket is one admission by [Set.Admit]. It is a value; [Ticket.Done] must be called exactly
// once. The zero Ticket's Done does nothing.
type Ticket struct {
	set        *Set
	provider   string
	modelID    string // the model of the attempt, named in a hang's report to the deployment
	deployment *Breaker
	depToken   Token
	model      *Breaker
	modelToken Token
}

// Admit checks, in order, the provider pause, the deployment circuit and the (deployment, model)
// circuit, and admits the attempt. It returns a [*PausedError] (errors.Is ErrPaused) when the
// provider is paused and an [*OpenError] (errors.Is ErrOpen) naming the refusing circuit. A
// half-open circuit hands its one probe to the caller that gets here first (R-CIRCUIT-2); a probe
// slot taken on the deployment circuit is given back when the model circuit refuses. Admit on a
// closed circuit does not allocate.
func (s *Set) Admit(provider, deployment, model string) (Ticket, error) {
	p, db, mb := s.lookup(provider, deployment, model)
	if p != nil {
		if until, ok := s.paused(p); ok {
			return Ticket{}, &PausedError{Provider: provider, Until: until}
		}
	}
	dt, until, ok := db.allow()
	if !ok {
		return Ticket{}, &OpenError{Deployment: deployment, Until: until}
	}
	mt, until, ok := mb.allow()
	if !ok {
		db.Report(dt, Neutral)
		return Ticket{}, &OpenError{Deployment: deployment, Model: model, Until: until}
	}
	return Ticket{set: s, provider: provider, modelID: model, deployment: db, depToken: dt, model: mb, modelToken: mt}, nil
}

// Done reports the outcome of the admitted attempt; err is its final error, nil for success.
//
//   - nil: Success on both circuits.
//   - A class whose CountsOnCircuit is false, including Cancelled (R-CIRCUIT-3, R-FAIL-11):
//     Neutral on both; a probe slot is freed without a transition.
//   - A counted class that is not a hang: Failure on the deployment circuit, Neutral on the
//     (deployment, model) circuit, so it neither opens nor resets the hang count.
//   - A hang (failure.Error.Hang): Failure on the (deployment, model) circuit and a hang of that
//     model on the deployment circuit (R-CIRCUIT-5, seed 000 "counts on the deployment's circuit
//     and on a second circuit for that model"). One rule decides which opens: a run of failures
//     made only of one model's hangs opens that model's (deployment, model) circuit and never
//     the deployment's, so its other models keep answering; any mixed run (a hang and a 5xx, or
//     hangs of two models) opens the deployment's at Settings.Failures.
//   - A Hang whose class is Cancelled (the headers deadline passed, then the caller left) counts
//     as a hang: the provider failed first (R-CIRCUIT-5 "ends by deadline or by cancellation").
//   - UpstreamRateLimited also pauses the provider for failure.Error.RetryAfter clamped to
//     [MinPause, MaxPause], MinPause when absent (R-CIRCUIT-4). A pause never shortens a longer
//     pause already in force.
func (t Ticket) Done(err error) {
	if t.set == nil {
		return
	}
	fe := failure.From(err)
	if fe == nil { // err == nil, or a nil *failure.Error in a non-nil interface
		t.deployment.Report(t.depToken, Success)
		t.model.Report(t.modelToken, Success)
		return
	}
	counted := fe.Class.CountsOnCircuit() || (fe.Hang && fe.Class == failure.Cancelled)
	if !counted {
		t.deployment.Report(t.depToken, Neutral)
		t.model.Report(t.modelToken, Neutral)
		return
	}
	if fe.Hang {
		// A hang counts on both circuits; the deployment's opens only on a mixed run (see
		// Breaker.report), so one model's hangs alone pause that model, not the deployment.
		t.deployment.report(t.depToken, Failure, t.modelID)
		t.model.Report(t.modelToken, Failure)
	} else {
		t.deployment.Report(t.depToken, Failure)
		t.model.Report(t.modelToken, Neutral)
	}
	if fe.Class == failure.UpstreamRateLimited {
		t.set.pause(t.provider, fe.RetryAfter)
	}
}

// Open reports, without consuming a probe, whether routing must drop the route now: its provider
// is paused, or its deployment or (deployment, model) circuit is open and cooling down, or
// half-open with the probe in flight. A half-open circuit whose probe is still available is not
// open. Circuits never admitted are closed.
func (s *Set) Open(provider, deployment, model string) bool {
	if s.notClosed.Load() == 0 {
		if end := s.pauseEnd.Load(); end == 0 || int64(s.now().Sub(s.epoch)) >= end {
			return false
		}
	}
	s.mu.RLock()
	p := s.pauses[provider]
	db := s.deployments[deployment]
	mb := s.models[routeKey{deployment, model}]
	s.mu.RUnlock()
	if p != nil {
		if _, ok := s.paused(p); ok {
			return true
		}
	}
	return (db != nil && db.blocked()) || (mb != nil && mb.blocked())
}

// States returns a snapshot of every circuit created so far, sorted by deployment then model
// (the deployment circuit, Model "", first). Provider pauses are not included.
func (s *Set) States() []StateInfo {
	s.mu.RLock()
	out := make([]StateInfo, 0, len(s.deployments)+len(s.models))
	bs := make([]*Breaker, 0, cap(out))
	for d, b := range s.deployments {
		out = append(out, StateInfo{Deployment: d})
		bs = append(bs, b)
	}
	for k, b := range s.models {
		out = append(out, StateInfo{Deployment: k.deployment, Model: k.model})
		bs = append(bs, b)
	}
	s.mu.RUnlock()
	for i, b := range bs {
		out[i].State, out[i].OpenUntil = b.snapshot()
	}
	slices.SortFunc(out, func(a, b StateInfo) int {
		return cmp.Or(cmp.Compare(a.Deployment, b.Deployment), cmp.Compare(a.Model, b.Model))
	})
	return out
}

// Forget removes the deployment's circuit and its (deployment, model) circuits, so that the
// next attempt on it starts closed: a configuration reload calls it for a deployment whose
// settings changed or that was removed. An attempt admitted before finishes on the forgotten
// breakers and changes nothing. Provider pauses are kept (they are the provider's).
func (s *Set) Forget(deployment string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b := s.deployments[deployment]; b != nil {
		s.detach(b)
		delete(s.deployments, deployment)
	}
	for k, b := range s.models {
		if k.deployment == deployment {
			s.detach(b)
			delete(s.models, k)
		}
	}
}

// attach makes b, a new breaker of s, count in s.notClosed.
func (s *Set) attach(b *Breaker) *Breaker {
	b.counter = &s.notClosed
	return b
}

// detach stops b, a breaker s forgets, from counting in s.notClosed (it may still change: an
// attempt admitted before reports on it).
func (s *Set) detach(b *Breaker) {
	b.mu.Lock()
	if b.state != Closed {
		s.notClosed.Add(-1)
	}
	b.counter = nil
	b.mu.Unlock()
}

// lookup returns the provider's pause (nil when it was never paused) and the two breakers,
// creating missing breakers.
func (s *Set) lookup(provider, deployment, model string) (*pause, *Breaker, *Breaker) {
	key := routeKey{deployment, model}
	s.mu.RLock()
	p := s.pauses[provider]
	db := s.deployments[deployment]
	mb := s.models[key]
	s.mu.RUnlock()
	if db != nil && mb != nil {
		return p, db, mb
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if db = s.deployments[deployment]; db == nil {
		db = s.attach(NewBreaker(s.deployment))
		s.deployments[deployment] = db
	}
	if mb = s.models[key]; mb == nil {
		mb = s.attach(NewBreaker(s.model))
		s.models[key] = mb
	}
	return s.pauses[provider], db, mb
}

// paused reports whether p is in force now and, if so, when it ends.
func (s *Set) paused(p *pause) (time.Time, bool) {
	until := time.Duration(p.until.Load())
	if until == 0 {
		return time.Time{}, false
	}
	if s.now().Sub(s.epoch) >= until {
		return time.Time{}, false
	}
	return s.epoch.Add(until), true
}

// OnPause sets f to hear every provider pause this Set starts after an upstream 429, with its
// end (R-CIRCUIT-4 shared by replicas: the shared admission store publishes it). f is called on
// the request goroutine and must not block. Pauses applied with PauseUntil are not repeated.
func (s *Set) OnPause(f func(provider string, until time.Time)) { s.onPause.Store(&f) }

// PauseUntil pauses provider until until (another replica's pause), at most MaxPause from
// now, keeping a later end already in force. An end already past does nothing.
func (s *Set) PauseUntil(provider string, until time.Time) {
	d := min(until.Sub(s.now()), MaxPause)
	if d <= 0 {
		return
	}
	s.extend(provider, d)
}

// pause pauses provider for retryAfter clamped to [MinPause, MaxPause] from now, keeping a
// later end already in force, and tells the OnPause hook.
func (s *Set) pause(provider string, retryAfter time.Duration) {
	d := min(max(retryAfter, MinPause), MaxPause)
	s.extend(provider, d)
	if f := s.onPause.Load(); f != nil {
		(*f)(provider, s.now().Add(d))
	}
}

// extend pauses provider for d from now unless a later end is in force.
func (s *Set) extend(provider string, d time.Duration) {
	s.mu.RLock()
	p := s.pauses[provider]
	s.mu.RUnlock()
	if p == nil {
		s.mu.Lock()
		if p = s.pauses[provider]; p == nil {
			p = new(pause)
			s.pauses[provider] = p
		}
		s.mu.Unlock()
	}
	until := int64(s.now().Sub(s.epoch) + d)
	for {
		cur := s.pauseEnd.Load()
		if cur >= until || s.pauseEnd.CompareAndSwap(cur, until) {
			break
		}
	}
	for {
		cur := p.until.Load()
		if cur >= until || p.until.CompareAndSwap(cur, until) {
			return
		}
	}
}

// Blocked is Open with the reason: nil when routing may use the route now, else the error
// Admit would return (a [*PausedError], or an [*OpenError] naming the refusing circuit, its
// Until zero for a half-open circuit whose probe is in flight), without consuming a probe. For
// the audit's admission events of routes a plan drops (issue 11 item 5); it allocates only
// when it returns an error.
func (s *Set) Blocked(provider, deployment, model string) error {
	s.mu.RLock()
	p := s.pauses[provider]
	db := s.deployments[deployment]
	mb := s.models[routeKey{deployment, model}]
	s.mu.RUnlock()
	if p != nil {
		if until, ok := s.paused(p); ok {
			return &PausedError{Provider: provider, Until: until}
		}
	}
	if db != nil && db.blocked() {
		return &OpenError{Deployment: deployment, Until: db.OpenUntil()}
	}
	if mb != nil && mb.blocked() {
		return &OpenError{Deployment: deployment, Model: model, Until: mb.OpenUntil()}
	}
	return nil
}
