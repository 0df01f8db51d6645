// Package metrics exposes adc's Prometheus metrics through k8s.io/component-base/metrics, so
// they appear on adc's /metrics and, when adc is embedded, in the host's legacy registry.
//
// Three names are upstream's attach/detach controller metrics, kept because users already
// chart them: attachdetach_controller_total_volumes, storage_operation_duration_seconds and
// attachdetach_controller_forced_detaches. The adc_* metrics describe the migration rollout
// (nodes migrated per plugin, decisions, held pairs, problems). State metrics are computed
// at scrape time from the current controller's snapshot by custom collectors, so they can
// never drift from what the dashboard shows; operation metrics are fed through the
// controller's Observer hook. No metric has a node or pod name as a label.
//
// Importing the package also installs the component-base workqueue metrics provider, so the
// controller's named queues (adc_node, adc_node_status) report workqueue_* metrics.
package metrics
