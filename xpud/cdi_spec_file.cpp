#include "xpud/cdi_spec_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>

#include "common/unique_fd.h"
#include "common/write_all.h"

namespace xpud {
namespace {

namespace fs = std::filesystem;

// Runtimes run as root, but tools that list CDI devices (podman as a user, `cdi list`) read the
// spec too; it holds no secret. Set explicitly: xpud.service runs with UMask=0077.
constexpr mode_t kFileMode = 0644;
constexpr mode_t kDirectoryMode = 0755;

std::string errno_text(int error) {
  return std::strerror(error);
}

// True when `fd` holds exactly `expected`.
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
    : path_(std::move(path)),
      directory_(path_.parent_path()),
      name_(path_.filename().string()),
      temp_name_("." + name_ + ".tmp") {}

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
  const std::string where = path_.string();
  std::error_code ec;
  if (!fs::is_directory(directory_, ec)) {
    // Only the last component is made with our mode; its parents are the host's business
    // (/var/run is always there), so a typo in [cdi] directory does not grow a tree.
    if (::mkdir(directory_.c_str(), kDirectoryMode) != 0 && errno != EEXIST)
      return xpu::Error{directory_.string() + ": cannot create directory: " + errno_text(errno)};
    ::chmod(directory_.c_str(), kDirectoryMode);  // through the umask; runtimes list it
  }
  // The directory may be a symlink (followed: /var/run is one); the file and the temp file never
  // are (O_NOFOLLOW, and rename replaces a symlink rather than writing through it).
  xpu::UniqueFd dir(::open(directory_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir.valid())
    return xpu::Error{directory_.string() + ": cannot open directory: " + errno_text(errno)};

  // Only a regular file of the right size is opened and compared: anything else planted there
  // (a FIFO, a device node) is replaced without being opened.
  struct stat st {};
  if (::fstatat(dir.get(), name_.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
      static_cast<std::uint64_t>(st.st_size) == content.size()) {
    xpu::UniqueFd existing(
        ::openat(dir.get(), name_.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    if (existing.valid() && holds(existing.get(), content)) {
      written_ = stamp();
      return false;
    }
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
  if (::fchmod(temp.get(), kFileMode) != 0) return fail("cannot chmod 0644: " + errno_text(errno));
  // A runtime that reads the spec after a crash must find the whole old or the whole new one.
  if (::fsync(temp.get()) != 0) return fail("cannot fsync: " + errno_text(errno));
  temp.reset();
  if (::renameat(dir.get(), temp_name_.c_str(), dir.get(), name_.c_str()) != 0) {
    int error = errno;
    ::unlinkat(dir.get(), temp_name_.c_str(), 0);
    return xpu::Error{where + ": cannot rename " + temp_name_ +
                      " into place: " + errno_text(error)};
  }
  if (::fsync(dir.get()) != 0)
    return xpu::Error{directory_.string() + ": cannot fsync directory: " + errno_text(errno)};
  written_ = stamp();
  return true;
}

xpu::Result<bool> CdiSpecFile::remove() {
  written_.reset();
  xpu::UniqueFd dir(::open(directory_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir.valid()) return false;  // nothing of ours can be there
  ::unlinkat(dir.get(), temp_name_.c_str(), 0);
  if (::unlinkat(dir.get(), name_.c_str(), 0) == 0) return true;
  if (errno == ENOENT) return false;
  return xpu::Error{path_.string() + ": cannot remove: " + errno_text(errno)};
}

}  // namespace xpud
