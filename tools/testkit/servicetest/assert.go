package servicetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/tools/devinfra"
)

// The checks below are what every service's store, service and model
// tests assert again and again, kept here once.

// Must returns a function that returns v, or fails the test on err:
// Must[Asset](t)(svc.GetAsset(ctx, id)).
func Must[T any](t testing.TB) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// WantKind fails the test unless err is an *apperr.Error of kind, and
// returns it for further checks (its code, its extensions).
func WantKind(t testing.TB, err error, kind apperr.Kind) *apperr.Error {
	t.Helper()
	var e *apperr.Error
	if !errors.As(err, &e) || e.Kind != kind {
		t.Fatalf("err = %v, want kind %v", err, kind)
	}
	return e
}

// WantFields fails the test unless err names exactly fields, in order, as
// invalid input; without fields, err must be nil.
func WantFields(t testing.TB, err error, fields ...string) {
	t.Helper()
	if len(fields) == 0 {
		if err != nil {
			t.Fatalf("err = %v, want none", err)
		}
		return
	}
	e := WantKind(t, err, apperr.KindInvalid)
	got := make([]string, 0, len(e.Fields))
	for _, f := range e.Fields {
		got = append(got, f.Field)
	}
	if !slices.Equal(got, fields) {
		t.Fatalf("invalid fields = %v, want %v", got, fields)
	}
}

// Validation is one row of a table that holds a validating step (an
// input's Normalize, a patch's Apply) to its contract: what it refuses,
// and what it makes of what it accepts.
type Validation[In, Out any] struct {
	Name string
	In   In
	// Fields are the members the step must name invalid, in its order;
	// none: the step must accept In.
	Fields []string
	// Check, when set, looks further at what an accepted In became and
	// reports what it finds; Want, when set, must hold of it (the result
	// is reported when it does not).
	Check func(t *testing.T, out Out)
	Want  func(out Out) bool
}

// Validations runs each row as a subtest of step.
func Validations[In, Out any](t *testing.T, step func(In) (Out, error), rows []Validation[In, Out]) {
	t.Helper()
	for _, row := range rows {
		t.Run(row.Name, func(t *testing.T) {
			out, err := step(row.In)
			WantFields(t, err, row.Fields...)
			if row.Check != nil {
				row.Check(t, out)
			}
			if row.Want != nil && !row.Want(out) {
				t.Errorf("result %+v", out)
			}
		})
	}
}

// CreatesOnce releases callers concurrent find-or-create calls at once and
// checks the contract's race rule: no call fails, all return the same
// resource, and exactly one reports creating it. It returns the id.
func CreatesOnce(t testing.TB, callers int, call func(i int) (id uuid.UUID, created bool, err error)) uuid.UUID {
	t.Helper()
	type result struct {
		id      uuid.UUID
		created bool
		err     error
	}
	results := make([]result, callers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			<-start
			r := &results[i]
			r.id, r.created, r.err = call(i)
		})
	}
	close(start)
	wg.Wait()
	creators := 0
	for _, r := range results {
		if r.err != nil {
			t.Fatal(r.err)
		}
		if r.id != results[0].id {
			t.Fatalf("two resources made: %v and %v", results[0].id, r.id)
		}
		if r.created {
			creators++
		}
	}
	if creators != 1 {
		t.Fatalf("%d callers report creating the resource, want exactly 1", creators)
	}
	return results[0].id
}

// Unreachable returns a loopback address where nothing listens, for a
// dependency that is down (a Redis, a peer).
func Unreachable(t testing.TB) string {
	t.Helper()
	port, err := devinfra.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("127.0.0.1:%d", port)
}
