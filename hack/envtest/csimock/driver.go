package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path"
	"path/filepath"
	"sort"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/reflect/protoreflect"
	"k8s.io/klog/v2"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
	mockdriver "k8s.io/kubernetes/test/e2e/storage/drivers/csi-test/driver"
	"k8s.io/kubernetes/test/e2e/storage/drivers/csi-test/mock/service"
)

// maxSocketPath is the longest unix socket path Linux accepts (sun_path minus the NUL).
const maxSocketPath = 107

// driver is one mock CSI driver served on a controller socket and on one socket per node,
// all over the same mock state.
type driver struct {
	opts    options
	svc     service.Service
	calls   *callLog
	handles *handles
	logger  klog.Logger

	mockServers []*mockdriver.CSIDriver
	regServers  []*grpc.Server
	// sockets and dirs this process created, removed on stop (dirs only when empty, since a
	// kubelet shares plugins_registry and plugins).
	sockets []string
	dirs    []string
}

func newDriver(ctx context.Context, o options, calls *callLog) (*driver, error) {
	svc := service.New(service.Config{DriverName: o.driverName, DisableAttach: o.disableAttach, PermissiveTargetPath: true})
	d := &driver{opts: o, svc: svc, calls: calls, logger: klog.FromContext(ctx).WithValues("driver", o.driverName)}
	if o.mapHandles {
		d.handles = newHandles(svc.CreateVolume)
		for _, v := range o.volumes {
			if _, err := d.handles.mockID(ctx, v); err != nil {
				return nil, fmt.Errorf("--volume %q: %w", v, err)
			}
		}
	}
	return d, nil
}

// serve starts every listener; on an error the ones started are stopped by stop.
func (d *driver) serve() error {
	l, err := d.listen(d.opts.controllerSocket)
	if err != nil {
		return err
	}
	ctrl := mockdriver.NewCSIDriver(&mockdriver.CSIDriverServers{Identity: d.svc, Controller: d.svc})
	if err := ctrl.Start(l, d.intercept("")); err != nil {
		return fmt.Errorf("serving the controller socket %s: %w", d.opts.controllerSocket, err)
	}
	d.mockServers = append(d.mockServers, ctrl)
	for _, n := range d.opts.nodes {
		if err := d.serveNode(n); err != nil {
			return err
		}
	}
	return nil
}

// serveNode serves the node service on the node's plugin socket and the registration service
// in its kubelet's plugins_registry, in that order: the kubelet dials the endpoint as soon as
// it sees the registration socket.
func (d *driver) serveNode(n node) error {
	endpoint := filepath.Join(n.rootDir, "plugins", d.opts.driverName, "csi.sock")
	l, err := d.listen(endpoint)
	if err != nil {
		return fmt.Errorf("node %s: %w", n.name, err)
	}
	srv := mockdriver.NewCSIDriver(&mockdriver.CSIDriverServers{Identity: d.svc, Node: d.svc})
	if err := srv.Start(l, d.intercept(n.name)); err != nil {
		return fmt.Errorf("serving node %s's CSI socket %s: %w", n.name, endpoint, err)
	}
	d.mockServers = append(d.mockServers, srv)

	regPath := filepath.Join(n.rootDir, "plugins_registry", d.opts.driverName+"-reg.sock")
	rl, err := d.listen(regPath)
	if err != nil {
		return fmt.Errorf("node %s: %w", n.name, err)
	}
	reg := grpc.NewServer(grpc.UnaryInterceptor(d.intercept(n.name)))
	registerapi.RegisterRegistrationServer(reg, &registration{driver: d.opts.driverName, endpoint: endpoint, logger: d.logger.WithValues("node", n.name)})
	d.regServers = append(d.regServers, reg)
	go func() { _ = reg.Serve(rl) }()
	return nil
}

// listen listens on a unix socket, creating its folder (and remembering what it created) and
// replacing a stale socket file.
func (d *driver) listen(sock string) (net.Listener, error) {
	if len(sock) > maxSocketPath {
		return nil, fmt.Errorf("unix socket path %s is %d bytes, longer than the %d Linux accepts: use a shorter kubelet root dir", sock, len(sock), maxSocketPath)
	}
	if err := d.mkdirAll(filepath.Dir(sock)); err != nil {
		return nil, err
	}
	if fi, err := os.Lstat(sock); err == nil && fi.Mode()&os.ModeSocket != 0 {
		_ = os.Remove(sock)
	}
	l, err := net.Listen("unix", sock)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", sock, err)
	}
	d.sockets = append(d.sockets, sock)
	return l, nil
}

// mkdirAll creates dir and its missing parents, remembering each one it created.
func (d *driver) mkdirAll(dir string) error {
	var missing []string
	for p := dir; ; p = filepath.Dir(p) {
		if _, err := os.Stat(p); err == nil || p == "/" {
			break
		}
		missing = append(missing, p)
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("creating socket folder %s: %w", dir, err)
	}
	d.dirs = append(d.dirs, missing...)
	return nil
}

// stop stops every server and removes the sockets and the (empty) folders it created.
func (d *driver) stop() {
	for _, r := range d.regServers {
		r.Stop()
	}
	for _, s := range d.mockServers {
		s.Stop()
	}
	for _, s := range d.sockets {
		if err := os.Remove(s); err != nil && !errors.Is(err, os.ErrNotExist) {
			d.logger.Error(err, "Could not remove socket", "path", s)
		}
	}
	// Deepest first; folders that are not empty (a kubelet's) stay.
	sort.Slice(d.dirs, func(i, j int) bool { return len(d.dirs[i]) > len(d.dirs[j]) })
	for _, dir := range d.dirs {
		_ = os.Remove(dir)
	}
}

// intercept records every call, tagged with the node whose socket it came in on, and maps
// volume handles to mock volume ids and back.
func (d *driver) intercept(nodeName string) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		rec := callRecord{Start: time.Now(), Method: path.Base(info.FullMethod), Node: nodeName}
		if m, ok := req.(protoadapt.MessageV1); ok {
			r, fd := volumeIDField(m)
			if fd != nil {
				rec.VolumeID = r.Get(fd).String()
				if d.handles != nil && rec.VolumeID != "" {
					id, err := d.handles.mockID(ctx, rec.VolumeID)
					if err != nil {
						err = status.Error(codes.Internal, err.Error())
						d.record(rec, err)
						return nil, err
					}
					rec.MockVolumeID = id
					r.Set(fd, protoreflect.ValueOfString(id))
				}
			}
			if nf := r.Descriptor().Fields().ByName("node_id"); nf != nil && nf.Kind() == protoreflect.StringKind {
				rec.NodeID = r.Get(nf).String()
			}
		}
		resp, err := handler(ctx, req)
		if info, ok := resp.(*csi.NodeGetInfoResponse); ok && err == nil && len(d.opts.topology[nodeName]) > 0 {
			info.AccessibleTopology = &csi.Topology{Segments: d.opts.topology[nodeName]}
		}
		if d.handles != nil && err == nil {
			if cv, ok := resp.(*csi.CreateVolumeResponse); ok {
				d.handles.created(cv.GetVolume().GetVolumeId())
			}
			d.handles.mapResponse(resp)
		}
		if st, ok := req.(*registerapi.RegistrationStatus); ok && !st.PluginRegistered {
			rec.Error = "kubelet did not register the plugin: " + st.Error
		}
		d.record(rec, err)
		return resp, err
	}
}

func (d *driver) record(rec callRecord, err error) {
	st := status.Convert(err)
	rec.Code = st.Code().String()
	if err != nil {
		rec.Error = st.Message()
	}
	rec.Time = time.Now()
	d.calls.add(rec)
	d.logger.V(4).Info("CSI call", "method", rec.Method, "node", rec.Node, "volumeID", rec.VolumeID, "mockVolumeID", rec.MockVolumeID, "code", rec.Code, "err", rec.Error)
}

// registration is the kubelet plugin-registration service of one node (what
// node-driver-registrar serves in a cluster).
type registration struct {
	registerapi.UnimplementedRegistrationServer
	driver, endpoint string
	logger           klog.Logger
}

// GetInfo tells the kubelet this is a CSI plugin, its name and its endpoint.
func (r *registration) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return &registerapi.PluginInfo{Type: registerapi.CSIPlugin, Name: r.driver, Endpoint: r.endpoint, SupportedVersions: []string{"1.0.0"}}, nil
}

// NotifyRegistrationStatus logs the kubelet's verdict.
func (r *registration) NotifyRegistrationStatus(_ context.Context, st *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	if st.PluginRegistered {
		r.logger.Info("Kubelet registered the driver")
	} else {
		r.logger.Error(nil, "Kubelet refused the driver", "reason", st.Error)
	}
	return &registerapi.RegistrationStatusResponse{}, nil
}
