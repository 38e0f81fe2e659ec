// Package bench measures packwheel against what a Go program would otherwise
// use for timers, in the same process: time.Timer moved with Reset,
// time.AfterFunc with Stop, a container/heap min-heap (see
// internal/minheap), a classic hierarchical wheel of intrusive lists (see
// internal/listwheel), and the Go timer libraries a user would weigh
// (the peers): GoFrame's gtimer, antlabs/timer (its wheel and its heap),
// RussellLuo/timingwheel, go-zero's TimingWheel and rfyiamcool/go-timewheel,
// each moved the cheapest way it offers that works (its file says which,
// and which of its bugs that avoids). It is its own module, so that its
// dependencies never reach packwheel's users.
//
// The benchmarks live in this package's test files, each named
// Benchmark<Workload>/impl=<impl>/n=<outstanding timers> and described at
// its function. How to run them and the report, how long each takes, what
// each figure means and the measure lock: README.md in this directory.
package bench

//go:generate go run gen.go
