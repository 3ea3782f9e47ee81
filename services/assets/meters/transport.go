package meters

import (
	"net/http"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/httpx"
)

// Routes adds the routes of meter readings to r (the assets' router).
// Each checks its scope only once routing found it.
func Routes(r *httpx.Router, e Endpoints) {
	const readings = "/assets/{id}/meter_readings"
	r.Handle("POST", readings, endpoints.Serve(e.CreateReading, httpx.PathIDBody[ReadingInput], endpoints.IdempotencyKey))
	r.Handle("POST", readings+"/batch", endpoints.Serve(e.CreateReadings, decodeReadingsBatch, endpoints.IdempotencyKey))
	r.Handle("GET", readings, endpoints.Serve(e.ListReadings, decodeListReadings))
	r.Handle("GET", readings+"/{reading_id}", endpoints.Serve(e.GetReading, decodeReadingPath))
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
