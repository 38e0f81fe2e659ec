package cli

// MaxLoops is the most event loops gnet v2.10.0 runs: it lowers a larger
// WithNumEventLoop to this without a word (TestMaxLoops).
const MaxLoops = 256

// CheckLoops returns a UsageError unless n is a number of event loops gnet
// runs as asked, for a -loops flag.
func CheckLoops(n int) error {
	if n < 1 || n > MaxLoops {
		return Usagef("-loops %d: must be between 1 and %d, the most gnet runs", n, MaxLoops)
	}
	return nil
}
