package circuit

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/switchyard-gw/switchyard/internal/failure"
)

func newTestSet() (*Set, *fakeClock) {
	clk := newClock()
	return NewSet(Settings{Now: clk.Now}, Settings{Now: clk.Now}), clk
}

// attempt admits (provider, deployment, model) and reports err, failing the test on a refusal.
func attempt(t *testing.T, s *Set, provider, deployment, model string, err error) {
	t.Helper()
	tk, aerr := s.Admit(provider, deployment, model)
	if aerr != nil {
		t.Fatalf("Admit(%s, %s, %s) refused: %v", provider, deployment, model, aerr)
	}
	tk.Done(err)
}

func hang() error {
	return &failure.Error{Class: failure.UpstreamTimeout, Msg: "no headers", Hang: true}
}

func stateOf(s *Set, deployment, model string) StateInfo {
	for _, si := range s.States() {
		if si.Deployment == deployment && si.Model == model {
			return si
		}
	}
	return StateInfo{Deployment: deployment, Model: model, State: State(-1)}
}

// TestSetHang: two hangs of model A at deployment D open (D, A) only; D keeps serving B
// (R-CIRCUIT-5).
func TestSetHang(t *testing.T) {
	s, clk := newTestSet()
	attempt(t, s, "p", "D", "A", hang())
	attempt(t, s, "p", "D", "B", nil) // resets D's count, not (D, A)'s
	attempt(t, s, "p", "D", "A", hang())

	_, err := s.Admit("p", "D", "A")
	var oe *OpenError
	if !errors.As(err, &oe) || !errors.Is(err, ErrOpen) || oe.Deployment != "D" || oe.Model != "A" {
		t.Fatalf("Admit(D, A) = %v, want *OpenError for (D, A)", err)
	}
	if want := epoch.Add(DefaultCooldown); !oe.Until.Equal(want) {
		t.Errorf("OpenError.Until = %v, want %v", oe.Until, want)
	}
	if !s.Open("p", "D", "A") {
		t.Error("Open(D, A) = false, want true")
	}
	if s.Open("p", "D", "B") {
		t.Error("Open(D, B) = true, want false: the deployment's other models keep serving")
	}
	if got := stateOf(s, "D", ""); got.State != Closed {
		t.Errorf("deployment D is %v, want closed", got.State)
	}
	attempt(t, s, "p", "D", "B", nil)

	// The refusal by (D, A) must not have left D's circuit holding anything: D still closed.
	clk.Advance(DefaultCooldown)
	if s.Open("p", "D", "A") {
		t.Error("Open(D, A) after the cooldown = true, want false (probe available)")
	}
	tk, err := s.Admit("p", "D", "A")
	if err != nil {
		t.Fatalf("probe refused: %v", err)
	}
	if !s.Open("p", "D", "A") {
		t.Error("Open(D, A) with the probe in flight = false, want true")
	}
	tk.Done(nil)
	if got := stateOf(s, "D", "A"); got.State != Closed {
		t.Errorf("(D, A) after a successful probe is %v, want closed", got.State)
	}
}

// TestSetHangLeavesDeploymentClosed: two hangs of A in a row with nothing between open (D, A)
// only: a run made only of one model's hangs never opens D (R-CIRCUIT-5, seed 000 "its other
// models keep answering").
func TestSetHangLeavesDeploymentClosed(t *testing.T) {
	s, _ := newTestSet()
	attempt(t, s, "p", "D", "A", hang())
	attempt(t, s, "p", "D", "A", hang())
	if got := stateOf(s, "D", ""); got.State != Closed {
		t.Fatalf("deployment D is %v after two hangs of A, want closed", got.State)
	}
	if got := stateOf(s, "D", "A"); got.State != Open {
		t.Fatalf("(D, A) is %v after two hangs, want open", got.State)
	}
	attempt(t, s, "p", "D", "B", nil)
}

// TestSetMixedRunOpensDeployment: issue 25 item 2, seed 000 ("counts on the deployment's
// circuit and on a second circuit for that model"): a hang counts on D's circuit too, and any
// run of failures that is not only one model's hangs opens D at two; a success resets the run.
func TestSetMixedRunOpensDeployment(t *testing.T) {
	e502 := failure.New(failure.UpstreamError, "502")
	for _, tc := range []struct {
		name string
		run  []struct {
			model string
			err   error
		}
		depOpen bool
	}{
		{"hang of A then 502 of B", []struct {
			model string
			err   error
		}{{"A", hang()}, {"B", e502}}, true},
		{"502 of B then hang of A", []struct {
			model string
			err   error
		}{{"B", e502}, {"A", hang()}}, true},
		{"hang of A then hang of B", []struct {
			model string
			err   error
		}{{"A", hang()}, {"B", hang()}}, true},
		{"two hangs of A, then a 502 of B", []struct {
			model string
			err   error
		}{{"A", hang()}, {"A", hang()}, {"B", e502}}, true},
		{"two hangs of A", []struct {
			model string
			err   error
		}{{"A", hang()}, {"A", hang()}}, false},
		{"hang of A, success of B, 502 of B", []struct {
			model string
			err   error
		}{{"A", hang()}, {"B", nil}, {"B", e502}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newTestSet()
			for _, a := range tc.run {
				attempt(t, s, "p", "D", a.model, a.err)
			}
			if got := stateOf(s, "D", "").State == Open; got != tc.depOpen {
				t.Errorf("deployment D open = %v, want %v", got, tc.depOpen)
			}
			if got := s.Open("p", "D", "C"); got != tc.depOpen {
				t.Errorf("Open(D, C) = %v, want %v (a third model follows the deployment)", got, tc.depOpen)
			}
		})
	}
}

// TestSetCounting: which failures count on which circuit (R-CIRCUIT-3, R-CIRCUIT-5, R-FAIL-11).
func TestSetCounting(t *testing.T) {
	tests := []struct {
		name          string
		err           error
		wantDepOpen   bool
		wantModelOpen bool
	}{
		{"success", nil, false, false},
		{"typed nil *failure.Error is success", (*failure.Error)(nil), false, false},
		{"non-hang upstream_error counts on the deployment only", failure.New(failure.UpstreamError, "502"), true, false},
		{"plain transport error is upstream_error", errors.New("connection reset"), true, false},
		{"upstream_auth counts", failure.New(failure.UpstreamAuth, "bad key"), true, false},
		{"truncation after commit counts", failure.New(failure.UpstreamTruncated, "cut"), true, false},
		{"hang counts on the (deployment, model) circuit only", hang(), false, true},
		{"deadline cause is a hang", context.DeadlineExceeded, false, true},
		{"hang then caller cancel counts as a hang", &failure.Error{Class: failure.Cancelled, Hang: true}, false, true},
		{"invalid_request never counts", failure.New(failure.InvalidRequest, "bad"), false, false},
		{"context_overflow never counts", failure.New(failure.ContextOverflow, "big"), false, false},
		{"content_policy never counts", failure.New(failure.ContentPolicy, "no"), false, false},
		{"request_too_large never counts", failure.New(failure.RequestTooLarge, "big"), false, false},
		{"cancelled never counts", failure.New(failure.Cancelled, "gone"), false, false},
		{"context.Canceled never counts", fmt.Errorf("send: %w", context.Canceled), false, false},
		{"caller rate_limited never counts", failure.New(failure.RateLimited, "rpm"), false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := newTestSet()
			attempt(t, s, "p", "D", "A", tt.err)
			attempt(t, s, "p", "D", "A", tt.err)
			if got := stateOf(s, "D", "").State == Open; got != tt.wantDepOpen {
				t.Errorf("deployment open = %v, want %v", got, tt.wantDepOpen)
			}
			if got := stateOf(s, "D", "A").State == Open; got != tt.wantModelOpen {
				t.Errorf("(deployment, model) open = %v, want %v", got, tt.wantModelOpen)
			}
			if got := s.Open("p", "D", "A"); got != (tt.wantDepOpen || tt.wantModelOpen) {
				t.Errorf("Open = %v", got)
			}
		})
	}
}

// TestSetNeutralFreesProbe: a cancelled probe releases the half-open slot on both circuits
// without a transition (R-FAIL-11, R-CIRCUIT-2).
func TestSetNeutralFreesProbe(t *testing.T) {
	s, clk := newTestSet()
	attempt(t, s, "p", "D", "A", hang())
	attempt(t, s, "p", "D", "A", hang())
	attempt(t, s, "p", "D", "B", failure.New(failure.UpstreamError, "502")) // a mixed run of 3: D opens
	clk.Advance(DefaultCooldown)
	tk, err := s.Admit("p", "D", "A")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Admit("p", "D", "A"); !errors.Is(err, ErrOpen) {
		t.Fatalf("second Admit while probing = %v, want ErrOpen", err)
	}
	tk.Done(context.Canceled)
	for _, m := range []string{"", "A"} {
		if got := stateOf(s, "D", m).State; got != HalfOpen {
			t.Errorf("circuit (D, %q) after a cancelled probe is %v, want half-open", m, got)
		}
	}
	if s.Open("p", "D", "A") {
		t.Error("Open after a cancelled probe = true, want false")
	}
	attempt(t, s, "p", "D", "A", nil)
	if got := stateOf(s, "D", "").State; got != Closed {
		t.Errorf("after the second probe succeeded D is %v, want closed", got)
	}
}

// TestSetModelRefusalReturnsDeploymentProbe: when D is half-open and (D, A) refuses, the probe
// slot Admit took on D is given back, so another model can probe D. The model circuits have
// their own settings (a longer cooldown here).
func TestSetModelRefusalReturnsDeploymentProbe(t *testing.T) {
	clk := newClock()
	s := NewSet(Settings{Cooldown: 10 * time.Second, Now: clk.Now}, Settings{Cooldown: time.Minute, Now: clk.Now})
	attempt(t, s, "p", "D", "A", hang())
	attempt(t, s, "p", "D", "A", hang())                                    // (D, A) open until 60s
	attempt(t, s, "p", "D", "B", failure.New(failure.UpstreamError, "502")) // a mixed run: D open until 10s
	clk.Advance(10 * time.Second)

	_, err := s.Admit("p", "D", "A")
	var oe *OpenError
	if !errors.As(err, &oe) || oe.Model != "A" {
		t.Fatalf("Admit(D, A) = %v, want a refusal by (D, A)", err)
	}
	if want := epoch.Add(time.Minute); !oe.Until.Equal(want) {
		t.Errorf("Until = %v, want %v", oe.Until, want)
	}
	if s.Open("p", "D", "B") {
		t.Fatal("D's probe slot leaked: Open(D, B) = true")
	}
	tk, err := s.Admit("p", "D", "B")
	if err != nil {
		t.Fatalf("Admit(D, B) = %v, want D's probe", err)
	}
	if _, err := s.Admit("p", "D", "C"); !errors.As(err, &oe) || oe.Model != "" || !oe.Until.IsZero() {
		t.Fatalf("Admit(D, C) during D's probe = %v, want D's refusal with zero Until", err)
	}
	tk.Done(nil)
	if got := stateOf(s, "D", "").State; got != Closed {
		t.Errorf("D is %v after B's probe succeeded, want closed", got)
	}
	if !s.Open("p", "D", "A") {
		t.Error("(D, A) no longer open")
	}
}

// TestSetProviderPause: an upstream 429 pauses every deployment of its provider for the
// retry-after clamped to 1..60s (R-CIRCUIT-4).
func TestSetProviderPause(t *testing.T) {
	tests := []struct {
		retryAfter, want time.Duration
	}{
		{5 * time.Second, 5 * time.Second},
		{0, time.Second},
		{200 * time.Millisecond, time.Second},
		{300 * time.Second, 60 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.retryAfter.String(), func(t *testing.T) {
			s, clk := newTestSet()
			attempt(t, s, "openai", "D1", "A", nil)
			attempt(t, s, "openai", "D1", "A",
				&failure.Error{Class: failure.UpstreamRateLimited, Msg: "429", RetryAfter: tt.retryAfter})

			for _, d := range []string{"D1", "D2"} {
				_, err := s.Admit("openai", d, "B")
				var pe *PausedError
				if !errors.As(err, &pe) || !errors.Is(err, ErrPaused) {
					t.Fatalf("Admit(openai, %s) = %v, want *PausedError", d, err)
				}
				if want := epoch.Add(tt.want); !pe.Until.Equal(want) || pe.Provider != "openai" {
					t.Errorf("PausedError = %+v, want Until %v", pe, want)
				}
				if !s.Open("openai", d, "B") {
					t.Errorf("Open(openai, %s) = false during the pause", d)
				}
			}
			if s.Open("anthropic", "D3", "A") {
				t.Error("another provider is paused")
			}
			attempt(t, s, "anthropic", "D3", "A", nil)

			clk.Advance(tt.want - time.Nanosecond)
			if !s.Open("openai", "D2", "B") {
				t.Error("pause ended early")
			}
			clk.Advance(time.Nanosecond)
			if s.Open("openai", "D2", "B") {
				t.Error("pause did not end")
			}
			attempt(t, s, "openai", "D2", "B", nil)
			// The 429 counted on D1's circuit: one more counted failure opens it.
			attempt(t, s, "openai", "D1", "A", failure.New(failure.UpstreamError, "502"))
			if got := stateOf(s, "D1", "").State; got != Open {
				t.Errorf("D1 is %v; the 429 did not count on its circuit", got)
			}
		})
	}
}

// TestSetPauseNeverShortens: a shorter retry-after does not cut a longer pause in force.
func TestSetPauseNeverShortens(t *testing.T) {
	s, clk := newTestSet()
	rl := func(d time.Duration) error {
		return &failure.Error{Class: failure.UpstreamRateLimited, RetryAfter: d}
	}
	attempt(t, s, "p", "D1", "A", rl(30*time.Second))
	s.pause("p", 2*time.Second) // as Done does for a later 429 that was admitted before the pause
	clk.Advance(10 * time.Second)
	if !s.Open("p", "D1", "A") {
		t.Fatal("a shorter retry-after shortened the pause")
	}
}

// TestSetSharedPause: R-CIRCUIT-4 across replicas: a pause this Set starts is told to OnPause
// with its end; a pause applied with PauseUntil (another replica's) pauses the provider here,
// keeps a later end, is capped at MaxPause, is not told again, and one already over does nothing.
func TestSetSharedPause(t *testing.T) {
	s, clk := newTestSet()
	var heard []string
	s.OnPause(func(p string, until time.Time) { heard = append(heard, fmt.Sprintf("%s %v", p, until.Sub(epoch))) })
	attempt(t, s, "openai", "D1", "A", &failure.Error{Class: failure.UpstreamRateLimited, RetryAfter: 5 * time.Second})
	if len(heard) != 1 || heard[0] != "openai 5s" {
		t.Fatalf("OnPause heard %v, want [openai 5s]", heard)
	}
	s.PauseUntil("anthropic", epoch.Add(3*time.Second))
	s.PauseUntil("anthropic", epoch.Add(time.Second)) // shorter: kept at 3 s
	s.PauseUntil("gone", epoch.Add(-time.Second))
	s.PauseUntil("long", epoch.Add(time.Hour))
	if len(heard) != 1 {
		t.Errorf("a remote pause was told again: %v", heard)
	}
	if !s.Open("anthropic", "D3", "A") || s.Open("gone", "D4", "A") {
		t.Error("remote pauses not applied as sent")
	}
	clk.Advance(2 * time.Second)
	if !s.Open("anthropic", "D3", "A") {
		t.Error("a shorter remote pause cut a longer one")
	}
	clk.Advance(time.Second)
	if s.Open("anthropic", "D3", "A") {
		t.Error("the remote pause did not end")
	}
	clk.Advance(MaxPause - 3*time.Second)
	if s.Open("long", "D5", "A") {
		t.Error("a remote pause longer than MaxPause was not capped")
	}
}

func TestSetStates(t *testing.T) {
	s, clk := newTestSet()
	attempt(t, s, "p", "D2", "A", nil)
	attempt(t, s, "p", "D1", "A", nil)
	attempt(t, s, "p", "D1", "B", hang())
	attempt(t, s, "p", "D1", "B", hang())
	clk.Advance(time.Second)
	want := []StateInfo{
		{Deployment: "D1", State: Closed},
		{Deployment: "D1", Model: "A", State: Closed},
		{Deployment: "D1", Model: "B", State: Open, OpenUntil: epoch.Add(DefaultCooldown)},
		{Deployment: "D2", State: Closed},
		{Deployment: "D2", Model: "A", State: Closed},
	}
	got := s.States()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("States() =\n%v\nwant\n%v", got, want)
	}
	clk.Advance(DefaultCooldown)
	if got := stateOf(s, "D1", "B"); got.State != HalfOpen || !got.OpenUntil.IsZero() {
		t.Errorf("after the cooldown (D1, B) = %+v, want half-open with zero OpenUntil", got)
	}
}

func TestSetOpenUnknownRoute(t *testing.T) {
	s, _ := newTestSet()
	if s.Open("p", "nowhere", "none") {
		t.Error("an unknown route is open")
	}
	if len(s.States()) != 0 {
		t.Error("Open created breakers")
	}
	Ticket{}.Done(errors.New("x")) // the zero Ticket is inert
}

// TestAdmitDoneNoAlloc guards the hot path: Admit+Done on a closed circuit does not allocate.
func TestAdmitDoneNoAlloc(t *testing.T) {
	clk := newClock()
	s := NewSet(Settings{Now: clk.Now}, Settings{})
	s.pause("paused-once", time.Second) // a provider with a pause entry that has ended
	clk.Advance(time.Second)
	for _, provider := range []string{"p", "paused-once"} {
		attempt(t, s, provider, "D", "A", nil)
		allocs := testing.AllocsPerRun(1000, func() {
			tk, err := s.Admit(provider, "D", "A")
			if err != nil {
				t.Fatal(err)
			}
			tk.Done(nil)
		})
		if allocs != 0 {
			t.Errorf("provider %s: Admit+Done allocates %v times per run, want 0", provider, allocs)
		}
	}
}

func BenchmarkAdmitDone(b *testing.B) {
	s := NewSet(Settings{}, Settings{})
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			tk, err := s.Admit("openai", "openai-us", "gpt-5")
			if err != nil {
				b.Fatal(err)
			}
			tk.Done(nil)
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				tk, err := s.Admit("openai", "openai-us", "gpt-5")
				if err != nil {
					b.Fatal(err)
				}
				tk.Done(nil)
			}
		})
	})
	b.Run("parallel-spread", func(b *testing.B) {
		deps := []string{"d0", "d1", "d2", "d3", "d4", "d5", "d6", "d7"}
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				tk, err := s.Admit("openai", deps[i%len(deps)], "gpt-5")
				if err != nil {
					b.Fatal(err)
				}
				tk.Done(nil)
				i++
			}
		})
	})
}

// Forget resets one deployment's circuits (deployment and model) and keeps the others'.
func TestSetForget(t *testing.T) {
	s, _ := newTestSet()
	for _, dep := range []string{"a", "b"} {
		for !s.Open("p", dep, "m") {
			attempt(t, s, "p", dep, "m", hang())
		}
	}
	if !s.Open("p", "a", "m") || !s.Open("p", "b", "m") {
		t.Fatal("circuits did not open")
	}
	s.Forget("a")
	if s.Open("p", "a", "m") {
		t.Error("a still open after Forget")
	}
	if !s.Open("p", "b", "m") {
		t.Error("Forget(a) closed b")
	}
	if _, err := s.Admit("p", "a", "m"); err != nil {
		t.Errorf("a refused after Forget: %v", err)
	}
}

// TestSetOpenFastPath: Open answers from the Set's count of circuits that are not closed and
// its latest pause end while nothing is open: the count follows every transition (open,
// half-open, closed again) and Forget, and a pause in force is seen until it ends.
func TestSetOpenFastPath(t *testing.T) {
	s, clk := newTestSet()
	count := func(want int64) {
		t.Helper()
		if got := s.notClosed.Load(); got != want {
			t.Fatalf("circuits not closed = %d, want %d", got, want)
		}
	}
	attempt(t, s, "p", "a", "m", nil)
	attempt(t, s, "p", "b", "m", nil)
	count(0)
	for !s.Open("p", "a", "m") {
		attempt(t, s, "p", "a", "m", hang())
	}
	count(1)
	if s.Open("p", "b", "m") {
		t.Error("b open")
	}
	clk.Advance(time.Hour) // the cooldown ends: half-open, still not closed
	if s.Open("p", "a", "m") {
		t.Error("a half-open with its probe free reads open")
	}
	tk, err := s.Admit("p", "a", "m")
	if err != nil || !tk.model.notClosed.Load() {
		t.Fatalf("probe: %v", err)
	}
	count(1)
	if !s.Open("p", "a", "m") {
		t.Error("a half-open with its probe in flight reads closed")
	}
	tk.Done(nil) // the probe succeeds: closed
	count(0)
	for !s.Open("p", "b", "m") {
		attempt(t, s, "p", "b", "m", hang())
	}
	count(1)
	s.Forget("b")
	count(0)
	if s.Open("p", "b", "m") || s.Open("p", "a", "m") {
		t.Error("open after Forget")
	}
	s.PauseUntil("p", clk.Now().Add(10*time.Second))
	if !s.Open("p", "a", "m") {
		t.Error("paused provider reads not paused")
	}
	if s.Open("q", "c", "m") {
		t.Error("another provider reads paused")
	}
	clk.Advance(11 * time.Second)
	if s.Open("p", "a", "m") {
		t.Error("pause read in force after its end")
	}
}

// TestSetBlocked: Blocked says why Open is true (pause, deployment circuit, (deployment, model)
// circuit, a half-open probe in flight) and nil when it is false, without consuming the probe.
func TestSetBlocked(t *testing.T) {
	s, clk := newTestSet()
	if err := s.Blocked("p", "D", "A"); err != nil {
		t.Fatalf("unknown route: %v", err)
	}
	attempt(t, s, "p", "D", "A", hang())
	attempt(t, s, "p", "D", "A", hang())
	var oe *OpenError
	if err := s.Blocked("p", "D", "A"); !errors.As(err, &oe) || oe.Model != "A" || !oe.Until.Equal(epoch.Add(DefaultCooldown)) {
		t.Errorf("after two hangs: %v, want the (D, A) circuit until %v", err, epoch.Add(DefaultCooldown))
	}
	if err := s.Blocked("p", "D", "B"); err != nil {
		t.Errorf("(D, B): %v, want nil", err)
	}
	attempt(t, s, "p", "D", "B", failure.New(failure.UpstreamError, "502")) // a mixed run of 3: D opens
	if err := s.Blocked("p", "D", "B"); !errors.As(err, &oe) || oe.Model != "" {
		t.Errorf("after two hangs of A and a 502 of B: %v, want the deployment circuit", err)
	}
	clk.Advance(DefaultCooldown)
	for range 2 { // a half-open circuit with its probe free is not blocked, and asking keeps it free
		if err := s.Blocked("p", "D", "B"); err != nil {
			t.Errorf("half-open with the probe free: %v", err)
		}
	}
	tk, err := s.Admit("p", "D", "B")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Blocked("p", "D", "B"); !errors.As(err, &oe) || !oe.Until.IsZero() {
		t.Errorf("probe in flight: %v, want an OpenError with a zero Until", err)
	}
	tk.Done(nil)
	attempt(t, s, "p", "E", "A", &failure.Error{Class: failure.UpstreamRateLimited, RetryAfter: 7 * time.Second})
	var pe *PausedError
	if err := s.Blocked("p", "E", "A"); !errors.As(err, &pe) || pe.Provider != "p" || !pe.Until.Equal(clk.Now().Add(7*time.Second)) {
		t.Errorf("after a 429: %v, want a pause of p", err)
	}
}
