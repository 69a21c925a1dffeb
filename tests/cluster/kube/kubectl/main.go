// Command kubectl is kubectl alone, built beside the multi-call binary (../main.go) from the same
// module and build cache: the suite runs it thousands of times, and a kubectl that also carries
// the API server, the kubelet and the controllers starts in twice the CPU time, most of it their
// packages' initialisation (0.09 s against 0.04 s measured, docs/development.md "CI time").
package main

import (
	"os"

	_ "k8s.io/client-go/plugin/pkg/client/auth"
	"k8s.io/component-base/cli"
	"k8s.io/component-base/logs"
	kubectl "k8s.io/kubectl/pkg/cmd"
	kubectlutil "k8s.io/kubectl/pkg/cmd/util"
)

func main() {
	// kubectl reads its verbosity before its flags are parsed, as its own main does.
	logs.GlogSetter(kubectl.GetLogVerbosity(os.Args)) //nolint:errcheck
	if err := cli.RunNoErrOutput(kubectl.NewDefaultKubectlCommand()); err != nil {
		kubectlutil.CheckErr(err) // prints as kubectl does and exits with its code
	}
}
