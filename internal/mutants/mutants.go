package main

// A mutant is one deliberate bug: old, which must occur exactly once in
// file (a path from the module's root), replaced by new.
// TestMutantsApply checks the table against the code, so that a change
// that moves a mutant's line says so rather than leaving it behind.
type mutant struct {
	name, file, old, new string
}

// mutants breaks each fast path and piece of cached state of the wheels,
// their storage and idleconn, and each boundary of the walks and the
// limits, in a way that is a bug: each must fail the randomized model
// tests. Rewrites that change
// only how fast a wheel is, or how much memory it keeps, are not here:
// the model tests cannot see them, and the allocation and memory tests
// guard them instead. Two such that were tried: visit treating a timer
// postponed in place to another bucket as a change by a callback (it
// then scans the bucket once more, which TestHashedScansPerTimer's bound
// allows), and nearestFree preferring the next larger size to a free
// chunk of the size asked for.
var mutants = []mutant{
	// The hierarchical wheel's hint and quiet path (Wheel.hint).
	{"unhint-strict", "wheel.go",
		"if d <= w.hintUntil {", "if d < w.hintUntil {"},
	{"setHint-no-levels", "wheel.go",
		"until = max(until, (blockOf(start, l)+1)<<levelShift(l)-1)", "until = max(until, start)"},
	{"quietUntil-le", "wheel.go",
		"return w.hinted && to < w.hint.start && to < w.s.releaseAt", "return w.hinted && to <= w.hint.start && to < w.s.releaseAt"},
	{"hint-from-callback", "wheel.go",
		"\t\tif !w.s.running {\n\t\t\tw.hint, w.hintUntil, w.hinted", "\t\tif true {\n\t\t\tw.hint, w.hintUntil, w.hinted"},
	{"schedule-no-unhint", "wheel.go",
		"\t\tw.unhint(deadline)\n\t\tif b := w.bucketFor(deadline)", "\t\tif b := w.bucketFor(deadline)"},
	{"quiet-now-backwards", "wheel.go",
		"\t\tw.s.now = max(w.s.now, to)\n\t\tw.s.running.leave()", "\t\tw.s.now = to\n\t\tw.s.running.leave()"},

	// The hierarchical wheel's levels and its search for the next work.
	{"levelFor-bump-gt", "level.go",
		"d>>shift-now>>shift >= levelSlots", "d>>shift-now>>shift > levelSlots"},
	{"levelFor-no-bump", "level.go",
		"\t\tl++\n", "\t\t_ = l\n"},
	{"levelFor-level0-le", "level.go",
		"if diff < levelSlots {", "if diff <= levelSlots {"},
	{"next-break-ge", "wheel.go",
		"(blockOf(now, l)+1)<<shift > start {", "(blockOf(now, l)+1)<<shift >= start {"},
	{"next-tie-finer-first", "wheel.go",
		"!ok || c <= start {", "!ok || c < start {"},
	{"nextInBlock-at-block-start", "wheel.go",
		"occ != 0 && pos != 0 {", "occ != 0 {"},
	{"nextInBlock-past-block", "wheel.go",
		"pos+i < levelSlots {", "pos+i <= levelSlots {"},

	// The hierarchical wheel's fast paths into level 0 and its bounded walk.
	{"schedule-at-now", "wheel.go",
		"case h.link.Chunk == 0 && deadline > w.s.now && w.s.occupied != nil:", "case h.link.Chunk == 0 && deadline >= w.s.now && w.s.occupied != nil:"},
	{"scheduleAfter-level0-64", "wheel.go",
		"delay-1 < levelSlots-1", "delay-1 < levelSlots"},
	{"cascade-past-limit", "wheel.go",
		"i > 0 && *work < limit; i-- {", "i > 0 && *work <= limit; i-- {"},
	{"fire-stop-when-empty", "wheel.go",
		"work == limit && !w.s.entries.Empty(bucket) {", "work == limit {"},
	{"wheel-advance-to-now", "wheel.go",
		"\tcase to < w.s.now:\n\t\treturn true\n\tcase w.s.occupied == nil:\n\t\tw.s.now = to // no buckets", "\tcase to <= w.s.now:\n\t\treturn true\n\tcase w.s.occupied == nil:\n\t\tw.s.now = to // no buckets"},

	// Postponing in place, which both wheels share (store.postpone).
	{"mayPostpone-ge", "store.go",
		"return t > s.now+s.exact", "return t >= s.now+s.exact"},
	{"postpone-no-lap", "store.go",
		"(t+(d-t)&^s.lap)|postponed", "d|postponed"},
	{"postpone-no-flag", "store.go",
		"(t+(d-t)&^s.lap)|postponed, v, d", "(t+(d-t)&^s.lap), v, d"},
	{"postpone-earlier", "store.go",
		"if d < t || !s.mayPostpone(t) {", "if d+1 < t || !s.mayPostpone(t) {"},

	// The hashed wheel's sweep (Hashed.sweepFrom, sweepMin) and its visits.
	{"sweep-jump-early", "hashed.go",
		"} else if w.s.now+1-w.sweepFrom >= revolution && w.sweepMin > w.s.now+1 {", "} else if w.s.now+2-w.sweepFrom >= revolution && w.sweepMin > w.s.now+1 {"},
	{"gather-no-sweepMin", "hashed.go",
		"\t\t\tw.sweepMin = min(w.sweepMin, left)\n\t\t\treturn due, true", "\t\t\treturn due, true"},
	{"schedule-no-sweepMin", "hashed.go",
		"\t\t// bucket that needs a new chunk.\n\t\tw.sweepMin = min(w.sweepMin, deadline)\n", "\t\t// bucket that needs a new chunk.\n"},
	{"nextExpiry-sweep-short", "hashed.go",
		"if !w.pending && now+1-w.sweepFrom >= uint64(w.slots) && w.sweepMin > limit {", "if !w.pending && now+1-w.sweepFrom >= uint64(w.slots)-1 && w.sweepMin > limit {"},
	{"left-firing-only", "hashed.go",
		"return found || !w.s.entries.Empty(w.firing), least", "_ = found\n\treturn !w.s.entries.Empty(w.firing), least"},
	{"moveLast-or", "hashed.go",
		"if e.Deadline != t && e.Link.Deadline != t {", "if e.Deadline != t || e.Link.Deadline != t {"},
	{"visit-firing-not-first", "hashed.go",
		"\tif !w.s.entries.Empty(w.firing) {\n\t\t// A stopped visit left them", "\tif false {\n\t\t// A stopped visit left them"},
	{"gather-no-postponed-to-t", "hashed.go",
		"\t\t\t\tif at := tick(e.Deadline); at != t {", "\t\t\t\tif at := tick(e.Deadline); true {"},
	{"finished-no-sweepMin", "hashed.go",
		"\t\tw.sweepMin = min(w.sweepMin, least)\n\t}\n\treturn !left", "\t\t_ = least\n\t}\n\treturn !left"},
	{"walk-ignores-finished", "hashed.go",
		"if !w.visit(t, &work, limit, deliver) && !w.finished(t) {", "if !w.visit(t, &work, limit, deliver) {"},
	{"left-ignores-firing", "hashed.go",
		"return found || !w.s.entries.Empty(w.firing), least", "return found, least"},
	{"scheduleAfter-delay-0", "hashed.go",
		"case h.link.Chunk == 0 && delay > 0 && w.s.occupied != nil:", "case h.link.Chunk == 0 && delay >= 0 && w.s.occupied != nil:"},
	{"hashed-advance-to-now", "hashed.go",
		"\tcase to < w.s.now:\n\t\treturn true\n\tcase w.s.occupied == nil:\n\t\tw.s.now = to // no buckets", "\tcase to <= w.s.now:\n\t\treturn true\n\tcase w.s.occupied == nil:\n\t\tw.s.now = to // no buckets"},

	// The store: links, counts, chunks kept and freed.
	{"push-occupied-late", "packed/store.go",
		"\tif n == 0 {\n\t\ts.occupied[bucket>>6] |= 1 << (bucket & 63)\n\t}\n\treturn true", "\tif n == 1 {\n\t\ts.occupied[bucket>>6] |= 1 << (bucket & 63)\n\t}\n\treturn true"},
	{"exchange-one-link", "packed/store.go",
		"la.Chunk, la.Index, lb.Chunk, lb.Index = lb.Chunk, lb.Index, la.Chunk, la.Index", "la.Chunk, la.Index = lb.Chunk, lb.Index"},
	{"remove-no-index-check", "packed/store.go",
		"if ch = &s.chunks[c]; link.Index < ch.n {", "if ch = &s.chunks[c]; true {"},
	{"remove-no-backlink", "packed/store.go",
		"\tif e == nil || e.Link != link {\n", "\tif e == nil {\n"},
	{"remove-moved-unlinked", "packed/store.go",
		"\t\tmoved.Link.Chunk, moved.Link.Index = link.Chunk, link.Index\n", ""},
	{"take-no-low", "packed/store.go",
		"\tf.n--\n\tf.low = min(f.low, f.n)\n", "\tf.n--\n"},
	{"freeTail-units", "packed/store.go",
		"\tb.units -= 1 << size\n", "\tb.units -= 1\n"},
	{"keeps-wrong-units", "packed/store.go",
		"return b.units == 1 || bucket", "return b.units == 2 || bucket"},
	{"popEach-frees-kept", "packed/store.go",
		"\t\t\tif !s.keeps(bucket, b) {\n\t\t\t\ts.freeTail(b)\n\t\t\t}\n\t\t\tif len(b.live) == 0 {\n\t\t\t\ts.emptied(bucket)\n\t\t\t}\n\t\t}\n\t\t// The counts first", "\t\t\ts.freeTail(b)\n\t\t\tif len(b.live) == 0 {\n\t\t\t\ts.emptied(bucket)\n\t\t\t}\n\t\t}\n\t\t// The counts first"},
	{"release-no-low-reset", "packed/store.go",
		"\t\tf.total -= unused\n\t\tf.low = f.n\n", "\t\tf.total -= unused\n"},

	// idleconn's reaper: the timer armed for a connection's earliest
	// limit, re-armed lazily, and what the traffic path records.
	{"expire-tick-early", "idleconn/reaper.go",
		"if due > now {", "if due > now+1 {"},
	{"dueOf-first-not-earliest", "idleconn/reaper.go",
		"due, why = d, k.why\n", "due, why = d, k.why\n\t\t\tbreak\n"},
	{"arm-never-earlier", "idleconn/reaper.go",
		"s.timer.Active() && s.timer.Deadline() <= due", "s.timer.Active()"},
	{"expire-no-look-pending", "idleconn/reaper.go",
		"if s.pend != 0 || s.flags&closing != 0 {", "if s.flags&closing != 0 {"},
	{"expire-no-settle", "idleconn/reaper.go",
		"\tl.settle(&s.last)\n", ""},
	{"arm-no-horizon", "idleconn/reaper.go",
		"\tdue = min(due, now+1+l.cfg.idleTicks)\n", ""},
	{"wake-tick-late", "idleconn/reaper.go",
		"case l.next.Load() <= now:", "case l.next.Load() < now:"},
	{"traffic-no-busy", "idleconn/handler.go",
		"\ts.last.epoch = l.epoch\n\tif !l.busy.Load() {\n\t\tl.markBusy()\n\t}\n", "\ts.last.epoch = l.epoch\n"},

	// idleconn's time stamps and the boundaries of its timed limits.
	{"endOf-epoch-start", "idleconn/buffers.go",
		"next := e + 1", "next := e"},
	{"lifetime-tick-early", "idleconn/limits.go",
		"return m.born + m.ticks", "return m.born + m.ticks - 1"},
	{"stall-without-pending", "idleconn/buffers.go",
		"if ticks == 0 || s.pend == 0 {", "if ticks == 0 {"},
	{"pend-start-no-stall-reset", "idleconn/buffers.go",
		"m.stall.since, m.drain = st, drain{start: st}", "m.drain = drain{start: st}"},
	{"drain-half-counted", "idleconn/buffers.go",
		"m.drain.drained += prev - p", "m.drain.drained += (prev - p) / 2"},
	{"drain-not-activity", "idleconn/buffers.go",
		"s.last, m.stall.since = st, st", "m.stall.since = st"},
	{"linger-tick-early", "idleconn/buffers.go",
		"m.linger = now + 1 + l.cfg.lingerTicks", "m.linger = now + l.cfg.lingerTicks"},
	{"low-mark-is-high", "idleconn/buffers.go",
		"case p <= m.output.Low:", "case p <= m.output.High:"},
	{"output-full-at-max", "idleconn/buffers.go",
		"if p > s.lim().output.Max {", "if p >= s.lim().output.Max {"},
	{"roll-drain-strict", "idleconn/buffers.go",
		"m.drained >= l.cfg.drainBytes", "m.drained > l.cfg.drainBytes"},
	{"look-every-other-tick", "idleconn/buffers.go",
		"return now + 1 // and each tick", "return now + 2 // and each tick"},
	{"look-skip-drained-to-zero", "idleconn/buffers.go",
		"if p|s.pend != 0 || s.flags&closing != 0 {", "if p != 0 || s.flags&closing != 0 {"},

	// The Idle close's look at the kernel's send queue (idleLook).
	{"look-never", "idleconn/limits.go",
		"\tcase queued == 0:\n\t\treturn false\n", "\tcase true:\n\t\treturn false\n"},
	{"look-plain-not-reset", "idleconn/limits.go",
		"\t\tl.h.abortOnClose(fd)\n\t\treturn false\n\t}\n\t// By the time", "\t\treturn false\n\t}\n\t// By the time"},
	{"look-first-mark-kept", "idleconn/limits.go",
		"\tm.linger = acked + min(queued, l.drainOver(l.overloadedIdle(m.idle)))\n", "\tif m.linger == 0 {\n\t\tm.linger = acked + min(queued, l.drainOver(l.overloadedIdle(m.idle)))\n\t}\n"},
	{"look-rate-alone", "idleconn/limits.go",
		"m.linger = acked + min(queued, l.drainOver(l.overloadedIdle(m.idle)))", "m.linger = acked + l.drainOver(l.overloadedIdle(m.idle))"},
	{"look-whole-queue", "idleconn/limits.go",
		"m.linger = acked + min(queued, l.drainOver(l.overloadedIdle(m.idle)))", "m.linger = acked + queued"},
	{"look-no-restart", "idleconn/limits.go",
		"\ts.last = settledAt(now)\n\treturn true\n}", "\treturn true\n}"},

	// Idle timeouts under load (Options.Overload).
	{"overload-below-floor", "idleconn/limits.go",
		"return floor + uint64(l.idleScale*float64(ticks-floor))", "return uint64(l.idleScale * float64(ticks))"},
	{"overload-pass-no-arm", "idleconn/limits.go",
		"\t\t\t\tl.reap(s, why)\n\t\t\t} else {\n\t\t\t\tl.arm(s, due, now)\n\t\t\t}\n\t\t\treturn !l.stopped.Load()\n\t\t})\n\t\treturn packwheel.MaxTick\n\t},\n\tstats:", "\t\t\t\tl.reap(s, why)\n\t\t\t}\n\t\t\treturn !l.stopped.Load()\n\t\t})\n\t\treturn packwheel.MaxTick\n\t},\n\tstats:"},
	{"overload-rise-not-noted", "idleconn/limits.go",
		"\t\t\tl.scanStep.Store(min(l.scanStep.Load(), step+1))\n", ""},
	{"overload-coarse-step", "idleconn/limits.go",
		"if step <= l.scanStep.Load()+1 {", "if step <= l.scanStep.Load()+16 {"},
	{"overload-open-no-nudge", "idleconn/handler.go",
		"\t\th.nudge() // the scale fell a step", "\t\t_ = 0 // the scale fell a step"},
	{"overload-wake-no-pass", "idleconn/reaper.go",
		"\t\t\tl.dispatch() // Overload's pass (overloadKind)\n", ""},

	// The per-connection setters, which move limits later lazily and
	// earlier by re-arming.
	{"setIdle-no-restart", "idleconn/limits.go",
		"\tif ticks != 0 {\n\t\ts.last = l.stamp()\n\t\th.rearm(s, l)\n\t}", "\tif ticks != 0 {\n\t\th.rearm(s, l)\n\t}"},
	{"setIdle-no-rearm", "idleconn/limits.go",
		"\tif ticks != 0 {\n\t\ts.last = l.stamp()\n\t\th.rearm(s, l)\n\t}", "\tif ticks != 0 {\n\t\ts.last = l.stamp()\n\t}"},
	{"setDeadline-no-rearm", "idleconn/limits.go",
		"\t\ts.lim().deadline = max(h.clock.Deadline(t, 0), 1)\n\t\th.rearm(s, l)\n", "\t\ts.lim().deadline = max(h.clock.Deadline(t, 0), 1)\n\t\t_ = l\n"},
	{"setDeadline-floor", "idleconn/limits.go",
		"max(h.clock.Deadline(t, 0), 1)", "max(h.clock.Tick(t), 1)"},
	{"setLifetime-no-rearm", "idleconn/limits.go",
		"\ts.lim().life.ticks = ticks\n\th.rearm(s, l)\n", "\ts.lim().life.ticks = ticks\n\t_ = l\n"},
	{"touch-no-stamp", "idleconn/handler.go",
		"\tif s, l := h.tracking(c); s != nil {\n\t\ts.last = l.stamp()\n\t}", "\tif s, _ := h.tracking(c); s != nil {\n\t}"},

	// idleconn's Timers: their times, periods and stops.
	{"timer-period-drifts", "idleconn/timer.go",
		"\t\tt.at = later(t.at, t.period)\n", "\t\tt.at = later(t.at, t.period+l.cfg.tick/2)\n"},
	{"timer-catchup-at-once", "idleconn/timer.go",
		"max(l.tickOf(t.at), now+1)", "l.tickOf(t.at)"},
	{"timer-due-floor", "idleconn/timer.go",
		"return ceilDiv(at, l.cfg.tick)", "return uint64(at / l.cfg.tick)"},
	{"timer-stop-keeps", "idleconn/timer.go",
		"return t.l.tw.Cancel(&t.holder)", "return t.holder.Active()"},

	// idleconn's memory budget: the loops' sums and their pressure.
	{"closing-refund-uncharged", "idleconn/handler.go",
		"l.hold(s, s.pend) // and", "s.held = s.pend // and"},
	{"recheck-only-up", "idleconn/buffers.go",
		"if n > l.recheckAbove || n < l.recheckBelow {", "if n > l.recheckAbove {"},
	{"squeeze-below-half", "idleconn/buffers.go",
		"2*float64(used)/float64(b)-1", "2*float64(used)/float64(b)-0.8"},
	{"shed-output-as-input", "idleconn/buffers.go",
		"l.overBudget(s, s.held-s.pend, s.pend, true)", "l.overBudget(s, s.held, s.pend, true)"},
	{"holders-stale-list", "idleconn/buffers.go",
		"if from == to || from < listed && to < listed {", "if from == to || to < listed {"},
}
