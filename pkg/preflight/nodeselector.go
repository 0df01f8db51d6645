package preflight

import (
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// matchesNodeSelector reports whether node matches a required node selector as the kubelet
// and the scheduler evaluate a PersistentVolume's node affinity: terms are ORed, the
// expressions of a term ANDed; a term without expressions matches nothing.
func matchesNodeSelector(sel *v1.NodeSelector, node *v1.Node) bool {
	for _, t := range sel.NodeSelectorTerms {
		if len(t.MatchExpressions) == 0 && len(t.MatchFields) == 0 {
			continue
		}
		ok := true
		for _, e := range t.MatchExpressions {
			if !matchesRequirement(e, node.Labels) {
				ok = false
				break
			}
		}
		for _, e := range t.MatchFields {
			if e.Key != "metadata.name" || !matchesRequirement(v1.NodeSelectorRequirement{Key: e.Key, Operator: e.Operator, Values: e.Values}, map[string]string{"metadata.name": node.Name}) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

func matchesRequirement(e v1.NodeSelectorRequirement, labels map[string]string) bool {
	value, has := labels[e.Key]
	switch e.Operator {
	case v1.NodeSelectorOpIn:
		return has && slices.Contains(e.Values, value)
	case v1.NodeSelectorOpNotIn:
		return !has || !slices.Contains(e.Values, value)
	case v1.NodeSelectorOpExists:
		return has
	case v1.NodeSelectorOpDoesNotExist:
		return !has
	case v1.NodeSelectorOpGt, v1.NodeSelectorOpLt:
		if !has || len(e.Values) != 1 {
			return false
		}
		got, err1 := strconv.ParseInt(value, 10, 64)
		want, err2 := strconv.ParseInt(e.Values[0], 10, 64)
		if err1 != nil || err2 != nil {
			return false
		}
		if e.Operator == v1.NodeSelectorOpGt {
			return got > want
		}
		return got < want
	}
	return false
}

// describeSelector renders a node selector as "key in (a, b) and key2 exists or ...".
func describeSelector(sel *v1.NodeSelector) string {
	var terms []string
	for _, t := range sel.NodeSelectorTerms {
		var exprs []string
		for _, e := range t.MatchExpressions {
			switch e.Operator {
			case v1.NodeSelectorOpExists, v1.NodeSelectorOpDoesNotExist:
				exprs = append(exprs, e.Key+" "+strings.ToLower(string(e.Operator)))
			default:
				exprs = append(exprs, e.Key+" "+strings.ToLower(string(e.Operator))+" ("+strings.Join(e.Values, ", ")+")")
			}
		}
		terms = append(terms, strings.Join(exprs, " and "))
	}
	return strings.Join(terms, " or ")
}
