#include "tests/k8s-shim/token_sync/projected_volume.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "tests/support/child_process.h"

namespace shim::token_sync::testing {
namespace fs = std::filesystem;

ProjectedVolume::ProjectedVolume(fs::path dir) : dir_(std::move(dir)) {
  fs::create_directories(dir_);
}

void ProjectedVolume::publish(const std::map<std::string, std::string>& files) {
  ++generation_;
  char name[64];
  std::snprintf(name, sizeof name, "..2026_01_01_00_00_00.%09lu", generation_);
  const fs::path version = dir_ / name;
  fs::create_directory(version);
  for (const auto& [file, content] : files) xpu::test::write_file(version / file, content);

  const fs::path data_tmp = dir_ / "..data_tmp";
  fs::remove(data_tmp);
  fs::create_directory_symlink(name, data_tmp);
  if (::rename(data_tmp.c_str(), (dir_ / "..data").c_str()) != 0)
    throw std::runtime_error("rename ..data_tmp over ..data: " + std::string(std::strerror(errno)));

  // Visible names are symlinks through ..data; like the kubelet, create missing ones and drop
  // ones the new version no longer has.
  for (const auto& [file, content] : files) {
    const fs::path link = dir_ / file;
    if (!fs::is_symlink(link)) fs::create_symlink(fs::path("..data") / file, link);
  }
  for (const auto& entry : fs::directory_iterator(dir_)) {
    const std::string visible = entry.path().filename().string();
    if (visible.starts_with("..") || files.contains(visible)) continue;
    if (entry.is_symlink()) fs::remove(entry.path());
  }

  if (current_) fs::remove_all(dir_ / *current_);
  current_ = name;
}

std::optional<std::string> read_file(const fs::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  std::optional<std::string> content;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    content.emplace();
    char buffer[16384];
    while (true) {
      ssize_t n = ::read(fd, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) content.reset();
      if (n <= 0) break;
      content->append(buffer, static_cast<size_t>(n));
    }
  }
  ::close(fd);
  return content;
}

std::string valid_ca_cert(const std::string& body) {
  return "-----BEGIN CERTIFICATE-----\n" + body + "\n-----END CERTIFICATE-----\n";
}

}  // namespace shim::token_sync::testing
