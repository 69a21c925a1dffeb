package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

const demoPods = `{"pods": [
  {"namespace": "default", "name": "demo", "containers": [
    {"name": "main", "devices": [{"resource_name": "kunlunxin.com/xpu", "device_ids": ["uuid-1"], "numa_nodes": [0]}]},
    {"name": "sidecar", "devices": [{"resource_name": "example.com/nic", "device_ids": ["nic-0"]}]}]}]}`

// writeAtomically replaces path the way a test should: a temporary file renamed over it.
func writeAtomically(t testing.TB, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// servePodResources serves the pods file on socket in this process until the returned stop is
// called (or the test ends).
func servePodResources(t testing.TB, socket, podsFile string, listDelay time.Duration) (stop func()) {
	t.Helper()
	service, err := newPodResourcesServer(podsFile, listDelay)
	if err != nil {
		t.Fatal(err)
	}
	listener, err := listenUnix(socket)
	if err != nil {
		t.Fatal(err)
	}
	server := grpc.NewServer()
	podresourcesv1.RegisterPodResourcesListerServer(server, service)
	go func() { _ = server.Serve(listener) }()
	t.Cleanup(server.Stop)
	return server.Stop
}

func startPodResources(t *testing.T, content string, listDelay time.Duration) (podresourcesv1.PodResourcesListerClient, string) {
	t.Helper()
	dir := t.TempDir()
	podsFile := filepath.Join(dir, "pods.json")
	writeAtomically(t, podsFile, content)
	socket := filepath.Join(dir, "kubelet.sock")
	servePodResources(t, socket, podsFile, listDelay)

	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return podresourcesv1.NewPodResourcesListerClient(conn), podsFile
}

func list(t *testing.T, client podresourcesv1.PodResourcesListerClient) *podresourcesv1.ListPodResourcesResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	reply, err := client.List(ctx, &podresourcesv1.ListPodResourcesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return reply
}

func TestPodResourcesListServesTheFile(t *testing.T) {
	client, _ := startPodResources(t, demoPods, 0)
	reply := list(t, client)
	if len(reply.PodResources) != 1 {
		t.Fatalf("want 1 pod, got %v", reply.PodResources)
	}
	pod := reply.PodResources[0]
	if pod.Namespace != "default" || pod.Name != "demo" || len(pod.Containers) != 2 {
		t.Fatalf("unexpected pod %v", pod)
	}
	main := pod.Containers[0]
	if main.Name != "main" || main.Devices[0].ResourceName != "kunlunxin.com/xpu" ||
		len(main.Devices[0].DeviceIds) != 1 || main.Devices[0].DeviceIds[0] != "uuid-1" ||
		main.Devices[0].Topology.Nodes[0].ID != 0 {
		t.Fatalf("unexpected container %v", main)
	}
}

func TestPodResourcesRereadsTheFileWhenItChanges(t *testing.T) {
	client, podsFile := startPodResources(t, demoPods, 0)
	list(t, client)
	writeAtomically(t, podsFile, `{"pods": [{"namespace": "ml", "name": "train", "containers": [
	  {"name": "w", "devices": [{"resource_name": "kunlunxin.com/xpu", "device_ids": ["uuid-2", "uuid-3"]}]}]}]}`)
	reply := list(t, client)
	if len(reply.PodResources) != 1 || reply.PodResources[0].Name != "train" ||
		len(reply.PodResources[0].Containers[0].Devices[0].DeviceIds) != 2 {
		t.Fatalf("file change not picked up: %v", reply.PodResources)
	}

	writeAtomically(t, podsFile, `{"pods": [`) // broken: the last good content stays
	reply = list(t, client)
	if len(reply.PodResources) != 1 || reply.PodResources[0].Name != "train" {
		t.Fatalf("broken file replaced the pods: %v", reply.PodResources)
	}

	writeAtomically(t, podsFile, `{"pods": []}`)
	if reply = list(t, client); len(reply.PodResources) != 0 {
		t.Fatalf("want no pods, got %v", reply.PodResources)
	}
}

func TestPodResourcesRejectsBadFilesAtStart(t *testing.T) {
	dir := t.TempDir()
	for _, content := range []string{`{"pods": [{"name": "x"}]}`, `{"pods": [], "extra": 1}`, `[]`, ``} {
		path := filepath.Join(dir, "pods.json")
		writeAtomically(t, path, content)
		if _, err := newPodResourcesServer(path, 0); err == nil {
			t.Errorf("accepted %q", content)
		}
	}
	if _, err := newPodResourcesServer(filepath.Join(dir, "missing.json"), 0); err == nil {
		t.Error("accepted a missing file")
	}
}

func TestPodResourcesListDelayHonoursTheCallersDeadline(t *testing.T) {
	client, _ := startPodResources(t, demoPods, time.Hour)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	started := time.Now()
	_, err := client.List(ctx, &podresourcesv1.ListPodResourcesRequest{})
	if status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("want DeadlineExceeded, got %v", err)
	}
	if waited := time.Since(started); waited > 2*time.Second {
		t.Fatalf("List held the caller for %v", waited)
	}
}

func TestPodResourcesGetAndAllocatable(t *testing.T) {
	client, _ := startPodResources(t, demoPods, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	got, err := client.Get(ctx, &podresourcesv1.GetPodResourcesRequest{PodName: "demo", PodNamespace: "default"})
	if err != nil || got.PodResources.Name != "demo" {
		t.Fatalf("Get demo: %v %v", got, err)
	}
	if _, err := client.Get(ctx, &podresourcesv1.GetPodResourcesRequest{PodName: "nope", PodNamespace: "default"}); status.Code(err) != codes.NotFound {
		t.Fatalf("want NotFound, got %v", err)
	}
	allocatable, err := client.GetAllocatableResources(ctx, &podresourcesv1.AllocatableResourcesRequest{})
	if err != nil || len(allocatable.Devices) != 2 || allocatable.Devices[1].ResourceName != "kunlunxin.com/xpu" {
		t.Fatalf("GetAllocatableResources: %v %v", allocatable, err)
	}
}
