// Package multimap is a map from a key to a set of values, made for one value per key: the
// controller's claim -> pods and memory's volume -> VolumeAttachments.
package multimap

// Map maps a key to a set of values, made for the common case of one value per key (a
// claim used by one pod, a volume attached to one node): the first value of each key is kept
// in one map, the others, rare, in a second. A map to slices would cost a one-element slice per
// key. Callers lock; the zero value is not usable (New).
type Map[K, V comparable] struct {
	one  map[K]V
	more map[K][]V
}

func New[K, V comparable]() Map[K, V] {
	return Map[K, V]{one: map[K]V{}, more: map[K][]V{}}
}

// Add records v under k; nothing when it is there already.
func (m Map[K, V]) Add(k K, v V) {
	first, ok := m.one[k]
	switch {
	case !ok:
		m.one[k] = v
	case first == v:
	default:
		for _, o := range m.more[k] {
			if o == v {
				return
			}
		}
		m.more[k] = append(m.more[k], v)
	}
}

// Remove forgets v under k.
func (m Map[K, V]) Remove(k K, v V) {
	first, ok := m.one[k]
	if !ok {
		return
	}
	rest := m.more[k]
	if first == v {
		if len(rest) == 0 {
			delete(m.one, k)
			return
		}
		m.one[k] = rest[0]
		rest = rest[1:]
	} else {
		i := 0
		for i < len(rest) && rest[i] != v {
			i++
		}
		if i == len(rest) {
			return
		}
		rest = append(rest[:i:i], rest[i+1:]...)
	}
	if len(rest) == 0 {
		delete(m.more, k)
	} else {
		m.more[k] = rest
	}
}

// Values returns the values of k, first added first (the slice is the caller's).
func (m Map[K, V]) Values(k K) []V {
	first, ok := m.one[k]
	if !ok {
		return nil
	}
	return append([]V{first}, m.more[k]...)
}

// Len is the number of keys.
func (m Map[K, V]) Len() int { return len(m.one) }

// Range calls f with each key and its values, in no order, until f returns false.
func (m Map[K, V]) Range(f func(k K, values []V) bool) {
	for k := range m.one {
		if !f(k, m.Values(k)) {
			return
		}
	}
}
