package meters

import (
	"net/http"

	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/httpx"
)

// Routes adds the routes of meter readings to r (the assets' router).
// Each checks its scope only once routing found it.
func Routes(r *httpx.Router, e Endpoints) {
	handle := r.Handle
	handle("POST", "/assets/{id}/meter_readings", endpoints.Serve(e.CreateReading, httpx.PathIDBody[ReadingInput], endpoints.IdempotencyKey))
	handle("GET", "/assets/{id}/meter_readings", endpoints.Serve(e.ListReadings, decodeListReadings))
	handle("GET", "/assets/{id}/meter_readings/{reading_id}", endpoints.Serve(e.GetReading, decodeReadingPath))
}

func decodeListReadings(r *http.Request) (httpx.ListRequest[ReadingFilter], error) {
	id, err := httpx.PathUUID(r, "id")
	if err != nil {
		return httpx.ListRequest[ReadingFilter]{}, err
	}
	q := httpx.ParseQuery(r, "limit", "cursor", "meter")
	req := httpx.ListRequest[ReadingFilter]{Filter: ReadingFilter{AssetID: id, Meter: q.String("meter")}, Page: q.Page()}
	return req, q.Err()
}

// decodeReadingPath reads the asset's and the reading's ids; the
// operation takes no query parameters.
func decodeReadingPath(r *http.Request) (readingPath, error) {
	assetID, err := httpx.PathID(r)
	if err != nil {
		return readingPath{}, err
	}
	id, err := httpx.PathUUID(r, "reading_id")
	return readingPath{AssetID: assetID, ID: id}, err
}
