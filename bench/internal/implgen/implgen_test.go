package implgen

import (
	"path/filepath"
	"testing"
)

// TestGenerated fails when a generated file is not what its template
// makes, or is left over from an implementation no longer listed: run go
// generate in bench/ and bench/internal/workunit. It lives here, not
// beside the files, so that the benchmarks' test binary does not link the
// generator.
func TestGenerated(t *testing.T) {
	for _, tc := range []struct {
		kind Kind
		dir  string
	}{
		{Sim, filepath.Join("..", "workunit")},
		{Adapter, filepath.Join("..", "..")},
	} {
		if err := tc.kind.Stale(tc.dir); err != nil {
			t.Errorf("in %s: %v", tc.dir, err)
		}
	}
}
