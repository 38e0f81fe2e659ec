package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/packwheel/packwheel/internal/cli"
	"github.com/stretchr/testify/require"
)

// TestInputsCheckedFirst runs the report with inputs that cannot work and
// checks that each is refused as a bad command line (exit status 2) by
// run, before anything is measured: a refusal that came after the
// measuring would cost this test minutes, and a user most of an hour.
// `report -instructions 1000 -out NEWDIR` once failed only after four
// minutes under valgrind, for want of NEWDIR/raw.txt.
func TestInputsCheckedFirst(t *testing.T) {
	tmp := t.TempDir()
	newDir := filepath.Join(tmp, "new")
	empty := t.TempDir()
	file := filepath.Join(tmp, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))

	// Not from the bench module's directory.
	requireRefused(t, nil, "run from the bench module's directory: stat go.mod: no such file or directory")

	// A directory whose work units ran beside the C++ reference.
	withReference := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(withReference, workFile), []byte(
		"requested=1000 pairs=0 rx=0 wheel=ratas-c++ range=true cpu_s=0.225 rss_mb=13.6\n"+
			"requested=1000 pairs=997 rx=22886312 wheel=list range=true cpu_s=0.622 rss_mb=3.2\n"), 0o644))

	t.Chdir(filepath.Join("..", ".."))
	results, err := filepath.Abs(committedResults)
	require.NoError(t, err)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-instructions", "1000", "-out", newDir}, "-out " + newDir + " has no raw.txt: -regen and -instructions make the tables " +
			"from the files a measurement wrote there; give -out such a directory (results, or that of an earlier run): " +
			"stat " + newDir + "/raw.txt: no such file or directory"},
		{[]string{"-regen", "-out", empty}, "-out " + empty + " has no raw.txt"},
		{[]string{"-quick", "-regen"}, "-quick sets how to measure; -regen and -instructions time nothing"},
		{[]string{"-quick", "-instructions", "1000"}, "-quick sets how to measure"},
		{[]string{"-instructions", "-1"}, "-instructions -1: want a number of pairs, or 0 for none"},
		{[]string{"-count", "0"}, "-count 0: want at least 1"},
		{[]string{"-workcount", "0"}, "-workcount 0: want at least 1"},
		{[]string{"-benchtime", "1y"}, `-benchtime "1y": want a positive duration, such as 1s, or a count of iterations, such as 100x`},
		{[]string{"-benchtime", "0x"}, `-benchtime "0x": want a positive duration`},
		{[]string{"-benchtime", "-1s"}, `-benchtime "-1s": want a positive duration`},
		{[]string{"-sizes", "1000,x"}, `-sizes: bad entry "x": want positive whole numbers, comma-separated`},
		{[]string{"-sizes", ""}, `-sizes "": want at least one size`},
		{[]string{"-pairs", "-5"}, `-pairs: bad entry "-5": want positive whole numbers, comma-separated`},
		{[]string{"-reference", filepath.Join(tmp, "no-such-binary")}, "-reference: exec: "},
		{[]string{"-reference", file}, "permission denied"}, // not executable
		{[]string{"-out", file}, "-out: mkdir " + file + ": not a directory"},
		{[]string{"-quick", "extra"}, `unexpected argument "extra": report takes flags only`},
		// The committed results are replaced only when asked for by name,
		// README's block with them.
		{[]string{"-out", "results"}, "-out results is the committed results, from which README.md's performance block is made: " +
			"add -readme to rewrite that block with them, or give another -out"},
		{[]string{"-regen", "-out", "./results/"}, "-out ./results/ is the committed results"},
		{[]string{"-instructions", "1000", "-out", results}, "-out " + results + " is the committed results"},
		{[]string{"-readme"}, "-readme rewrites README.md's performance block, which is made from the committed results: give -out results too"},
		{[]string{"-readme", "-out", empty}, "-readme rewrites README.md's performance block"},
		{[]string{"-quick", "-out", "results", "-readme"}, "-quick runs too briefly for figures to commit"},
		{[]string{"-regen"}, "-regen and -instructions make the tables from the files a measurement wrote: " +
			"give -out such a directory (results with -readme, or that of an earlier run)"},
		{[]string{"-instructions", "1000"}, "-regen and -instructions make the tables from the files a measurement wrote"},
		// A measurement that would drop the reference's rows.
		{[]string{"-out", withReference}, "-out " + withReference + " has work-unit runs of the C++ reference (ratas-c++) at [1000] pairs, " +
			"which this run would drop: give -reference PATH, Ratas's test_benchmark, to run it again, or another -out"},
	} {
		requireRefused(t, tc.args, tc.want)
	}
	_, err = os.Stat(newDir)
	require.ErrorIs(t, err, os.ErrNotExist, "a refused run made its output directory")

	// The tools -instructions runs, checked once the output directory is.
	raw := t.TempDir()
	for _, name := range []string{rawFile, workFile} {
		require.NoError(t, os.WriteFile(filepath.Join(raw, name), nil, 0o644))
	}
	t.Setenv("PATH", t.TempDir())
	requireRefused(t, []string{"-instructions", "1000", "-out", raw}, "-instructions needs valgrind (Debian: apt-get install valgrind)")
}

// requireRefused checks that run refuses args as a bad command line, with
// an error containing want.
func requireRefused(t *testing.T, args []string, want string) {
	t.Helper()
	err := run(args)
	require.ErrorContains(t, err, want, "%q", args)
	require.Equal(t, cli.ExitUsage, cli.Status("report", err, io.Discard), "%q: %v", args, err)
}

// TestParseOptions checks what good command lines ask for, without
// running them.
func TestParseOptions(t *testing.T) {
	t.Chdir(filepath.Join("..", ".."))
	o, err := parseOptions([]string{"-quick"})
	require.NoError(t, err)
	require.Equal(t, options{count: 3, workCount: 1, benchtime: "100ms", sizes: []int{10_000, 100_000}, pairs: []int{1000}}, o,
		"a quick run measures into a new temporary directory")
	o, err = parseOptions(nil)
	require.NoError(t, err)
	require.Equal(t, "", o.dir, "a full run, too, unless -out names a directory")
	require.False(t, o.readme)

	o, err = parseOptions([]string{"-regen", "-out", "results", "-readme"})
	require.NoError(t, err)
	require.Equal(t, "results", o.dir)
	require.True(t, o.readme, "the committed results, README's block with them")

	newDir := filepath.Join(t.TempDir(), "a", "b")
	o, err = parseOptions([]string{"-out", newDir, "-pairs", "", "-benchtime", "10x", "-sizes", "10, 20"})
	require.NoError(t, err)
	require.Equal(t, newDir, o.dir)
	require.Empty(t, o.pairs)
	require.Equal(t, []int{10, 20}, o.sizes)
	require.DirExists(t, newDir, "made before measuring, so that it is known to be writable")

	raw := t.TempDir()
	for _, name := range []string{rawFile, workFile} {
		require.NoError(t, os.WriteFile(filepath.Join(raw, name), nil, 0o644))
	}
	o, err = parseOptions([]string{"-regen", "-out", raw})
	require.NoError(t, err)
	require.Equal(t, raw, o.dir)
	require.True(t, o.regen)
}

// copyRaw copies the files a measurement wrote to results into a new
// temporary directory, and returns it.
func copyRaw(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{rawFile, workFile, instrFile} {
		data, err := os.ReadFile(filepath.Join(committedResults, name))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), data, 0o644))
	}
	return dir
}

// snapshot returns the contents of README.md and of every committed
// result, by path.
func snapshot(t *testing.T) map[string]string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(committedResults, "*"))
	require.NoError(t, err)
	files := map[string]string{}
	for _, p := range append(paths, readmePath) {
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		files[p] = string(data)
	}
	return files
}

// TestRegenWritesOnlyOut remakes the tables from a copy of the committed
// raw files: they come out as committed, in the copy's directory, and
// neither README.md nor the committed results change. (A run once
// rewrote README.md and the committed results unasked.)
func TestRegenWritesOnlyOut(t *testing.T) {
	t.Chdir(filepath.Join("..", ".."))
	dir := copyRaw(t)
	before := snapshot(t)
	require.NoError(t, run([]string{"-regen", "-out", dir}))
	require.Equal(t, before, snapshot(t))
	summary, err := os.ReadFile(filepath.Join(dir, "summary.md"))
	require.NoError(t, err)
	require.Equal(t, before[filepath.Join(committedResults, "summary.md")], string(summary))
}

// TestInstructionsKeepReference counts instructions without -reference,
// with stand-ins for valgrind and callgrind_annotate: the C++ reference's
// count at the same pairs is kept from the directory's instructions.txt,
// and its row stays in the table. (It was once dropped without a word.)
func TestInstructionsKeepReference(t *testing.T) {
	t.Chdir(filepath.Join("..", ".."))
	dir := copyRaw(t)
	tools := t.TempDir()
	for name, script := range map[string]string{
		"valgrind": "#!/bin/sh\nfor a; do case $a in --callgrind-out-file=*) : > \"${a#*=}\";; esac; done\n",
		"callgrind_annotate": "#!/bin/sh\necho '9,000,000,000  PROGRAM TOTALS'\n" +
			"echo '3,000,000,000  /w/bench/internal/workunit/sim_list.go:workunit.(*listUnit).deliver [/tmp/wu]'\n",
	} {
		require.NoError(t, os.WriteFile(filepath.Join(tools, name), []byte(script), 0o755))
	}
	t.Setenv("PATH", tools+string(os.PathListSeparator)+os.Getenv("PATH"))
	reference, err := os.ReadFile(filepath.Join(committedResults, instrFile))
	require.NoError(t, err)
	refLine, _, _ := strings.Cut(string(reference), "\n")
	require.Contains(t, refLine, "wheel="+referenceImpl, "the committed counts start with the reference's")

	require.NoError(t, run([]string{"-instructions", "1000", "-out", dir}))
	counted, err := os.ReadFile(filepath.Join(dir, instrFile))
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(counted)), "\n")
	require.Equal(t, refLine, lines[0])
	require.Len(t, lines, 1+len(workImpls))
	for i, impl := range workImpls {
		require.Equal(t, "requested=1000 wheel="+impl+" range=true instructions=9000000000 sim_instructions=3000000000", lines[1+i])
	}
	results, err := os.ReadFile(filepath.Join(dir, "results.md"))
	require.NoError(t, err)
	// The reference's row and the ratios are the committed count's,
	// whatever run last committed it.
	var ref int64
	_, after, _ := strings.Cut(refLine, " instructions=")
	_, err = fmt.Sscan(after, &ref)
	require.NoError(t, err)
	require.Contains(t, string(results), "| "+referenceImpl+" | 1000 | "+giga(ref)+" | 1.00× | - | - |")
	require.Contains(t, string(results), "| list | 1000 | 9.00 G | "+fmtRatio(9e9/float64(ref))+"× | 3.00 G | 6.00 G |")
}
