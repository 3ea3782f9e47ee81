package gateway

import (
	"embed"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/assetregistry/registry/pkg/openapi"
)

// builtInDocs are the services' API documents as they were when the
// gateway was built: `make generate` copies each service's openapi.yaml
// here (tools/catalogfiles.APIDocuments), and a test fails when a copy differs
// from its service's. The gateway serves a service's document from its
// own answer while it answers, and from this copy while it does not, so
// /openapi.json and /openapi/{resource}.json stay whole with a service
// down.
//
//go:embed openapi/*.yaml
var builtInDocs embed.FS

var (
	builtInMu     sync.Mutex
	builtInByName = map[string]map[string]any{}
)

// builtInDoc returns the document service serves, built from the copy
// embedded at build time exactly as the service builds its own
// (openapi.Bundle), then read back from JSON as a fetched one is.
func builtInDoc(service string) (map[string]any, error) {
	builtInMu.Lock()
	defer builtInMu.Unlock()
	if doc, ok := builtInByName[service]; ok {
		return doc, nil
	}
	raw, err := builtInDocs.ReadFile("openapi/" + service + ".yaml")
	if err != nil {
		return nil, fmt.Errorf("no built-in API document of the %s service: %w", service, err)
	}
	bundled, err := openapi.Bundle(raw)
	if err != nil {
		return nil, fmt.Errorf("the %s service's built-in API document: %w", service, err)
	}
	j, err := openapi.JSON(bundled)
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := json.Unmarshal(j, &doc); err != nil {
		return nil, err
	}
	builtInByName[service] = doc
	return doc, nil
}
