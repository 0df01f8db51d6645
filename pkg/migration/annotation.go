package migration

import "strings"

// ParseMigratedPlugins parses the CSINode annotation storage.alpha.kubernetes.io/migrated-plugins.
// The kubelet writes a sorted, comma-separated list, but the value is user-editable and older
// or third-party agents are sloppier, so spaces around items, empty items and duplicates are
// tolerated. Names that are not migratable in-tree plugins are returned separately in unknown
// (de-duplicated, in order of first appearance) so the caller can surface them as a note: an
// unknown name cannot be acted on, but it must not make a whole node undecidable.
//
// plugins holds the known names, de-duplicated, in order of first appearance. Both slices are
// nil when empty. The parser makes at most a few allocations whatever the input, since it runs
// on every CSINode update and is fuzzed.
func ParseMigratedPlugins(value string) (plugins []string, unknown []string) {
	var seen uint32 // bit i set: MigratablePlugins[i] already returned
	var seenUnknown map[string]struct{}
	for rest := value; ; {
		item, tail, more := strings.Cut(rest, ",")
		item = strings.TrimSpace(item)
		if item != "" {
			if i := migratableIndex(item); i >= 0 {
				if seen&(1<<i) == 0 {
					seen |= 1 << i
					plugins = append(plugins, MigratablePlugins[i])
				}
			} else if !containsString(unknown, item, seenUnknown) {
				unknown = append(unknown, item)
				// Past a handful of unknown names switch to a set, so a hostile value with
				// thousands of distinct names stays linear.
				if len(unknown) == 16 {
					seenUnknown = make(map[string]struct{}, 32)
					for _, u := range unknown {
						seenUnknown[u] = struct{}{}
					}
				} else if seenUnknown != nil {
					seenUnknown[item] = struct{}{}
				}
			}
		}
		if !more {
			break
		}
		rest = tail
	}
	return plugins, unknown
}

// containsString reports whether s is in list, using set when it is non-nil.
func containsString(list []string, s string, set map[string]struct{}) bool {
	if set != nil {
		_, ok := set[s]
		return ok
	}
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
}

// annotationLists reports, without allocating, whether the annotation value lists plugin and
// whether it contains any name that is not a migratable plugin. Decide uses it on the hot
// path and only calls ParseMigratedPlugins to build a note when hasUnknown is true.
func annotationLists(value, plugin string) (found, hasUnknown bool) {
	for rest := value; ; {
		item, tail, more := strings.Cut(rest, ",")
		item = strings.TrimSpace(item)
		if item != "" {
			if item == plugin {
				found = true
			} else if migratableIndex(item) < 0 {
				hasUnknown = true
			}
		}
		if !more {
			return found, hasUnknown
		}
		rest = tail
	}
}
