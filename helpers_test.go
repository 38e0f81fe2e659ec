package packwheel

import "testing"

// conn stands for the caller's per-connection struct, with its Holder
// embedded by value.
type conn struct {
	id    int
	timer Holder
}

// wheelKind makes a fresh wheel of one kind for tests that run on both.
type wheelKind struct {
	name string
	make func() Timers[*conn]
}

var wheelKinds = []wheelKind{
	{"hashed", func() Timers[*conn] { return NewHashed[*conn](HashedOptions{Slots: 256}) }},
	{"wheel", func() Timers[*conn] { return new(Wheel[*conn]) }},
}

// defaultWheelKinds are both wheels at their default sizes, for tests whose
// figures depend on the hashed wheel's 4096 slots.
var defaultWheelKinds = []wheelKind{
	{"hashed", func() Timers[*conn] { return new(Hashed[*conn]) }},
	{"wheel", func() Timers[*conn] { return new(Wheel[*conn]) }},
}

func forEachWheel(t *testing.T, f func(t *testing.T, w Timers[*conn])) {
	for _, k := range wheelKinds {
		t.Run(k.name, func(t *testing.T) { f(t, k.make()) })
	}
}

func mustCheck(t *testing.T, w Timers[*conn]) {
	t.Helper()
	if err := w.(checker).check(); err != nil {
		t.Fatal(err)
	}
}
