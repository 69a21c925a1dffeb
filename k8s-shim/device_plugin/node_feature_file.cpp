#include "k8s-shim/device_plugin/node_feature_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

#include "common/unique_fd.h"
#include "common/write_all.h"

namespace shim {
namespace {

constexpr mode_t kFileMode = 0644;  // facts, not secrets: NFD's worker reads them

std::string errno_text(int error) { return std::strerror(error); }

// True when `fd` (a regular file of `expected`'s size) holds exactly `expected`.
bool holds(int fd, std::string_view expected) {
  std::string buffer(expected.size() + 1, '\0');
  std::size_t got = 0;
  while (got < buffer.size()) {
    ssize_t n = ::read(fd, buffer.data() + got, buffer.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  return got == expected.size() && std::string_view(buffer.data(), got) == expected;
}

// The label lines of a feature file, for the log.
std::string summary(std::string_view content) {
  std::string out;
  while (!content.empty()) {
    auto end = content.find('\n');
    auto line = content.substr(0, end);
    if (!line.empty() && line.front() != '#') out += (out.empty() ? "" : " ") + std::string(line);
    if (end == std::string_view::npos) break;
    content.remove_prefix(end + 1);
  }
  return out;
}

}  // namespace

xpu::Status validate_feature_file_path(std::string_view path) {
  if (path.empty()) return xpu::Error{"must not be empty"};
  const std::string name = std::filesystem::path(path).filename().string();
  if (path.back() == '/' || name.empty() || name == "." || name == "..")
    return xpu::Error{"'" + std::string(path) + "' names a directory, not a file"};
  if (name.front() == '.')
    return xpu::Error{"'" + name + "' starts with '.', and node-feature-discovery ignores such files"};
  return xpu::ok_status();
}

NodeFeatureFile::NodeFeatureFile(std::filesystem::path path)
    : path_(std::move(path)),
      directory_(path_.has_parent_path() ? path_.parent_path() : std::filesystem::path(".")),
      name_(path_.filename().string()),
      temp_name_("." + name_ + ".tmp") {}

void NodeFeatureFile::set_content(std::string content) {
  std::lock_guard lock(mutex_);
  content_ = std::move(content);
  ++generation_;
}

void NodeFeatureFile::sync() {
  std::string content;
  std::uint64_t generation = 0;
  {
    std::lock_guard lock(mutex_);
    if (!content_) return;
    content = *content_;
    generation = generation_;
  }
  auto written = write_if_changed(content);
  if (!written) {
    if (written.error() != last_error_)
      spdlog::warn("cannot write node labels for node-feature-discovery: {}; retrying", written.error());
    last_error_ = written.error();
    return;
  }
  last_error_.clear();
  if (*written)
    spdlog::info("node labels for node-feature-discovery written to {}: {}", path_.string(), summary(content));
  else if (generation != synced_generation_)
    spdlog::debug("node labels for node-feature-discovery unchanged in {}", path_.string());
  synced_generation_ = generation;
}

xpu::Result<bool> NodeFeatureFile::write_if_changed(const std::string& content) {
  const std::string where = path_.string();
  // The directory may be a symlink on the host (it is followed); the file and the temp file
  // never are (O_NOFOLLOW, and rename replaces a symlink rather than writing through it).
  xpu::UniqueFd dir(::open(directory_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir.valid()) return xpu::Error{directory_.string() + ": cannot open directory: " + errno_text(errno)};

  // Only a regular file of the right size is opened and compared: anything else planted there
  // (a FIFO, a device node) is replaced without being opened.
  struct stat st {};
  if (::fstatat(dir.get(), name_.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
      static_cast<std::uint64_t>(st.st_size) == content.size()) {
    xpu::UniqueFd existing(
        ::openat(dir.get(), name_.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    if (existing.valid() && holds(existing.get(), content)) return false;
  }

  // A temp file left by a crash is ours to replace; O_EXCL then refuses anything planted since.
  ::unlinkat(dir.get(), temp_name_.c_str(), 0);
  const std::string temp_where = (directory_ / temp_name_).string();
  xpu::UniqueFd temp(::openat(dir.get(), temp_name_.c_str(),
                              O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, kFileMode));
  if (!temp.valid()) return xpu::Error{temp_where + ": cannot create: " + errno_text(errno)};
  auto fail = [&](const std::string& what) -> xpu::Result<bool> {
    ::unlinkat(dir.get(), temp_name_.c_str(), 0);
    return xpu::Error{temp_where + ": " + what};
  };
  if (auto status = xpu::write_all(temp.get(), content); !status)
    return fail("cannot write: " + status.error());
  // The create mode went through the umask; NFD's worker must be able to read the file.
  if (::fchmod(temp.get(), kFileMode) != 0) return fail("cannot chmod 0644: " + errno_text(errno));
  temp.reset();
  if (::renameat(dir.get(), temp_name_.c_str(), dir.get(), name_.c_str()) != 0) {
    int error = errno;
    ::unlinkat(dir.get(), temp_name_.c_str(), 0);
    return xpu::Error{where + ": cannot rename " + temp_name_ + " into place: " + errno_text(error)};
  }
  return true;
}

void NodeFeatureFile::remove() {
  xpu::UniqueFd dir(::open(directory_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir.valid()) return;  // nothing of ours can be there
  ::unlinkat(dir.get(), temp_name_.c_str(), 0);
  if (::unlinkat(dir.get(), name_.c_str(), 0) == 0)
    spdlog::info("removed {}: node-feature-discovery drops its labels at its next pass", path_.string());
  else if (errno != ENOENT)
    spdlog::warn("cannot remove {}: {}", path_.string(), errno_text(errno));
}

}  // namespace shim
