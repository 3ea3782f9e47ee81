package model

import (
	"errors"
	"testing"

	"github.com/assetregistry/registry/pkg/apperr"
)

func TestOne(t *testing.T) {
	summary := func(n int) any { return n }
	if _, err := FindOne([]int{}, "thing", summary); !apperr.Is(err, apperr.KindNotFound) {
		t.Errorf("none: %v", err)
	}
	if got, err := FindOne([]int{7}, "thing", summary); err != nil || got != 7 {
		t.Errorf("one: %v, %v", got, err)
	}
	many := make([]int, FindLimit)
	_, err := FindOne(many, "thing", summary)
	var e *apperr.Error
	if !errors.As(err, &e) || e.Kind != apperr.KindConflict || e.Code != "ambiguous-match" {
		t.Fatalf("several: %v", err)
	}
	if c := e.Extensions["candidates"].([]any); len(c) != MaxCandidates {
		t.Errorf("candidates = %d, want at most %d", len(c), MaxCandidates)
	}
}
