package adc

// vaExpectations are the VolumeAttachments adc created (or is creating) that its informer has
// not shown yet, indexed by name, node and volume source. During an attach storm on a large
// cluster the informer lags and thousands are pending at once; every reconcile asks "what is
// expected on this node" and every ReadWriteOnce attach "is this volume expected elsewhere",
// so both are map lookups rather than scans of all of them.
type vaExpectations struct {
	byName   map[string]*expectedVA
	byNode   map[string]map[string]*expectedVA
	bySource map[string]map[string]*expectedVA
}

func newVAExpectations() vaExpectations {
	return vaExpectations{
		byName:   map[string]*expectedVA{},
		byNode:   map[string]map[string]*expectedVA{},
		bySource: map[string]map[string]*expectedVA{},
	}
}

// get returns the expectation of the named VolumeAttachment, or nil.
func (x *vaExpectations) get(name string) *expectedVA { return x.byName[name] }

// add records e under its object's name, replacing an earlier one of that name.
func (x *vaExpectations) add(e *expectedVA) {
	x.remove(e.va.Name)
	e.node, e.sourceKey = e.va.Spec.NodeName, vaSourceKey(e.va)
	x.byName[e.va.Name] = e
	addTo(x.byNode, e.node, e.va.Name, e)
	if e.sourceKey != "" {
		addTo(x.bySource, e.sourceKey, e.va.Name, e)
	}
}

// remove forgets the named VolumeAttachment's expectation, if any.
func (x *vaExpectations) remove(name string) {
	e := x.byName[name]
	if e == nil {
		return
	}
	delete(x.byName, name)
	removeFrom(x.byNode, e.node, name)
	if e.sourceKey != "" {
		removeFrom(x.bySource, e.sourceKey, name)
	}
}

// onNode returns the expectations of one node (the map is the index's: do not change it).
func (x *vaExpectations) onNode(node string) map[string]*expectedVA { return x.byNode[node] }

// ofSource returns the expectations of one volume source key (read only, as onNode).
func (x *vaExpectations) ofSource(key string) map[string]*expectedVA { return x.bySource[key] }

func addTo(m map[string]map[string]*expectedVA, key, name string, e *expectedVA) {
	inner := m[key]
	if inner == nil {
		inner = map[string]*expectedVA{}
		m[key] = inner
	}
	inner[name] = e
}

func removeFrom(m map[string]map[string]*expectedVA, key, name string) {
	if inner := m[key]; inner != nil {
		delete(inner, name)
		if len(inner) == 0 {
			delete(m, key)
		}
	}
}
