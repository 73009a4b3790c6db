package circuit

import (
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of R-CIRCUIT-1, applied by [NewBreaker] and [NewSet] when a [Settings] field is zero
// or negative.
const (
	DefaultFailures = 2
	DefaultCooldown = 30 * time.Second
)

// ErrOpen is returned (possibly wrapped in an [*OpenError]) when a circuit refuses a request:
// it is open and cooling down, or half-open with its one probe already in flight.
var ErrOpen = errors.New("circuit: open")

// Settings configures a [Breaker] (config routing.circuit, R-CIRCUIT-7).
type Settings struct {
	// Failures is the number of consecutive counted failures that opens a closed circuit.
	// Zero or negative means DefaultFailures (2).
	Failures int
	// Cooldown is how long an open circuit refuses requests before it turns half-open and
	// admits one probe. Zero or negative means DefaultCooldown (30s).
	Cooldown time.Duration
	// Now is the clock. Nil means time.Now. It is called with the breaker's lock held, so it
	// must not call back into the breaker.
	Now func() time.Time
}

func (s Settings) withDefaults() Settings {
	if s.Failures <= 0 {
		s.Failures = DefaultFailures
	}
	if s.Cooldown <= 0 {
		s.Cooldown = DefaultCooldown
	}
	if s.Now == nil {
		s.Now = time.Now
	}
	return s
}

// State is the state of a circuit. The zero value is Closed.
type State int

// The states of a circuit.
const (
	// Closed admits every request and counts consecutive failures.
	Closed State = iota
	// Open refuses every request until its cooldown ends.
	Open
	// HalfOpen admits exactly one probe; its outcome closes or reopens the circuit.
	HalfOpen
)

// String returns "closed", "open" or "half-open".
func (s State) String() string {
	switch s {
	case Closed:
		return "closed"
	case Open:
		return "open"
	case HalfOpen:
		return "half-open"
	}
	return "State(" + strconv.Itoa(int(s)) + ")"
}

// Outcome is what an admitted request reports to its breaker. The zero value is Neutral, so a
// forgotten outcome never closes a circuit.
type Outcome int

// The outcomes of an admitted request.
const (
	// Neutral counts neither way (a caller fault or a cancellation, R-CIRCUIT-3, R-FAIL-11). A
	// Neutral probe frees the half-open probe slot without a transition.
	Neutral Outcome = iota
	// Success resets the consecutive-failure count; a successful probe closes the circuit.
	Success
	// Failure is a counted failure; a failed probe reopens the circuit with a new cooldown.
	Failure
)

// String returns "neutral", "success" or "failure".
func (o Outcome) String() string {
	switch o {
	case Neutral:
		return "neutral"
	case Success:
		return "success"
	case Failure:
		return "failure"
	}
	return "Outcome(" + strconv.Itoa(int(o)) + ")"
}

// Token is the admission handed out by [Breaker.Allow] and given back to [Breaker.Report]. It is
// a small value; the zero Token belongs to no generation and reporting it does nothing.
type Token struct {
	gen   uint64
	probe bool
}

// Probe reports whether the token is the single half-open probe of its breaker (R-CIRCUIT-2).
func (t Token) Probe() bool { return t.probe }

// Breaker is one circuit (R-CIRCUIT-1, R-CIRCUIT-2). It is safe for concurrent use. The zero
// value is not usable; use [NewBreaker].
type Breaker struct {
	failures int
	cooldown time.Duration
	now      func() time.Time

	// notClosed mirrors state != Closed for blocked's lock-free fast path (routing asks every
	// route's circuits on every request); written under mu by toLocked.
	notClosed atomic.Bool
	// counter, when set (a Set's breaker), counts the Set's breakers that are not closed; nil
	// once the Set forgot the breaker. Guarded by mu.
	counter *atomic.Int64

	mu          sync.Mutex // guards the following fields
	state       State      // stored state; Open past openUntil is half-open (see current)
	gen         uint64     // changes on every transition and probe release; starts at 1
	consecutive int        // counted failures in a row while Closed
	// hangModel is the model whose hangs alone make up the current run ("" when the run is
	// empty or mixed); mixed is set once the run holds anything else (R-CIRCUIT-5, see report).
	hangModel string
	mixed     bool
	openUntil time.Time // end of the cooldown while Open
	probing   bool      // HalfOpen: the probe has been handed out and has not reported
}

// NewBreaker returns a closed breaker with s's settings (defaults filled in).
func NewBreaker(s Settings) *Breaker {
	s = s.withDefaults()
	return &Breaker{failures: s.Failures, cooldown: s.Cooldown, now: s.Now, gen: 1}
}

// Allow admits a request. A closed circuit admits everyone. An open circuit refuses with ErrOpen
// until its cooldown ends; then it is half-open and exactly one caller receives the probe token
// (Token.Probe is true) while every other caller is refused with ErrOpen until the probe
// reports. Every admitted request must be reported once with [Breaker.Report].
func (b *Breaker) Allow() (Token, error) {
	t, _, ok := b.allow()
	if !ok {
		return Token{}, ErrOpen
	}
	return t, nil
}

// allow is Allow that also returns, when refused, the end of the cooldown (zero when the refusal
// is a half-open probe in flight).
func (b *Breaker) allow() (Token, time.Time, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == Closed { // the hot path reads no clock
		return Token{gen: b.gen}, time.Time{}, true
	}
	if b.state == Open {
		if b.now().Before(b.openUntil) {
			return Token{}, b.openUntil, false
		}
		b.toLocked(HalfOpen)
	}
	if b.probing {
		return Token{}, time.Time{}, false
	}
	b.probing = true
	return Token{gen: b.gen, probe: true}, time.Time{}, true
}

// Report records the outcome of a request admitted with t. An outcome from an earlier
// generation (the circuit has moved on since t was issued) is ignored. While Closed, a Failure
// counts toward Settings.Failures and a Success resets the count. The probe's Success closes the
// circuit, its Failure reopens it for a new cooldown starting now, and its Neutral frees the probe
// slot so the next Allow may probe.
func (b *Breaker) Report(t Token, o Outcome) { b.report(t, o, "") }

// report is Report with the model of a hang: a Failure with hangModel != "" is a hang of that
// model. While Closed the run it counts in opens the circuit only once it is mixed (R-CIRCUIT-5,
// seed 000): a run made only of hangs of one model never opens a deployment's circuit (that
// model's own (deployment, model) circuit pauses it), while a run holding a non-hang failure or
// hangs of two models opens it at Settings.Failures. A (deployment, model) breaker is given
// plain Failures and so counts every hang.
func (b *Breaker) report(t Token, o Outcome, hangModel string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if t.gen != b.gen {
		return
	}
	switch b.state {
	case Closed:
		switch o {
		case Success:
			b.consecutive, b.hangModel, b.mixed = 0, "", false
		case Failure:
			switch {
			case hangModel == "":
				b.mixed = true
			case b.consecutive == 0:
				b.hangModel = hangModel
			case hangModel != b.hangModel:
				b.mixed = true
			}
			b.consecutive++
			if b.consecutive >= b.failures && b.mixed {
				b.toLocked(Open)
			}
		}
	case HalfOpen:
		// The only token of a half-open generation is its probe: the generation changed when
		// the circuit turned half-open, and Allow issues nothing else until the probe reports.
		switch o {
		case Success:
			b.toLocked(Closed)
		case Failure:
			b.toLocked(Open)
		default:
			// Free the slot and retire t, so a duplicate report cannot free a later probe's slot.
			b.probing = false
			b.gen++
		}
	}
}

// toLocked moves to state s and starts a new generation. b.mu must be held.
func (b *Breaker) toLocked(s State) {
	if was := b.state != Closed; was != (s != Closed) {
		b.notClosed.Store(s != Closed)
		if b.counter != nil {
			if was {
				b.counter.Add(-1)
			} else {
				b.counter.Add(1)
			}
		}
	}
	b.state = s
	b.gen++
	b.consecutive, b.hangModel, b.mixed = 0, "", false
	b.probing = false
	b.openUntil = time.Time{}
	if s == Open {
		b.openUntil = b.now().Add(b.cooldown)
	}
}

// State returns the current state. An open circuit whose cooldown has ended reads as HalfOpen;
// State changes nothing, the transition itself happens in the next Allow.
func (b *Breaker) State() State {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == Open && !b.now().Before(b.openUntil) {
		return HalfOpen
	}
	return b.state
}

// OpenUntil returns the end of the current cooldown, or the zero time when the circuit is not
// open (closed, half-open, or open with the cooldown already over).
func (b *Breaker) OpenUntil() time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == Open && b.now().Before(b.openUntil) {
		return b.openUntil
	}
	return time.Time{}
}

// blocked reports whether Allow would refuse now, without consuming the probe: open and cooling
// down, or half-open with the probe in flight.
func (b *Breaker) blocked() bool {
	if !b.notClosed.Load() { // closed: nothing to lock (a transition racing this read is seen by the next one)
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch b.state {
	case Open:
		return b.now().Before(b.openUntil)
	case HalfOpen:
		return b.probing
	}
	return false
}

// snapshot returns the state and the cooldown end as State and OpenUntil would, under one lock.
func (b *Breaker) snapshot() (State, time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == Open {
		if b.now().Before(b.openUntil) {
			return Open, b.openUntil
		}
		return HalfOpen, time.Time{}
	}
	return b.state, time.Time{}
}
