package minheap

// entry is one timer in the heap's array.
type entry[V any] struct {
	deadline uint64
	item     *Item
	value    V
}

// queue is the heap.Interface over the entries. Swap keeps every Item's
// index equal to its entry's position, which is what lets Fix and Remove
// find an item without searching.
type queue[V any] []entry[V]

func (q *queue[V]) Len() int { return len(*q) }

func (q *queue[V]) Less(i, j int) bool { return (*q)[i].deadline < (*q)[j].deadline }

func (q *queue[V]) Swap(i, j int) {
	s := *q
	s[i], s[j] = s[j], s[i]
	s[i].item.index = i + 1
	s[j].item.index = j + 1
}

// Push appends an entry. Heap.Schedule appends directly instead, so as not
// to box the entry; Push is here because heap.Interface requires it.
func (q *queue[V]) Push(x any) {
	e := x.(entry[V])
	*q = append(*q, e)
	e.item.index = len(*q)
}

// Pop drops the last entry, which heap.Pop and heap.Remove have just moved
// there, and marks its item inactive. It returns nil: the callers read the
// entry before, and returning it would box it in an interface, which
// allocates.
func (q *queue[V]) Pop() any {
	s := *q
	last := len(s) - 1
	s[last].item.index = 0
	s[last] = entry[V]{}
	*q = s[:last]
	return nil
}
