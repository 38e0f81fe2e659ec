package engine

import (
	"fmt"
	"strings"

	"github.com/packwheel/packwheel/idleconn"
)

// Status returns the status line the example servers print: how many
// connections are open, how many idleconn closed for each of reasons (the
// ones that apply to the server) and in all, and how many it refused, as
//
//	open 3  reaped 2 (idle 1, input full 1)  refused 0
//
// It is what a client sees nothing of: why the server closed it.
func Status(s idleconn.Stats, reasons ...idleconn.Reason) string {
	var b strings.Builder
	var reaped uint64
	for i, why := range reasons {
		n := s.Reaped(why)
		reaped += n
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%v %d", why, n)
	}
	return fmt.Sprintf("open %d  reaped %d (%s)  refused %d", s.Tracked, reaped, b.String(), s.Refused)
}
