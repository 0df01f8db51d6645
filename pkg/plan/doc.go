// Package plan is the engine behind `adc plan`, the operator's read-only dry run: it lists
// the cluster's pods, claims, volumes, nodes and CSI objects once, runs the migration decision
// engine for every (pod volume, node) pair of every scheduled, non-terminated pod, and renders
// the decisions as a table or as JSON. It writes nothing to the cluster.
//
// The reading (ReadCluster over a Reader: the API server, or a running controller's informer
// caches) is separate from the pure assembly (FromObjects) and the rendering (RenderTable,
// RenderJSON) so each can be tested on its own, and so the command in cmd/adc is only flag
// parsing and wiring. ReadCluster is also how status, preflight, rollout and explain read.
package plan
