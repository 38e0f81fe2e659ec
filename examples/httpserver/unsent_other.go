//go:build !linux

package main

// boundUnsent does nothing where the server is not built for Linux: the
// kernel's own bound on what it holds unsent stands (unsent.go).
func boundUnsent(fd, n int) error { return nil }
