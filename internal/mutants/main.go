// Command mutants puts each of a table of deliberate bugs (mutants.go) into
// a copy of packwheel, one at a time, and runs the randomized model tests
// of the package it changes on it (testsFor): TestWheelRandom,
// TestHashedRandom, TestStoreRandom and the fuzz targets' seeds for the
// wheels and their storage, TestReapBounds, TestIdleLookRandom,
// TestOverloadRandom, TestTimersRandom, TestSettersRandom,
// TestOutputBoundsRandom, TestBudgetModel and TestBudgetBands for
// idleconn. They are the net under the fast paths and cached state, and
// must fail for every mutant; one that survives shows a
// state the tests do not reach, as the hashed wheel's NextExpiry shortcut
// did until TestHashedRandom asked it after every step.
//
// Usage, from the repository's root:
//
//	go run ./internal/mutants [-run regexp] [-timeout duration]
//
// It prints a line per mutant: caught or survived, the time it took, and
// the first failure. It exits with status 1 if a mutant survived or did
// not build. A mutant that only some states show is caught only in some
// runs: nextExpiry-sweep-short fails about three runs in four, and its
// own unit test every time (TestHashedSweepShortOfARevolution); run a
// survivor again with -run before taking it for a gap. The tests read OPS and RANDOM_TIME from the environment (see
// model_test.go), so a longer run is OPS=10000000 go run ./internal/mutants.
// A whole table takes a few minutes on 2 cores, and needs nothing but Go.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// modulePath is the module whose packages the mutants change.
const modulePath = "github.com/packwheel/packwheel"

// testsFor returns the packages whose randomized model tests a mutant of
// file must fail, and those tests' names for go test's -run: the wheels'
// for the wheels, the wheels' and the store's for package packed, and
// idleconn's own on its fake clock for idleconn.
func testsFor(file string) (pkgs []string, run string) {
	switch {
	case strings.HasPrefix(file, "idleconn/"):
		return []string{"./idleconn"}, "^(TestReapBounds|TestIdleLookRandom|TestOverloadRandom|TestTimersRandom|TestSettersRandom|TestOutputBoundsRandom|TestBudgetModel|TestBudgetBands)$"
	case strings.HasPrefix(file, "packed/"):
		return []string{".", "./packed"}, "^(TestWheelRandom|TestHashedRandom|FuzzWheel|FuzzHashed|TestStoreRandom)$"
	}
	return []string{"."}, "^(TestWheelRandom|TestHashedRandom|FuzzWheel|FuzzHashed)$"
}

func main() {
	run := flag.String("run", "", "only the mutants whose names match this regular expression")
	timeout := flag.Duration("timeout", 3*time.Minute, "how long the tests may take for one mutant; longer is a failure, as a loop that does not end is")
	flag.Parse()
	only, err := regexp.Compile(*run)
	if err != nil {
		fail("mutants: -run: %v", err)
	}
	root, err := moduleRoot()
	if err != nil {
		fail("mutants: %v", err)
	}
	bad := 0
	for _, m := range mutants {
		if !only.MatchString(m.name) {
			continue
		}
		start := time.Now()
		verdict, detail, err := try(root, m, *timeout)
		if err != nil {
			fail("mutants: %s: %v", m.name, err)
		}
		if verdict != "caught" {
			bad++
		}
		fmt.Printf("%-32s %-9s %4.0fs  %s\n", m.name, verdict, time.Since(start).Seconds(), detail)
	}
	if bad > 0 {
		fail("mutants: %d survived or did not build", bad)
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(1)
}

// moduleRoot returns the directory of packwheel's go.mod, the working
// directory or one above it.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && bytes.HasPrefix(b, []byte("module "+modulePath+"\n")) {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", errors.New("run it inside packwheel's repository: no go.mod of " + modulePath + " here or above")
		}
		dir = up
	}
}

// try copies the module to a new directory, applies m there and runs the
// model tests that testsFor names. It returns "caught", "survived" or "no build", and the first
// line of the tests' output that names a failure.
func try(root string, m mutant, timeout time.Duration) (verdict, detail string, err error) {
	dir, err := os.MkdirTemp("", "packwheel-mutant-")
	if err != nil {
		return "", "", err
	}
	defer os.RemoveAll(dir)
	if err := copyModule(root, dir); err != nil {
		return "", "", err
	}
	if err := apply(dir, m); err != nil {
		return "", "", err
	}
	pkgs, tests := testsFor(m.file)
	// The test binary's own timeout first, so that a loop that does not
	// end prints its goroutines; the context's, later, in case it hangs
	// in a way that stops the binary from doing so.
	ctx, cancel := context.WithTimeout(context.Background(), timeout+time.Minute)
	defer cancel()
	args := append([]string{"test", "-count=1", "-failfast", "-timeout", timeout.String(), "-run", tests}, pkgs...)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	out, runErr := cmd.CombinedOutput()
	switch {
	case bytes.Contains(out, []byte("[build failed]")) || bytes.Contains(out, []byte("[setup failed]")):
		return "no build", firstLine(out, "error"), nil
	case runErr == nil:
		return "survived", "", nil
	}
	return "caught", firstLine(out, "--- FAIL", "panic:", "_test.go:"), nil
}

// firstLine returns the first line of out that contains one of marks,
// trimmed, or the first line if none does.
func firstLine(out []byte, marks ...string) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	for _, l := range lines {
		for _, mark := range marks {
			if strings.Contains(l, mark) {
				return strings.TrimSpace(l)
			}
		}
	}
	return strings.TrimSpace(lines[0])
}

// copyModule copies the module at root to dir: every file but those of
// version control and of bench, a module of its own.
func copyModule(root, dir string) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		if d.IsDir() {
			if rel == ".git" || rel == "bench" {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dir, rel), 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, rel), b, 0o644)
	})
}

// apply makes m's change in the module copied to dir.
func apply(dir string, m mutant) error {
	path := filepath.Join(dir, m.file)
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	src := string(b)
	if n := strings.Count(src, m.old); n != 1 {
		return fmt.Errorf("%s holds its text %d times, not once: the table is out of date (TestMutantsApply)", m.file, n)
	}
	return os.WriteFile(path, []byte(strings.Replace(src, m.old, m.new, 1)), 0o644)
}
