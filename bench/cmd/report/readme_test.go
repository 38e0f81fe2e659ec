package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReadmeMatchesResults fails when README.md's performance block is not
// bench/results/summary.md: a figure edited by hand, or results committed
// without the README the report rewrites with them.
func TestReadmeMatchesResults(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", readmePath))
	require.NoError(t, err)
	summary, err := os.ReadFile(filepath.Join("..", "..", committedResults, "summary.md"))
	require.NoError(t, err)
	start, end, err := readmeBlock(readme)
	require.NoError(t, err)
	require.Equal(t, string(summary), string(readme[start:end]),
		"README.md's performance block differs from bench/results/summary.md; run `go run ./cmd/report -regen -out results -readme` in bench/")
}

// TestSyncReadme checks that the report rewrites only the block, and
// refuses a README without one.
func TestSyncReadme(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "README.md")
	before := "# x\n\nintro\n" + readmeBegin + "old figures\n" + readmeEnd + "\nafter\n"
	require.NoError(t, os.WriteFile(path, []byte(before), 0o644))

	require.NoError(t, syncReadme(path, []byte("new\n")))
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "# x\n\nintro\n"+readmeBegin+"new\n"+readmeEnd+"\nafter\n", string(got))

	require.NoError(t, os.WriteFile(path, []byte("no markers\n"), 0o644))
	require.Error(t, syncReadme(path, []byte("new\n")))
}
