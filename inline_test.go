package packwheel

import (
	"os/exec"
	"regexp"
	"testing"
)

// TestInlining pins the inlining the hot paths are written for: each of
// these functions is small enough for the compiler to inline into its
// callers, and a change that makes one too big slows every Schedule,
// ScheduleRange or Advance without failing any other test. It reads the
// compiler's -m report, as cespare/xxhash does.
func TestInlining(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the package")
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build with")
	}
	out, err := exec.Command(goCmd, "build", "-gcflags=-m", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build -gcflags=-m: %v\n%s", err, out)
	}
	for _, f := range []string{
		`\(\*store\[go\.shape\.[^]]+\]\)\.locate`, // every operation on an active holder
		`\(\*store\[go\.shape\.[^]]+\]\)\.cancel`, // Cancel
		`\(\*Wheel\[go\.shape\.[^]]+\]\)\.Cancel`, // into the caller's code
		`\(\*Hashed\[go\.shape\.[^]]+\]\)\.Cancel`,
		`\(\*store\[go\.shape\.[^]]+\]\)\.postpone`,    // Schedule, ScheduleAfter
		`\(\*store\[go\.shape\.[^]]+\]\)\.mayPostpone`, // postpone
		`\(\*Wheel\[go\.shape\.[^]]+\]\)\.bucketFor`,   // Schedule, cascade
		`\(\*Hashed\[go\.shape\.[^]]+\]\)\.bucketFor`,
		`levelFor`,
		`deadlineOf\[go\.shape\.[^]]+\]`, // cascade
		`\(\*Holder\)\.dueWithin`,        // ScheduleRange's no-op
		`checkTick`,
		`afterNow`,
		`\(\*reentry\)\.enter`,
		`\(\*Wheel\[go\.shape\.[^]]+\]\)\.unhint`,
		// packed's generic methods are compiled, and reported, where
		// this package instantiates them.
		`packed\.\(\*Store\[go\.shape\.[^]]+\]\)\.Find`,     // locate, Schedule
		`packed\.\(\*Store\[go\.shape\.[^]]+\]\)\.BucketOf`, // Remove, set
		`packed\.\(\*Store\[go\.shape\.[^]]+\]\)\.Empty`,    // the walks, NextExpiry
		`packed\.\(\*Store\[go\.shape\.[^]]+\]\)\.TryPush`,  // Schedule, cascade, moveLast
		`packed\.\(\*Store\[go\.shape\.[^]]+\]\)\.keeps`,    // PopEach's loop, dropTail
	} {
		if !regexp.MustCompile(`(?m): can inline ` + f + `( |$)`).Match(out) {
			t.Errorf("%s no longer inlines", f)
		}
	}
}
