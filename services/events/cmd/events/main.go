// Command events serves the change feed, each resource's history and
// webhooks, fed by the stream of every service's change events.
package main

import (
	"os"

	"github.com/assetregistry/registry/pkg/servicekit"
	"github.com/assetregistry/registry/services/events"
)

func main() { os.Exit(servicekit.Main(events.Spec())) }
