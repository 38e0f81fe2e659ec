package workunit

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestChecksum checks the reference's checksum for 1,000 requested pairs on
// every implementation, with and without range scheduling: a timer fired at
// the wrong tick, twice or never changes the rx count.
func TestChecksum(t *testing.T) {
	for _, impl := range Implementations {
		for _, useRange := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/range=%t", impl, useRange), func(t *testing.T) {
				t.Parallel()
				res, err := Run(impl, 1000, useRange)
				require.NoError(t, err)
				require.Equal(t, Result{Pairs: 997, Rx: 22_886_312}, res)
			})
		}
	}
}

// TestZeroAllocs checks that once the units exist, the run phase (every
// schedule, range schedule, cancel, expiry and advance of the workload)
// allocates nothing on any implementation.
func TestZeroAllocs(t *testing.T) {
	for _, impl := range Implementations {
		for _, useRange := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/range=%t", impl, useRange), func(t *testing.T) {
				r, err := newRunner(impl, 200, useRange)
				require.NoError(t, err)
				r.create()
				// Warm up for 20 simulated seconds, so that the queues'
				// arrays reach their working sizes, then measure each of the
				// next ten seconds: each holds about 120 pace schedules and
				// expiries and 240 idle re-arms per pair.
				r.runUntil(20 * second)
				allocs := testing.AllocsPerRun(10, func() { r.runUntil(r.now() + second) })
				require.Zero(t, allocs)
			})
		}
	}
}
