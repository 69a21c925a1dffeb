// Command kube is the five Kubernetes programs the cluster suite runs, in one binary (one link,
// one 170 MB file instead of five): the program is chosen by the name it is called by (a symlink
// named kubelet, kubectl, ...) or by its first argument (kube kubelet --config ...).
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	_ "k8s.io/client-go/plugin/pkg/client/auth"
	"k8s.io/component-base/cli"
	"k8s.io/component-base/logs"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	kubectl "k8s.io/kubectl/pkg/cmd"
	kubectlutil "k8s.io/kubectl/pkg/cmd/util"
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
	"kubectl": func() *cobra.Command {
		// kubectl reads its verbosity before its flags are parsed, as its own main does.
		logs.GlogSetter(kubectl.GetLogVerbosity(os.Args)) //nolint:errcheck
		return kubectl.NewDefaultKubectlCommand()
	},
}

func main() {
	name := filepath.Base(os.Args[0])
	if _, known := programs[name]; !known && len(os.Args) > 1 {
		name = os.Args[1]
		os.Args = os.Args[1:]
	}
	newCommand, known := programs[name]
	if !known {
		fmt.Fprintln(os.Stderr, "usage: kube {kube-apiserver|kube-controller-manager|kube-scheduler|kubelet|kubectl} [args]")
		os.Exit(2)
	}
	if name == "kubectl" {
		if err := cli.RunNoErrOutput(newCommand()); err != nil {
			kubectlutil.CheckErr(err) // prints as kubectl does and exits with its code
		}
		return
	}
	os.Exit(cli.Run(newCommand()))
}
