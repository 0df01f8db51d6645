package multimap

import (
	"reflect"
	"testing"
)

func TestMultiMap(t *testing.T) {
	type op struct {
		add  bool
		k, v string
	}
	cases := []struct {
		name string
		ops  []op
		want map[string][]string
	}{
		{"one value", []op{{true, "a", "1"}}, map[string][]string{"a": {"1"}}},
		{"adding twice keeps one", []op{{true, "a", "1"}, {true, "a", "1"}}, map[string][]string{"a": {"1"}}},
		{"several values in order", []op{{true, "a", "1"}, {true, "a", "2"}, {true, "a", "3"}, {true, "a", "2"}}, map[string][]string{"a": {"1", "2", "3"}}},
		{"removing the first promotes the next", []op{{true, "a", "1"}, {true, "a", "2"}, {true, "a", "3"}, {false, "a", "1"}}, map[string][]string{"a": {"2", "3"}}},
		{"removing a later one", []op{{true, "a", "1"}, {true, "a", "2"}, {true, "a", "3"}, {false, "a", "2"}}, map[string][]string{"a": {"1", "3"}}},
		{"removing the last forgets the key", []op{{true, "a", "1"}, {false, "a", "1"}, {false, "a", "1"}}, map[string][]string{}},
		{"removing what is not there", []op{{true, "a", "1"}, {false, "a", "9"}, {false, "b", "1"}}, map[string][]string{"a": {"1"}}},
		{"keys are apart", []op{{true, "a", "1"}, {true, "b", "1"}, {false, "a", "1"}}, map[string][]string{"b": {"1"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := New[string, string]()
			for _, o := range tc.ops {
				if o.add {
					m.Add(o.k, o.v)
				} else {
					m.Remove(o.k, o.v)
				}
			}
			if m.Len() != len(tc.want) {
				t.Errorf("%d keys, want %d", m.Len(), len(tc.want))
			}
			for k, want := range tc.want {
				if got := m.Values(k); !reflect.DeepEqual(got, want) {
					t.Errorf("values(%s) = %v, want %v", k, got, want)
				}
			}
			for k, rest := range m.more {
				if len(rest) == 0 || m.one[k] == "" {
					t.Errorf("key %s: stray overflow %v", k, rest)
				}
			}
		})
	}
}
