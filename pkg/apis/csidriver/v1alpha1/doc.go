// Package v1alpha1 re-creates the seed API csi.storage.k8s.io/v1alpha1 CSIDriver.
//
// Kubernetes no longer serves this API; adc ships it as a CustomResourceDefinition
// (deploy/crds/csi.storage.k8s.io_csidrivers.yaml) so that clusters whose CSI drivers still
// declare attachRequired through it are attached the way those drivers expect
// (--driver-info-source=seed or auto). It is the other half of the seed API whose CSINodeInfo
// lives in pkg/apis/csinodeinfo/v1alpha1. The types are hand-written (no code generator in
// this repository) and kept field-for-field and tag-for-tag identical to the seed document, so
// objects written by the original installers round-trip unchanged.
//
// Careful: in this API an existing CSIDriver whose spec.attachRequired is unset means false
// (no attach), while in storage.k8s.io/v1 unset means true. pkg/migration applies the rule.
package v1alpha1
