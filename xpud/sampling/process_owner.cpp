#include "xpud/sampling/process_owner.h"

#include <algorithm>
#include <fstream>
#include <optional>
#include <utility>
#include <vector>

namespace xpud {
namespace {

// /proc/<pid>/cgroup is a few hundred bytes; anything much longer is not one.
constexpr std::size_t kMaxCgroupFileBytes = 64 * 1024;

bool is_hex(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
  });
}

// A pod UID as the kubelet spells it in cgroup names: hex groups joined by '-' (cgroupfs driver)
// or by '_' (systemd driver, where '-' separates slice levels).
std::optional<std::string> pod_uid_from(std::string_view spelled) {
  if (spelled.empty() || spelled.size() > 36) return std::nullopt;
  std::string uid(spelled);
  std::replace(uid.begin(), uid.end(), '_', '-');
  const bool valid = std::all_of(uid.begin(), uid.end(), [](char c) {
    return c == '-' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
  });
  if (!valid) return std::nullopt;
  return uid;
}

// "cri-containerd-<id>.scope", "crio-<id>.scope", "docker-<id>.scope" (systemd) or "<id>"
// (cgroupfs). CRI-O's "crio-conmon-<id>.scope" is the monitor, not the container.
std::optional<std::string> container_id_of_segment(std::string_view segment) {
  if (segment.ends_with(".scope")) {
    segment.remove_suffix(6);
    const auto dash = segment.rfind('-');
    if (dash == std::string_view::npos || segment.starts_with("crio-conmon-")) return std::nullopt;
    segment = segment.substr(dash + 1);
  }
  // Runtimes use 64 hex digits; accept the short forms some tools print, nothing else.
  if (segment.size() < 12 || segment.size() > 64 || !is_hex(segment)) return std::nullopt;
  return std::string(segment);
}

// The pod's cgroup below the kubelet's root, spelled as the kubelet spells it (k8s.io/kubernetes
// v1.37.2, pkg/kubelet/cm: the root is the name {"kubepods"} under the default --cgroup-root "/"
// (container_manager_linux.go, node_container_manager_linux.go), then the QoS class for
// Burstable and BestEffort pods (qos_container_manager_linux.go), then "pod<uid>"
// (pod_container_manager_linux.go)). The cgroupfs driver joins the names with '/'
// (CgroupName.ToCgroupfs); the systemd driver makes each a slice named after all its ancestors,
// with '-' in a name written '_' (CgroupName.ToSystemd). `segments` start at the root's; the
// answer is the pod's UID and the index of its segment.
std::optional<std::pair<std::string, std::size_t>> pod_below_kubelet_root(
    const std::vector<std::string_view>& segments) {
  if (segments.empty()) return std::nullopt;
  const bool systemd = segments[0] == "kubepods.slice";
  if (!systemd && segments[0] != "kubepods") return std::nullopt;
  std::size_t at = 1;
  std::string prefix = systemd ? "kubepods-" : "";  // of the pod's segment
  for (std::string_view qos : {"burstable", "besteffort"}) {
    const std::string spelled =
        systemd ? "kubepods-" + std::string(qos) + ".slice" : std::string(qos);
    if (segments.size() > at && segments[at] == spelled) {
      if (systemd) prefix += std::string(qos) + "-";
      ++at;
      break;
    }
  }
  if (segments.size() <= at) return std::nullopt;
  std::string_view pod = segments[at];
  if (systemd && !pod.ends_with(".slice")) return std::nullopt;
  if (systemd) pod.remove_suffix(6);
  prefix += "pod";
  if (!pod.starts_with(prefix)) return std::nullopt;
  // The systemd driver escapes the UID's '-' as '_'; the cgroupfs driver keeps it.
  std::string_view spelled_uid = pod.substr(prefix.size());
  if (spelled_uid.find(systemd ? '-' : '_') != std::string_view::npos) return std::nullopt;
  auto uid = pod_uid_from(spelled_uid);
  if (!uid) return std::nullopt;
  return std::pair{std::move(*uid), at};
}

// Only a path that starts at the kubelet's root names a pod: a segment that merely looks like
// the kubelet's (a user's own "kubepods-...-pod<uid>.slice" scope, or a "pod<uid>" cgroup made
// inside a container's) is what anyone with a cgroup of their own can write.
ProcessOwner owner_from_path(std::string_view path) {
  std::vector<std::string_view> segments;
  if (!path.starts_with('/')) return {};
  while (!path.empty()) {
    const auto slash = path.find('/');
    const auto segment = path.substr(0, slash);
    if (!segment.empty()) segments.push_back(segment);
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  auto pod = pod_below_kubelet_root(segments);
  if (!pod) return {};
  ProcessOwner owner{std::move(pod->first), {}};
  // The container's cgroup is right below the pod's; anything deeper is the container's own.
  if (pod->second + 1 < segments.size())
    owner.container_id = container_id_of_segment(segments[pod->second + 1]).value_or("");
  return owner;
}

}  // namespace

ProcessOwner owner_from_cgroup_file(std::string_view text) {
  // "hierarchy-ID:controllers:path" per line (proc(5), "/proc/pid/cgroup"), the path relative to
  // the reader's cgroup namespace, so what a process sees in a namespace of its own changes
  // nothing here. Under cgroup v2 there is one line, "0::<path>"; under v1 one per hierarchy,
  // each with the kubelet's path when the process is a pod's (the named "name=systemd" one too),
  // so the first that starts at the kubelet's root serves.
  while (!text.empty()) {
    const auto end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    const auto first = line.find(':');
    if (first == std::string_view::npos) continue;
    const auto second = line.find(':', first + 1);
    if (second == std::string_view::npos) continue;
    ProcessOwner owner = owner_from_path(line.substr(second + 1));
    if (!owner.pod_uid.empty()) return owner;
  }
  return {};
}

ProcessOwner read_process_owner(const std::filesystem::path& proc_root, unsigned pid) {
  std::ifstream file(proc_root / std::to_string(pid) / "cgroup", std::ios::binary);
  if (!file) return {};
  std::string text(kMaxCgroupFileBytes, '\0');
  file.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(file.gcount()));
  return owner_from_cgroup_file(text);
}

}  // namespace xpud
