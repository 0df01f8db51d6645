// Package v1alpha1 re-creates the seed API csi.storage.k8s.io/v1alpha1 CSINodeInfo.
//
// Kubernetes no longer serves this API; adc ships it as a CustomResourceDefinition
// (deploy/crds/csi.storage.k8s.io_csinodeinfos.yaml) so that clusters whose node agents still
// publish per-driver migration state through it can drive adc's migration decisions. The
// types are hand-written (no code generator in this repository) and kept field-for-field and
// tag-for-tag identical to the seed document, so objects written by the original agents
// round-trip unchanged.
package v1alpha1
