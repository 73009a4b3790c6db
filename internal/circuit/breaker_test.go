package circuit

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeClock is an injected clock; tests move it with Advance instead of sleeping.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

var epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func newClock() *fakeClock { return &fakeClock{now: epoch} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// describe renders a breaker as the event log expects it: "closed", "half-open" or
// "open until 30s" (offset from epoch).
func describe(b *Breaker) string {
	s := b.State()
	if s == Open {
		return fmt.Sprintf("open until %v", b.OpenUntil().Sub(epoch))
	}
	if !b.OpenUntil().IsZero() {
		return s.String() + " (OpenUntil not zero!)"
	}
	return s.String()
}

// TestBreaker runs event logs. Each line is "verb [arg] => want":
//
//	allow NAME  => ok | probe | refused   (Allow; the token is kept under NAME)
//	success|failure|neutral NAME => STATE (Report with the token NAME)
//	wait DURATION => STATE                (advance the clock)
//
// STATE is "closed", "half-open" or "open until D" where D is the cooldown end since the start.
func TestBreaker(t *testing.T) {
	tests := []struct {
		name, rule string
		log        string
	}{
		{"two failures in a row open", "R-CIRCUIT-1", `
			allow a => ok
			allow b => ok
			failure a => closed
			failure b => open until 0s+30s
			allow c => refused`},
		{"a success in between resets the count", "R-CIRCUIT-1", `
			allow a => ok
			allow b => ok
			allow c => ok
			failure a => closed
			success b => closed
			failure c => closed
			allow d => ok
			failure d => open until 0s+30s`},
		{"neutral outcomes neither count nor reset", "R-CIRCUIT-3", `
			allow a => ok
			allow b => ok
			allow c => ok
			failure a => closed
			neutral b => closed
			failure c => open until 0s+30s`},
		{"open refuses until the cooldown ends", "R-CIRCUIT-1", `
			allow a => ok
			allow b => ok
			failure a => closed
			failure b => open until 0s+30s
			wait 29s => open until 0s+30s
			allow c => refused
			wait 999ms => open until 0s+30s
			allow c => refused
			wait 1ms => half-open`},
		{"after the cooldown exactly one probe", "R-CIRCUIT-2", `
			allow a => ok
			allow b => ok
			failure a => closed
			failure b => open until 0s+30s
			wait 30s => half-open
			allow p => probe
			allow q => refused
			allow r => refused
			wait 1h => half-open
			allow s => refused`},
		{"probe success closes", "R-CIRCUIT-2", `
			allow a => ok
			allow b => ok
			failure a => closed
			failure b => open until 0s+30s
			wait 30s => half-open
			allow p => probe
			success p => closed
			allow c => ok
			allow d => ok
			failure c => closed
			failure d => open until 30s+30s`},
		{"probe failure reopens with a new cooldown", "R-CIRCUIT-2", `
			allow a => ok
			allow b => ok
			failure a => closed
			failure b => open until 0s+30s
			wait 40s => half-open
			allow p => probe
			wait 5s => half-open
			failure p => open until 45s+30s
			wait 29s => open until 45s+30s
			allow c => refused
			wait 1s => half-open
			allow q => probe`},
		{"neutral probe frees the slot without a transition", "R-CIRCUIT-2, R-FAIL-11", `
			allow a => ok
			allow b => ok
			failure a => closed
			failure b => open until 0s+30s
			wait 30s => half-open
			allow p => probe
			allow x => refused
			neutral p => half-open
			allow q => probe
			allow y => refused
			neutral p => half-open
			allow z => refused
			success q => closed`},
		{"stale closed-generation token does not move an open circuit", "R-CIRCUIT-2", `
			allow old => ok
			allow a => ok
			allow b => ok
			failure a => closed
			failure b => open until 0s+30s
			wait 10s => open until 0s+30s
			success old => open until 0s+30s
			failure old => open until 0s+30s
			wait 20s => half-open
			allow p => probe
			allow x => refused`},
		{"stale token does not move a half-open circuit", "R-CIRCUIT-2", `
			allow old => ok
			allow a => ok
			allow b => ok
			failure a => closed
			failure b => open until 0s+30s
			wait 30s => half-open
			allow p => probe
			success old => half-open
			failure old => half-open
			neutral old => half-open
			allow x => refused
			success p => closed`},
		{"stale token does not count on the next closed generation", "R-CIRCUIT-2", `
			allow old => ok
			allow a => ok
			allow b => ok
			failure a => closed
			failure b => open until 0s+30s
			wait 30s => half-open
			allow p => probe
			success p => closed
			failure old => closed
			allow c => ok
			failure c => closed
			success p => closed
			allow d => ok
			failure d => open until 30s+30s`},
		{"stale probe token does not move the next half-open generation", "R-CIRCUIT-2", `
			allow a => ok
			allow b => ok
			failure a => closed
			failure b => open until 0s+30s
			wait 30s => half-open
			allow p => probe
			failure p => open until 30s+30s
			wait 30s => half-open
			allow q => probe
			success p => half-open
			failure p => half-open
			allow x => refused
			failure q => open until 60s+30s`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := newClock()
			b := NewBreaker(Settings{Now: clk.Now})
			runLog(t, tt.rule, clk, b, tt.log)
		})
	}
}

func TestBreakerSettings(t *testing.T) {
	clk := newClock()
	b := NewBreaker(Settings{Failures: 3, Cooldown: 5 * time.Second, Now: clk.Now})
	runLog(t, "R-CIRCUIT-7", clk, b, `
		allow a => ok
		allow b => ok
		allow c => ok
		failure a => closed
		failure b => closed
		failure c => open until 0s+5s
		wait 5s => half-open`)
}

func runLog(t *testing.T, rule string, clk *fakeClock, b *Breaker, log string) {
	t.Helper()
	tokens := map[string]Token{}
	for i, line := range strings.Split(strings.TrimSpace(log), "\n") {
		line = strings.TrimSpace(line)
		cmd, want, ok := strings.Cut(line, " => ")
		if !ok {
			t.Fatalf("line %d: malformed %q", i+1, line)
		}
		verb, arg, _ := strings.Cut(cmd, " ")
		var got string
		switch verb {
		case "allow":
			tok, err := b.Allow()
			switch {
			case err != nil && !errors.Is(err, ErrOpen):
				got = "error " + err.Error()
			case err != nil:
				got = "refused"
			case tok.Probe():
				got = "probe"
			default:
				got = "ok"
			}
			if err == nil {
				tokens[arg] = tok
			}
		case "success", "failure", "neutral":
			tok, ok := tokens[arg]
			if !ok {
				t.Fatalf("line %d: unknown token %q", i+1, arg)
			}
			b.Report(tok, map[string]Outcome{"success": Success, "failure": Failure, "neutral": Neutral}[verb])
			got = describe(b)
		case "wait":
			d, err := time.ParseDuration(arg)
			if err != nil {
				t.Fatalf("line %d: %v", i+1, err)
			}
			clk.Advance(d)
			got = describe(b)
		default:
			t.Fatalf("line %d: unknown verb %q", i+1, verb)
		}
		if strings.HasPrefix(want, "open until ") {
			want = "open until " + sumDurations(t, strings.TrimPrefix(want, "open until ")).String()
		}
		if got != want {
			t.Fatalf("%s: line %d %q: got %q, want %q", rule, i+1, cmd, got, want)
		}
	}
}

// sumDurations parses "45s+30s" into 75s.
func sumDurations(t *testing.T, s string) time.Duration {
	var total time.Duration
	for part := range strings.SplitSeq(s, "+") {
		d, err := time.ParseDuration(part)
		if err != nil {
			t.Fatalf("bad duration %q: %v", s, err)
		}
		total += d
	}
	return total
}

func TestZeroTokenIsIgnored(t *testing.T) {
	b := NewBreaker(Settings{Failures: 1})
	b.Report(Token{}, Failure)
	if got := b.State(); got != Closed {
		t.Fatalf("zero Token moved the breaker to %v", got)
	}
}

// TestOneProbeUnderConcurrency: 20 callers arrive when the circuit turns half-open; exactly one
// becomes the probe (R-CIRCUIT-2). Run with -race.
func TestOneProbeUnderConcurrency(t *testing.T) {
	const rounds, callers = 200, 20
	for round := range rounds {
		clk := newClock()
		b := NewBreaker(Settings{Now: clk.Now})
		for range 2 {
			tok, _ := b.Allow()
			b.Report(tok, Failure)
		}
		clk.Advance(DefaultCooldown)
		var probes, refused atomic.Int32
		start := make(chan struct{})
		var wg sync.WaitGroup
		for range callers {
			wg.Go(func() {
				<-start
				tok, err := b.Allow()
				switch {
				case errors.Is(err, ErrOpen):
					refused.Add(1)
				case err == nil && tok.Probe():
					probes.Add(1)
				}
			})
		}
		close(start)
		wg.Wait()
		if probes.Load() != 1 || refused.Load() != callers-1 {
			t.Fatalf("round %d: %d probes, %d refused; want 1 and %d", round, probes.Load(), refused.Load(), callers-1)
		}
	}
}

func TestStateString(t *testing.T) {
	for s, want := range map[State]string{Closed: "closed", Open: "open", HalfOpen: "half-open", State(7): "State(7)"} {
		if got := s.String(); got != want {
			t.Errorf("State(%d).String() = %q, want %q", int(s), got, want)
		}
	}
	for o, want := range map[Outcome]string{Neutral: "neutral", Success: "success", Failure: "failure", Outcome(9): "Outcome(9)"} {
		if got := o.String(); got != want {
			t.Errorf("Outcome(%d).String() = %q, want %q", int(o), got, want)
		}
	}
}
