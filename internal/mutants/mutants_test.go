package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMutantsApply checks the table against the code it changes: each
// mutant's text occurs exactly once in its file and the change is one,
// and no two mutants share a name. A change to the code that moves a
// mutant's line fails here, in the test suite, rather than when someone
// next runs the mutants.
func TestMutantsApply(t *testing.T) {
	root, err := moduleRoot()
	require.NoError(t, err)
	names := map[string]bool{}
	for _, m := range mutants {
		require.False(t, names[m.name], "two mutants named %s", m.name)
		names[m.name] = true
		require.NotEqual(t, m.old, m.new, m.name)
		b, err := os.ReadFile(filepath.Join(root, m.file))
		require.NoError(t, err, m.name)
		require.Equal(t, 1, strings.Count(string(b), m.old), "%s: its text in %s", m.name, m.file)
	}
}

// TestApplyRefusesStale checks that the runner refuses a mutant whose
// text is not in its file, rather than running the tests on unchanged
// code and reporting them as having survived it.
func TestApplyRefusesStale(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.go"), []byte("x := 1\nx := 1\n"), 0o644))
	require.ErrorContains(t, apply(dir, mutant{"twice", "a.go", "x := 1", "x := 2"}), "2 times, not once")
	require.ErrorContains(t, apply(dir, mutant{"absent", "a.go", "y := 1", "y := 2"}), "0 times, not once")
	require.NoError(t, apply(dir, mutant{"once", "a.go", "x := 1\nx", "x := 2\nx"}))
	b, err := os.ReadFile(filepath.Join(dir, "a.go"))
	require.NoError(t, err)
	require.Equal(t, "x := 2\nx := 1\n", string(b))
}
