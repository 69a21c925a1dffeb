// Command kube is the four Kubernetes servers the cluster suite runs, in one binary (one link,
// one 140 MB file instead of four): the program is chosen by the name it is called by (a symlink
// named kubelet, kube-apiserver, ...) or by its first argument (kube kubelet --config ...).
// kubectl is a program of its own (kubectl/main.go), which starts in half the CPU time.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
	kubelet "k8s.io/kubernetes/cmd/kubelet/app"
)

var programs = map[string]func() *cobra.Command{
	"kube-apiserver":          apiserver.NewAPIServerCommand,
	"kube-controller-manager": controllermanager.NewControllerManagerCommand,
	"kube-scheduler":          func() *cobra.Command { return scheduler.NewSchedulerCommand() },
	"kubelet":                 func() *cobra.Command { return kubelet.NewKubeletCommand(context.Background()) },
}

func main() {
	name := filepath.Base(os.Args[0])
	if _, known := programs[name]; !known && len(os.Args) > 1 {
		name = os.Args[1]
		os.Args = os.Args[1:]
	}
	newCommand, known := programs[name]
	if !known {
		fmt.Fprintln(os.Stderr, "usage: kube {kube-apiserver|kube-controller-manager|kube-scheduler|kubelet} [args]")
		os.Exit(2)
	}
	os.Exit(cli.Run(newCommand()))
}
