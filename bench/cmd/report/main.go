// Command report runs packwheel's benchmark matrix and the work-unit
// workload, and writes the results where people can look at them:
//
//	results.md     every table: medians of several runs, ratios to timer-reset
//	summary.md     the README's performance section, made from the same figures
//	churn.png      churn ns/op against n, log-log, every implementation
//	raw.txt        the benchmarks' output, for benchstat, with the run's settings
//	benchstat.txt  benchstat's summary of raw.txt: medians with 95% confidence intervals
//	workunits.txt  one line per work-unit run
//	instructions.txt the work units' instruction counts, if -instructions made them
//
// It writes them to a new temporary directory, which it names, unless
// -out names another; it replaces the committed results only when asked
// to by name, -out results -readme, which also rewrites README.md's
// performance block from them (readme.go). A row the committed results
// have is never dropped without a word: a measurement into a directory
// with runs of the C++ reference needs -reference to run it again, and
// -instructions without -reference keeps the reference's count.
//
// How to run it, how long each run takes and what each figure means:
// bench/README.md. It checks its flags, the programs they call for and the
// output directory before it measures anything, and exits 2 if they will
// not do (TestInputsCheckedFirst); 1 if a measurement fails.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/packwheel/packwheel/internal/cli"
)

func main() {
	os.Exit(cli.Status("report", run(os.Args[1:]), os.Stderr))
}

// options is what the command line asks for, checked by parseOptions.
type options struct {
	count, workCount int
	benchtime        string
	sizes, pairs     []int
	reference        string
	dir              string // output directory; "" for a new temporary one
	readme           bool   // rewrite README.md's block: dir is the committed results
	regen            bool
	instructions     int    // pairs to count instructions at; 0 for none
	counted          []byte // what instrFile in dir held before -instructions rewrites it
}

// measuring reports whether o times anything: -regen and -instructions
// do not.
func (o options) measuring() bool { return o.instructions == 0 && !o.regen }

// run does what args ask. Every input it can check, it checks before
// measuring anything: a full report takes most of an hour.
func run(args []string) error {
	o, err := parseOptions(args)
	if err != nil {
		return err
	}
	dir := o.dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "packwheel-report-"); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "report: writing to %s, a new temporary directory (-out results -readme replaces the committed results)\n", dir)
	}
	switch {
	case o.instructions > 0:
		if err := measureInstructions(dir, o.instructions, o.reference, o.counted); err != nil {
			return err
		}
	case !o.regen:
		if err := measure(dir, o.count, o.benchtime, o.sizes, o.pairs, o.workCount, o.reference); err != nil {
			return err
		}
	}
	return generate(dir, o.readme)
}

// parseOptions parses args and checks them, the tools they call for and
// the output directory, returning a cli.UsageError for anything that
// would otherwise fail only after the measuring. It makes the output
// directory a measurement writes to.
func parseOptions(args []string) (options, error) {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	quick := fs.Bool("quick", false, "sizes up to 100k, short runs, 1,000 work-unit pairs: about two minutes, a check that the report runs")
	count := fs.Int("count", 5, "runs of each benchmark; figures are medians")
	benchtime := fs.String("benchtime", "1s", "go test -benchtime for each run: a duration, or Nx")
	sizes := fs.String("sizes", "10000,100000,1000000,10000000", "numbers of outstanding timers, comma-separated")
	pairs := fs.String("pairs", "1000,8000", "work-unit pair counts, comma-separated; empty for none")
	workCount := fs.Int("workcount", 3, "runs of each work-unit configuration")
	reference := fs.String("reference", "", "the C++ reference's benchmark binary (Ratas's test_benchmark), run beside the work units; empty for none")
	out := fs.String("out", "", "output `directory`; results, the committed results, needs -readme too (default: a new temporary directory)")
	readme := fs.Bool("readme", false, "with -out results: rewrite README.md's performance block from them")
	regen := fs.Bool("regen", false, "measure nothing: rewrite the tables and the chart from the raw files in -out")
	instructions := fs.Int("instructions", 0, "time nothing: count the instructions the work units execute at this many pairs, range on, "+
		"under valgrind's callgrind (beside -reference's if given), write instructions.txt to -out and regenerate from the raw files there; 0 for none")
	if err := cli.Parse(fs, args); err != nil {
		return options{}, err
	}
	o := options{count: *count, workCount: *workCount, benchtime: *benchtime, reference: *reference,
		dir: *out, readme: *readme, regen: *regen, instructions: *instructions}
	if *quick {
		o.count, o.benchtime, *sizes, *pairs, o.workCount = 3, "100ms", "10000,100000", "1000", 1
	}
	if _, err := os.Stat("go.mod"); err != nil {
		return o, cli.Usagef("run from the bench module's directory: %w", err)
	}
	var err error
	if o.sizes, err = parseInts("-sizes", *sizes); err != nil {
		return o, err
	}
	if o.pairs, err = parseInts("-pairs", *pairs); err != nil {
		return o, err
	}
	measuring := o.measuring()
	switch {
	case o.instructions < 0:
		return o, cli.Usagef("-instructions %d: want a number of pairs, or 0 for none", o.instructions)
	case *quick && !measuring:
		return o, cli.Usagef("-quick sets how to measure; -regen and -instructions time nothing")
	case o.count < 1:
		return o, cli.Usagef("-count %d: want at least 1", o.count)
	case o.workCount < 1:
		return o, cli.Usagef("-workcount %d: want at least 1", o.workCount)
	case measuring && len(o.sizes) == 0:
		return o, cli.Usagef("-sizes %q: want at least one size", *sizes)
	}
	if err := checkBenchtime(o.benchtime); err != nil {
		return o, err
	}
	if o.reference != "" {
		// As exec.Command will look for it.
		if _, err := exec.LookPath(o.reference); err != nil {
			return o, cli.Usagef("-reference: %w", err)
		}
		// Which times it (runReference).
		if err := exec.Command(gnuTime, "-f", timeFormat, "-o", os.DevNull, "true").Run(); err != nil {
			return o, cli.Usagef("-reference is timed by GNU time, %s (Debian: apt-get install time): %w", gnuTime, err)
		}
	}
	return o, checkOut(&o, *quick)
}

// checkOut checks the output directory o asks for, quick or not: that it
// may be written, and that the run replaces nothing it was not asked to and
// drops no row without a word; it makes the directory, and reads what
// -instructions will rewrite. It returns a cli.UsageError if the directory
// will not do.
func checkOut(o *options, quick bool) error {
	measuring := o.measuring()
	committed := o.dir != "" && sameDir(o.dir, committedResults)
	switch {
	case committed && !o.readme:
		return cli.Usagef("-out %s is the committed results, from which README.md's performance block is made: "+
			"add -readme to rewrite that block with them, or give another -out", o.dir)
	case o.readme && !committed:
		return cli.Usagef("-readme rewrites README.md's performance block, which is made from the committed results: give -out %s too",
			committedResults)
	case committed && quick:
		return cli.Usagef("-quick runs too briefly for figures to commit: leave out -quick, or -out")
	case o.dir == "" && !measuring:
		return cli.Usagef("-regen and -instructions make the tables from the files a measurement wrote: " +
			"give -out such a directory (results with -readme, or that of an earlier run)")
	case o.dir == "":
		return nil // a new temporary directory
	}
	if !measuring {
		// Both regenerate the tables from what a measurement left in dir.
		for _, name := range []string{rawFile, workFile} {
			if _, err := os.Stat(filepath.Join(o.dir, name)); err != nil {
				return cli.Usagef("-out %s has no %s: -regen and -instructions make the tables from the files a measurement "+
					"wrote there; give -out such a directory (results, or that of an earlier run): %w", o.dir, name, err)
			}
		}
	}
	if o.instructions > 0 {
		for _, tool := range []string{"valgrind", "callgrind_annotate"} {
			if _, err := exec.LookPath(tool); err != nil {
				return cli.Usagef("-instructions needs %s (Debian: apt-get install valgrind): %w", tool, err)
			}
		}
		data, err := os.ReadFile(filepath.Join(o.dir, instrFile))
		if err != nil && !os.IsNotExist(err) {
			return cli.Usagef("-out: %w", err)
		}
		if _, err := parseInstructions(bytes.NewReader(data)); err != nil {
			return cli.Usagef("-out %s: %w", o.dir, err)
		}
		o.counted = data
	}
	if err := checkWritable(o.dir); err != nil {
		return err
	}
	if measuring && o.reference == "" {
		// A timing, unlike an instruction count, cannot be carried over
		// from another run.
		if pairs, err := referenceRows(filepath.Join(o.dir, workFile)); err != nil {
			return cli.Usagef("-out %s: %w", o.dir, err)
		} else if len(pairs) > 0 {
			return cli.Usagef("-out %s has work-unit runs of the C++ reference (%s) at %v pairs, which this run would drop: "+
				"give -reference PATH, Ratas's test_benchmark, to run it again, or another -out", o.dir, referenceImpl, pairs)
		}
	}
	return nil
}

// checkBenchtime refuses a -benchtime go test would refuse, which it
// would do only once the benchmarks had been built.
func checkBenchtime(s string) error {
	if n, ok := strings.CutSuffix(s, "x"); ok {
		if v, err := strconv.Atoi(n); err == nil && v > 0 {
			return nil
		}
	} else if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return nil
	}
	return cli.Usagef("-benchtime %q: want a positive duration, such as 1s, or a count of iterations, such as 100x", s)
}

// checkWritable makes dir if need be and checks that a file can be
// written in it, where the results will go at the end.
func checkWritable(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return cli.Usagef("-out: %w", err)
	}
	f, err := os.CreateTemp(dir, ".report-check-*")
	if err != nil {
		return cli.Usagef("-out: %w", err)
	}
	return errors.Join(f.Close(), os.Remove(f.Name()))
}

// The files a measurement writes, from which generate makes the others.
const (
	rawFile  = "raw.txt"       // benchmark output, with the run's settings as configuration lines
	workFile = "workunits.txt" // one line per work-unit run
)

// measure runs the benchmarks and the work units and writes the raw files.
// The run's settings go into raw.txt as configuration lines, which benchstat
// shows and generate reads back.
func measure(dir string, count int, benchtime string, sizes, pairs []int, workCount int, reference string) error {
	start := time.Now()
	var raw, work bytes.Buffer
	fmt.Fprintf(&raw, "report-date: %s\n", start.Format("2006-01-02"))
	fmt.Fprintf(&raw, "packwheel: %s\n", coreVersion())
	fmt.Fprintf(&raw, "machine: %s\n", machine())
	fmt.Fprintf(&raw, "runs: %d\nbenchtime: %s\nwork-unit-runs: %d\n", count, benchtime, workCount)
	fmt.Fprintf(&raw, "load-average-at-start: %s\n", loadAverage())
	if err := runBenchmarks(".", sizes, count, benchtime, &raw, os.Stderr); err != nil {
		return err
	}
	if err := runWorkUnits(".", pairs, workCount, reference, &work, os.Stderr); err != nil {
		return err
	}
	fmt.Fprintf(&raw, "load-average-at-end: %s\n", loadAverage())
	fmt.Fprintf(&raw, "report-duration: %s\n", time.Since(start).Round(time.Second))
	if err := os.WriteFile(filepath.Join(dir, rawFile), raw.Bytes(), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, workFile), work.Bytes(), 0o644)
}

// measureInstructions counts the work units' instructions at pairs and
// rewrites instrFile, which held before what counted holds. Without a
// reference to run it keeps the reference's count at pairs, as a count,
// unlike a timing, is the same on any run of the same program; and it says
// which of the earlier counts the new file lacks.
func measureInstructions(dir string, pairs int, reference string, counted []byte) error {
	before, err := parseInstructions(bytes.NewReader(counted))
	if err != nil {
		return err
	}
	path := filepath.Join(dir, instrFile)
	var out bytes.Buffer
	for i, line := range nonEmptyLines(counted) {
		if r := before[i]; reference == "" && r.impl == referenceImpl && r.pairs == pairs {
			fmt.Fprintln(&out, line)
			fmt.Fprintf(os.Stderr, "report: no -reference: keeping %s's count at %d pairs from %s, %s\n", r.impl, r.pairs, path, giga(r.total))
		}
	}
	if err := countInstructions(".", pairs, reference, &out, os.Stderr); err != nil {
		return err
	}
	after, err := parseInstructions(bytes.NewReader(out.Bytes()))
	if err != nil {
		return err
	}
	for _, r := range before {
		if !slices.ContainsFunc(after, func(a instrRun) bool { return a.impl == r.impl && a.pairs == r.pairs }) {
			fmt.Fprintf(os.Stderr, "report: %s no longer counts %s at %d pairs: -instructions %d counts at %d pairs\n",
				path, r.impl, r.pairs, pairs, pairs)
		}
	}
	return os.WriteFile(path, out.Bytes(), 0o644)
}

// generate writes results.md, summary.md and churn.png from the raw files,
// and README.md's performance block if readme is set.
func generate(dir string, readme bool) error {
	rawData, err := os.ReadFile(filepath.Join(dir, rawFile))
	if err != nil {
		return err
	}
	samples, config, err := parseBenchmarks(bytes.NewReader(rawData))
	if err != nil {
		return fmt.Errorf("%s: %w", rawFile, err)
	}
	workData, err := os.ReadFile(filepath.Join(dir, workFile))
	if err != nil {
		return err
	}
	work, err := parseWorkUnits(bytes.NewReader(workData))
	if err != nil {
		return fmt.Errorf("%s: %w", workFile, err)
	}
	instr, err := readInstructions(dir)
	if err != nil {
		return err
	}
	all := runsOf(samples)
	rep := &report{r: medians(all), runs: all, wide: wideSpreads(all, spreadLimit), work: work, instr: instr, config: config}
	var md, summary bytes.Buffer
	rep.writeResults(&md)
	rep.writeSummary(&summary)
	for name, data := range map[string][]byte{"results.md": md.Bytes(), "summary.md": summary.Bytes()} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return err
		}
	}
	if err := drawChurn(rep.r, filepath.Join(dir, "churn.png"), config["machine"]); err != nil {
		return err
	}
	if readme {
		if err := syncReadme(readmePath, summary.Bytes()); err != nil {
			return err
		}
	}
	if err := writeBenchstat(dir); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "report: wrote %s\n", dir)
	if readme {
		fmt.Fprintf(os.Stderr, "report: wrote %s's performance block\n", readmePath)
	}
	return nil
}

// parseInts parses a comma-separated list of positive integers.
func parseInts(flagName, list string) ([]int, error) {
	var ints []int
	for _, f := range strings.Split(list, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		v, err := strconv.Atoi(f)
		if err != nil || v <= 0 {
			return nil, cli.Usagef("%s: bad entry %q: want positive whole numbers, comma-separated", flagName, f)
		}
		ints = append(ints, v)
	}
	return ints, nil
}

// writeBenchstat writes benchstat's own summary of raw.txt, with its
// confidence intervals, by running the benchstat of the version this
// module pins (go.mod): the tables made here are medians from the same
// library, laid out as ratios to a baseline, which benchstat does not do.
func writeBenchstat(dir string) error {
	cmd := exec.Command("go", "run", "golang.org/x/perf/cmd/benchstat", "-col", "/impl", filepath.Join(dir, rawFile))
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("benchstat: %w", err)
	}
	return os.WriteFile(filepath.Join(dir, "benchstat.txt"), out, 0o644)
}
