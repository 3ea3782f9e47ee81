package main

import (
	"context"
	"os"
	"strings"
	"testing"
)

// -h and --help print the usage and flags of the command asked about, at
// every level, and succeed.
func TestHelpAtEveryLevel(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"-h"}, []string{"registry <command>", "organizations"}},
		{[]string{"import", "-h"}, []string{"registry import", "-batch"}},
		{[]string{"import", "--help"}, []string{"registry import", "-batch"}},
		{[]string{"plans", "-h"}, []string{"registry plans <command>", "presets"}},
		{[]string{"plans", "load", "--help"}, []string{"registry plans load PRESET", "-asset-type", "-asset "}},
		{[]string{"compliance", "-h"}, []string{"registry compliance", "-state", "-due-before", "-as-of", "-components"}},
		{[]string{"webhooks", "-h"}, []string{"registry webhooks <command>", "rotate", "deliveries", "retry"}},
		{[]string{"meters", "-h"}, []string{"registry meters <command>", "add", "list"}},
		{[]string{"meters", "add", "-h"}, []string{"registry meters add ASSET METER VALUE", "-reset", "-read-at"}},
		{[]string{"action-types", "-h"}, []string{"registry action-types <command>", "list", "add"}},
		{[]string{"webhooks", "deliveries", "--help"}, []string{"registry webhooks deliveries ID", "-status"}},
		{[]string{"grants", "-h"}, []string{"registry grants <command>", "list", "add", "remove"}},
		{[]string{"grants", "add", "--help"}, []string{"registry grants add ASSET_ID ORGANIZATION_ID", "-role"}},
		{[]string{"transfers", "-h"}, []string{"registry transfers <command>", "create", "accept", "reject", "cancel"}},
		{[]string{"assets", "set-owner", "--help"}, []string{"registry assets set-owner ORGANIZATION_ID", "-none"}},
	} {
		out, err := os.CreateTemp(t.TempDir(), "out")
		if err != nil {
			t.Fatal(err)
		}
		if code := run(context.Background(), tc.args, out, out); code != 0 {
			t.Errorf("%v: exit %d", tc.args, code)
		}
		printed, _ := os.ReadFile(out.Name())
		for _, w := range tc.want {
			if !strings.Contains(string(printed), w) {
				t.Errorf("%v printed %q, want it to name %q", tc.args, printed, w)
			}
		}
	}
}
