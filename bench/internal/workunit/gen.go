//go:build ignore

// gen writes sim_<implementation>.go from simgen's template: go generate.
package main

import (
	"log"
	"os"

	"github.com/packwheel/packwheel/bench/internal/workunit/simgen"
)

func main() {
	for _, impl := range simgen.Impls {
		src, err := simgen.Render(impl)
		if err != nil {
			log.Fatal(err)
		}
		if err := os.WriteFile(simgen.File(impl), src, 0o644); err != nil {
			log.Fatal(err)
		}
	}
}
