package server

import (
	"github.com/switchyard-gw/switchyard/internal/accounts"
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
