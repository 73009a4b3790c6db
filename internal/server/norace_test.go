//go:build !race

package server_test

// raceEnabled: this test binary runs under the race detector.
const raceEnabled = false
