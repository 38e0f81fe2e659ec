//go:build ignore

// gen writes virtual_<implementation>_test.go from implgen's template: go
// generate.
package main

import (
	"log"

	"github.com/packwheel/packwheel/bench/internal/implgen"
)

func main() {
	if err := implgen.Adapter.Write("."); err != nil {
		log.Fatal(err)
	}
}
