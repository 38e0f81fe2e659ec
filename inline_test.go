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
		`\(\*store\[go\.shape\.[^]]+\]\)\.locate`,    // every operation on an active holder
		`\(\*store\[go\.shape\.[^]]+\]\)\.pushBack`,  // Schedule's postpone in place
		`\(\*store\[go\.shape\.[^]]+\]\)\.unkeep`,    // insert into an empty bucket that kept its array
		`\(\*store\[go\.shape\.[^]]+\]\)\.overKept`,  // the end of every walk
		`\(\*Wheel\[go\.shape\.[^]]+\]\)\.bucketFor`, // Schedule, cascade
		`\(\*Hashed\[go\.shape\.[^]]+\]\)\.bucketFor`,
		`levelFor`,
		`linkedBucket`,
		`\(\*Holder\)\.dueWithin`, // ScheduleRange's no-op
		`checkTick`,
		`afterNow`,
		`\(\*reentry\)\.enter`,
		`\(\*Wheel\[go\.shape\.[^]]+\]\)\.unhint`,
		`bitset\.set`,
		`bitset\.clear`,
		// packed's generic methods are compiled, and reported, where
		// this package instantiates them.
		`packed\.\(\*Bucket\[go\.shape\.[^]]+\]\)\.Remove`, // store.cancel, with no call
		`packed\.\(\*Bucket\[go\.shape\.[^]]+\]\)\.Push`,   // store.insert
		`packed\.\(\*Bucket\[go\.shape\.[^]]+\]\)\.Pop`,    // Wheel.fire, once per timer
		`packed\.\(\*Bucket\[go\.shape\.[^]]+\]\)\.Len`,
		`packed\.\(\*Bucket\[go\.shape\.[^]]+\]\)\.Entries`,
	} {
		if !regexp.MustCompile(`(?m): can inline ` + f + `( |$)`).Match(out) {
			t.Errorf("%s no longer inlines", f)
		}
	}
}
