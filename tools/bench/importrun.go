package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ImportResult is the bulk import: the registry command
// importing generated rows through the gateway, beside the reference
// server's POST rate of the same run.
type ImportResult struct {
	Rows          int     `json:"rows"`
	NewAssets     float64 `json:"new_assets_share"`
	WithReport    float64 `json:"with_report_share"`
	ReportBytes   int     `json:"report_bytes"`
	Seconds       float64 `json:"seconds"`
	RowsPerSec    float64 `json:"rows_per_sec"`
	Failed        bool    `json:"failed"`
	PeakRSSMiB    float64 `json:"peak_rss_mib"` // the command's
	RefPostPerSec float64 `json:"reference_post_per_sec"`
	Ratio         float64 `json:"ratio_to_reference_post"`
	// CPUSeconds is the processor time each process spent during the
	// import (the command's own as "registry"): where the cost lies.
	CPUSeconds map[string]float64 `json:"cpu_seconds"`
	// Profile is the command's CPU profile (with -profile).
	Profile string `json:"profile,omitempty"`
}

const (
	importNewAssets  = 0.30
	importWithReport = 0.25
	importReportSize = 100 << 10
)

// writeImportRows makes n rows: a fifth of the seeded organizations and
// people over and over, the seeded asset type, 30 % new serial numbers and
// the rest the seeded assets (SN<i>), and a 100 KiB report on a quarter.
func writeImportRows(path string, n, seededAssets int) error {
	report := make([]byte, importReportSize)
	_, _ = rand.Read(report)
	if err := os.WriteFile(filepath.Join(filepath.Dir(path), "report.bin"), report, 0o644); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	_ = w.Write([]string{"organization_name", "organization_registration_number", "organization_type", "organization_country",
		"person_first_name", "person_last_name", "person_date_of_birth", "asset_type_brand", "asset_type_model",
		"asset_serial_number", "action_type", "performed_at", "status_ok", "status_finalized", "document_file"})
	run := strconv.FormatInt(time.Now().Unix(), 36)
	for i := range n {
		serial := "SN" + strconv.Itoa(i%max(seededAssets, 1))
		if i%10 < int(importNewAssets*10) {
			serial = "IMP-" + run + "-" + strconv.Itoa(i)
		}
		doc := ""
		if i%4 == 0 {
			doc = "report.bin"
		}
		_ = w.Write([]string{"Import org " + strconv.Itoa(i%20), "IMP-ORG-" + strconv.Itoa(i%20), "private", "no",
			"Ola", "Import" + strconv.Itoa(i%50), "1980-01-01", benchBrand, benchModel,
			serial, "expert_control", "2025-03-14", "true", "true", doc})
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// measureImport builds the registry command, imports n generated rows
// through the gateway and measures rows per second, the command's peak
// resident set and every process's CPU time.
func (e *Env) measureImport(ctx context.Context, o Options, dir string, n int, refPost float64) (*ImportResult, error) {
	bin := filepath.Join(dir, "registry")
	build := exec.CommandContext(ctx, "go", "build", "-tags", "testhooks", "-o", bin, "./sdk/cmd/registry")
	build.Dir = o.RepoRoot
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build the registry command: %w: %s", err, out)
	}
	rows := filepath.Join(dir, "import.csv")
	if err := writeImportRows(rows, n, len(e.Assets)); err != nil {
		return nil, err
	}
	res := &ImportResult{Rows: n, NewAssets: importNewAssets, WithReport: importWithReport, ReportBytes: importReportSize,
		RefPostPerSec: refPost, CPUSeconds: map[string]float64{}}
	cmd := exec.CommandContext(ctx, bin, "import", "-quiet", rows)
	cmd.Dir = dir
	c := e.Creds
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "REGISTRY_URL=" + c.RegistryURL, "AUTH_URL=" + c.AuthURL,
		"RESOURCE=" + c.Resource, "CLIENT_ID=" + c.ClientID, "CLIENT_SECRET=" + c.ClientSecret}
	if o.Profile {
		// Absolute: the command runs in the run's temporary folder.
		out, err := filepath.Abs(o.OutDir)
		if err != nil {
			return nil, err
		}
		res.Profile = filepath.Join(out, "profiles", "import", "registry.cpu.pprof")
		_ = os.MkdirAll(filepath.Dir(res.Profile), 0o755)
		cmd.Env = append(cmd.Env, "REGISTRY_CPU_PROFILE="+res.Profile,
			"REGISTRY_HEAP_PROFILE="+filepath.Join(filepath.Dir(res.Profile), "registry.heap.pprof"))
	}
	var stderr bytes.Buffer
	cmd.Stderr = io.MultiWriter(&stderr)
	before := map[string]float64{}
	for name, p := range e.processes {
		before[name] = cpuSeconds(p.pid)
	}
	storesBefore := e.datastoreSeconds()
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	if o.Profile {
		// The services too, 20 s into the import (after the organizations,
		// people and types are found), into profiles/import beside the
		// command's own profile.
		profiled := make(chan struct{})
		defer func() { <-profiled }()
		go func() {
			defer close(profiled)
			e.profile(ctx, filepath.Dir(res.Profile), Load{Warmup: 5 * time.Second, Duration: 20 * time.Second})
		}()
	}
	// The peak resident set is read from /proc (VmHWM) while the command
	// runs, not from its rusage: Linux carries ru_maxrss across exec, and
	// os/exec starts the command from a vfork of this process, so the
	// rusage says this (larger) process's resident set instead.
	peak := make(chan float64, 1)
	stopPolling := make(chan struct{})
	go func() {
		hwm := 0.0
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			hwm = max(hwm, peakRSSMiB(cmd.Process.Pid))
			select {
			case <-stopPolling:
				peak <- hwm
				return
			case <-tick.C:
			}
		}
	}()
	err := cmd.Wait()
	res.Seconds = time.Since(start).Seconds()
	close(stopPolling)
	res.PeakRSSMiB = <-peak
	for name, p := range e.processes {
		if s := cpuSeconds(p.pid) - before[name]; s > 0.05 {
			res.CPUSeconds[name] = s
		}
	}
	for name, secs := range e.datastoreSeconds() {
		if s := secs - storesBefore[name]; s > 0.05 {
			res.CPUSeconds[name] = s
		}
	}
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			res.CPUSeconds["registry"] = time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
		}
	}
	if err != nil {
		res.Failed = true
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		return res, fmt.Errorf("import: %w: %s", err, strings.Join(lines[max(len(lines)-5, 0):], " | "))
	}
	res.RowsPerSec = float64(n) / res.Seconds
	if refPost > 0 {
		res.Ratio = res.RowsPerSec / refPost
	}
	return res, nil
}

// peakRSSMiB is a running process's peak resident set (VmHWM), 0 once it
// has ended.
func peakRSSMiB(pid int) float64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kib, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kib / 1024
		}
	}
	return 0
}

// cpuSeconds is a process's user and system time so far (/proc/pid/stat).
func cpuSeconds(pid int) float64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	_, _, cpu, _ := parseStat(string(raw))
	return cpu
}

// datastores are the servers whose CPU an import also spends, by command
// name: PostgreSQL's backends are processes of their own.
var datastores = []string{"postgres", "minio", "nats-server", "redis-server"}

// datastoreSeconds is the CPU time of the run's own datastores, by
// datastore: the servers this process started (devstack's) and their
// processes (PostgreSQL's backends under its postmaster), and, when the run
// shares a PostgreSQL (make test), the backends connected to the run's
// database, which PostgreSQL names in a backend's title. Any other
// datastore on the machine is someone else's work: counted, the suites
// make test runs beside the quick run kept the shared PostgreSQL busy, and
// waitQuiet waited up to its minute before most rows.
func (e *Env) datastoreSeconds() map[string]float64 {
	out := map[string]float64{}
	e.eachDatastoreProcess(func(_ int, name string, cpu float64) { out[name] += cpu })
	return out
}

// eachDatastoreProcess calls fn with each process of the run's own
// datastores (see datastoreSeconds) and its CPU seconds so far.
func (e *Env) eachDatastoreProcess(fn func(pid int, name string, cpu float64)) {
	type process struct {
		parent int
		name   string
		cpu    float64
	}
	processes := map[int]process{}
	entries, _ := os.ReadDir("/proc")
	for _, entry := range entries {
		pid, err := strconv.Atoi(entry.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		if name, parent, cpu, ok := parseStat(string(raw)); ok {
			processes[pid] = process{parent: parent, name: name, cpu: cpu}
		}
	}
	self := os.Getpid()
	ours := func(pid int) bool {
		for range 64 { // a parent chain longer than that is no child of ours
			if pid == self {
				return true
			}
			p, ok := processes[pid]
			if !ok || pid <= 1 {
				return false
			}
			pid = p.parent
		}
		return false
	}
	for pid, p := range processes {
		if !slices.Contains(datastores, p.name) {
			continue
		}
		if ours(pid) || (e.sharedPostgres && p.name == "postgres" && servesDatabase(pid, e.database)) {
			fn(pid, p.name, p.cpu)
		}
	}
}

// parseStat reads a process's command name, parent and user and system
// time (seconds) from its /proc/pid/stat line.
func parseStat(stat string) (name string, parent int, cpu float64, ok bool) {
	open, closing := strings.IndexByte(stat, '('), strings.LastIndexByte(stat, ')')
	if open < 0 || closing < open || closing+2 > len(stat) {
		return "", 0, 0, false
	}
	fields := strings.Fields(stat[closing+2:])
	if len(fields) < 13 {
		return "", 0, 0, false
	}
	parent, _ = strconv.Atoi(fields[1])
	utime, _ := strconv.ParseFloat(fields[11], 64)
	stime, _ := strconv.ParseFloat(fields[12], 64)
	return stat[open+1 : closing], parent, (utime + stime) / 100, true // USER_HZ
}

// servesDatabase tells whether a PostgreSQL backend is connected to
// database: its title reads "postgres: <user> <database> <client> <state>".
func servesDatabase(pid int, database string) bool {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	fields := strings.Fields(strings.ReplaceAll(string(raw), "\x00", " "))
	return len(fields) >= 3 && fields[0] == "postgres:" && fields[2] == database
}

// printImport adds the import's lines to the table.
func (r *ImportResult) print(w io.Writer) {
	fmt.Fprintf(w, "\nimport (registry import, %d rows: %.0f %% new assets, %.0f %% with a %d KiB report, through the gateway)\n",
		r.Rows, r.NewAssets*100, r.WithReport*100, r.ReportBytes>>10)
	fmt.Fprintf(w, "  %.0f rows/s in %.1f s; ÷ reference POST %.0f req/s = %.3f (goal ≥ 0.1); peak RSS %.0f MiB (goal < 100)\n",
		r.RowsPerSec, r.Seconds, r.RefPostPerSec, r.Ratio, r.PeakRSSMiB)
	names := make([]string, 0, len(r.CPUSeconds))
	for n := range r.CPUSeconds {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int { return int(r.CPUSeconds[b]*1000 - r.CPUSeconds[a]*1000) })
	var parts []string
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s %.1f s", n, r.CPUSeconds[n]))
	}
	fmt.Fprintf(w, "  CPU time during the import: %s\n", strings.Join(parts, ", "))
	if r.Profile != "" {
		fmt.Fprintf(w, "  the command's CPU profile: %s\n", r.Profile)
	}
}
