// The container state an OCI runtime hands a hook on its standard input (runtime-spec
// config.md "State", runtime.md "Hooks": ociVersion, id, status, pid, bundle, annotations), as
// far as xpuctl's hook commands need it: the container id, which names the container's cXPU
// instance the way the vendor's runtime names it (docs/hardware.md, "cXPU instances").
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "common/result.h"

namespace xpuctl {

// More than any state a runtime writes (a few hundred bytes plus the annotations); what a hook
// reads before it gives up on its input.
inline constexpr std::size_t kMaxOciStateBytes = 1 << 20;

// The state's "id": a non-empty string. The error names what is wrong with the input.
xpu::Result<std::string> container_id_from_oci_state(std::string_view state_json);

// Who the container is, "<namespace>/<pod>/<container>", from the annotations a Kubernetes
// runtime puts in its spec: containerd's CRI (io.kubernetes.cri.sandbox-namespace,
// io.kubernetes.cri.sandbox-name, io.kubernetes.cri.container-name) or CRI-O's
// (io.kubernetes.pod.namespace, io.kubernetes.pod.name, io.kubernetes.container.name). Empty
// when they are not all there or are no Kubernetes names: the instance is still made, only
// without an owner for the exporter's labels.
std::string owner_from_oci_state(std::string_view state_json);

// The container's instance id: the first 12 characters of its id, as the vendor's CLI copies
// them (CXPU_MAX_INSTANCE_ID_LEN).
std::string instance_id_of_container(std::string_view container_id);

}  // namespace xpuctl
