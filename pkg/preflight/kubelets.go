package preflight

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/csi-translation-lib/plugins"
)

// KubeletSupport is, for one in-tree plugin, the upstream Kubernetes releases in which the
// kubelet's CSI migration of that plugin changed: when a kubelet can migrate the plugin at
// all, when it does so by default, and from when it always does (the feature gate locked on,
// so going back to the in-tree plugin is impossible). A kubelet reports what it actually
// does in its CSINode annotation; the table tells what it can do, which the annotation cannot.
type KubeletSupport struct {
	// Plugin is the in-tree plugin name.
	Plugin string `json:"plugin"`
	// FeatureGate is the kubelet feature gate that switched the plugin's migration.
	FeatureGate string `json:"featureGate"`
	// Alpha is the first release with the gate (off by default): older kubelets cannot migrate.
	Alpha string `json:"alpha"`
	// OnByDefault is the first release that migrates without setting the gate.
	OnByDefault string `json:"onByDefault"`
	// Locked is the release in which the gate went GA and was locked on: from it, the
	// kubelet always migrates the plugin and cannot be rolled back to the in-tree plugin.
	Locked string `json:"locked"`
}

// KubeletSupportSource names where KubeletSupportTable comes from, for findings and docs/operating.md.
const KubeletSupportSource = "Kubernetes feature-gate reference (kubernetes/website: content/en/docs/reference/command-line-tools-reference/feature-gates-removed.md " +
	"and the feature-gates pages of v1.26-v1.33), KEP-625 CSI migration"

// KubeletSupportTable lists the seven migratable plugins, by plugin name. Releases are the
// ones the feature-gate reference gives for each CSIMigration<Plugin> gate: alpha (default
// false), beta with default true, GA (locked).
var KubeletSupportTable = map[string]KubeletSupport{
	plugins.AWSEBSInTreePluginName:    {Plugin: plugins.AWSEBSInTreePluginName, FeatureGate: "CSIMigrationAWS", Alpha: "1.14", OnByDefault: "1.23", Locked: "1.25"},
	plugins.AzureDiskInTreePluginName: {Plugin: plugins.AzureDiskInTreePluginName, FeatureGate: "CSIMigrationAzureDisk", Alpha: "1.15", OnByDefault: "1.23", Locked: "1.24"},
	plugins.AzureFileInTreePluginName: {Plugin: plugins.AzureFileInTreePluginName, FeatureGate: "CSIMigrationAzureFile", Alpha: "1.15", OnByDefault: "1.24", Locked: "1.26"},
	plugins.CinderInTreePluginName:    {Plugin: plugins.CinderInTreePluginName, FeatureGate: "CSIMigrationOpenStack", Alpha: "1.14", OnByDefault: "1.18", Locked: "1.24"},
	plugins.GCEPDInTreePluginName:     {Plugin: plugins.GCEPDInTreePluginName, FeatureGate: "CSIMigrationGCE", Alpha: "1.14", OnByDefault: "1.23", Locked: "1.25"},
	plugins.PortworxVolumePluginName:  {Plugin: plugins.PortworxVolumePluginName, FeatureGate: "CSIMigrationPortworx", Alpha: "1.23", OnByDefault: "1.31", Locked: "1.33"},
	plugins.VSphereInTreePluginName:   {Plugin: plugins.VSphereInTreePluginName, FeatureGate: "CSIMigrationvSphere", Alpha: "1.18", OnByDefault: "1.25", Locked: "1.26"},
}

// KubeletCapability is what a kubelet of some version can do with one plugin's migration.
type KubeletCapability int

const (
	// KubeletVersionUnknown: the node reports no kubelet version adc can parse.
	KubeletVersionUnknown KubeletCapability = iota
	// KubeletCannotMigrate: older than the plugin's alpha; it always uses the in-tree plugin.
	KubeletCannotMigrate
	// KubeletMigratesWithGate: migrates only with the feature gate set.
	KubeletMigratesWithGate
	// KubeletMigratesByDefault: migrates unless the gate is set to false; can go back.
	KubeletMigratesByDefault
	// KubeletAlwaysMigrates: the gate is locked on; it cannot go back to the in-tree plugin.
	KubeletAlwaysMigrates
)

// String returns the capability as findings and JSON name it.
func (c KubeletCapability) String() string {
	switch c {
	case KubeletCannotMigrate:
		return "cannot-migrate"
	case KubeletMigratesWithGate:
		return "migrates-with-gate"
	case KubeletMigratesByDefault:
		return "migrates-by-default"
	case KubeletAlwaysMigrates:
		return "always-migrates"
	default:
		return "unknown"
	}
}

// Capability says what a kubelet of version kubeletVersion (as a Node reports it in
// status.nodeInfo.kubeletVersion, e.g. "v1.30.4-eks-1234") can do with the plugin. Vendor
// suffixes are ignored; a version adc cannot parse, or a plugin outside the table, is unknown.
func Capability(plugin, kubeletVersion string) KubeletCapability {
	s, ok := KubeletSupportTable[plugin]
	if !ok {
		return KubeletVersionUnknown
	}
	v, err := parseKubelet(kubeletVersion)
	if err != nil {
		return KubeletVersionUnknown
	}
	switch {
	case v.LessThan(version.MustParseGeneric(s.Alpha)):
		return KubeletCannotMigrate
	case v.LessThan(version.MustParseGeneric(s.OnByDefault)):
		return KubeletMigratesWithGate
	case v.LessThan(version.MustParseGeneric(s.Locked)):
		return KubeletMigratesByDefault
	}
	return KubeletAlwaysMigrates
}

// parseKubelet reads the major.minor of a kubelet version.
func parseKubelet(s string) (*version.Version, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("no kubelet version")
	}
	v, err := version.ParseGeneric(s)
	if err != nil {
		return nil, fmt.Errorf("kubelet version %q: %w", s, err)
	}
	if v.Major() == 0 {
		// Development builds report v0.0.0-master+...: no release to look up.
		return nil, fmt.Errorf("kubelet version %q names no release", s)
	}
	return version.MajorMinor(v.Major(), v.Minor()), nil
}
