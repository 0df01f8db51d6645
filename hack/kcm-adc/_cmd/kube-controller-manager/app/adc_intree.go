// This file is not part of Kubernetes: it is adc's (github.com/migration-aware/adc), added to
// cmd/kube-controller-manager/app together with adc.go. It gives adc the attachable in-tree
// volume plugins of kube-controller-manager (iSCSI, FC, FlexVolume in 1.36) as its in-tree
// attacher, the ones the built-in attach/detach controller uses.

package app

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	clientset "k8s.io/client-go/kubernetes"
	restclient "k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/volume"
	"k8s.io/kubernetes/pkg/volume/csi"
	"k8s.io/mount-utils"

	"github.com/migration-aware/adc/pkg/adc"
)

// adcPluginAttacher is adc's in-tree attacher on kube-controller-manager's attachable volume
// plugins; CSI volumes are adc's own business.
type adcPluginAttacher struct {
	plugins *volume.VolumePluginMgr
}

var _ adc.InTreeAttacher = &adcPluginAttacher{}

func newADCInTreeAttacher(ctx context.Context, controllerContext ControllerContext, config *restclient.Config) (*adcPluginAttacher, error) {
	volumeConfig := controllerContext.ComponentConfig.PersistentVolumeBinderController.VolumeConfiguration
	all, err := ProbeAttachableVolumePlugins(klog.FromContext(ctx), volumeConfig)
	if err != nil {
		return nil, fmt.Errorf("probing attachable volume plugins for adc: %w", err)
	}
	var plugins []volume.VolumePlugin
	for _, p := range all {
		if p.GetPluginName() != csi.CSIPluginName {
			plugins = append(plugins, p)
		}
	}
	client, err := clientset.NewForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("building the volume plugins' client for adc: %w", err)
	}
	mgr := &volume.VolumePluginMgr{}
	// FlexVolume drivers are found in --flex-volume-plugin-dir, as for the built-in controller.
	if err := mgr.InitPlugins(plugins, GetDynamicPluginProber(ctx, volumeConfig), &adcVolumeHost{client: client}); err != nil {
		return nil, fmt.Errorf("initializing attachable volume plugins for adc: %w", err)
	}
	return &adcPluginAttacher{plugins: mgr}, nil
}

// adcVolumeHost is the little of volume.VolumeHost the attachable plugins use on the
// controller side; the embedded nil interface makes any other call fail loudly. The built-in
// attach/detach controller, its own VolumeHost, shows what other plugins would need
// (pkg/controller/volume/attachdetach/attach_detach_controller.go).
type adcVolumeHost struct {
	volume.VolumeHost
	client clientset.Interface
}

func (h *adcVolumeHost) GetKubeClient() clientset.Interface { return h.client }
func (h *adcVolumeHost) GetMounter() mount.Interface        { return mount.New("") }
func (h *adcVolumeHost) GetPluginDir(string) string         { return "" }

func adcVolumeSpec(v adc.InTreeVolume) *volume.Spec {
	switch {
	case v.PV != nil:
		return volume.NewSpecFromPersistentVolume(v.PV, false)
	case v.Inline != nil:
		return volume.NewSpecFromVolume(v.Inline)
	}
	return nil
}

func (a *adcPluginAttacher) Attach(_ context.Context, v adc.InTreeVolume, nodeName string) (string, error) {
	s := adcVolumeSpec(v)
	if s == nil {
		return "", fmt.Errorf("attaching %s: no volume spec", v.UniqueName)
	}
	plugin, err := a.plugins.FindAttachablePluginByName(v.Plugin)
	if err != nil {
		return "", err
	}
	attacher, err := plugin.NewAttacher()
	if err != nil {
		return "", err
	}
	return attacher.Attach(s, types.NodeName(nodeName))
}

func (a *adcPluginAttacher) Detach(_ context.Context, v adc.InTreeVolume, nodeName string) error {
	plugin, err := a.plugins.FindAttachablePluginByName(v.Plugin)
	if err != nil {
		return err
	}
	// The plugin's own volume name: GetVolumeName of the spec, or the unique name
	// "<plugin>/<volume name>" without its plugin prefix when only that is known.
	name := strings.TrimPrefix(v.UniqueName, v.Plugin+"/")
	if s := adcVolumeSpec(v); s != nil {
		if name, err = plugin.GetVolumeName(s); err != nil {
			return err
		}
	}
	detacher, err := plugin.NewDetacher()
	if err != nil {
		return err
	}
	return detacher.Detach(name, types.NodeName(nodeName))
}

func (a *adcPluginAttacher) VolumesAreAttached(_ context.Context, volumes []adc.InTreeVolume, nodeName string) (map[string]bool, error) {
	attached := map[string]bool{}
	byPlugin := map[string]map[*volume.Spec]string{}
	for _, v := range volumes {
		s := adcVolumeSpec(v)
		if s == nil {
			attached[v.UniqueName] = true // cannot be checked: assume attached, never detach on a guess
			continue
		}
		if byPlugin[v.Plugin] == nil {
			byPlugin[v.Plugin] = map[*volume.Spec]string{}
		}
		byPlugin[v.Plugin][s] = v.UniqueName
	}
	for name, specs := range byPlugin {
		plugin, err := a.plugins.FindAttachablePluginByName(name)
		if err != nil {
			return nil, err
		}
		attacher, err := plugin.NewAttacher()
		if err != nil {
			return nil, err
		}
		list := make([]*volume.Spec, 0, len(specs))
		for s := range specs {
			list = append(list, s)
		}
		result, err := attacher.VolumesAreAttached(list, types.NodeName(nodeName))
		if err != nil {
			return nil, err
		}
		for s, unique := range specs {
			attached[unique] = result[s]
		}
	}
	return attached, nil
}
