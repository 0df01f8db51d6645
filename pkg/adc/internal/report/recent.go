package report

import "sync"

// Recent is a fixed-size, concurrency-safe ring of the last items of a kind (operations,
// flips), for the dashboard: memory stays bounded however long the controller runs.
type Recent[T any] struct {
	size int

	mu   sync.Mutex
	ring []T
	next int
	full bool
}

// NewRecent returns a ring of the last size items.
func NewRecent[T any](size int) *Recent[T] { return &Recent[T]{size: size} }

// Add records item, dropping the oldest when full.
func (r *Recent[T]) Add(item T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ring == nil {
		r.ring = make([]T, r.size)
	}
	r.ring[r.next] = item
	r.next = (r.next + 1) % len(r.ring)
	if r.next == 0 {
		r.full = true
	}
}

// List returns the items newest first.
func (r *Recent[T]) List() []T {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.next
	if r.full {
		n = len(r.ring)
	}
	out := make([]T, 0, n)
	for i := 1; i <= n; i++ {
		out = append(out, r.ring[(r.next-i+len(r.ring))%len(r.ring)])
	}
	return out
}
