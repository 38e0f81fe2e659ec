package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// instrFile holds the instruction counts of the work units, one line per
// implementation, when -instructions measured them.
const instrFile = "instructions.txt"

// instrRun is what callgrind counted in one run of the work units.
type instrRun struct {
	impl  string
	pairs int
	total int64 // instructions executed by the whole process
	sim   int64 // of which in the simulation's own source, sim_<impl>.go; 0 for the reference
}

// countInstructions runs the work units at pairs, range scheduling on,
// once per implementation and once for the reference if given, under
// valgrind's callgrind, and writes what it counted to out. Instructions,
// unlike CPU time, do not depend on the machine's load, and they split by
// source file: how much of a Go run is the simulation's code, which every
// implementation shares, and how much the timers'. The reference inlines
// its timers into the simulation, so it gets a total only.
func countInstructions(dir string, pairs int, reference string, out, progress io.Writer) error {
	bin, cleanup, err := buildWorkUnits(dir)
	if err != nil {
		return err
	}
	defer cleanup()
	type run struct {
		impl string
		cmd  []string
		env  []string
	}
	var runs []run
	if reference != "" {
		runs = append(runs, run{referenceImpl, []string{reference}, []string{"BENCH_PAIR_COUNT=" + strconv.Itoa(pairs)}})
	}
	for _, impl := range workImpls {
		// Go's asynchronous preemption signals confuse valgrind.
		runs = append(runs, run{impl, []string{bin, "-pairs", strconv.Itoa(pairs), "-wheel", impl, "-range=true"},
			[]string{"GODEBUG=asyncpreemptoff=1"}})
	}
	for _, r := range runs {
		total, sim, err := callgrind(r.cmd, r.env)
		if err != nil {
			return fmt.Errorf("callgrind of %s: %w", r.impl, err)
		}
		line := fmt.Sprintf("requested=%d wheel=%s range=true instructions=%d sim_instructions=%d", pairs, r.impl, total, sim)
		fmt.Fprintln(progress, line)
		if _, err := fmt.Fprintln(out, line); err != nil {
			return err
		}
	}
	return nil
}

// callgrind runs cmd under callgrind with env added and returns the
// instructions it executed, in all and in files named sim_*.go.
func callgrind(cmd, env []string) (total, sim int64, err error) {
	tmp, err := os.MkdirTemp("", "packwheel-callgrind")
	if err != nil {
		return 0, 0, err
	}
	defer os.RemoveAll(tmp)
	prof := filepath.Join(tmp, "callgrind.out")
	c := exec.Command("valgrind", append([]string{"--tool=callgrind", "--callgrind-out-file=" + prof}, cmd...)...)
	c.Env = append(os.Environ(), env...)
	if out, err := c.CombinedOutput(); err != nil {
		return 0, 0, fmt.Errorf("%w\n%s", err, out)
	}
	annotated, err := exec.Command("callgrind_annotate", "--threshold=100", "--show-percs=no", "--auto=no", prof).Output()
	if err != nil {
		return 0, 0, fmt.Errorf("callgrind_annotate: %w", err)
	}
	return parseAnnotated(string(annotated))
}

// parseAnnotated reads callgrind_annotate's PROGRAM TOTALS line and its
// per-function lines, "1,234  /path/file.go:function [binary]". It stops
// at the first source annotation, whose lines also start with counts: a
// line's own, or a call's inclusive one ("=>"), which summed with the
// functions' would count instructions twice.
func parseAnnotated(text string) (total, sim int64, err error) {
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "-- Auto-annotated source") {
			break
		}
		count, rest, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(strings.ReplaceAll(count, ",", ""), 10, 64)
		if err != nil {
			continue
		}
		rest = strings.TrimSpace(rest)
		if rest == "PROGRAM TOTALS" {
			total = n
			continue
		}
		file, _, _ := strings.Cut(rest, ":")
		if strings.HasPrefix(filepath.Base(file), "sim_") {
			sim += n
		}
	}
	if total == 0 {
		return 0, 0, fmt.Errorf("no PROGRAM TOTALS in callgrind_annotate's output")
	}
	return total, sim, nil
}

// parseInstructions reads the lines countInstructions wrote, a run for
// each line nonEmptyLines returns.
func parseInstructions(r io.Reader) ([]instrRun, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	var runs []instrRun
	for _, line := range nonEmptyLines(data) {
		f, err := parseFields(line, "requested", "instructions", "sim_instructions")
		if err != nil {
			return nil, fmt.Errorf("%s: %w", instrFile, err)
		}
		run := instrRun{impl: textField(line, "wheel"), pairs: int(f["requested"]),
			total: int64(f["instructions"]), sim: int64(f["sim_instructions"])}
		if run.impl == "" || run.total == 0 {
			return nil, fmt.Errorf("%s: unexpected line %q", instrFile, line)
		}
		runs = append(runs, run)
	}
	return runs, nil
}

// nonEmptyLines returns the lines of data that are not blank, trimmed.
func nonEmptyLines(data []byte) []string {
	var lines []string
	for _, line := range strings.Split(string(data), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			lines = append(lines, line)
		}
	}
	return lines
}

// readInstructions returns the instruction counts in dir, none if it has
// no instrFile.
func readInstructions(dir string) ([]instrRun, error) {
	f, err := os.Open(filepath.Join(dir, instrFile))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseInstructions(f)
}

// instructionTable writes one row per implementation: instructions in all,
// as a multiple of the reference's, and split between the simulation's
// code and the rest (the timers, the runtime).
func (rep *report) instructionTable(w io.Writer) {
	var ref int64
	for _, r := range rep.instr {
		if r.impl == referenceImpl {
			ref = r.total
		}
	}
	writeRow(w, "implementation", "pairs", "instructions", "× "+referenceImpl, "in sim_*.go", "elsewhere")
	writeRule(w, 6)
	for _, r := range rep.instr {
		ratio, sim, rest := "-", "-", "-"
		if ref > 0 {
			ratio = fmtRatio(float64(r.total)/float64(ref)) + "×"
		}
		if r.impl != referenceImpl {
			sim, rest = giga(r.sim), giga(r.total-r.sim)
		}
		writeRow(w, r.impl, fmt.Sprint(r.pairs), giga(r.total), ratio, sim, rest)
	}
}

// giga formats an instruction count in billions.
func giga(n int64) string { return fmt.Sprintf("%.2f G", float64(n)/1e9) }
