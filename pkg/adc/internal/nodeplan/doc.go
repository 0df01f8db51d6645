// Package nodeplan is the decision half of a node's reconcile, as a pure function of what the
// reconcile read: the node (from the cache, or as the API server has it), the desired pairs
// with their decisions, the node's attachments, each volume's detach rule, and the time. It
// returns what to do with each pair and each attachment; pkg/adc's reconcile reads, plans and
// applies (memory, the create queue, the API), the split upstream's attach/detach controller
// makes between its reconciler and its operation executor, and the external-attacher
// between its controller and its handler. No clients, no clocks, no memory: table tests feed
// objects and read steps.
//
// A detach is planned twice, or three times: on the cached node (which can only stop a
// detach: the cache may be behind the kubelet's volumesInUse), on the node read from the API
// server once per reconcile (every step that moves a detach forward is decided on it), and,
// for a forced detach or one a DetachPolicy's evidence allowed, again on one more read right
// before the delete: the plan must still say detach.
package nodeplan
