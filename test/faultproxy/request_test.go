package faultproxy

import (
	"net/http"
	"testing"
	"time"
)

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		method, url string
		want        target
	}{
		{"GET", "/api/v1/nodes", target{Request: Request{Verb: "list", Resource: "nodes"}, collection: true, relist: true}},
		{"GET", "/api/v1/nodes?watch=true&resourceVersion=5", target{Request: Request{Verb: "watch", Resource: "nodes", Watch: true, ResourceVersion: "5"}, collection: true, resuming: true}},
		{"GET", "/api/v1/nodes?watch=1&resourceVersion=0", target{Request: Request{Verb: "watch", Resource: "nodes", Watch: true, ResourceVersion: "0"}, collection: true}},
		{"GET", "/api/v1/nodes?watch=true", target{Request: Request{Verb: "watch", Resource: "nodes", Watch: true}, collection: true}},
		{"GET", "/api/v1/nodes?watch=true&sendInitialEvents=true&resourceVersion=5&resourceVersionMatch=NotOlderThan", target{Request: Request{Verb: "watch", Resource: "nodes", Watch: true, SendInitialEvents: true, ResourceVersion: "5"}, collection: true, relist: true}},
		{"GET", "/api/v1/nodes?watch=true&fieldSelector=metadata.name%3Dn1&resourceVersion=5", target{Request: Request{Verb: "watch", Resource: "nodes", Name: "n1", Watch: true, ResourceVersion: "5"}, collection: true, resuming: true}},
		{"GET", "/api/v1/watch/nodes?resourceVersion=5", target{Request: Request{Verb: "watch", Resource: "nodes", Watch: true, ResourceVersion: "5"}, collection: true, resuming: true}},
		{"GET", "/api/v1/watch/nodes/n1", target{Request: Request{Verb: "watch", Resource: "nodes", Name: "n1", Watch: true}}},
		{"GET", "/api/v1/nodes/n1", target{Request: Request{Verb: "get", Resource: "nodes", Name: "n1"}}},
		{"GET", "/api/v1/nodes/n1/status", target{Request: Request{Verb: "get", Resource: "nodes", Name: "n1", Subresource: "status"}}},
		{"PATCH", "/api/v1/nodes/n1/status", target{Request: Request{Verb: "patch", Resource: "nodes", Name: "n1", Subresource: "status"}}},
		{"GET", "/api/v1/pods?labelSelector=a%3Db", target{Request: Request{Verb: "list", Resource: "pods"}, collection: true, relist: true}},
		{"GET", "/api/v1/namespaces/x/pods?watch=true&resourceVersion=7", target{Request: Request{Verb: "watch", Resource: "pods", Namespace: "x", Watch: true, ResourceVersion: "7"}, collection: true, resuming: true}},
		{"POST", "/api/v1/namespaces/x/pods", target{Request: Request{Verb: "create", Resource: "pods", Namespace: "x"}}},
		{"DELETE", "/api/v1/namespaces/x/pods", target{Request: Request{Verb: "deletecollection", Resource: "pods", Namespace: "x"}}},
		{"GET", "/apis/storage.k8s.io/v1/volumeattachments", target{Request: Request{Verb: "list", Resource: "volumeattachments"}, collection: true, relist: true}},
		{"DELETE", "/apis/storage.k8s.io/v1/volumeattachments/va", target{Request: Request{Verb: "delete", Resource: "volumeattachments", Name: "va"}}},
		{"GET", "/api/v1/namespaces", target{Request: Request{Verb: "list", Resource: "namespaces"}, collection: true, relist: true}},
		{"GET", "/api/v1/namespaces/x", target{Request: Request{Verb: "get", Resource: "namespaces", Name: "x", Namespace: "x"}}},
		{"GET", "/version", target{Request: Request{Verb: "get"}}},
		{"GET", "/apis/storage.k8s.io/v1", target{Request: Request{Verb: "get"}}},
	} {
		r, err := http.NewRequest(c.method, "http://127.0.0.1"+c.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		c.want.Time = now
		if got := classify(r, now); got != c.want {
			t.Errorf("%s %s:\n got %+v\nwant %+v", c.method, c.url, got, c.want)
		}
	}
}
