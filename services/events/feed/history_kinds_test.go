package feed

import (
	"slices"
	"testing"

	"github.com/assetregistry/registry/pkg/outbox"
)

// An asset's history has its compliance transitions, components and meter
// readings; other histories
// their own kind only.
func TestHistoryOf(t *testing.T) {
	for kind, want := range map[string][]string{
		outbox.KindAsset:  {outbox.KindAsset, outbox.KindCompliance, outbox.KindAssetComponent, outbox.KindMeterReading},
		outbox.KindAction: {outbox.KindAction},
	} {
		if got := HistoryOf(kind); !slices.Equal(got, want) {
			t.Errorf("HistoryOf(%s) = %v, want %v", kind, got, want)
		}
	}
}
