#include "k8s-shim/dra/kubelet/plugin_directory.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

namespace shim::dra {

xpu::Status ensure_plugin_directory(const std::filesystem::path& directory) {
  std::error_code error;
  if (std::filesystem::is_directory(directory, error)) return xpu::ok_status();
  if (directory.has_parent_path())
    std::filesystem::create_directories(directory.parent_path(), error);
  if (error)
    return xpu::Error{"cannot create " + directory.parent_path().string() + ": " + error.message()};
  // mkdir's mode goes through the umask, which may only remove bits: 0750 or less, never more.
  if (::mkdir(directory.c_str(), 0750) != 0 && errno != EEXIST)
    return xpu::Error{"cannot create " + directory.string() + ": " + std::strerror(errno)};
  if (!std::filesystem::is_directory(directory, error))
    return xpu::Error{directory.string() + " exists and is not a directory"};
  return xpu::ok_status();
}

}  // namespace shim::dra
