package refs

// RowsSQL is the read of remembered targets, for its plan's test.
const RowsSQL = rowsSQL

// CreatedTarget is what learning reads of an event, for its table test.
var CreatedTarget = createdTarget
