package model_test

import (
	"errors"
	"testing"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/model"
)

func TestGuardMayChange(t *testing.T) {
	cases := []struct {
		name    string
		guard   model.Guard
		creator string
		allowed bool
	}{
		{"not under the rule", model.Guard{Caller: model.Caller{Subject: "b"}}, "a", true},
		{"the creator", model.Guard{Caller: model.Caller{Subject: "a"}, OwnerOnly: true}, "a", true},
		{"another client", model.Guard{Caller: model.Caller{Subject: "b"}, OwnerOnly: true}, "a", false},
		{"an admin", model.Guard{Caller: model.Caller{Subject: "b", Admin: true}, OwnerOnly: true}, "a", true},
		{"no caller", model.Guard{OwnerOnly: true}, "a", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.guard.MayChange("organization", "id-1", c.creator)
			if c.allowed {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var e *apperr.Error
			if !errors.As(err, &e) || e.Kind != apperr.KindForbidden || e.Code != "not-owner" {
				t.Fatalf("err = %v, want a not-owner 403", err)
			}
		})
	}
}

func TestGuardSees(t *testing.T) {
	cases := []struct {
		name  string
		guard model.Guard
		sees  bool
	}{
		{"not private", model.Guard{Caller: model.Caller{Subject: "b"}}, true},
		{"private, the creator", model.Guard{Caller: model.Caller{Subject: "a"}, Private: true}, true},
		{"private, another client", model.Guard{Caller: model.Caller{Subject: "b"}, Private: true}, false},
		{"private, an admin", model.Guard{Caller: model.Caller{Subject: "b", Admin: true}, Private: true}, true},
	}
	for _, c := range cases {
		if got := c.guard.Sees("a"); got != c.sees {
			t.Errorf("%s: Sees = %v, want %v", c.name, got, c.sees)
		}
	}
}

func TestGuardPrecondition(t *testing.T) {
	current := map[string]string{"name": "Acme"}
	_, tag, err := model.ETagOf(current)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		ifMatch string
		ok      bool
	}{
		{"", true},
		{tag, true},
		{"*", true},
		{`"other", ` + tag, true},
		{`"other"`, false},
		{"W/" + tag, false}, // If-Match compares strongly
	}
	for _, c := range cases {
		err := model.Guard{IfMatch: c.ifMatch}.Precondition(current)
		var e *apperr.Error
		switch {
		case c.ok && err != nil:
			t.Errorf("If-Match %s: %v", c.ifMatch, err)
		case !c.ok && (!errors.As(err, &e) || e.Kind != apperr.KindPreconditionFailed):
			t.Errorf("If-Match %s: err = %v, want a 412", c.ifMatch, err)
		}
	}
}
