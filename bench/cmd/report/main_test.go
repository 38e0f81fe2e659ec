package main

import (
	"io"
	"os"
	"path/filepath"
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

	t.Chdir(filepath.Join("..", ".."))
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
	} {
		requireRefused(t, tc.args, tc.want)
	}
	_, err := os.Stat(newDir)
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
