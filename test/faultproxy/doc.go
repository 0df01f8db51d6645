// Package faultproxy is a TEST-ONLY reverse proxy between a Kubernetes client (adc, or a
// client-go informer) and a real kube-apiserver. It cuts, freezes or delays the list and watch
// streams of one resource at a time and answers resuming watches with 410 Gone, so
// integration tests can replay, deterministically, what clients see when an API server
// restarts: informers resyncing one by one, one resource's watch coming back seconds after the
// others, relists after "too old resource version".
//
// The proxy listens on 127.0.0.1 only, speaks plain HTTP to its clients and authenticates
// upstream with the admin credentials it was given, so it must never run outside tests.
//
// It works on bytes only: protobuf and JSON watch streams, paginated lists and streaming lists
// (watch with sendInitialEvents=true) go through unparsed, chunk by chunk, in order.
package faultproxy
