package meters

import (
	"net/http"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/httpx"
)

// readingsPath is the path of an asset's meter readings.
const readingsPath = "/assets/{id}/meter_readings"

// Routes is the route table of meter readings (spec.go mounts it on the
// assets' router): per route the operation's endpoint, its decoder and its
// rules.
func Routes(s Service) []endpoints.Route {
	return []endpoints.Route{
		endpoints.On("POST", readingsPath, endpoints.ByCaller(endpoints.Created(endpoints.ByID(s.CreateReading), readingLocation)),
			httpx.PathIDBody[ReadingInput], endpoints.IdempotencyKey),
		endpoints.On("POST", readingsPath+"/batch", createReadings(s), decodeReadingsBatch, endpoints.IdempotencyKey),
		endpoints.On("GET", readingsPath, endpoints.ByCaller(endpoints.ListBy(s.ListReadings)), decodeListReadings),
		endpoints.On("GET", readingsPath+"/{reading_id}", getReading(s), decodeReadingPath),
	}
}

// readingsBatch is a batch of readings of the asset in the path.
type readingsBatch struct {
	AssetID uuid.UUID
	endpoints.BatchRequest
}

// decodeReadingsBatch reads the asset (checked first) and the batch; the
// operation takes no query parameters.
func decodeReadingsBatch(r *http.Request) (b readingsBatch, err error) {
	if b.AssetID, err = httpx.PathID(r); err == nil {
		b.BatchRequest, err = endpoints.BatchBody(r)
	}
	return b, err
}

// readingPath names one reading of one asset, from the path.
type readingPath struct{ AssetID, ID uuid.UUID }

// decodeListReadings reads the asset from the path (checked first: a
// malformed id is a 400 whatever the query), then the meter and the page.
func decodeListReadings(r *http.Request) (req httpx.ListRequest[ReadingFilter], err error) {
	if req.Filter.AssetID, err = httpx.PathUUID(r, "id"); err != nil {
		return req, err
	}
	q := httpx.ParseQuery(r, "limit", "cursor", "meter")
	req.Filter.Meter, req.Page = q.String("meter"), q.Page()
	return req, q.Err()
}

// decodeReadingPath reads the asset's and the reading's ids; the
// operation takes no query parameters.
func decodeReadingPath(r *http.Request) (p readingPath, err error) {
	if p.AssetID, err = httpx.PathID(r); err == nil {
		p.ID, err = httpx.PathUUID(r, "reading_id")
	}
	return p, err
}
