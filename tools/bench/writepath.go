package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"strconv"
	"time"
)

// The write path's rows: a batch of actions, and the whole
// recording flow of the interface as one row.

// BatchSize is how many actions one POST /actions/batch of the row carries.
const BatchSize = 100

// Names of the write path's rows.
const (
	ActionsBatch = "POST /actions/batch, 100 actions"
	FlowName     = "recording flow: organization … action document · gateway"
)

// ActionsBatchCall is a batch of BatchSize actions, each naming a seeded
// asset, person and organization, as createAction does. A batch takes
// longer than a QUICK=1 window on a busy machine, so its rows' window is
// at least two seconds.
var ActionsBatchCall = Call{Name: ActionsBatch, Service: "actions", Limit: RefPost, MinWindow: 2 * time.Second,
	Request: func(e *Env, w *Worker) Request {
		items := make([]json.RawMessage, BatchSize)
		for i := range items {
			items[i] = actionBody(e, w, fmt.Sprintf("%s-%d-%d", w.Tag, w.N, i))
		}
		body, _ := json.Marshal(map[string]any{"items": items})
		return Request{Method: "POST", Path: "/actions/batch", Body: body, Want: 200}
	}}

// FlowRow is what an integration does to record one inspection, through
// the gateway, each call after the one before: an organization and a
// person found or created, linked, the asset type and the asset found or
// created, the action, the report uploaded and linked to the action. Its
// req/s is flows per second; each worker's flows are new organizations,
// people and assets, with one asset type per worker. One flow is eight
// calls in a row, longer than a QUICK=1 window on a busy machine, so the
// row's window is at least two seconds.
var FlowRow = Row{Name: FlowName, Via: "gateway", MinWindow: 2 * time.Second, Op: func(e *Env) (Op, error) {
	report, contentType, err := smallReport()
	if err != nil {
		return Op{}, err
	}
	base := e.Stack.RegistryURL
	return Op{Do: func(ctx context.Context, w *Worker) error {
		n := w.Tag + "-" + strconv.Itoa(w.N)
		id := func(r Request) (string, error) {
			raw, err := e.send(ctx, base, r)
			if err != nil {
				return "", err
			}
			var v struct {
				ID string `json:"id"`
			}
			if err := json.Unmarshal(raw, &v); err != nil || v.ID == "" {
				return "", fmt.Errorf("%s %s: no id in %s", r.Method, r.Path, raw)
			}
			return v.ID, nil
		}
		jsonReq := func(method, path string, body any, want int) Request {
			raw, _ := json.Marshal(body)
			return Request{Method: method, Path: path, Body: raw, Want: want}
		}
		// Organizations have no find with create: a create, as an
		// integration that keeps the id does.
		org, err := id(jsonReq("POST", "/organizations", map[string]any{"name": "Flow " + n, "registration_number": "F" + n,
			"organization_type": "private", "country": "no"}, 201))
		if err != nil {
			return err
		}
		person, err := id(jsonReq("POST", "/people/find?create=true", map[string]any{"first_name": "Flow", "last_name": n,
			"date_of_birth": "1980-01-01"}, 201))
		if err != nil {
			return err
		}
		if _, err := e.send(ctx, base, Request{Method: "POST", Want: 201,
			Path: "/people/" + person + "/organizations/" + org + "?relation_type=employee"}); err != nil {
			return err
		}
		// One asset type per worker, created by its first flow.
		model := "Flow-" + strconv.Itoa(w.ID)
		raw, err := e.send(ctx, base, Request{Method: "GET", Want: 200,
			Path: "/asset_types/by_brand_and_model?brand=Flow&model=" + model})
		if err != nil {
			return err
		}
		var types []struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(raw, &types); err != nil {
			return err
		}
		if len(types) == 0 {
			if _, err := id(jsonReq("POST", "/asset_types", map[string]any{"brand": "Flow", "model": model}, 201)); err != nil {
				return err
			}
		}
		asset, err := id(jsonReq("POST", "/assets/find?create=true", map[string]any{"serial_number": "FSN" + n,
			"brand": "Flow", "model": model}, 201))
		if err != nil {
			return err
		}
		action, err := id(jsonReq("POST", "/actions", map[string]any{"asset_id": asset, "action_type": "expert_control",
			"performed_at": "2025-03-14", "person_id": person, "organization_id": org, "status_ok": true,
			"status_finalized": true, "status_valid_through": "2026-03-14"}, 201))
		if err != nil {
			return err
		}
		document, err := id(Request{Method: "POST", Path: "/documents", Body: report, ContentType: contentType, Want: 201})
		if err != nil {
			return err
		}
		_, err = e.send(ctx, base, jsonReq("POST", "/actions/"+action+"/action_documents", map[string]any{"action_id": action,
			"document_id": document, "source_system": "bench", "source_reference": n}, 201))
		return err
	}}, nil
}}

// smallReport is the flow's upload: a 16 KiB report as multipart/form-data.
func smallReport() ([]byte, string, error) {
	var buf bytes.Buffer
	form := multipart.NewWriter(&buf)
	if err := form.WriteField("document_type", "expert_control_report"); err != nil {
		return nil, "", err
	}
	part, err := form.CreateFormFile("file", "report.pdf")
	if err != nil {
		return nil, "", err
	}
	file := make([]byte, 16<<10)
	fillRandom(file, 2)
	copy(file, "%PDF-1.7\n")
	if _, err := part.Write(file); err != nil {
		return nil, "", err
	}
	if err := form.Close(); err != nil {
		return nil, "", err
	}
	return buf.Bytes(), form.FormDataContentType(), nil
}
