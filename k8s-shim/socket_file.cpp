#include "k8s-shim/socket_file.h"

#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace shim {

xpu::Status clear_socket_path(const std::filesystem::path& socket_path) {
  const std::string path = socket_path.string();
  if (path.size() >= sizeof(sockaddr_un::sun_path))
    return xpu::Error{"socket path " + path + " is longer than a unix socket address allows (" +
                      std::to_string(sizeof(sockaddr_un::sun_path) - 1) + " characters)"};
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode))
      return xpu::Error{path + " exists and is not a socket; refusing to replace it"};
    if (::unlink(path.c_str()) != 0 && errno != ENOENT)
      return xpu::Error{"cannot remove stale socket " + path + ": " + std::strerror(errno)};
  } else if (errno != ENOENT) {
    return xpu::Error{"cannot inspect " + path + ": " + std::strerror(errno)};
  }
  return xpu::ok_status();
}

xpu::Result<BoundSocketFile> BoundSocketFile::record(std::filesystem::path path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    return xpu::Error{"socket " + path.string() +
                      " vanished right after binding: " + std::strerror(errno)};
  return BoundSocketFile(std::move(path), st.st_dev, st.st_ino);
}

bool BoundSocketFile::present() const {
  struct stat st {};
  return ::lstat(path_.c_str(), &st) == 0 && S_ISSOCK(st.st_mode) && st.st_dev == device_ &&
         st.st_ino == inode_;
}

void BoundSocketFile::remove_if_ours() const {
  if (present()) ::unlink(path_.c_str());
}

}  // namespace shim
