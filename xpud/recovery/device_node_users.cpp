#include "xpud/recovery/device_node_users.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <optional>
#include <string_view>

namespace xpud {
namespace {

namespace fs = std::filesystem;

// What identifies an open file as one of the nodes.
struct NodeKey {
  bool character_device = false;
  dev_t device = 0;  // st_rdev of a character device, else st_dev
  ino_t inode = 0;   // 0 for a character device

  bool operator==(const NodeKey&) const = default;
};

NodeKey key_of(const struct stat& st) {
  if (S_ISCHR(st.st_mode)) return NodeKey{true, st.st_rdev, 0};
  return NodeKey{false, st.st_dev, st.st_ino};
}

std::optional<unsigned> pid_of(std::string_view name) {
  unsigned pid = 0;
  const auto [end, error] = std::from_chars(name.data(), name.data() + name.size(), pid);
  if (error != std::errc{} || end != name.data() + name.size() || pid == 0) return std::nullopt;
  return pid;
}

// An open directory, closed on every way out.
class Directory {
 public:
  explicit Directory(const fs::path& path) : dir_(::opendir(path.c_str())) {}
  ~Directory() {
    if (dir_ != nullptr) ::closedir(dir_);
  }
  Directory(const Directory&) = delete;
  Directory& operator=(const Directory&) = delete;
  bool valid() const { return dir_ != nullptr; }
  // The next entry's name other than "." and ".."; empty at the end.
  std::string_view next() {
    while (dirent* entry = ::readdir(dir_)) {
      std::string_view name = entry->d_name;
      if (name != "." && name != "..") return name;
    }
    return {};
  }

 private:
  DIR* dir_;
};

}  // namespace

DeviceNodeUsers find_device_node_users(const fs::path& proc_root,
                                       const std::vector<fs::path>& nodes, unsigned own_pid,
                                       const fs::path& stand_in) {
  DeviceNodeUsers users;
  std::optional<NodeKey> ignored;
  struct stat stand_in_st {};
  if (!stand_in.empty() && ::stat(stand_in.c_str(), &stand_in_st) == 0)
    ignored = key_of(stand_in_st);
  std::vector<NodeKey> keys;
  for (const auto& node : nodes) {
    struct stat st {};
    if (::stat(node.c_str(), &st) == 0 && key_of(st) != ignored) keys.push_back(key_of(st));
  }
  users.nodes_found = static_cast<unsigned>(keys.size());
  if (keys.empty()) return users;

  Directory processes(proc_root);
  if (!processes.valid()) {
    ++users.unreadable;
    return users;
  }
  for (std::string_view name = processes.next(); !name.empty(); name = processes.next()) {
    const auto pid = pid_of(name);
    if (!pid || *pid == own_pid) continue;
    const fs::path fd_dir = proc_root / name / "fd";
    Directory fds(fd_dir);
    if (!fds.valid()) {
      // ENOENT: the process ended since the listing; anything else hides its files from us.
      ++(errno == ENOENT ? users.vanished : users.unreadable);
      continue;
    }
    for (std::string_view fd = fds.next(); !fd.empty(); fd = fds.next()) {
      struct stat st {};
      if (::stat((fd_dir / fd).c_str(), &st) != 0) {
        // A closed fd, or a link that names no file (a fake tree's dangling link).
        ++users.vanished;
        continue;
      }
      if (std::find(keys.begin(), keys.end(), key_of(st)) != keys.end()) {
        users.pids.push_back(*pid);
        break;
      }
    }
  }
  std::sort(users.pids.begin(), users.pids.end());
  return users;
}

}  // namespace xpud
