package circuit_test

import (
	"fmt"
	"time"

	"github.com/switchyard-gw/switchyard/internal/circuit"
)

func ExampleBreaker() {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	b := circuit.NewBreaker(circuit.Settings{
		Failures: 2,
		Cooldown: 30 * time.Second,
		Now:      func() time.Time { return now },
	})

	// Two counted failures in a row open the circuit.
	for range 2 {
		tok, err := b.Allow()
		if err != nil {
			panic(err)
		}
		b.Report(tok, circuit.Failure)
	}
	_, err := b.Allow()
	fmt.Println(b.State(), err, b.OpenUntil().Sub(now))

	// After the cooldown one caller probes; the others are refused until it reports.
	now = now.Add(30 * time.Second)
	probe, _ := b.Allow()
	_, err = b.Allow()
	fmt.Println(b.State(), probe.Probe(), err)

	b.Report(probe, circuit.Success)
	fmt.Println(b.State())
	// Output:
	// open circuit: open 30s
	// half-open true circuit: open
	// closed
}
