//go:build amd64 || arm64

package packed

// prefetch asks the processor to bring the cache line of link into its
// caches, without waiting for it and without faulting: PopEach's look
// ahead at the next entry's Link. Go has no prefetch that user code can
// call, so it is a call of a few instructions (prefetch_amd64.s,
// prefetch_arm64.s).
//
//go:noescape
func prefetch(link *Link)
