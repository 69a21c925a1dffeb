#include "xpud/cdi/cdi_spec_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>

#include "common/errno_text.h"
#include "common/file_replacement.h"

namespace xpud {
namespace {

namespace fs = std::filesystem;

// Runtimes run as root, but tools that list CDI devices (podman as a user, `cdi list`) read the
// spec too; it holds no secret. Set explicitly: xpud.service runs with UMask=0077.
constexpr mode_t kFileMode = 0644;
constexpr mode_t kDirectoryMode = 0755;

}  // namespace

xpu::Status validate_cdi_spec_file_name(std::string_view name) {
  if (name.empty()) return xpu::Error{"must not be empty"};
  if (name.find('/') != std::string_view::npos)
    return xpu::Error{
        "'" + std::string(name) +
        "' is not a plain file name (it contains '/'); set the directory with [cdi] directory"};
  if (name.size() > 255) return xpu::Error{"longer than 255 bytes"};
  if (!name.starts_with("kunlunxin"))
    return xpu::Error{"'" + std::string(name) + "' does not start with 'kunlunxin'"};
  if (!name.ends_with(".json") || name.size() == 5)
    return xpu::Error{"'" + std::string(name) + "' does not end in '.json' (the spec is JSON)"};
  if (!std::all_of(name.begin(), name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
      }))
    return xpu::Error{"'" + std::string(name) +
                      "' has characters other than letters, digits, '-', '_' and '.'"};
  return xpu::ok_status();
}

CdiSpecFile::CdiSpecFile(fs::path path)
    : path_(std::move(path)), directory_(path_.parent_path()), name_(path_.filename().string()) {}

std::optional<CdiSpecFile::Stamp> CdiSpecFile::stamp() const {
  struct stat st {};
  if (::lstat(path_.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  return Stamp{st.st_dev, st.st_ino, st.st_size, st.st_mtim};
}

bool CdiSpecFile::unchanged_since_write() const {
  if (!written_) return false;
  auto now = stamp();
  return now && now->device == written_->device && now->inode == written_->inode &&
         now->size == written_->size && now->modified.tv_sec == written_->modified.tv_sec &&
         now->modified.tv_nsec == written_->modified.tv_nsec;
}

xpu::Result<bool> CdiSpecFile::write(const std::string& content) {
  std::error_code ec;
  if (!fs::is_directory(directory_, ec)) {
    // Only the last component is made with our mode; its parents are the host's business
    // (/var/run is always there), so a typo in [cdi] directory does not grow a tree.
    if (::mkdir(directory_.c_str(), kDirectoryMode) != 0 && errno != EEXIST)
      return xpu::Error{directory_.string() +
                        ": cannot create directory: " + xpu::errno_text(errno)};
    ::chmod(directory_.c_str(), kDirectoryMode);  // through the umask; runtimes list it
  }
  // A runtime that reads the spec after a crash must find the whole old or the whole new one.
  auto written = xpu::replace_file_if_changed(directory_, name_, content,
                                              xpu::FileReplacement{kFileMode, /*durable=*/true});
  if (written) written_ = stamp();
  return written;
}

xpu::Result<bool> CdiSpecFile::remove() {
  written_.reset();
  return xpu::remove_replaced_file(directory_, name_);
}

}  // namespace xpud
