package main

// The device plugin's CDI names (--cdi) against the spec xpud writes, read by the CDI project's own
// library (the cache containerd, CRI-O and podman use): the name in Allocate's cdi_devices must
// resolve there to the same nodes and environment as the plugin's raw answer.

import (
	"maps"
	"path/filepath"
	"slices"
	"testing"
	"time"

	oci "github.com/opencontainers/runtime-spec/specs-go"
	"tags.cncf.io/container-device-interface/pkg/cdi"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

const xpudCdiConfig = "[cdi]\nenabled = true\ndirectory = {dir}/cdi\n"

// injected resolves names with the CDI library over dir and returns the container's device paths
// and environment as a runtime would give them.
func injected(t *testing.T, dir string, names ...string) ([]string, []string) {
	t.Helper()
	cache, _ := cdi.NewCache(cdi.WithSpecDirs(dir), cdi.WithAutoRefresh(false))
	if err := cache.Refresh(); err != nil {
		t.Fatalf("the CDI library rejects xpud's spec in %s: %v", dir, err)
	}
	spec := &oci.Spec{Process: &oci.Process{}, Linux: &oci.Linux{}}
	if unresolved, err := cache.InjectDevices(spec, names...); err != nil {
		t.Fatalf("injecting %v: %v (unresolved %v)", names, err, unresolved)
	}
	var paths []string
	for _, d := range spec.Linux.Devices {
		paths = append(paths, d.Path)
	}
	return paths, spec.Process.Env
}

func rawPaths(c *pluginapi.ContainerAllocateResponse) []string {
	var paths []string
	for _, d := range c.Devices {
		paths = append(paths, d.HostPath)
	}
	return paths
}

func cdiNames(c *pluginapi.ContainerAllocateResponse) []string {
	var names []string
	for _, d := range c.CdiDevices {
		names = append(names, d.Name)
	}
	return names
}

func TestDevicePluginCdi(t *testing.T) {
	for _, mode := range []string{"auto", "true", "false"} {
		t.Run(mode, func(t *testing.T) {
			e := startDevicePluginEnvWith(t, xpudCdiConfig, "--cdi="+mode)
			e.startKubelet(t)
			plugin, err := e.kubelet.WaitPlugin(defaultResource, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			uuids := e.uuids
			// The plugin may register before it has xpud's cards (a busy machine); the kubelet
			// allocates only what ListAndWatch advertised, so wait for that first.
			if _, err := plugin.WaitUpdate(0, allHealth(uuids, pluginapi.Healthy), 10*time.Second); err != nil {
				t.Fatal(err)
			}
			resp, err := plugin.Allocate(pick(uuids, 5), pick(uuids, 1, 0))
			if err != nil {
				t.Fatal(err)
			}
			one, two := resp.ContainerResponses[0], resp.ContainerResponses[1]
			wantEnv := map[string]string{"XPU_VISIBLE_DEVICES": "5", "CXPU_VISIBLE_DEVICES": "5",
				"KUNLUNXIN_XPU_UUIDS": uuids[5]}
			if !maps.Equal(one.Envs, wantEnv) {
				t.Errorf("one card: envs %v, want %v", one.Envs, wantEnv)
			}

			wantNames := []string{"kunlunxin.com/xpu=" + uuids[5]}
			wantRaw := []string{"/dev/xpu5", "/dev/xpuctrl"}
			switch mode {
			case "false":
				wantNames = nil
			case "true":
				wantRaw = nil
			}
			if got := cdiNames(one); !slices.Equal(got, wantNames) {
				t.Errorf("one card, --cdi=%s: cdi_devices %v, want %v", mode, got, wantNames)
			}
			if got := rawPaths(one); !slices.Equal(got, wantRaw) {
				t.Errorf("one card, --cdi=%s: device specs %v, want %v", mode, got, wantRaw)
			}
			// Several cards: raw nodes whatever the mode, so XPU_VISIBLE_DEVICES keeps every index.
			if got := cdiNames(two); len(got) != 0 {
				t.Errorf("two cards, --cdi=%s: cdi_devices %v, want none", mode, got)
			}
			if got := rawPaths(two); !slices.Equal(got, []string{"/dev/xpu0", "/dev/xpu1", "/dev/xpuctrl"}) {
				t.Errorf("two cards, --cdi=%s: device specs %v", mode, got)
			}
			if two.Envs["XPU_VISIBLE_DEVICES"] != "0,1" || two.Envs["CXPU_VISIBLE_DEVICES"] != "0,1" {
				t.Errorf("two cards: envs %v", two.Envs)
			}

			if len(wantNames) == 0 {
				return
			}
			// What a CDI-enabled runtime makes of the name: the same nodes and environment as the
			// raw answer of --cdi=false.
			paths, env := injected(t, filepath.Join(e.dir, "cdi"), wantNames...)
			if !slices.Equal(paths, []string{"/dev/xpu5", "/dev/xpuctrl"}) {
				t.Errorf("%s injects device nodes %v, want /dev/xpu5 and /dev/xpuctrl", wantNames[0], paths)
			}
			for key, value := range one.Envs {
				if !slices.Contains(env, key+"="+value) {
					t.Errorf("%s injects env %v, missing the plugin's %s=%s", wantNames[0], env, key, value)
				}
			}
		})
	}
}
