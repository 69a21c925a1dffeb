// cdi-check loads a directory of CDI specs with the CDI project's own library (the cache that
// container runtimes use), reports every error it finds there, and resolves device names the way
// a runtime injects them into a container. The tests use it to judge xpud's spec by the
// reference reading of the format rather than by our own.
//
// Usage: cdi-check DIR [NAME...]
//
// A NAME may list several devices joined by ',' (which no CDI name holds): they are injected
// together, in that order, as a runtime does for one container (later edits win).
//
// It prints one JSON object: "errors" (every error the library reported, by file), "devices"
// (every fully qualified device name it found) and "resolved" (for each NAME given, what a
// container gets when only that device is injected: its device nodes with type, major and minor,
// the cgroup permissions, and the environment). Exit status: 0 when the directory loaded without
// an error and every NAME resolved, 1 otherwise, 2 on bad usage.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"

	oci "github.com/opencontainers/runtime-spec/specs-go"
	"tags.cncf.io/container-device-interface/pkg/cdi"
)

type node struct {
	Path  string `json:"path"`
	Type  string `json:"type"`
	Major int64  `json:"major"`
	Minor int64  `json:"minor"`
	// The cgroup rule the runtime adds for the node ("rw", "rwm").
	Access string `json:"access"`
}

type resolved struct {
	Nodes []node   `json:"nodes"`
	Env   []string `json:"env"`
	Error string   `json:"error,omitempty"`
}

type report struct {
	Errors   map[string][]string `json:"errors"`
	Devices  []string            `json:"devices"`
	Resolved map[string]resolved `json:"resolved"`
}

func resolve(cache *cdi.Cache, name string) resolved {
	spec := &oci.Spec{Process: &oci.Process{}, Linux: &oci.Linux{}}
	if unresolved, err := cache.InjectDevices(spec, strings.Split(name, ",")...); err != nil {
		return resolved{Error: fmt.Sprintf("%v (unresolved: %v)", err, unresolved)}
	}
	out := resolved{Nodes: []node{}, Env: spec.Process.Env}
	for _, d := range spec.Linux.Devices {
		n := node{Path: d.Path, Type: d.Type, Major: d.Major, Minor: d.Minor}
		if spec.Linux.Resources != nil {
			for _, rule := range spec.Linux.Resources.Devices {
				if rule.Allow && rule.Major != nil && *rule.Major == d.Major && rule.Minor != nil && *rule.Minor == d.Minor {
					n.Access = rule.Access
				}
			}
		}
		out.Nodes = append(out.Nodes, n)
	}
	if out.Env == nil {
		out.Env = []string{}
	}
	return out
}

func main() {
	if len(os.Args) < 2 || os.Args[1] == "--help" {
		fmt.Fprintln(os.Stderr, "usage: cdi-check DIR [NAME...]")
		os.Exit(2)
	}
	dir := os.Args[1]
	if info, err := os.Stat(dir); err != nil || !info.IsDir() {
		fmt.Fprintf(os.Stderr, "cdi-check: %s is not a directory\n", dir)
		os.Exit(2)
	}
	cache, _ := cdi.NewCache(cdi.WithSpecDirs(dir), cdi.WithAutoRefresh(false))
	refreshErr := cache.Refresh()

	r := report{Errors: map[string][]string{}, Devices: cache.ListDevices(), Resolved: map[string]resolved{}}
	failed := false
	for path, errs := range cache.GetErrors() {
		for _, err := range errs {
			r.Errors[path] = append(r.Errors[path], err.Error())
			failed = true
		}
	}
	if refreshErr != nil && len(r.Errors) == 0 {
		r.Errors[dir] = []string{refreshErr.Error()}
		failed = true
	}
	sort.Strings(r.Devices)
	for _, name := range os.Args[2:] {
		res := resolve(cache, name)
		failed = failed || res.Error != ""
		r.Resolved[name] = res
	}
	out, _ := json.MarshalIndent(r, "", "  ")
	fmt.Println(string(out))
	if failed {
		os.Exit(1)
	}
}
