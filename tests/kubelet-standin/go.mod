module kunlunxin.com/xpud/tests/kubelet-standin

go 1.26.0

require (
	github.com/opencontainers/runtime-spec v1.3.0
	golang.org/x/net v0.60.0
	google.golang.org/grpc v1.85.0
	k8s.io/kubelet v0.34.2
	tags.cncf.io/container-device-interface v1.1.2
)

require (
	github.com/fsnotify/fsnotify v1.7.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/text v0.42.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260817212433-ac3dfec99bb1 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
	tags.cncf.io/container-device-interface/specs-go v1.1.1 // indirect
)
