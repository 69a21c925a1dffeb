// The container state an OCI runtime hands a hook on its standard input (runtime-spec
// config.md "State", runtime.md "Hooks": ociVersion, id, status, pid, bundle, annotations), as
// far as xpuctl's hook commands need it: the container id, which names the container's cXPU
// instance the way the vendor's runtime names it (docs/hardware.md, "cXPU instances"), the
// container's process, and who the container is.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>

#include "common/result.h"

namespace xpuctl {

// More than any state a runtime writes (a few hundred bytes plus the annotations); what a hook
// reads before it gives up on its input.
inline constexpr std::size_t kMaxOciStateBytes = 1 << 20;

struct OciState {
  std::string id;  // never empty
  int pid = 0;     // the container's first process, in the runtime's PID namespace; 0: none
  std::string bundle;
  std::map<std::string, std::string> annotations;  // the string-valued ones
};

// The state, or an error naming what is wrong with the input: not JSON, no object, no "id"
// string. A "pid" that is no positive int is left 0; the other fields are optional.
xpu::Result<OciState> parse_oci_state(std::string_view state_json);

// Which Kubernetes runtime wrote the container's spec, told by what only the runtime can know,
// not by which annotation keys are there (a runtime that copies the pod's annotations into the
// spec lets the pod write any key):
// - containerd: the bundle is <state>/io.containerd.runtime.v2.task/<namespace>/<container id>
//   (the v2 shim's task directory; the bundle path is the runtime's, no annotation);
// - CRI-O: the annotation io.kubernetes.cri-o.ContainerID holds the container's id, which no
//   pod can know before the runtime made it.
enum class KubernetesRuntime { kUnknown, kContainerd, kCrio };
KubernetesRuntime runtime_of(const OciState& state);

// Who the container is, "<namespace>/<pod>/<container>", from the annotations of the runtime
// that wrote the spec and of no other: containerd's CRI (io.kubernetes.cri.sandbox-namespace,
// io.kubernetes.cri.sandbox-name, io.kubernetes.cri.container-name) or CRI-O's
// (io.kubernetes.pod.namespace, io.kubernetes.pod.name, io.kubernetes.container.name). With
// `claim_namespace` (the DRA driver passes the claim's: a pod uses only claims of its own
// namespace), that is the namespace, and annotations naming another one give no owner. Empty
// when not known or no Kubernetes names: the instance is still made, only without an owner for
// the exporter's labels.
std::string owner_of_container(const OciState& state, std::string_view claim_namespace = {});

// The container's instance id: the first 12 characters of its id, as the vendor's CLI copies
// them (CXPU_MAX_INSTANCE_ID_LEN).
std::string instance_id_of_container(std::string_view container_id);

}  // namespace xpuctl
