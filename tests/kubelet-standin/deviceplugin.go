package main

// The kubelet's side of the device plugin API (v1beta1), built on the official generated code:
// it serves Registration on kubelet.sock in a plugin directory, accepts Register, dials the
// plugin back, calls GetDevicePluginOptions, keeps ListAndWatch open and records every message,
// and lets a caller drive GetPreferredAllocation and Allocate. Restart() behaves like a kubelet
// restart: plugin sockets deleted, registrations forgotten, kubelet.sock recreated.
//
// Used by the Go tests (deviceplugin_test.go) and by `kubelet-standin deviceplugin`, which prints
// what it sees as JSON lines for manual runs and demos.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// kubeletCheckpoint is the one file the kubelet keeps in the plugin directory when it starts.
const kubeletCheckpoint = "kubelet_internal_checkpoint"

// Registration is one Register call the stand-in accepted.
type Registration struct {
	Request *pluginapi.RegisterRequest
	At      time.Time
	Epoch   int // kubelet "lifetime" it arrived in: 0 until the first Restart, then 1, ...
}

// Update is one ListAndWatch message and when it arrived.
type Update struct {
	Devices []*pluginapi.Device
	At      time.Time
}

// PluginConn is the stand-in's connection to one registered plugin.
type PluginConn struct {
	Resource string
	Endpoint string
	Options  *pluginapi.DevicePluginOptions
	Client   pluginapi.DevicePluginClient

	conn   *grpc.ClientConn
	cancel context.CancelFunc

	mu        sync.Mutex
	changed   *sync.Cond
	updates   []Update
	streamErr error
	ended     bool
}

// DevicePluginKubelet plays the kubelet for device plugins in PluginDir.
type DevicePluginKubelet struct {
	PluginDir string

	mu            sync.Mutex
	changed       *sync.Cond
	server        *grpc.Server
	epoch         int
	registrations []Registration
	attempts      []time.Time // every Register call, accepted or not
	rejectLeft    int
	plugins       map[string]*PluginConn // by resource name, current epoch only
	onEvent       func(kind string, payload any)
}

// KubeletOption adjusts a DevicePluginKubelet before it starts serving.
type KubeletOption func(*DevicePluginKubelet)

// RejectFirstRegistrations makes the first n Register calls fail (UNAVAILABLE), like a kubelet
// that is still starting.
func RejectFirstRegistrations(n int) KubeletOption {
	return func(k *DevicePluginKubelet) { k.rejectLeft = n }
}

// NewDevicePluginKubelet serves Registration on PluginDir/kubelet.sock (creating the directory).
func NewDevicePluginKubelet(pluginDir string, options ...KubeletOption) (*DevicePluginKubelet, error) {
	k := &DevicePluginKubelet{PluginDir: pluginDir, plugins: map[string]*PluginConn{}}
	k.changed = sync.NewCond(&k.mu)
	for _, option := range options {
		option(k)
	}
	if err := os.MkdirAll(pluginDir, 0o755); err != nil {
		return nil, err
	}
	if err := k.serve(); err != nil {
		return nil, err
	}
	return k, nil
}

// OnEvent sets a callback for registrations and ListAndWatch messages (the CLI prints them).
func (k *DevicePluginKubelet) OnEvent(f func(kind string, payload any)) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.onEvent = f
}

func (k *DevicePluginKubelet) socketPath() string {
	return filepath.Join(k.PluginDir, filepath.Base(pluginapi.KubeletSocket))
}

func (k *DevicePluginKubelet) serve() error {
	path := k.socketPath()
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	listener, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", path, err)
	}
	server := grpc.NewServer()
	pluginapi.RegisterRegistrationServer(server, &registrationService{kubelet: k})
	k.mu.Lock()
	k.server = server
	k.mu.Unlock()
	go func() { _ = server.Serve(listener) }()
	return nil
}

// Stop stops serving kubelet.sock (removing it) and drops every plugin connection.
func (k *DevicePluginKubelet) Stop() {
	k.mu.Lock()
	server := k.server
	k.server = nil
	plugins := k.plugins
	k.plugins = map[string]*PluginConn{}
	k.mu.Unlock()
	if server != nil {
		server.Stop()
	}
	for _, p := range plugins {
		p.close()
	}
	_ = os.Remove(k.socketPath())
}

// Restart behaves like a kubelet restart: stop, delete every plain file in the plugin directory
// except the checkpoint (plugin sockets included), forget registrations, serve kubelet.sock anew.
func (k *DevicePluginKubelet) Restart() error {
	if err := k.Crash(); err != nil {
		return err
	}
	return k.Serve()
}

// Crash is the first half of a restart: the kubelet is gone (kubelet.sock and every plugin
// socket deleted, streams closed) until Serve. Registrations after it belong to a new epoch.
func (k *DevicePluginKubelet) Crash() error {
	k.Stop()
	entries, err := os.ReadDir(k.PluginDir)
	if err != nil {
		return err
	}
	for _, entry := range entries {
		if entry.IsDir() || entry.Name() == kubeletCheckpoint {
			continue
		}
		if err := os.Remove(filepath.Join(k.PluginDir, entry.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	k.mu.Lock()
	k.epoch++
	k.mu.Unlock()
	return nil
}

// Serve serves kubelet.sock again after Crash.
func (k *DevicePluginKubelet) Serve() error { return k.serve() }

// Plugin is the current epoch's connection to resource's plugin, or nil before it registered.
func (k *DevicePluginKubelet) Plugin(resource string) *PluginConn {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.plugins[resource]
}

// RecreateSocket stops and serves kubelet.sock anew without touching plugin sockets (a new
// epoch too): checks that a plugin watches kubelet.sock itself, not only its own socket.
func (k *DevicePluginKubelet) RecreateSocket() error {
	k.Stop()
	k.mu.Lock()
	k.epoch++
	k.mu.Unlock()
	return k.serve()
}

// Epoch is the number of Restart and RecreateSocket calls so far.
func (k *DevicePluginKubelet) Epoch() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.epoch
}

// Attempts returns the time of every Register call so far, accepted or rejected.
func (k *DevicePluginKubelet) Attempts() []time.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]time.Time(nil), k.attempts...)
}

// Registrations returns every Register call accepted so far.
func (k *DevicePluginKubelet) Registrations() []Registration {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]Registration(nil), k.registrations...)
}

// WaitPlugin waits until `resource` registered in the current epoch and its ListAndWatch stream
// delivered its first message.
func (k *DevicePluginKubelet) WaitPlugin(resource string, timeout time.Duration) (*PluginConn, error) {
	deadline := time.Now().Add(timeout)
	for {
		k.mu.Lock()
		p := k.plugins[resource]
		k.mu.Unlock()
		if p != nil {
			if _, err := p.WaitUpdate(0, func([]*pluginapi.Device) bool { return true }, time.Until(deadline)); err == nil {
				return p, nil
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("no registered plugin with a ListAndWatch message for %s within %v (registrations: %d)",
				resource, timeout, len(k.Registrations()))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

type registrationService struct {
	pluginapi.UnimplementedRegistrationServer
	kubelet *DevicePluginKubelet
}

// Register checks what the kubelet checks, then dials the plugin back like the kubelet does
// (the plugin must already be serving).
func (s *registrationService) Register(ctx context.Context, req *pluginapi.RegisterRequest) (*pluginapi.Empty, error) {
	s.kubelet.mu.Lock()
	s.kubelet.attempts = append(s.kubelet.attempts, time.Now())
	reject := s.kubelet.rejectLeft > 0
	if reject {
		s.kubelet.rejectLeft--
	}
	s.kubelet.mu.Unlock()
	if reject {
		return nil, status.Error(codes.Unavailable, "kubelet-standin: rejecting this registration on purpose")
	}
	if req.Version != pluginapi.Version {
		return nil, fmt.Errorf("unsupported API version %q", req.Version)
	}
	if !strings.Contains(req.ResourceName, "/") || strings.Contains(req.ResourceName, "kubernetes.io/") {
		return nil, fmt.Errorf("invalid extended resource name %q", req.ResourceName)
	}
	if req.Endpoint == "" || strings.Contains(req.Endpoint, "/") {
		return nil, fmt.Errorf("endpoint %q is not a socket file name", req.Endpoint)
	}
	k := s.kubelet
	p, err := k.connect(req)
	if err != nil {
		return nil, err
	}
	k.mu.Lock()
	reg := Registration{Request: req, At: time.Now(), Epoch: k.epoch}
	k.registrations = append(k.registrations, reg)
	if old := k.plugins[req.ResourceName]; old != nil {
		go old.close()
	}
	k.plugins[req.ResourceName] = p
	onEvent := k.onEvent
	k.changed.Broadcast()
	k.mu.Unlock()
	if onEvent != nil {
		onEvent("register", map[string]any{"resource": req.ResourceName, "endpoint": req.Endpoint,
			"version": req.Version, "options": req.Options})
	}
	go p.watch(onEvent)
	return &pluginapi.Empty{}, nil
}

func (k *DevicePluginKubelet) connect(req *pluginapi.RegisterRequest) (*PluginConn, error) {
	path := filepath.Join(k.PluginDir, req.Endpoint)
	conn, err := grpc.NewClient("unix://"+path,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithAuthority("localhost"))
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", path, err)
	}
	client := pluginapi.NewDevicePluginClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	options, err := client.GetDevicePluginOptions(ctx, &pluginapi.Empty{})
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("GetDevicePluginOptions on %s: %w", path, err)
	}
	p := &PluginConn{Resource: req.ResourceName, Endpoint: req.Endpoint, Options: options, Client: client, conn: conn}
	p.changed = sync.NewCond(&p.mu)
	return p, nil
}

func (p *PluginConn) watch(onEvent func(string, any)) {
	ctx, cancel := context.WithCancel(context.Background())
	p.mu.Lock()
	p.cancel = cancel
	p.mu.Unlock()
	stream, err := p.Client.ListAndWatch(ctx, &pluginapi.Empty{})
	for err == nil {
		var msg *pluginapi.ListAndWatchResponse
		msg, err = stream.Recv()
		if err != nil {
			break
		}
		p.mu.Lock()
		p.updates = append(p.updates, Update{Devices: msg.Devices, At: time.Now()})
		p.changed.Broadcast()
		p.mu.Unlock()
		if onEvent != nil {
			onEvent("devices", map[string]any{"resource": p.Resource, "devices": msg.Devices})
		}
	}
	p.mu.Lock()
	p.streamErr = err
	p.ended = true
	p.changed.Broadcast()
	p.mu.Unlock()
}

func (p *PluginConn) close() {
	p.mu.Lock()
	cancel := p.cancel
	p.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	p.conn.Close()
}

// Updates returns every ListAndWatch message so far.
func (p *PluginConn) Updates() []Update {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Update(nil), p.updates...)
}

// StreamEnded reports whether ListAndWatch ended, and how.
func (p *PluginConn) StreamEnded() (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ended, p.streamErr
}

// WaitUpdate waits for the first message at position >= from that satisfies cond and returns
// it with its position.
func (p *PluginConn) WaitUpdate(from int, cond func([]*pluginapi.Device) bool, timeout time.Duration) (int, error) {
	deadline := time.Now().Add(timeout)
	timer := time.AfterFunc(timeout, func() {
		p.mu.Lock()
		p.changed.Broadcast()
		p.mu.Unlock()
	})
	defer timer.Stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		for i := from; i < len(p.updates); i++ {
			if cond(p.updates[i].Devices) {
				return i, nil
			}
		}
		if len(p.updates) > from {
			from = len(p.updates)
		}
		if p.ended {
			return -1, fmt.Errorf("ListAndWatch of %s ended: %v", p.Resource, p.streamErr)
		}
		if !time.Now().Before(deadline) {
			return -1, fmt.Errorf("no matching ListAndWatch message from %s within %v", p.Resource, timeout)
		}
		p.changed.Wait()
	}
}

// Latest returns the last message, false before the first.
func (p *PluginConn) Latest() (Update, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.updates) == 0 {
		return Update{}, false
	}
	return p.updates[len(p.updates)-1], true
}

// Update returns message i.
func (p *PluginConn) Update(i int) Update {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.updates[i]
}

// Allocate asks for one container per ID list.
func (p *PluginConn) Allocate(containers ...[]string) (*pluginapi.AllocateResponse, error) {
	req := &pluginapi.AllocateRequest{}
	for _, ids := range containers {
		req.ContainerRequests = append(req.ContainerRequests, &pluginapi.ContainerAllocateRequest{DevicesIds: ids})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return p.Client.Allocate(ctx, req)
}

// Preferred asks GetPreferredAllocation for one container.
func (p *PluginConn) Preferred(available, mustInclude []string, size int32) ([]string, error) {
	req := &pluginapi.PreferredAllocationRequest{ContainerRequests: []*pluginapi.ContainerPreferredAllocationRequest{{
		AvailableDeviceIDs: available, MustIncludeDeviceIDs: mustInclude, AllocationSize: size}}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := p.Client.GetPreferredAllocation(ctx, req)
	if err != nil {
		return nil, err
	}
	if len(resp.ContainerResponses) != 1 {
		return nil, fmt.Errorf("GetPreferredAllocation answered %d containers, asked 1", len(resp.ContainerResponses))
	}
	return resp.ContainerResponses[0].DeviceIDs, nil
}

// runDevicePlugin: `kubelet-standin deviceplugin --plugin-dir DIR` serves kubelet.sock and prints
// every registration and ListAndWatch message as a JSON line until SIGTERM/SIGINT. With
// --allocate N it then does what the kubelet does for a pod asking for N cards of --resource:
// GetPreferredAllocation over the healthy cards, Allocate of the answer, both printed.
func runDevicePlugin(args []string) error {
	flags := flag.NewFlagSet("deviceplugin", flag.ContinueOnError)
	dir := flags.String("plugin-dir", pluginapi.DevicePluginPath, "plugin directory to serve kubelet.sock in")
	allocate := flags.Int("allocate", 0, "allocate this many healthy cards once the plugin lists them")
	resource := flags.String("resource", "kunlunxin.com/xpu", "resource to allocate from")
	if err := flags.Parse(args); err != nil {
		os.Exit(2)
	}
	if *allocate < 0 {
		fmt.Fprintln(os.Stderr, "kubelet-standin: --allocate must be 0 or more")
		os.Exit(2)
	}
	k, err := NewDevicePluginKubelet(*dir)
	if err != nil {
		return err
	}
	var printMu sync.Mutex
	encoder := json.NewEncoder(os.Stdout)
	k.OnEvent(func(kind string, payload any) {
		printMu.Lock()
		defer printMu.Unlock()
		_ = encoder.Encode(map[string]any{"time": time.Now().Format(time.RFC3339Nano), "event": kind, "data": payload})
	})
	fmt.Fprintf(os.Stderr, "kubelet-standin: serving %s\n", k.socketPath())
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	if *allocate > 0 {
		go func() {
			if err := allocateHealthy(k, *resource, *allocate, func(kind string, payload any) {
				printMu.Lock()
				defer printMu.Unlock()
				_ = encoder.Encode(map[string]any{"time": time.Now().Format(time.RFC3339Nano), "event": kind, "data": payload})
			}); err != nil {
				fmt.Fprintf(os.Stderr, "kubelet-standin: allocate: %v\n", err)
			}
		}()
	}
	<-signals
	k.Stop()
	return nil
}

// allocateHealthy waits (up to a minute) for `count` healthy devices of `resource`, then asks
// GetPreferredAllocation (when the plugin offers it) and Allocates its choice, as the kubelet does
// when it admits a pod.
func allocateHealthy(k *DevicePluginKubelet, resource string, count int, emit func(string, any)) error {
	p, err := k.WaitPlugin(resource, time.Minute)
	if err != nil {
		return err
	}
	var healthy []string
	enough := func(devices []*pluginapi.Device) bool {
		healthy = healthy[:0]
		for _, d := range devices {
			if d.Health == pluginapi.Healthy {
				healthy = append(healthy, d.ID)
			}
		}
		return len(healthy) >= count
	}
	if _, err := p.WaitUpdate(0, enough, time.Minute); err != nil {
		return fmt.Errorf("fewer than %d healthy devices: %w", count, err)
	}
	chosen := healthy[:count]
	if p.Options != nil && p.Options.GetPreferredAllocationAvailable {
		preferred, err := p.Preferred(healthy, nil, int32(count))
		if err != nil {
			return fmt.Errorf("GetPreferredAllocation: %w", err)
		}
		emit("preferred", preferred)
		chosen = preferred
	}
	resp, err := p.Allocate(chosen)
	if err != nil {
		return fmt.Errorf("Allocate %v: %w", chosen, err)
	}
	emit("allocate", map[string]any{"devices": chosen, "response": resp.ContainerResponses})
	return nil
}
