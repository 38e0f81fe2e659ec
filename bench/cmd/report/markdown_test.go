package main

import (
	"bytes"
	"testing"
)

func TestFmtRatio(t *testing.T) {
	for _, c := range []struct {
		v    float64
		want string
	}{
		{0.04444, "0.0444"},
		{0.1922, "0.192"},
		{6.194, "6.19"},
		{1, "1.00"},
		{0.99996, "1.00"},
		{0.09996, "0.100"},
		{22.46, "22.5"},
		{9.996, "10.0"},
		{123.4, "123"},
		{0, "0"},
	} {
		if got := fmtRatio(c.v); got != c.want {
			t.Errorf("fmtRatio(%v) = %q, want %q", c.v, got, c.want)
		}
	}
}

// TestSpeedups checks that the headline is the baseline's median over the
// implementation's, not the inverse of a rounded ratio.
func TestSpeedups(t *testing.T) {
	r := results{
		{"Churn", "hashed", 100_000}:      {"ns/op": 11.52},
		{"Churn", "wheel", 100_000}:       {"ns/op": 12.53},
		{"Churn", baseline, 100_000}:      {"ns/op": 259.1},
		{"Churn", "hashed", 1_000_000}:    {"ns/op": 73.2},
		{"Churn", "wheel", 1_000_000}:     {"ns/op": 400},
		{"Churn", baseline, 1_000_000}:    {"ns/op": 380},
		{"Churn", "afterfunc", 1_000_000}: {"ns/op": 668},
	}
	var b bytes.Buffer
	(&report{r: r}).speedups(&b, churnNs, []string{"hashed", "wheel"})
	want := "Churn, times faster than timer-reset (timer-reset's median ns/op over theirs): " +
		"100k hashed 22.5×, wheel 20.7×; 1M hashed 5.19×, wheel 1.05× slower.\n"
	if got := b.String(); got != want {
		t.Errorf("speedups wrote\n%s\nwant\n%s", got, want)
	}
	if got := (&report{r: r}).ratioCell(churnNs, "hashed", 100_000); got != "0.0445×" {
		t.Errorf("ratio cell %q, want 0.0445×", got)
	}
}

// TestRoundRatios checks that ratios pair the runs of one round, the k-th
// of each implementation, which a ratio of the two medians does not: here
// it is 20/35, where the rounds' ratios are 0.25, 0.8 and 30/35.
func TestRoundRatios(t *testing.T) {
	run := func(workload, impl string, n int, v float64) sample {
		return sample{key{workload, impl, n}, map[string]float64{"ns/op": v}}
	}
	var samples []sample
	for i, round := range [][2]float64{{10, 40}, {20, 25}, {30, 35}} {
		samples = append(samples,
			run("Churn", "wheel", 10_000, round[0]),
			run("Churn", "list", 10_000, round[1]),
			run("Churn", "hashed", 10_000, 99),
			run("ScheduleCancel", "wheel", 10_000, 1),
			run("Churn", "list", 100_000, float64(100+i)))
	}
	r := medians(runsOf(samples))
	if m := r[key{"Churn", "wheel", 10_000}]["ns/op"] / r[key{"Churn", "list", 10_000}]["ns/op"]; m == 0.8 {
		t.Fatalf("the ratio of medians is the rounds' median here; the test no longer tells them apart")
	}
	got := roundRatios(runsOf(samples), churnNs, "wheel", "list")
	want := map[int]roundRatio{10_000: {median: 0.8, lo: 0.25, hi: 30.0 / 35}}
	if len(got) != len(want) || got[10_000] != want[10_000] {
		t.Errorf("roundRatios = %+v, want %+v", got, want)
	}
	// A run more of one of them: the pairs can no longer be told apart.
	samples = append(samples, run("Churn", "wheel", 10_000, 1000))
	if got := roundRatios(runsOf(samples), churnNs, "wheel", "list"); len(got) != 0 {
		t.Errorf("roundRatios with 4 runs against 3 = %+v, want none", got)
	}
}
