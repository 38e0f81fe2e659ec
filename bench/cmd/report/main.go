// Command report runs packwheel's benchmark matrix and the work-unit
// workload, and writes the results where people can look at them:
//
//	results/results.md  every table: medians of several runs, ratios to timer-reset
//	results/summary.md  the README's performance section, made from the same figures,
//	                    which the report also writes into README.md (readme.go)
//	results/churn.png   churn ns/op against n, log-log, every implementation
//	results/raw.txt     the benchmarks' output, for benchstat, with the run's settings
//	results/benchstat.txt benchstat's summary of raw.txt: medians with 95% confidence intervals
//	results/workunits.txt one line per work-unit run
//	results/instructions.txt the work units' instruction counts, if -instructions made them
//
// Run it from the bench module's directory:
//
//	go run ./cmd/report          # the full matrix: about 50 minutes on 2 CPUs (-count 3: 30)
//	go run ./cmd/report -quick   # n <= 100k, short runs: about five minutes
//	go run ./cmd/report -instructions 1000 -reference PATH  # instruction counts only, under valgrind: six minutes
//
// A quick run writes to a temporary directory unless -out is given, so that
// it does not replace the committed results. The tables and the chart are
// made from raw.txt, workunits.txt and instructions.txt alone; -regen
// remakes them without measuring.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

func main() {
	quick := flag.Bool("quick", false, "sizes up to 100k, short runs, 1,000 work-unit pairs: about five minutes")
	count := flag.Int("count", 5, "runs of each benchmark; figures are medians")
	benchtime := flag.String("benchtime", "1s", "go test -benchtime for each run")
	sizes := flag.String("sizes", "10000,100000,1000000,10000000", "numbers of outstanding timers, comma-separated")
	pairs := flag.String("pairs", "1000,8000", "work-unit pair counts, comma-separated; empty for none")
	workCount := flag.Int("workcount", 3, "runs of each work-unit configuration")
	reference := flag.String("reference", "", "the C++ reference's benchmark binary (Ratas's test_benchmark), run beside the work units; empty for none")
	out := flag.String("out", "", "output directory (default results, or a temporary one with -quick)")
	regen := flag.Bool("regen", false, "measure nothing: rewrite the tables and the chart from the raw files in -out")
	instructions := flag.Int("instructions", 0, "time nothing: count the instructions the work units execute at this many pairs, range on, "+
		"under valgrind's callgrind (beside -reference's if given), write instructions.txt to -out and regenerate; 0 for none")
	flag.Parse()
	if *quick {
		*count, *benchtime, *sizes, *pairs, *workCount = 3, "100ms", "10000,100000", "1000", 1
	}
	err := func() error {
		dir, err := outDir(*out, *quick)
		if err != nil {
			return err
		}
		switch {
		case *instructions > 0:
			if err := measureInstructions(dir, *instructions, *reference); err != nil {
				return err
			}
		case !*regen:
			if err := measure(dir, *count, *benchtime, *sizes, *pairs, *workCount, *reference); err != nil {
				return err
			}
		}
		return generate(dir)
	}()
	if err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
}

// The files a measurement writes, from which generate makes the others.
const (
	rawFile  = "raw.txt"       // benchmark output, with the run's settings as configuration lines
	workFile = "workunits.txt" // one line per work-unit run
)

func outDir(out string, quick bool) (string, error) {
	if _, err := os.Stat("go.mod"); err != nil {
		return "", fmt.Errorf("run from the bench module's directory: %w", err)
	}
	switch {
	case out != "":
	case quick:
		return os.MkdirTemp("", "packwheel-report-quick")
	default:
		out = "results"
	}
	return out, os.MkdirAll(out, 0o755)
}

// measure runs the benchmarks and the work units and writes the raw files.
// The run's settings go into raw.txt as configuration lines, which benchstat
// shows and generate reads back.
func measure(dir string, count int, benchtime, sizeList, pairList string, workCount int, reference string) error {
	sizes, err := parseInts("-sizes", sizeList)
	if err != nil {
		return err
	}
	pairs, err := parseInts("-pairs", pairList)
	if err != nil {
		return err
	}
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
// writes instrFile.
func measureInstructions(dir string, pairs int, reference string) error {
	var out bytes.Buffer
	if err := countInstructions(".", pairs, reference, &out, os.Stderr); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, instrFile), out.Bytes(), 0o644)
}

// generate writes results.md, summary.md and churn.png from the raw files.
func generate(dir string) error {
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
	rep := &report{r: medians(samples), wide: wideSpreads(samples, spreadLimit), work: work, instr: instr, config: config}
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
	if err := syncReadme(dir, readmePath, summary.Bytes()); err != nil {
		return err
	}
	if err := writeBenchstat(dir); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "report: wrote %s\n", dir)
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
			return nil, fmt.Errorf("bad %s entry %q", flagName, f)
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
