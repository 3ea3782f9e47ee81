// Command loadtest is `make bench`: it starts a private registry (the real
// binaries on free ports) beside the limits of this machine and measures
// every row of tools/bench with one client loop, then prints the table and
// writes <out>/results.json. See tools/bench.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/assetregistry/registry/tools/bench"
)

func main() {
	bench.ChildMain() // the reference server and the bare proxy are this binary too
	var o bench.Options
	var rows string
	quick := flag.Bool("quick", false, "a seconds-long smoke run: tiny seed, one short round")
	flag.StringVar(&o.BinDir, "bin", "bin", "directory with the built binaries")
	flag.StringVar(&o.OutDir, "out", "bench", "where results.json and profiles/ go")
	flag.StringVar(&o.RepoRoot, "root", ".", "repository root (the parties migrations shape the reference schema)")
	flag.IntVar(&o.Load.Concurrency, "concurrency", 16, "concurrent clients, the same for every row")
	flag.DurationVar(&o.Load.Warmup, "warmup", time.Second, "per row, run but not counted")
	flag.DurationVar(&o.Load.Duration, "duration", 5*time.Second, "per row, measured")
	flag.IntVar(&o.Rounds, "rounds", 3, "times every row runs; ratios are taken within a round")
	flag.IntVar(&o.Organizations, "organizations", 1000, "organizations to seed")
	flag.IntVar(&o.People, "people", 2000, "people to seed")
	flag.IntVar(&o.Assets, "assets", 1000, "assets to seed")
	flag.IntVar(&o.Actions, "actions", 1_000_000, "actions to copy into the actions table (the deep pages of GET /actions)")
	flag.IntVar(&o.ComplianceAssets, "compliance-assets", 1_000_000, "assets to copy into the compliance read model (GET /compliance rows)")
	flag.IntVar(&o.ComplianceActions, "compliance-actions", 5_000_000, "actions to copy for the GET /compliance rows")
	flag.IntVar(&o.ComplianceOrganizations, "compliance-organizations", 10_000, "organizations owning the compliance rows' assets in turn, the bound client's among them")
	flag.Int64Var(&o.UploadSize, "upload-size", 8<<20, "bytes of the file the upload rows send")
	flag.Int64Var(&o.LargeUpload, "large-upload", 1<<30, "bytes of the file the one-client large upload streams")
	flag.BoolVar(&o.Profile, "profile", false, "save CPU and heap profiles of every process under each row (first round) in <out>/profiles; with -soak, heap profiles at the end of the warm-up and of the run in <out>/profiles/soak")
	flag.IntVar(&o.ImportRows, "import-rows", 100_000, "rows the registry command imports after the table (0: none)")
	baseline := flag.String("baseline", "", "a baseline file (tools/bench/baseline.json): this run's ratios are compared with it and those that fell more than 10 % named")
	writeBaseline := flag.Bool("write-baseline", false, "write this run's ratios to the -baseline file instead of comparing with it")
	flag.StringVar(&rows, "rows", "", "regular expression: only these rows (and the limits they are divided by)")
	soak := flag.Duration("soak", 0, "instead of the table, soak the stack this long (make soak): the mixed load at a share of its measured capacity beside a client over its budget")
	soakProbe := flag.Duration("soak-probe", 45*time.Second, "the soak's capacity probe")
	soakShare := flag.Float64("soak-share", 0.5, "share of the probed capacity the soak runs at")
	soakBudget := flag.String("soak-noisy-budget", "6000/60s", "the noisy client's rate-limit budget (the gateway's default)")
	soakTimes := flag.Float64("soak-noisy-times", 10, "the noisy client calls at this multiple of its budget's sustained rate")
	soakEvery := flag.Duration("soak-every", 10*time.Second, "how often the soak samples")
	flag.Parse()
	explicit := func(name string) bool {
		set := false
		flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
		return set
	}
	if *quick {
		o.Load.Warmup, o.Load.Duration, o.Rounds, o.Organizations, o.People = 100*time.Millisecond, 500*time.Millisecond, 1, 50, 100
		o.Assets, o.Actions, o.UploadSize, o.LargeUpload = 50, 20_000, 2<<20, 16<<20
		if !explicit("import-rows") {
			o.ImportRows = 1000
		}
		o.ComplianceAssets, o.ComplianceActions, o.ComplianceOrganizations = 20_000, 100_000, 200
		o.LogLeaves = bench.QuickLogLeaves
	}
	if rows != "" {
		re, err := regexp.Compile(rows)
		if err != nil {
			fmt.Fprintln(os.Stderr, "loadtest: -rows:", err)
			os.Exit(2)
		}
		o.Rows = re
	}
	o.Progress = os.Stdout
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if *soak > 0 {
		os.Exit(runSoak(ctx, bench.SoakOptions{BinDir: o.BinDir, OutDir: o.OutDir, RepoRoot: o.RepoRoot,
			Duration: *soak, Probe: *soakProbe, Concurrency: o.Load.Concurrency, Share: *soakShare,
			NoisyBudget: *soakBudget, NoisyTimes: *soakTimes, Every: *soakEvery, Profile: o.Profile,
			Organizations: o.Organizations, People: o.People, Assets: o.Assets, Progress: os.Stdout}))
	}
	res, err := bench.Run(ctx, o)
	if res != nil {
		res.Print(os.Stdout)
		fmt.Printf("\nwrote %s/results.json\n", o.OutDir)
		if berr := againstBaseline(res, *baseline, *writeBaseline); berr != nil {
			fmt.Fprintln(os.Stderr, "loadtest:", berr)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadtest:", err)
		os.Exit(1)
	}
}

// runSoak is make soak: the exit status is 1 when a check failed or the
// run could not judge.
func runSoak(ctx context.Context, so bench.SoakOptions) int {
	res, err := bench.RunSoak(ctx, so)
	if res != nil {
		res.Print(os.Stdout)
		fmt.Printf("\nwrote %s/soak.json\n", so.OutDir)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadtest: soak:", err)
		return 1
	}
	if !res.Passed {
		return 1
	}
	return 0
}

// againstBaseline compares the run with the baseline at path, or writes
// the run's ratios there (write). A fall is reported, never an exit
// status: the machines are noisy.
func againstBaseline(res *bench.Results, path string, write bool) error {
	if path == "" {
		return nil
	}
	if write {
		if err := bench.WriteBaseline(path, res.Baseline("bin/loadtest "+strings.Join(os.Args[1:], " "))); err != nil {
			return err
		}
		fmt.Printf("wrote the baseline %s\n", path)
		return nil
	}
	b, ok, err := bench.ReadBaseline(path)
	if err != nil || !ok {
		return err
	}
	bench.PrintComparison(os.Stdout, b, res.Compare(b))
	return nil
}
