// kubelet-standin plays the kubelet's side of the two gRPC APIs xpu-k8s-shim speaks, using the
// official generated code from k8s.io/kubelet so that wire compatibility is checked against code
// this project did not write. Each subcommand lives in its own file.
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: kubelet-standin deviceplugin|podresources [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "deviceplugin":
		err = runDevicePlugin(os.Args[2:])
	case "podresources":
		err = runPodResources(os.Args[2:])
	default:
		fmt.Fprintf(os.Stderr, "kubelet-standin: unknown subcommand %q\n", os.Args[1])
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubelet-standin:", err)
		os.Exit(1)
	}
}
