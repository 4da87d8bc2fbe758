// Command device-plugin advertises a configurable number of fake GPUs (nvidia.com/gpu by default)
// to the kubelet through its real device-plugin API (k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1):
// it serves the DevicePlugin gRPC service on a socket in the kubelet's device-plugins folder and
// registers it with the kubelet's Registration service. The playground's real node runs it so the
// chart's GPU worker groups schedule there as real containers; nothing is a real device.
//
// When the kubelet restarts it removes the plugin sockets; the plugin notices its socket is gone,
// serves a new one and registers again. Allocate answers NVIDIA_VISIBLE_DEVICES=<ids>, as the
// NVIDIA plugin does, and no device nodes or mounts.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

type plugin struct {
	pluginapi.UnimplementedDevicePluginServer
	devices []*pluginapi.Device
	stop    chan struct{}
}

func (p *plugin) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return &pluginapi.DevicePluginOptions{}, nil
}

// ListAndWatch sends the device list once, then holds the stream open until the plugin stops.
func (p *plugin) ListAndWatch(_ *pluginapi.Empty, s grpc.ServerStreamingServer[pluginapi.ListAndWatchResponse]) error {
	if err := s.Send(&pluginapi.ListAndWatchResponse{Devices: p.devices}); err != nil {
		return err
	}
	select {
	case <-p.stop:
	case <-s.Context().Done():
	}
	return nil
}

func (p *plugin) GetPreferredAllocation(context.Context, *pluginapi.PreferredAllocationRequest) (*pluginapi.PreferredAllocationResponse, error) {
	return &pluginapi.PreferredAllocationResponse{}, nil
}

func (p *plugin) Allocate(_ context.Context, req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	resp := &pluginapi.AllocateResponse{}
	for _, c := range req.ContainerRequests {
		resp.ContainerResponses = append(resp.ContainerResponses, &pluginapi.ContainerAllocateResponse{
			Envs: map[string]string{"NVIDIA_VISIBLE_DEVICES": strings.Join(c.DevicesIds, ",")},
		})
	}
	return resp, nil
}

func (p *plugin) PreStartContainer(context.Context, *pluginapi.PreStartContainerRequest) (*pluginapi.PreStartContainerResponse, error) {
	return &pluginapi.PreStartContainerResponse{}, nil
}

// serve listens on sock, serves the plugin and registers it with the kubelet.
func serve(dir, sock, resource string, p *plugin) (*grpc.Server, error) {
	path := filepath.Join(dir, sock)
	_ = os.Remove(path)
	lis, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	srv := grpc.NewServer()
	pluginapi.RegisterDevicePluginServer(srv, p)
	go func() { _ = srv.Serve(lis) }()
	conn, err := grpc.NewClient("unix://"+filepath.Join(dir, "kubelet.sock"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		srv.Stop()
		return nil, err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = pluginapi.NewRegistrationClient(conn).Register(ctx, &pluginapi.RegisterRequest{
		Version: pluginapi.Version, Endpoint: sock, ResourceName: resource, Options: &pluginapi.DevicePluginOptions{},
	})
	if err != nil {
		srv.Stop()
		return nil, fmt.Errorf("register with the kubelet: %w", err)
	}
	return srv, nil
}

func main() {
	count := flag.Int("count", 2, "how many devices to advertise")
	resource := flag.String("resource", "nvidia.com/gpu", "the extended resource name")
	dir := flag.String("dir", pluginapi.DevicePluginPath, "the kubelet's device-plugins folder")
	sock := flag.String("socket", "dockyard-gpu.sock", "this plugin's socket name in -dir")
	flag.Parse()
	if *count < 0 || *count > 64 {
		log.Fatalf("-count %d: expected 0..64", *count)
	}
	devices := make([]*pluginapi.Device, *count)
	for i := range devices {
		devices[i] = &pluginapi.Device{ID: fmt.Sprintf("playground-gpu-%d", i), Health: pluginapi.Healthy}
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	var srv *grpc.Server
	var p *plugin
	path := filepath.Join(*dir, *sock)
	for {
		if srv == nil {
			p = &plugin{devices: devices, stop: make(chan struct{})}
			s, err := serve(*dir, *sock, *resource, p)
			if err != nil {
				log.Printf("not registered yet: %v (retrying)", err)
			} else {
				srv = s
				log.Printf("registered %s: %d devices on %s", *resource, *count, path)
			}
		} else if _, err := os.Stat(path); err != nil { // the kubelet restarted and removed it
			log.Printf("socket %s is gone: registering again", path)
			close(p.stop)
			srv.Stop()
			srv = nil
			continue
		}
		select {
		case <-sigs:
			if srv != nil {
				close(p.stop)
				srv.Stop()
			}
			_ = os.Remove(path)
			return
		case <-time.After(time.Second):
		}
	}
}
