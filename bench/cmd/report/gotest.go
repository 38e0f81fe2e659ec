package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// sample is one benchmark result line: the metrics of one run of one
// benchmark, keyed by unit ("ns/op", "allocs/op", "bytes/timer", ...).
type sample struct {
	key
	metrics map[string]float64
}

// key names a benchmark: workload, implementation and size.
type key struct {
	workload string
	impl     string
	n        int
}

// benchName matches the names of the bench package's benchmarks, with the
// -GOMAXPROCS suffix go test adds.
var benchName = regexp.MustCompile(`^Benchmark(\w+)/impl=([^/]+)/n=(\d+)(?:-\d+)?$`)

// workloads are the bench package's benchmarks, in the order they run.
var workloads = []string{"Churn", "ChurnWarm", "ScheduleCancel", "Memory", "Expire", "IdleCPU"}

// runBenchmarks compiles the bench package in dir and runs every workload,
// implementation and size count times, writing the output to raw (benchstat
// reads that file) and the result lines to progress.
//
// Each run is a process of its own. The runtime keeps what a benchmark of
// time.Timer leaves behind, and a later full GC pays for it: a P's timer
// heap never shrinks from the 10M entries it once held, and the goroutine
// descriptors of a million AfterFunc expiries are never freed. In one
// process, GC times and the collections of allocating benchmarks would
// depend on what ran before. Rounds run the whole matrix once each, so that
// a burst of load from elsewhere on the machine spreads over all the
// implementations instead of landing on the runs of one; within a round,
// the implementations of one workload and size run one after another, so
// that the runs a ratio compares are seconds apart, not the minutes that
// the larger sizes of one implementation take.
func runBenchmarks(dir string, sizes []int, count int, benchtime string, raw, progress io.Writer) error {
	tmp, err := os.MkdirTemp("", "packwheel-report")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "bench.test")
	build := exec.Command("go", "test", "-c", "-o", bin, ".")
	build.Dir, build.Stdout, build.Stderr = dir, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("building the benchmarks: %w", err)
	}
	for round := range count {
		fmt.Fprintf(progress, "report: round %d of %d\n", round+1, count)
		for _, w := range workloads {
			for _, n := range sizes {
				for _, impl := range implOrder {
					pattern := fmt.Sprintf("^Benchmark%s$/^impl=%s$/^n=%d$", w, regexp.QuoteMeta(impl), n)
					if err := runOne(dir, bin, pattern, benchtime, raw, progress); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

// runOne runs the one benchmark that pattern names, once.
func runOne(dir, bin, pattern, benchtime string, raw, progress io.Writer) error {
	cmd := exec.Command(bin, "-test.run", "^$", "-test.bench", pattern, "-test.v",
		"-test.benchtime", benchtime, "-test.timeout", "0")
	cmd.Dir, cmd.Stderr = dir, os.Stderr
	out, err := cmd.Output()
	if _, werr := raw.Write(out); werr != nil {
		return werr
	}
	if err != nil {
		return fmt.Errorf("benchmark %s: %w\n%s", pattern, err, out)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if _, ok := parseLine(sc.Text()); ok {
			fmt.Fprintln(progress, sc.Text())
			return nil
		}
	}
	if bytes.Contains(out, []byte("--- SKIP")) {
		return nil // a combination the bench package does not run (the peers at 10M, say)
	}
	return fmt.Errorf("benchmark %s: no result in\n%s", pattern, out)
}

// configLine matches a benchmark-format configuration line, "key: value",
// which benchstat reads as context for the results after it.
var configLine = regexp.MustCompile(`^([a-z][a-z0-9-]*): (.*)$`)

// parseBenchmarks reads benchmark output: the results, and the last value
// of each configuration key.
func parseBenchmarks(r io.Reader) ([]sample, map[string]string, error) {
	var samples []sample
	config := map[string]string{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if s, ok := parseLine(sc.Text()); ok {
			samples = append(samples, s)
		} else if m := configLine.FindStringSubmatch(sc.Text()); m != nil {
			config[m[1]] = m[2]
		}
	}
	if err := sc.Err(); err != nil {
		return nil, nil, err
	}
	if len(samples) == 0 {
		return nil, nil, fmt.Errorf("no benchmark results")
	}
	return samples, config, nil
}

// parseLine parses a line in the Go benchmark format:
//
//	BenchmarkChurn/impl=wheel/n=10000-2  135868717  8.820 ns/op  0 B/op  0 allocs/op
func parseLine(line string) (sample, bool) {
	f := strings.Fields(line)
	if len(f) < 4 || len(f)%2 != 0 {
		return sample{}, false
	}
	m := benchName.FindStringSubmatch(f[0])
	if m == nil {
		return sample{}, false
	}
	n, _ := strconv.Atoi(m[3])
	s := sample{key: key{workload: m[1], impl: m[2], n: n}, metrics: map[string]float64{}}
	for i := 2; i+1 < len(f); i += 2 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return sample{}, false
		}
		s.metrics[f[i+1]] = v
	}
	return s, true
}
