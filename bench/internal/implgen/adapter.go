package implgen

// Adapter is the benchmarks' adapter, virtual_<Bench>_test.go in bench.
var Adapter = Kind{prefix: "virtual_", suffix: "_test.go", name: func(impl Impl) string { return impl.Bench },
	tmpl: parse("adapter", adapterTemplate)}

// adapterTemplate is bench's impl for a queue on the virtual clock: each
// workload's loop, calling the queue's own methods.
const adapterTemplate = header + `
package bench

import (
	"testing"

	"{{.Import}}"
)

{{- $item := print "*" .Bench "Item"}}

// {{.Bench}}Item is a benchmark item for {{.Bench}}Impl: the queue's handle
// embedded by value, as in a connection struct.
type {{.Bench}}Item struct {
	h  {{typ .Handle $item}}
	id int
}

// {{.Bench}}Impl benchmarks {{.Doc}}.
type {{.Bench}}Impl struct {
	virtual[{{.Bench}}Item]
	w *{{typ .Queue $item}}
}

func new{{title .Bench}}() impl { return &{{.Bench}}Impl{w: {{typ .New $item}}} }

func (s *{{.Bench}}Impl) fill(n int) {
	s.init(n)
	w := s.w
	for i := range s.items {
		it := &s.items[i]
		it.id = i
		w.Schedule(&it.h, w.Now()+timeout-uint64(s.rng.below(ticksPerSecond)), it)
	}
}

{{- define "churnOp"}}
		if s.pace.tick() {
			w.Advance(w.Now()+1, s.count)
		}
		it := &items[s.pick(len(items))]
		w.Schedule(&it.h, w.Now()+timeout, it)
{{- end}}

{{- define "scheduleCancelOp"}}
		if s.pace.tick() {
			w.Advance(w.Now()+1, s.count)
		}
		it := &items[s.pick(len(items))]
		w.Cancel(&it.h)
		w.Schedule(&it.h, w.Now()+timeout, it)
{{- end}}

// churn and scheduleCancel run their settling ops in a loop of their own,
// the same op as the timed loop's, so that the timed loop checks nothing
// more (picker.settle).
func (s *{{.Bench}}Impl) churn(b *testing.B) {
	w, items := s.w, s.items
	for s.settle() {
		{{- template "churnOp"}}
	}
	if b == nil {
		return
	}
	for b.Loop() {
		{{- template "churnOp"}}
	}
}

func (s *{{.Bench}}Impl) scheduleCancel(b *testing.B) {
	w, items := s.w, s.items
	for s.settle() {
		{{- template "scheduleCancelOp"}}
	}
	if b == nil {
		return
	}
	for b.Loop() {
		{{- template "scheduleCancelOp"}}
	}
}

// expire runs warmBatches batches before b.Loop's first call starts the
// clock: they grow the queue's storage, which the batches after them
// reuse, and Expire measures the repeated batches, the steady state.
func (s *{{.Bench}}Impl) expire(b *testing.B, n int) {
	s.init(n)
	w, items := s.w, s.items
	for batch := 0; batch < warmBatches || b.Loop(); batch++ {
		now := w.Now()
		for i := range items {
			it := &items[i]
			w.Schedule(&it.h, now+1+uint64(s.rng.below(expireWindow)), it)
		}
		w.Advance(now+expireWindow, s.count)
	}
	s.fires -= warmBatches * int64(n)
}

func (s *{{.Bench}}Impl) drive() (stop func()) {
	return s.driveWith(s.w.Now(), s.w.NextExpiry, s.w.Advance)
}
`
