package accountsql

// EndedV is endedV, for the query-plan test.
var EndedV = endedV
