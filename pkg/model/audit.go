package model

import "time"

// Audit is who created a resource and who last changed it, and when: the
// read-only fields every resource of the registry carries, embedded in
// each model so that the columns and JSON names are written once.
type Audit struct {
	CreatedAt time.Time `json:"created_at" db:"created_at"`
	CreatedBy string    `json:"created_by" db:"created_by"`
	UpdatedAt time.Time `json:"updated_at" db:"updated_at"`
	UpdatedBy string    `json:"updated_by" db:"updated_by"`
}

// Creator is the client that created the resource, whom the owner rule
// lets change and delete it.
func (a Audit) Creator() string { return a.CreatedBy }
