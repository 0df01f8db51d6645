// Package explain answers "why is this pod's volume (not) attached?": for each volume of a
// pod, or of the pods using a PersistentVolume, the whole chain as adc sees it now: the
// decision and the objects that decided it, which node holds a ReadWriteOnce volume and
// since when, the VolumeAttachment and the external-attacher's error, whether node status
// lists it and the kubelet reports it in use, and for a detach what blocks it and when a
// forced detach would happen. It backs `adc explain` and the dashboard's /explain page with
// its JSON API.
//
// Read reads only what the target needs, through the reader plan uses (pkg/plan); Build
// is pure and decides with the migration engine (pkg/migration) exactly as the controller
// does. A running controller's memory (held pairs with their retries, problems, recent
// operations) comes from its rollout report, which /api/v1/rollout serves.
package explain
