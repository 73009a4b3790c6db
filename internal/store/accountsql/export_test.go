package accountsql

// EndedV is endedV, for the query-plan test.
var EndedV = endedV

// LedgerStatements is the ledger writer's prepared statement set (nil before its first batch).
func (s *Store) LedgerStatements() any {
	s.stmtMu.Lock()
	defer s.stmtMu.Unlock()
	return s.ledgerSt
}
