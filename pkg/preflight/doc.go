// Package preflight answers, before a CSI migration step, what would block or change when
// in-tree plugins move to another migration mode (off, on, complete): per node and per
// volume, with a severity (blocks or warns), the object, why and the fix. It backs
// `adc preflight`, whose exit code is 0 only when nothing blocks, and the dashboard's
// /preflight page with its JSON API.
//
// List reads the cluster once (what `adc status` reads, plus StorageClasses); Run is pure
// and decides every pod volume twice with the migration engine (pkg/migration), under the
// configuration now and under the one after the step, so a preflight can never disagree
// with what the controller would do. Translations are csi-translation-lib's own.
package preflight
