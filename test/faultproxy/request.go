package faultproxy

import (
	"net/http"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
)

// Request is one request the proxy saw, so tests can count API calls (for example the GETs
// of single Nodes a controller makes per detach) and check when a client relisted.
type Request struct {
	// Verb is the Kubernetes verb, as kube-apiserver's authorizer sees it: get, list,
	// watch, create, update, patch, delete, deletecollection; for non-resource paths
	// (/version, discovery) the lowercase HTTP method.
	Verb string
	// Resource is the resource as named in the URL path ("nodes", "volumeattachments"),
	// empty for non-resource paths.
	Resource string
	// Name is the object's name for single-object requests, or the name a list or watch
	// selects with fieldSelector=metadata.name=NAME.
	Name string
	// Namespace is the namespace in the path, empty for cluster-scoped and all-namespace
	// requests.
	Namespace string
	// Subresource is "status", "binding", ... for subresource requests.
	Subresource string
	// Watch is true for watch requests, including streaming lists (sendInitialEvents=true).
	Watch bool
	// SendInitialEvents is true for a streaming list (a watch with sendInitialEvents=true):
	// how client-go informers list when WatchListClient is on, so a test can tell their
	// relists from watches that resume.
	SendInitialEvents bool
	// ResourceVersion is the request's resourceVersion parameter: a watch with one (not
	// "0") resumes, a list with one is served from the watch cache.
	ResourceVersion string
	// Time is when the request reached the proxy, before any fault held it.
	Time time.Time
}

// target is what the fault logic needs to know about a request.
type target struct {
	Request
	// collection is true for LIST and WATCH of a whole collection: the only requests
	// faults apply to.
	collection bool
	// resuming is true for a watch that continues from a resourceVersion; while the
	// resource is expired it is answered 410.
	resuming bool
	// relist is true for a plain list or a streaming list (sendInitialEvents=true): it ends
	// an Expire, as a relist ends "too old resource version" on a real server.
	relist bool
}

// infoFactory parses paths the way kube-apiserver does, so verbs and resources here mean
// what they mean in RBAC and audit logs.
var infoFactory = &apirequest.RequestInfoFactory{
	APIPrefixes:          sets.NewString("api", "apis"),
	GrouplessAPIPrefixes: sets.NewString("api"),
}

// classify parses r into a target. Paths kube-apiserver could not parse either are
// recorded as non-resource requests and never faulted.
func classify(r *http.Request, now time.Time) target {
	t := target{Request: Request{Verb: strings.ToLower(r.Method), Time: now}}
	info, err := infoFactory.NewRequestInfo(r)
	if err != nil || !info.IsResourceRequest {
		return t
	}
	t.Verb, t.Resource, t.Name = info.Verb, info.Resource, info.Name
	t.Namespace, t.Subresource = info.Namespace, info.Subresource
	t.Watch = info.Verb == "watch"
	q := r.URL.Query()
	t.SendInitialEvents = t.Watch && strings.EqualFold(q.Get("sendInitialEvents"), "true")
	t.ResourceVersion = q.Get("resourceVersion")
	// Parts is relative to the resource: [resource] for a collection, [resource name ...]
	// for one object (also for the deprecated /watch/RESOURCE/NAME form).
	t.collection = (info.Verb == "list" || info.Verb == "watch") && len(info.Parts) == 1
	if !t.collection {
		return t
	}
	rv := t.ResourceVersion
	t.resuming = t.Watch && !t.SendInitialEvents && rv != "" && rv != "0"
	t.relist = !t.Watch || t.SendInitialEvents
	return t
}
