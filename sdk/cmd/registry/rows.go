package main

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The columns of an import row: one recording of the flow organization,
// person, link, asset type, asset, action, document, action document.
// Export writes the same columns, so its output imports again.
var rowColumns = []string{
	"organization_name", "organization_registration_number", "organization_type", "organization_country",
	"person_first_name", "person_last_name", "person_date_of_birth", "relation_type",
	"asset_type_brand", "asset_type_model", "asset_type_version",
	"asset_serial_number", "asset_production_year",
	"action_type", "performed_at", "action_subtype", "reference", "status",
	"status_ok", "status_use_ok", "status_finalized", "status_valid_through",
	"source_system", "source_reference", "performed_by_person", "performed_by_organization",
	"data", "meta_data",
	"document_file", "document_type", "document_source_reference",
}

// row is one input row: its number (1 is the first after a CSV header, or
// the first line of NDJSON) and its values by column.
type row struct {
	n      int
	values map[string]string
	err    *rowError // the row could not be read at all
}

func (r row) get(col string) string { return strings.TrimSpace(r.values[col]) }

// rowError is one problem of one row, for the error report.
type rowError struct {
	Row     int
	Field   string
	Problem string
}

func (e rowError) String() string {
	if e.Field == "" {
		return fmt.Sprintf("row %d: %s", e.Row, e.Problem)
	}
	return fmt.Sprintf("row %d: %s: %s", e.Row, e.Field, e.Problem)
}

// format of an input file, from its extension unless told.
func formatOf(path, told string) (string, error) {
	if told != "" {
		if told != "csv" && told != "ndjson" {
			return "", usageError{fmt.Sprintf("-format %q: must be csv or ndjson", told)}
		}
		return told, nil
	}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".csv":
		return "csv", nil
	case ".ndjson", ".jsonl":
		return "ndjson", nil
	}
	return "", usageError{fmt.Sprintf("%s: cannot tell csv from ndjson by its extension; give -format", path)}
}

// readRows streams the rows of a file. A header that names an unknown
// column stops it before any row (a usage error); a malformed line is that
// row's error, and reading goes on.
func readRows(path, format string, yield func(row) bool) error {
	f, err := os.Open(path)
	if err != nil {
		return usageError{"the import file: " + oneLine(err)}
	}
	defer f.Close()
	if format == "ndjson" {
		return readNDJSON(f, path, yield)
	}
	return readCSV(f, path, yield)
}

func readCSV(f io.Reader, path string, yield func(row) bool) error {
	r := csv.NewReader(bufio.NewReaderSize(f, 64<<10))
	r.FieldsPerRecord = -1
	r.ReuseRecord = true
	header, err := r.Read()
	if err != nil {
		return usageError{fmt.Sprintf("%s: no header line: %s", path, oneLine(err))}
	}
	header = slices.Clone(header)
	for i, h := range header {
		header[i] = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
		if !slices.Contains(rowColumns, header[i]) {
			return usageError{fmt.Sprintf("%s: unknown column %q in the header (the columns are: %s)", path, header[i], strings.Join(rowColumns, ", "))}
		}
	}
	for n := 1; ; n++ {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		out := row{n: n}
		var pe *csv.ParseError
		switch {
		case errors.As(err, &pe):
			out.err = &rowError{Row: n, Problem: fmt.Sprintf("malformed CSV at line %d: %s", pe.Line, pe.Err)}
		case err != nil:
			return fmt.Errorf("%s: %w", path, err)
		case len(rec) != len(header):
			out.err = &rowError{Row: n, Problem: fmt.Sprintf("%d fields where the header has %d", len(rec), len(header))}
		default:
			out.values = make(map[string]string, len(header))
			for i, v := range rec {
				if v != "" {
					out.values[header[i]] = v
				}
			}
		}
		if !yield(out) {
			return nil
		}
	}
}

func readNDJSON(f io.Reader, path string, yield func(row) bool) error {
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 64<<10), 4<<20)
	for n := 1; s.Scan(); n++ {
		line := strings.TrimSpace(s.Text())
		out := row{n: n}
		if line == "" {
			continue
		}
		var obj map[string]any
		if err := json.Unmarshal([]byte(line), &obj); err != nil {
			out.err = &rowError{Row: n, Problem: "not a JSON object: " + oneLine(err)}
		} else {
			out.values = make(map[string]string, len(obj))
			for k, v := range obj {
				if !slices.Contains(rowColumns, k) {
					out.err = &rowError{Row: n, Field: k, Problem: "unknown column (the columns are: " + strings.Join(rowColumns, ", ") + ")"}
					break
				}
				switch v := v.(type) {
				case nil:
				case string:
					out.values[k] = v
				case map[string]any, []any:
					raw, _ := json.Marshal(v)
					out.values[k] = string(raw)
				default:
					out.values[k] = fmt.Sprint(v)
				}
			}
		}
		if !yield(out) {
			return nil
		}
	}
	if err := s.Err(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

var (
	token       = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)
	countryCode = regexp.MustCompile(`^[A-Za-z]{2}$`)
)

// validate checks a row the way the registry would, without calling it:
// what -dry-run reports, and what a real run refuses before writing.
func validate(r row, baseDir string) []rowError {
	var errs []rowError
	bad := func(field, problem string) { errs = append(errs, rowError{Row: r.n, Field: field, Problem: problem}) }
	anySet := func(cols ...string) bool {
		return slices.ContainsFunc(cols, func(c string) bool { return r.get(c) != "" })
	}
	require := func(cols ...string) {
		for _, c := range cols {
			if r.get(c) == "" {
				bad(c, "required")
			}
		}
	}
	date := func(col string) {
		if v := r.get(col); v != "" {
			if _, err := time.Parse(time.DateOnly, v); err != nil {
				bad(col, "not a date (YYYY-MM-DD)")
			}
		}
	}
	boolean := func(col string) {
		if v := r.get(col); v != "" {
			if _, err := strconv.ParseBool(v); err != nil {
				bad(col, "not true or false")
			}
		}
	}
	object := func(col string) {
		if v := r.get(col); v != "" {
			var m map[string]any
			if err := json.Unmarshal([]byte(v), &m); err != nil || m == nil {
				bad(col, "not a JSON object")
			}
		}
	}
	if anySet("organization_name", "organization_registration_number", "organization_type", "organization_country") {
		require("organization_name", "organization_registration_number", "organization_type")
		if v := r.get("organization_type"); v != "" && !slices.Contains([]string{"private", "public", "non_profit", "governmental", "unclassified"}, v) {
			bad("organization_type", "must be one of private, public, non_profit, governmental, unclassified")
		}
		if v := r.get("organization_country"); v != "" && !countryCode.MatchString(v) {
			bad("organization_country", "not an ISO 3166-1 alpha-2 code")
		}
	}
	if anySet("person_first_name", "person_last_name", "person_date_of_birth") {
		require("person_first_name", "person_last_name")
		date("person_date_of_birth")
	}
	if v := r.get("relation_type"); v != "" && !token.MatchString(v) {
		bad("relation_type", "not a lowercase token")
	}
	require("asset_type_brand", "asset_type_model", "asset_serial_number", "action_type", "performed_at")
	if v := r.get("asset_production_year"); v != "" {
		if y, err := strconv.Atoi(v); err != nil || y < 1900 || y > time.Now().Year()+1 {
			bad("asset_production_year", "not a year from 1900 to next year")
		}
	}
	if v := r.get("action_type"); v != "" && !slices.Contains([]string{"expert_control", "maintenance", "pre_use_inspection", "repair"}, v) {
		bad("action_type", "must be one of expert_control, maintenance, pre_use_inspection, repair")
	}
	date("performed_at")
	date("status_valid_through")
	boolean("status_ok")
	boolean("status_use_ok")
	boolean("status_finalized")
	object("data")
	object("meta_data")
	if v := r.get("document_file"); v != "" {
		if st, err := os.Stat(documentPath(baseDir, v)); err != nil {
			bad("document_file", oneLine(err))
		} else if !st.Mode().IsRegular() {
			bad("document_file", "not a regular file")
		}
		if t := r.get("document_type"); t != "" && !token.MatchString(t) {
			bad("document_type", "not a lowercase token")
		}
	} else if anySet("document_type", "document_source_reference") {
		bad("document_file", "required with document_type or document_source_reference")
	}
	return errs
}

// documentPath resolves a row's document file against the import file's
// folder, so a folder of rows and reports moves as one.
func documentPath(baseDir, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(baseDir, p)
}
