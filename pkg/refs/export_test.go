package refs

// RowsSQL is the read of remembered targets, for its plan's test.
const RowsSQL = rowsSQL
