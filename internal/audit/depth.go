package audit

import "time"

// Queued returns how many records are waiting to be written or in the batch being written.
func (r *Recorder) Queued() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.pending)
}

// Lag returns how long the oldest record waiting for a batch has waited (since its request
// ended: CreatedAt plus DurationMS); 0 when none waits.
func (r *Recorder) Lag(now time.Time) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.queue) == 0 {
		return 0
	}
	rec := r.queue[0]
	queued := rec.CreatedAt.Add(time.Duration(rec.DurationMS * float64(time.Millisecond)))
	return max(now.Sub(queued), 0)
}
