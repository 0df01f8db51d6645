// Package volumeattach owns every write adc makes for attachments: creating and deleting
// VolumeAttachment objects and patching Node status.volumesAttached.
//
// Keeping the writes here, behind small interfaces, lets the controller stay a pure
// reconcile loop over listers and lets tests count and fail writes at one boundary.
package volumeattach

// FieldManager is the field manager adc writes with, so `kubectl get --show-managed-fields`
// tells operators which fields adc owns.
const FieldManager = "adc"
