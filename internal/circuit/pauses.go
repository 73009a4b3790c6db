package circuit

import "time"

// Paused reports whether the pause scope (a provider id, or a BYOK deployment's name; see
// catalog.Deployment.PauseScope) is paused now after an upstream 429 (R-CIRCUIT-4) and, if so,
// when the pause ends. It takes a read lock and allocates nothing.
func (s *Set) Paused(scope string) (time.Time, bool) {
	s.mu.RLock()
	p := s.pauses[scope]
	s.mu.RUnlock()
	if p == nil {
		return time.Time{}, false
	}
	return s.paused(p)
}
