// Which Kubernetes container a host process runs in, read from its cgroup path.
//
// The kubelet puts every container in a cgroup below its root, "/kubepods" (cgroupfs driver) or
// "/kubepods.slice" (systemd driver), whose path names the pod UID and the container ID; the
// runtime's own naming differs (containerd, CRI-O, Docker), so the parser knows each of those
// shapes. Only a path that starts at that root counts: a cgroup elsewhere named like a pod's
// (a local user's own systemd scope) is anyone's to make. A kubelet with another --cgroup-root,
// or one nested in a container whose cgroups xpud sees below the container's, is not recognised.
// xpud publishes the IDs with each card process so that a node agent with the pod list (the shim's
// exporter) can label per-process metrics without any access to the host's /proc.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace xpud {

struct ProcessOwner {
  std::string pod_uid;       // "6f2b1c3a-..."; empty when the process is not in a pod
  std::string container_id;  // the runtime's container ID (hex); empty when not in a container

  bool operator==(const ProcessOwner&) const = default;
};

// Parses the text of /proc/<pid>/cgroup. Anything that is not a Kubernetes container cgroup (a
// host service, a login session, garbage) gives an empty owner.
ProcessOwner owner_from_cgroup_file(std::string_view text);

// Reads <proc_root>/<pid>/cgroup. A process that is gone or unreadable has no known owner.
ProcessOwner read_process_owner(const std::filesystem::path& proc_root, unsigned pid);

}  // namespace xpud
