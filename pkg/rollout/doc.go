// Package rollout is the data model of a CSI migration rollout as operators see it: per
// in-tree plugin how many managed nodes are migrated, how volumes are attached, which pairs
// are held and why, and the problems (version skew, multi-attach) that need a human.
//
// One Report type feeds the dashboard page, its JSON API (/dashboard/api/v1/rollout,
// documented in docs/rollout-api.md) and `adc status`, so the three can never disagree. It is
// built either from a running controller (FromController, FromSnapshot) or from the cluster's
// objects without a controller (FromCluster). Building a report never writes to the cluster.
package rollout
