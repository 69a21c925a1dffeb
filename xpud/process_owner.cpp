#include "xpud/process_owner.h"

#include <algorithm>
#include <fstream>
#include <optional>
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

// "kubepods-burstable-pod<uid>.slice" (systemd) or "pod<uid>" (cgroupfs).
std::optional<std::string> pod_uid_of_segment(std::string_view segment) {
  if (segment.ends_with(".slice")) {
    segment.remove_suffix(6);
    const auto at = segment.rfind("-pod");
    if (at == std::string_view::npos || !segment.starts_with("kubepods")) return std::nullopt;
    return pod_uid_from(segment.substr(at + 4));
  }
  if (!segment.starts_with("pod")) return std::nullopt;
  return pod_uid_from(segment.substr(3));
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

ProcessOwner owner_from_path(std::string_view path) {
  std::vector<std::string_view> segments;
  while (!path.empty()) {
    const auto slash = path.find('/');
    const auto segment = path.substr(0, slash);
    if (!segment.empty()) segments.push_back(segment);
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  const auto kubepods = std::find_if(segments.begin(), segments.end(), [](std::string_view s) {
    return s.find("kubepods") != std::string_view::npos;
  });
  if (kubepods == segments.end()) return {};
  // The pod's cgroup is the last segment that names one; the container's is right below it.
  for (auto it = segments.end(); it != kubepods;) {
    --it;
    auto uid = pod_uid_of_segment(*it);
    if (!uid) continue;
    ProcessOwner owner{std::move(*uid), {}};
    if (std::next(it) != segments.end())
      owner.container_id = container_id_of_segment(*std::next(it)).value_or("");
    return owner;
  }
  return {};
}

}  // namespace

ProcessOwner owner_from_cgroup_file(std::string_view text) {
  // "hierarchy-ID:controllers:path" per line. Under cgroup v2 there is one line, "0::<path>";
  // under v1 every controller repeats the same kubepods path, so the first that has one serves.
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
