package main

// The kubelet's pod-resources API (v1), served from a JSON file that describes pods, containers
// and the device IDs each holds:
//
//	{"pods": [{"namespace": "default", "name": "demo",
//	           "containers": [{"name": "main",
//	                           "devices": [{"resource_name": "kunlunxin.com/xpu",
//	                                        "device_ids": ["<uuid>"]}],
//	                           "dynamic_resources": [{"claim_namespace": "default", "claim_name": "demo-xpu",
//	                                                  "claim_resources": [{"driver_name": "xpu.kunlunxin.com",
//	                                                                       "pool_name": "node-1", "device_name": "xpu-1",
//	                                                                       "cdi_devices": ["kunlunxin.com/xpu=<uuid>"]}]}]}]}]}
//
// (dynamic_resources: the devices of the container's DRA claims, as kubelets since 1.34 list them.)
//
// The file is read again whenever its size or modification time changes, so a test can move
// cards between pods while the exporter runs (write a temporary file and rename it over the old
// one). A file that does not parse is reported and the last good content stays in force.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"sort"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

type podsDocument struct {
	Pods []podEntry `json:"pods"`
}

type podEntry struct {
	Namespace  string           `json:"namespace"`
	Name       string           `json:"name"`
	Containers []containerEntry `json:"containers"`
}

type containerEntry struct {
	Name             string         `json:"name"`
	Devices          []deviceEntry  `json:"devices"`
	DynamicResources []dynamicEntry `json:"dynamic_resources,omitempty"`
}

type dynamicEntry struct {
	ClaimNamespace string               `json:"claim_namespace"`
	ClaimName      string               `json:"claim_name"`
	ClaimResources []claimResourceEntry `json:"claim_resources"`
}

type claimResourceEntry struct {
	DriverName string   `json:"driver_name"`
	PoolName   string   `json:"pool_name"`
	DeviceName string   `json:"device_name"`
	CDIDevices []string `json:"cdi_devices,omitempty"`
}

type deviceEntry struct {
	ResourceName string   `json:"resource_name"`
	DeviceIDs    []string `json:"device_ids"`
	NUMANodes    []int64  `json:"numa_nodes,omitempty"`
}

func parsePodsDocument(data []byte) ([]*podresourcesv1.PodResources, error) {
	var doc podsDocument
	decoder := json.NewDecoder(bytes.NewReader(data))
	decoder.DisallowUnknownFields()
	if err := decoder.Decode(&doc); err != nil {
		return nil, err
	}
	var pods []*podresourcesv1.PodResources
	for i, pod := range doc.Pods {
		if pod.Name == "" || pod.Namespace == "" {
			return nil, fmt.Errorf("pods[%d]: name and namespace are required", i)
		}
		entry := &podresourcesv1.PodResources{Name: pod.Name, Namespace: pod.Namespace}
		for _, container := range pod.Containers {
			resources := &podresourcesv1.ContainerResources{Name: container.Name}
			for _, devices := range container.Devices {
				claim := &podresourcesv1.ContainerDevices{ResourceName: devices.ResourceName, DeviceIds: devices.DeviceIDs}
				if len(devices.NUMANodes) > 0 {
					claim.Topology = &podresourcesv1.TopologyInfo{}
					for _, node := range devices.NUMANodes {
						claim.Topology.Nodes = append(claim.Topology.Nodes, &podresourcesv1.NUMANode{ID: node})
					}
				}
				resources.Devices = append(resources.Devices, claim)
			}
			for _, dynamic := range container.DynamicResources {
				claimEntry := &podresourcesv1.DynamicResource{ClaimNamespace: dynamic.ClaimNamespace, ClaimName: dynamic.ClaimName}
				for _, r := range dynamic.ClaimResources {
					resource := &podresourcesv1.ClaimResource{DriverName: r.DriverName, PoolName: r.PoolName, DeviceName: r.DeviceName}
					for _, name := range r.CDIDevices {
						resource.CdiDevices = append(resource.CdiDevices, &podresourcesv1.CDIDevice{Name: name})
					}
					claimEntry.ClaimResources = append(claimEntry.ClaimResources, resource)
				}
				resources.DynamicResources = append(resources.DynamicResources, claimEntry)
			}
			entry.Containers = append(entry.Containers, resources)
		}
		pods = append(pods, entry)
	}
	return pods, nil
}

type fileStamp struct {
	size    int64
	modTime time.Time
	inode   uint64
}

// podResourcesServer implements PodResourcesLister over the pods file.
type podResourcesServer struct {
	podresourcesv1.UnimplementedPodResourcesListerServer
	path      string
	listDelay time.Duration

	mu    sync.Mutex
	stamp fileStamp
	pods  []*podresourcesv1.PodResources
}

func newPodResourcesServer(path string, listDelay time.Duration) (*podResourcesServer, error) {
	server := &podResourcesServer{path: path, listDelay: listDelay}
	if err := server.reload(); err != nil {
		return nil, err
	}
	return server, nil
}

// reload reads the file again when it changed since the last read.
func (s *podResourcesServer) reload() error {
	info, err := os.Stat(s.path)
	if err != nil {
		return err
	}
	stamp := fileStamp{size: info.Size(), modTime: info.ModTime()}
	if sys, ok := info.Sys().(*syscall.Stat_t); ok {
		stamp.inode = sys.Ino
	}
	if s.pods != nil && stamp == s.stamp {
		return nil
	}
	data, err := os.ReadFile(s.path)
	if err != nil {
		return err
	}
	pods, err := parsePodsDocument(data)
	if err != nil {
		return fmt.Errorf("%s: %w", s.path, err)
	}
	if pods == nil {
		pods = []*podresourcesv1.PodResources{}
	}
	s.stamp, s.pods = stamp, pods
	return nil
}

func (s *podResourcesServer) current() []*podresourcesv1.PodResources {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.reload(); err != nil {
		fmt.Fprintln(os.Stderr, "kubelet-standin podresources: keeping the last good pods:", err)
	}
	return s.pods
}

func (s *podResourcesServer) List(ctx context.Context, _ *podresourcesv1.ListPodResourcesRequest) (*podresourcesv1.ListPodResourcesResponse, error) {
	if s.listDelay > 0 {
		select {
		case <-time.After(s.listDelay):
		case <-ctx.Done():
			return nil, status.FromContextError(ctx.Err()).Err()
		}
	}
	return &podresourcesv1.ListPodResourcesResponse{PodResources: s.current()}, nil
}

func (s *podResourcesServer) Get(_ context.Context, request *podresourcesv1.GetPodResourcesRequest) (*podresourcesv1.GetPodResourcesResponse, error) {
	for _, pod := range s.current() {
		if pod.Name == request.PodName && pod.Namespace == request.PodNamespace {
			return &podresourcesv1.GetPodResourcesResponse{PodResources: pod}, nil
		}
	}
	return nil, status.Errorf(codes.NotFound, "pod %s/%s not found", request.PodNamespace, request.PodName)
}

// GetAllocatableResources reports every device some container holds, per resource name.
func (s *podResourcesServer) GetAllocatableResources(context.Context, *podresourcesv1.AllocatableResourcesRequest) (*podresourcesv1.AllocatableResourcesResponse, error) {
	byResource := map[string][]string{}
	for _, pod := range s.current() {
		for _, container := range pod.Containers {
			for _, devices := range container.Devices {
				byResource[devices.ResourceName] = append(byResource[devices.ResourceName], devices.DeviceIds...)
			}
		}
	}
	names := make([]string, 0, len(byResource))
	for name := range byResource {
		names = append(names, name)
	}
	sort.Strings(names)
	response := &podresourcesv1.AllocatableResourcesResponse{}
	for _, name := range names {
		response.Devices = append(response.Devices, &podresourcesv1.ContainerDevices{ResourceName: name, DeviceIds: byResource[name]})
	}
	return response, nil
}

// listenUnix replaces a stale socket file, as the kubelet does on start.
func listenUnix(path string) (net.Listener, error) {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	return net.Listen("unix", path)
}

func runPodResources(args []string) error {
	flags := flag.NewFlagSet("kubelet-standin podresources", flag.ContinueOnError)
	socket := flags.String("socket", "", "unix socket to serve the pod-resources API on (required)")
	podsFile := flags.String("pods-file", "", "JSON file describing pods, containers and device IDs (required)")
	listDelay := flags.Duration("list-delay", 0, "hold every List call this long (a hung kubelet)")
	if err := flags.Parse(args); err != nil {
		os.Exit(2)
	}
	if *socket == "" || *podsFile == "" || flags.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: kubelet-standin podresources --socket PATH --pods-file FILE [--list-delay D]")
		os.Exit(2)
	}
	service, err := newPodResourcesServer(*podsFile, *listDelay)
	if err != nil {
		return err
	}
	listener, err := listenUnix(*socket)
	if err != nil {
		return err
	}
	defer os.Remove(*socket)
	server := grpc.NewServer()
	podresourcesv1.RegisterPodResourcesListerServer(server, service)

	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer cancel()
	go func() {
		<-ctx.Done()
		server.Stop()
	}()
	fmt.Fprintf(os.Stderr, "kubelet-standin podresources: serving %s on %s\n", *podsFile, *socket)
	return server.Serve(listener)
}
