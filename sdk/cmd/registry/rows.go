package main

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
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

// formulaStarts are the first characters that make a spreadsheet read a
// CSV cell as a formula (or, tab and carriage return, hide one after
// them): a value such as =HYPERLINK(...) or @SUM(...) in a registry field
// would run on the machine of whoever opens an export.
const formulaStarts = "=+-@\t\r"

// spreadsheetText is a value as export writes it in a CSV cell: one that
// starts like a formula gets a leading ' (the usual mark of "text, not a
// formula"), and so does one that starts with ', so that plainText can
// tell the mark from the value and import reads back exactly what was
// exported.
func spreadsheetText(v string) string {
	if v != "" && strings.IndexByte(formulaStarts+"'", v[0]) >= 0 {
		return "'" + v
	}
	return v
}

// plainText undoes spreadsheetText for a CSV cell import reads: a leading
// ' is dropped when what follows starts like a formula or with '. Any
// other leading ' is the value's own (a name such as 't Hooft).
func plainText(cell string) string {
	if len(cell) > 1 && cell[0] == '\'' && strings.IndexByte(formulaStarts+"'", cell[1]) >= 0 {
		return cell[1:]
	}
	return cell
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
					out.values[header[i]] = plainText(v)
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

// builtinActionTypes are the action types every registry has: what
// -dry-run, which asks the registry nothing, knows. A real run checks
// against the names GET /action_types lists (an admin may add some).
var builtinActionTypes = []string{"expert_control", "maintenance", "pre_use_inspection", "repair"}

// validate checks a row the way the registry would, without calling it:
// what -dry-run reports, and what a real run refuses before writing.
// actionTypes are the names an action_type may take.
func validate(r row, docs *documentsFolder, actionTypes []string) []rowError {
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
	if v := r.get("action_type"); v != "" && !slices.Contains(actionTypes, v) {
		bad("action_type", "must be one of "+strings.Join(actionTypes, ", "))
	}
	date("performed_at")
	date("status_valid_through")
	boolean("status_ok")
	boolean("status_use_ok")
	boolean("status_finalized")
	object("data")
	object("meta_data")
	if v := r.get("document_file"); v != "" {
		if problem := docs.check(v); problem != "" {
			bad("document_file", problem)
		}
		if t := r.get("document_type"); t != "" && !token.MatchString(t) {
			bad("document_type", "not a lowercase token")
		}
	} else if anySet("document_type", "document_source_reference") {
		bad("document_file", "required with document_type or document_source_reference")
	}
	return errs
}

// documentsFolder is the one folder the rows' document files are read
// from: the import file's, or -documents. A row names a file inside it by
// a relative path; an absolute path, a ".." that climbs out or a symbolic
// link that leads out is refused, so that rows from someone else (a
// partner's CSV) cannot make the command upload any file its user can read
// (~/.ssh/id_ed25519, /etc/shadow on a careless server). os.Root holds the
// confinement, symbolic links and all, in the operating system's own
// lookups, so there is no window between a check and the open.
type documentsFolder struct {
	dir  string
	root *os.Root
}

func openDocumentsFolder(dir string) (*documentsFolder, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, usageError{"the documents folder: " + oneLine(err)}
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, usageError{"the documents folder: " + oneLine(err)}
	}
	return &documentsFolder{dir: abs, root: root}, nil
}

func (d *documentsFolder) Close() error { return d.root.Close() }

// check says what is wrong with a row's document_file, or "" when it names
// a regular file inside the folder.
func (d *documentsFolder) check(name string) string {
	st, err := d.stat(name)
	if err != nil {
		return err.Error()
	}
	if !st.Mode().IsRegular() {
		return "not a regular file"
	}
	return ""
}

func (d *documentsFolder) stat(name string) (os.FileInfo, error) {
	if err := d.confined(name); err != nil {
		return nil, err
	}
	st, err := d.root.Stat(name)
	return st, d.explain(name, err)
}

// open opens a row's document file for its upload.
func (d *documentsFolder) open(name string) (*os.File, error) {
	if err := d.confined(name); err != nil {
		return nil, err
	}
	f, err := d.root.Open(name)
	if err != nil {
		return nil, d.explain(name, err)
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%q is not a regular file", name)
	}
	return f, nil
}

// confined refuses, by its spelling alone, a name that leaves the folder.
func (d *documentsFolder) confined(name string) error {
	switch {
	case filepath.IsAbs(name) || strings.HasPrefix(name, "/") || strings.HasPrefix(name, `\`):
		return fmt.Errorf("%q is an absolute path; name the file relative to the documents folder %s", name, d.dir)
	case !filepath.IsLocal(name):
		return fmt.Errorf("%q leaves the documents folder %s; only files inside it are uploaded (-documents names another)", name, d.dir)
	}
	return nil
}

// explain turns os.Root's errors into the row's problem. A name that is
// spelled inside the folder and still escapes it goes through a symbolic
// link that leads out (os.Root's error is then not the system's own).
func (d *documentsFolder) explain(name string, err error) error {
	var errno syscall.Errno
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%q: no such file in the documents folder %s", name, d.dir)
	case !errors.As(err, &errno):
		return fmt.Errorf("%q leads out of the documents folder %s through a symbolic link; only files inside it are uploaded", name, d.dir)
	}
	return errors.New(oneLine(err))
}
