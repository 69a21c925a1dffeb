package main

// The official kubelet API packages the stand-in is built against.
import (
	_ "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	_ "k8s.io/kubelet/pkg/apis/podresources/v1"
	_ "google.golang.org/grpc"
)
