package server

import (
	"context"
	"errors"

	"github.com/switchyard-gw/switchyard/internal/accounts"
	"github.com/switchyard-gw/switchyard/internal/admission"
	"github.com/switchyard-gw/switchyard/internal/audit"
)

// settleMark is the ledger mark of a committed attempt's outcome (R-BILL-2): a stream the
// provider cut after commit is upstream-truncated, one the caller abandoned client-cancelled.
func settleMark(outcome string) string {
	switch outcome {
	case audit.OutcomeTruncated:
		return accounts.MarkUpstreamTruncated
	case audit.OutcomeCancelled:
		return accounts.MarkClientCancelled
	}
	return ""
}

// auditEnd implements accounts.AuditEnd over the audit recorder (its queue, then the store):
// a request whose last attempt completed, was truncated after commit, or was cancelled after
// output started (billed usage) committed, and its settle is that attempt's, as the request
// path writes it.
func (s *Server) auditEnd(ctx context.Context, requestID string) (accounts.LedgerEntry, bool, bool, error) {
	rec, err := s.rec.Lookup(ctx, requestID)
	if errors.Is(err, audit.ErrNotFound) {
		return accounts.LedgerEntry{}, false, false, nil
	}
	if err != nil {
		return accounts.LedgerEntry{}, false, false, err
	}
	if len(rec.Attempts) == 0 {
		return accounts.LedgerEntry{}, false, true, nil
	}
	a := &rec.Attempts[len(rec.Attempts)-1]
	committed := a.Outcome == audit.OutcomeCompleted || a.Outcome == audit.OutcomeTruncated ||
		(a.Outcome == audit.OutcomeCancelled && (a.CostUSD > 0 || a.Tokens.Output > 0))
	if !committed {
		return accounts.LedgerEntry{}, false, true, nil
	}
	t := &a.Tokens
	return accounts.LedgerEntry{Model: a.Model, Deployment: a.Deployment, AmountMicroUSD: admission.MicroUSD(a.CostUSD),
		Tokens:          accounts.Tokens{Input: t.Input, Cached: t.Cached, CacheWrite: t.CacheWrite, Output: t.Output, Reasoning: t.Reasoning},
		UsageProvenance: a.UsageProvenance}, true, true, nil
}
