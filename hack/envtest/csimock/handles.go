package main

import (
	"context"
	"fmt"
	"sync"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// handles maps the volume ids callers use (PV volume handles) to the mock's own volume ids.
// The mock driver knows only volumes it created and gives them sequence-number ids; a mapped
// handle is created as a mock volume named after it on first sight.
type handles struct {
	mu      sync.Mutex
	create  func(ctx context.Context, req *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error)
	toMock  map[string]string
	toHandl map[string]string
}

func newHandles(create func(context.Context, *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error)) *handles {
	return &handles{create: create, toMock: map[string]string{}, toHandl: map[string]string{}}
}

// mockID returns the mock volume id of handle, creating the volume when it is new.
func (h *handles) mockID(ctx context.Context, handle string) (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if id, ok := h.toMock[handle]; ok {
		return id, nil
	}
	resp, err := h.create(ctx, &csi.CreateVolumeRequest{
		Name: handle,
		VolumeCapabilities: []*csi.VolumeCapability{{
			AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
			AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
		}},
	})
	if err != nil {
		return "", fmt.Errorf("creating a mock volume for handle %q: %w", handle, err)
	}
	id := resp.GetVolume().GetVolumeId()
	h.toMock[handle] = id
	h.toHandl[id] = handle
	return id, nil
}

// created records an id that CreateVolume returned to a caller: it maps to itself.
func (h *handles) created(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.toMock[id]; !ok {
		h.toMock[id] = id
		h.toHandl[id] = id
	}
}

// handle returns the handle of a mock id, or the id itself when it was never mapped.
func (h *handles) handle(id string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if hd, ok := h.toHandl[id]; ok {
		return hd
	}
	return id
}

// volumeIDField returns the top-level volume_id field of a request, if it has one. The CSI
// spec's Go types are generated with the older protobuf API, hence the adapter.
func volumeIDField(m protoadapt.MessageV1) (protoreflect.Message, protoreflect.FieldDescriptor) {
	r := protoadapt.MessageV2Of(m).ProtoReflect()
	fd := r.Descriptor().Fields().ByName("volume_id")
	if fd == nil || fd.Kind() != protoreflect.StringKind {
		return r, nil
	}
	return r, fd
}

// mapResponse rewrites the mock ids of a response back to handles, for the responses that
// carry volume ids of existing volumes (ListVolumes, ControllerGetVolume).
func (h *handles) mapResponse(resp any) {
	switch r := resp.(type) {
	case *csi.ListVolumesResponse:
		for _, e := range r.GetEntries() {
			if v := e.GetVolume(); v != nil {
				// The mock may hand out pointers into its own state: rewrite a copy.
				c := *v
				c.VolumeId = h.handle(v.VolumeId)
				e.Volume = &c
			}
		}
	case *csi.ControllerGetVolumeResponse:
		if v := r.GetVolume(); v != nil {
			c := *v
			c.VolumeId = h.handle(v.VolumeId)
			r.Volume = &c
		}
	}
}
