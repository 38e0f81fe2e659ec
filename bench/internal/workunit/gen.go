//go:build ignore

// gen writes sim_<implementation>.go from implgen's template: go generate.
package main

import (
	"log"

	"github.com/packwheel/packwheel/bench/internal/implgen"
)

func main() {
	if err := implgen.Sim.Write("."); err != nil {
		log.Fatal(err)
	}
}
