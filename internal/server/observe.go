package server

import (
	"time"

	"github.com/switchyard-gw/switchyard/internal/audit"
	"github.com/switchyard-gw/switchyard/internal/relay"
)

// callObs is what a model call's observations need beyond its audit record: the metrics, the
// access log and the trace (docs/observability.md). It lives in the pooled callState.
type callObs struct {
	model   string     // the catalog model id the caller's model string resolved to; "" if none
	keyID   string     // the calling key's id in the ledger; "" when anonymous
	refused string     // the limit kind of a refusal by a caller limit; "" otherwise
	gaps    relay.Gaps // the committed stream's inter-token gaps
}

func (o *callObs) reset() { *o = callObs{} }

// finish completes the record, observes it (metrics), and queues it for the store off the
// request path.
func (s *Server) finish(rec *audit.Record, start time.Time, ob *callObs) {
	rec.DurationMS = float64(time.Since(start).Microseconds()) / 1000
	s.metrics.observe(rec, ob.model, &ob.gaps)
	if ob.refused != "" && ob.refused != "health" && ob.refused != LimitKindInflightBody { // not caller limits
		s.metrics.refused(ob.refused)
	}
	s.rec.Record(rec)
}
