package main

import (
	"bytes"
	"strings"
	"testing"
)

// annotated is callgrind_annotate's output as version 3.19 writes it with
// --show-percs=no, cut down: the totals, then one line per function.
const annotated = `--------------------------------------------------------------------------------
Profile data file 'callgrind.out' (creator: callgrind-3.19.0)
--------------------------------------------------------------------------------
Events recorded:  Ir
Thresholds:       100
--------------------------------------------------------------------------------
Ir
--------------------------------------------------------------------------------
10,136,534,888  PROGRAM TOTALS

--------------------------------------------------------------------------------
Ir              file:function
--------------------------------------------------------------------------------
1,052,816,214  /w/bench/internal/workunit/sim_hierarchical.go:workunit.(*hierarchicalUnit).unidle [/tmp/wu]
1,002,771,948  /w/store.go:packwheel.(*store[go.shape.*uint8]).insert [/tmp/wu]
  778,134,608  /w/bench/internal/workunit/sim_hierarchical.go:workunit.(*hierarchicalUnit).deliver [/tmp/wu]
  152,727,833  /w/store.go:packwheel.(*Wheel[go.shape.*uint8]).fire
        1,224  /usr/local/go/src/runtime/asm_amd64.s:runtime.morestack_noctxt.abi0 [/tmp/wu]

--------------------------------------------------------------------------------
-- Auto-annotated source: /w/bench/internal/workunit/sim_hierarchical.go
--------------------------------------------------------------------------------
228,873,090  func (u *hierarchicalUnit) unidle() {
1,162,026,264  => /w/bench/internal/workunit/sim_hierarchical.go:workunit.(*hierarchicalUnit).deliver (45,774,618x)
`

// TestParseAnnotated checks that the totals come from the PROGRAM TOTALS
// line, that only the functions of sim_*.go files count as the
// simulation's, and that source annotations, had they been asked for,
// count for nothing.
func TestParseAnnotated(t *testing.T) {
	total, sim, err := parseAnnotated(annotated)
	if err != nil {
		t.Fatal(err)
	}
	if total != 10_136_534_888 || sim != 1_052_816_214+778_134_608 {
		t.Errorf("parseAnnotated = %d, %d; want 10136534888, %d", total, sim, 1_052_816_214+778_134_608)
	}
	if _, _, err := parseAnnotated("no totals here\n"); err == nil {
		t.Error("parseAnnotated accepted output without PROGRAM TOTALS")
	}
}

// TestInstructionTable checks the table made from instructions.txt: the
// ratio to the reference, and no split for the reference itself.
func TestInstructionTable(t *testing.T) {
	runs, err := parseInstructions(strings.NewReader(
		"requested=1000 wheel=ratas-c++ range=true instructions=3000000000 sim_instructions=0\n" +
			"requested=1000 wheel=list range=true instructions=9000000000 sim_instructions=3000000000\n"))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	(&report{instr: runs}).instructionTable(&b)
	for _, want := range []string{
		"| ratas-c++ | 1000 | 3.00 G | 1.00× | - | - |",
		"| list | 1000 | 9.00 G | 3.00× | 3.00 G | 6.00 G |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	if _, err := parseInstructions(strings.NewReader("requested=x wheel=list instructions=1\n")); err == nil {
		t.Error("parseInstructions accepted a bad count")
	}
}
