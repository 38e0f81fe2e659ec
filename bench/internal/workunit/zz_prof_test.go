package workunit

import "testing"

func BenchmarkZZ(b *testing.B) {
	for b.Loop() {
		Run("hierarchical", 1000, true)
	}
}
func BenchmarkZZHashed(b *testing.B) {
	for b.Loop() {
		Run("hashed", 1000, true)
	}
}
