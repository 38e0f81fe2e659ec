package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/packwheel/packwheel/bench/internal/workunit"
)

// workRun is the median outcome of the work-unit workload for one
// implementation, range setting and pair count.
type workRun struct {
	impl     string
	useRange bool
	pairs    int // requested
	created  int
	rx       int64
	cpuS     float64 // median user CPU seconds
	rssMB    float64 // median peak RSS
}

// workImpls are the implementations cmd/workunits runs over.
var workImpls = workunit.Implementations

// referenceImpl names the C++ reference's runs (-reference): Ratas's
// test_benchmark, built by whoever runs the report, since its code is not
// this project's to commit.
const referenceImpl = "ratas-c++"

// checksums are the reference's (pairs created, total rx) per requested
// pairs, as Ratas's test_benchmark prints them (github.com/jsnell/ratas).
var checksums = map[int][2]int64{
	1_000:   {997, 22_886_312},
	8_000:   {7_990, 183_396_083},
	32_000:  {32_058, 735_833_994},
	128_000: {128_107, 2_940_473_849},
}

// runWorkUnits builds cmd/workunits once and runs it count times for every
// implementation, range setting and pair count, each run in a process of
// its own so that peak RSS is that run's, and the configurations of a pair
// count in turn, round after round, so that a change in the machine's load
// falls on all of them alike. With reference set, each round also runs
// that program (Ratas's test_benchmark) with BENCH_PAIR_COUNT, range on. It
// writes each run's line to out, prefixed with the pairs requested, and to
// progress. It fails on a checksum mismatch.
func runWorkUnits(dir string, pairs []int, count int, reference string, out, progress io.Writer) error {
	bin, cleanup, err := buildWorkUnits(dir)
	if err != nil {
		return err
	}
	defer cleanup()
	emit := func(line string) error {
		fmt.Fprintln(progress, line)
		_, err := fmt.Fprintln(out, line)
		return err
	}
	for _, p := range pairs {
		for range count {
			if reference != "" {
				line, err := runReference(reference, p)
				if err != nil {
					return err
				}
				if err := emit(line); err != nil {
					return err
				}
			}
			for _, impl := range workImpls {
				for _, useRange := range []bool{true, false} {
					res, err := exec.Command(bin, "-pairs", strconv.Itoa(p), "-wheel", impl,
						"-range="+strconv.FormatBool(useRange)).Output()
					if err != nil {
						return fmt.Errorf("workunits %s range=%t pairs=%d: %w", impl, useRange, p, err)
					}
					line := fmt.Sprintf("requested=%d %s", p, strings.TrimSpace(string(res)))
					if err := emit(line); err != nil {
						return err
					}
					f, err := parseFields(line, workFields...)
					if err != nil {
						return err
					}
					if err := checkChecksum(p, int64(f["pairs"]), int64(f["rx"])); err != nil {
						return fmt.Errorf("%s: %w", line, err)
					}
				}
			}
		}
	}
	return nil
}

// buildWorkUnits builds cmd/workunits of the bench module in dir into a
// temporary directory, which cleanup removes.
func buildWorkUnits(dir string) (bin string, cleanup func(), err error) {
	tmp, err := os.MkdirTemp("", "packwheel-report")
	if err != nil {
		return "", nil, err
	}
	cleanup = func() { os.RemoveAll(tmp) }
	bin = filepath.Join(tmp, "workunits")
	build := exec.Command("go", "build", "-o", bin, "./cmd/workunits")
	build.Dir, build.Stdout, build.Stderr = dir, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("building cmd/workunits: %w", err)
	}
	return bin, cleanup, nil
}

// runReference runs the C++ reference for pairs and returns its line, in
// cmd/workunits' format: the pairs it created and its total rx, which it
// prints (referenceChecksum) and which must be checksums' for pairs, and
// the process's user CPU and peak RSS, as GNU time reports them. Not the
// report's own wait: Go starts a child in the report's address space
// before its exec (vfork), so the child's ru_maxrss counts the report's
// memory, which put the reference at the report's 13.5 MB at every pair
// count. GNU time's child is a fork of a small C program, whose memory it
// counts instead.
func runReference(path string, pairs int) (string, error) {
	out, err := os.CreateTemp("", "packwheel-reference-*.txt")
	if err != nil {
		return "", err
	}
	out.Close()
	defer os.Remove(out.Name())
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(gnuTime, "-f", timeFormat, "-o", out.Name(), path)
	cmd.Env = append(os.Environ(), "BENCH_PAIR_COUNT="+strconv.Itoa(pairs))
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("reference %s: %w", path, err)
	}
	created, rx, err := referenceChecksum(stdout.String(), stderr.String())
	if err != nil {
		return "", fmt.Errorf("reference %s: %w", path, err)
	}
	if err := checkChecksum(pairs, int64(created), rx); err != nil {
		return "", fmt.Errorf("reference %s: %w", path, err)
	}
	report, err := os.ReadFile(out.Name())
	if err != nil {
		return "", err
	}
	cpuS, rssMB, err := parseTimeReport(string(report))
	if err != nil {
		return "", fmt.Errorf("reference %s: %w", path, err)
	}
	return fmt.Sprintf("requested=%d pairs=%d rx=%d wheel=%s range=true cpu_s=%.3f rss_mb=%.1f",
		pairs, created, rx, referenceImpl, cpuS, rssMB), nil
}

// referenceChecksum reads the checksum Ratas's test_benchmark prints: the
// work units (pairs) it created, in "997 work units (9970 timers)" on
// stderr, and the total rx, the last field of its last line on stdout,
// "path,1000,yes,0.484795,22886312", after a line per deleted unit.
func referenceChecksum(stdout, stderr string) (pairs int, rx int64, err error) {
	if _, err := fmt.Sscanf(stderr, "%d work units", &pairs); err != nil {
		return 0, 0, fmt.Errorf("no count of work units at the start of stderr %q: %w", stderr, err)
	}
	out := strings.TrimSpace(stdout)
	last := out[strings.LastIndexByte(out, '\n')+1:]
	i := strings.LastIndexByte(last, ',')
	if rx, err = strconv.ParseInt(last[i+1:], 10, 64); err != nil || i < 0 {
		return 0, 0, fmt.Errorf("no rx at the end of stdout's last line %q", last)
	}
	return pairs, rx, nil
}

// checkChecksum returns an error if checksums records pairs and rx for a
// run at the requested pairs and this run's differ: the one check for
// cmd/workunits' runs and the reference's.
func checkChecksum(requested int, pairs, rx int64) error {
	if want, ok := checksums[requested]; ok && (pairs != want[0] || rx != want[1]) {
		return fmt.Errorf("checksum pairs=%d rx=%d, want pairs=%d rx=%d", pairs, rx, want[0], want[1])
	}
	return nil
}

// gnuTime is GNU time, the program (Debian's package time), not the
// shell's keyword; timeFormat asks it for the user CPU seconds and the
// peak RSS in KiB.
const (
	gnuTime    = "/usr/bin/time"
	timeFormat = "%U %M"
)

// parseTimeReport reads GNU time's report in timeFormat: user CPU seconds
// and peak RSS, which it returns in MiB.
func parseTimeReport(report string) (cpuS, rssMB float64, err error) {
	f := strings.Fields(report)
	if len(f) != 2 {
		return 0, 0, fmt.Errorf("GNU time's report %q: want user seconds and peak KiB", report)
	}
	cpuS, err = strconv.ParseFloat(f[0], 64)
	if err == nil {
		rssMB, err = strconv.ParseFloat(f[1], 64)
	}
	if err != nil {
		return 0, 0, fmt.Errorf("GNU time's report %q: %w", report, err)
	}
	return cpuS, rssMB / 1024, nil
}

// referenceRows returns the pair counts at which the workunits file at
// path has runs of the C++ reference; none if there is no such file.
func referenceRows(path string) ([]int, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	runs, err := parseWorkUnits(f)
	var pairs []int
	for _, r := range runs {
		if r.impl == referenceImpl {
			pairs = append(pairs, r.pairs)
		}
	}
	return pairs, err
}

// parseWorkUnits reads the lines runWorkUnits wrote and returns the median
// of each configuration's runs, in the order they ran.
func parseWorkUnits(r io.Reader) ([]workRun, error) {
	type config struct {
		impl     string
		useRange bool
		pairs    int
	}
	var order []config
	runs := map[config]*workRun{}
	cpu, rss := map[config][]float64{}, map[config][]float64{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		f, err := parseFields(line, workFields...)
		if err != nil {
			return nil, err
		}
		c := config{impl: textField(line, "wheel"), useRange: textField(line, "range") == "true", pairs: int(f["requested"])}
		if runs[c] == nil {
			order = append(order, c)
			runs[c] = &workRun{impl: c.impl, useRange: c.useRange, pairs: c.pairs,
				created: int(f["pairs"]), rx: int64(f["rx"])}
		}
		cpu[c], rss[c] = append(cpu[c], f["cpu_s"]), append(rss[c], f["rss_mb"])
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	var out []workRun
	for _, c := range order {
		r := runs[c]
		r.cpuS, r.rssMB = median(cpu[c]), median(rss[c])
		out = append(out, *r)
	}
	return out, nil
}

// workFields are the numeric fields every workunits line has.
var workFields = []string{"requested", "pairs", "rx", "cpu_s", "rss_mb"}

// parseFields parses the numeric key=value fields of a line of
// workunits.txt or instructions.txt, which must include required.
func parseFields(line string, required ...string) (map[string]float64, error) {
	f := map[string]float64{}
	for _, kv := range strings.Fields(line) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("unexpected line %q", line)
		}
		if x, err := strconv.ParseFloat(v, 64); err == nil {
			f[k] = x
		}
	}
	for _, k := range required {
		if _, ok := f[k]; !ok {
			return nil, fmt.Errorf("line %q lacks %s", line, k)
		}
	}
	return f, nil
}

// textField returns the value of the key=value field key of line, or "".
func textField(line, key string) string {
	for _, kv := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			return v
		}
	}
	return ""
}
