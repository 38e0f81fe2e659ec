//go:build !linux

package engine

import "github.com/panjf2000/gnet/v2"

// BoundUnsent does nothing where the servers are not built for Linux: the
// kernel's own bound on what it holds unsent stands (unsent.go).
func BoundUnsent(c gnet.Conn, n int) error { return nil }
