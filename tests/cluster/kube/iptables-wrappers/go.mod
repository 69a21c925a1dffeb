// A stand-in for sigs.k8s.io/iptables-wrappers, which the Go module proxy here refuses (403, no
// version listed) and which the kubelet imports from 1.38 on. The kubelet uses it only to put
// the KUBE-IPTABLES-HINT and KUBE-FIREWALL rules in place "for the benefit of other components"
// (pkg/kubelet/kubelet_network_linux.go, initNetworkUtil), and it says in that file that a host
// without iptables is expected and fine. This stand-in is such a host: it finds no iptables.
// The suite's node has no kube-proxy and no route out, so nothing there reads those rules.
// Only the v1.38 build replaces the real module with it (kube/v1.38/go.mod).
module sigs.k8s.io/iptables-wrappers

go 1.21
