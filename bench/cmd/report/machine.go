package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
)

// machine describes the machine the results were measured on.
func machine() string {
	model, mem := "unknown CPU", "unknown memory"
	if v := procField("/proc/cpuinfo", "model name"); v != "" {
		model = v
	}
	if v := procField("/proc/meminfo", "MemTotal"); v != "" {
		if kb, err := strconv.ParseFloat(strings.TrimSuffix(v, " kB"), 64); err == nil {
			mem = fmt.Sprintf("%.0f GiB", kb/(1<<20))
		}
	}
	return fmt.Sprintf("%s, %d CPUs (nproc), %s of memory, %s/%s, %s",
		model, runtime.NumCPU(), mem, runtime.GOOS, runtime.GOARCH, runtime.Version())
}

// procField returns the value of the first "name : value" line of a /proc
// file, or "" if there is none.
func procField(path, name string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == name {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// coreVersion names the packwheel commit the bench module's replace
// directive points at, noting uncommitted changes to it.
func coreVersion() string {
	rev, err := exec.Command("git", "-C", "..", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "an unknown commit"
	}
	v := strings.TrimSpace(string(rev))
	if st, err := exec.Command("git", "-C", "..", "status", "--porcelain", "--untracked-files=no", "--", ".", ":!bench").Output(); err == nil && len(st) > 0 {
		v += " with uncommitted changes"
	}
	return v
}

// loadAverage returns the 1, 5 and 15 minute load averages, which say how
// much else was running on the machine, or "unknown".
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "unknown"
}
