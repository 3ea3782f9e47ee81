// Package model is the plain-Go vocabulary every service's model is written
// in, free of HTTP and SQL: the field rules of inputs (required and optional
// text, tokens, ids in bodies, names compared case-insensitively), civil
// dates, merge-patch members, keyset pages and their cursors, the one-match
// rule of finds, and the audit fields every resource carries.
package model
