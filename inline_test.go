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
		`\(\*store\[[^]]+\]\)\.locate`,    // every operation on an active holder
		`\(\*store\[[^]]+\]\)\.pushBack`,  // Schedule's postpone in place
		`\(\*store\[[^]]+\]\)\.unkeep`,    // insert into an empty bucket that kept its array
		`\(\*Wheel\[[^]]+\]\)\.bucketFor`, // Schedule, cascade
		`\(\*Hashed\[[^]]+\]\)\.bucketFor`,
		`levelFor`,
		`linkedBucket`,
		`\(\*Holder\)\.dueWithin`, // ScheduleRange's no-op
		`checkTick`,
		`afterNow`,
		`\(\*reentry\)\.enter`,
		`bitset\.set`,
		`bitset\.clear`,
		// packed's generic methods are compiled, and reported, where
		// this package instantiates them.
		`packed\.\(\*Bucket\[[^]]+\]\)\.Remove`, // store.cancel, with no call
		`packed\.\(\*Bucket\[[^]]+\]\)\.Push`,   // store.insert
		`packed\.\(\*Bucket\[[^]]+\]\)\.Pop`,    // Wheel.fire, once per timer
		`packed\.\(\*Bucket\[[^]]+\]\)\.Len`,
		`packed\.\(\*Bucket\[[^]]+\]\)\.Entries`,
	} {
		if !regexp.MustCompile(`(?m): can inline ` + f + `( |$)`).Match(out) {
			t.Errorf("%s no longer inlines", f)
		}
	}
}
