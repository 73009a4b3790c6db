package audit

import (
	"context"
	"errors"
	"time"
)

// Filter selects audit records for a list (the admin API's call log, docs/admin-api.md); the
// zero Filter selects every record. Each member set must match.
type Filter struct {
	Account string // the record's Account
	KeyID   string // the calling key (Record.KeyID)
	// RequestID selects the record whose gateway request id (Record.RequestID) or caller
	// request id (Record.CallerRequestID) it is: one of ours, or every record a caller sent
	// under its own id.
	RequestID string
	Model     string // the model string as the caller sent it (Record.Model)
	// Deployment selects records with at least one attempt on that deployment.
	Deployment string
	// ErrorCode, when HasErrorCode, is the final outcome's class; "" selects successes.
	ErrorCode    string
	HasErrorCode bool
	// StatusMin and StatusMax bound the HTTP status sent to the caller, inclusive; 0 is no bound.
	StatusMin, StatusMax int
	// Since (inclusive) and Until (exclusive) bound CreatedAt; the zero time is no bound.
	Since, Until time.Time
}

// Position is a record's place in a list, newest first: by CreatedAt, then RequestID, both
// descending. A page after a Position holds the records strictly older than it, so paging by
// the last record's Position loses and repeats nothing while new records are written.
type Position struct {
	CreatedAt time.Time
	RequestID string
}

// Lister is an audit Store that lists records. The SQL stores implement it.
type Lister interface {
	// ListRecords returns at most limit records f selects, newest first, strictly after after
	// (the zero Position: from the newest), each with its attempts in order. Records without a
	// creation time are never listed.
	ListRecords(ctx context.Context, f Filter, after Position, limit int) ([]*Record, error)
}

// ErrNoList is the error of Recorder.List when its store cannot list.
var ErrNoList = errors.New("audit: the store cannot list records")

// List returns a page of the stored records (Lister.ListRecords), after writing the records
// queued so far (within a second: a record still unwritten then shows on a later read).
func (r *Recorder) List(ctx context.Context, f Filter, after Position, limit int) ([]*Record, error) {
	l, ok := r.st.(Lister)
	if !ok {
		return nil, ErrNoList
	}
	if r.running.Load() {
		fctx, cancel := context.WithTimeout(ctx, time.Second)
		_ = r.Flush(fctx)
		cancel()
	}
	return l.ListRecords(ctx, f, after, limit)
}
