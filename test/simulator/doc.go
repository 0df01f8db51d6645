// Package simulator simulates what lives outside the control plane and that adc's tests
// and demo need: a CSI driver's external-attacher (it sets VolumeAttachment
// status.attached) and the kubelet's registration and reporting (Node, CSINode,
// status.volumesInUse). Nothing here is used by the controller itself; it is kept out of
// pkg/ so no production path can depend on it.
package simulator
