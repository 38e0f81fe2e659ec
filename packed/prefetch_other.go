//go:build !amd64 && !arm64

package packed

// prefetch does nothing where packed has no assembly for it: it is a hint
// (prefetch_asm.go).
func prefetch(*Link) {}
