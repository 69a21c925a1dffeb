#include "k8s-shim/token_sync/destination_directory.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <system_error>

#include "common/errno_text.h"
#include "common/write_all.h"

namespace shim::token_sync {
namespace {

std::string octal(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

// True when the open file holds exactly `expected` (read back to compare bytes, not just size).
xpu::Result<bool> has_content(int fd, std::string_view expected) {
  std::string buffer(16384, '\0');
  std::size_t matched = 0;
  while (true) {
    ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return xpu::Error{xpu::errno_text(errno)};
    if (n == 0) return matched == expected.size();
    auto got = std::string_view(buffer.data(), static_cast<std::size_t>(n));
    if (expected.substr(matched, got.size()) != got) return false;
    matched += got.size();
  }
}

// Whether the directory holding the destination keeps others from swapping it: a user who may
// write to it could rename the destination away and put a directory of their own, with their own
// kubeconfig, where the XPU runtime reads.
xpu::Status check_parent(const std::filesystem::path& parent, const std::string& name,
                         const struct stat& destination, const std::string& where) {
  const std::string parent_where = parent.string();
  xpu::UniqueFd fd(::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid())
    return xpu::Error{parent_where + ": cannot open the directory holding " + where + ": " +
                      xpu::errno_text(errno)};
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0)
    return xpu::Error{parent_where + ": cannot stat: " + xpu::errno_text(errno)};
  if (st.st_uid != 0 && st.st_uid != ::geteuid())
    return xpu::Error{parent_where + ": is owned by uid " + std::to_string(st.st_uid) +
                      ", who could replace " + where +
                      "; refusing to put credentials there (it must be root's)"};
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
    return xpu::Error{parent_where + ": is writable by its group or by others (mode " +
                      octal(st.st_mode) + "), who could replace " + where +
                      "; refusing to put credentials there (0755 or stricter)"};
  struct stat entry {};
  if (::fstatat(fd.get(), name.c_str(), &entry, AT_SYMLINK_NOFOLLOW) != 0)
    return xpu::Error{parent_where + ": has no " + name + " (" + xpu::errno_text(errno) +
                      "): the directory written to is no longer there"};
  if (entry.st_dev != destination.st_dev || entry.st_ino != destination.st_ino)
    return xpu::Error{(parent / name).string() + ": is not the directory written to (" + where +
                      "): it was replaced; refusing to write until it is put back"};
  return xpu::ok_status();
}

struct DirCloser {
  void operator()(DIR* dir) const { ::closedir(dir); }
};

}  // namespace

xpu::Result<DestinationDirectory> DestinationDirectory::open(
    const std::filesystem::path& path, const std::filesystem::path& parent_view) {
  const std::string where = path.string();
  bool created = false;
  if (path.has_parent_path()) {
    std::error_code error;
    if (std::filesystem::create_directories(path.parent_path(), error))
      // Ours: writable by us alone whatever the umask, as check_parent wants it.
      std::filesystem::permissions(
          path.parent_path(),
          std::filesystem::perms::group_write | std::filesystem::perms::others_write,
          std::filesystem::perm_options::remove, error);
    if (error) return xpu::Error{where + ": cannot create parent directory: " + error.message()};
  }
  if (::mkdir(path.c_str(), kDirectoryMode) == 0) {
    created = true;
  } else if (errno != EEXIST) {
    return xpu::Error{where + ": cannot create directory: " + xpu::errno_text(errno)};
  }
  xpu::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid()) {
    int error = errno;
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode))
      return xpu::Error{where + ": is a symlink; refusing to write through it"};
    if (error == ENOTDIR) return xpu::Error{where + ": exists but is not a directory"};
    return xpu::Error{where + ": cannot open directory: " + xpu::errno_text(error)};
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0)
    return xpu::Error{where + ": cannot stat: " + xpu::errno_text(errno)};
  if (st.st_uid != ::geteuid())
    return xpu::Error{where + ": is owned by uid " + std::to_string(st.st_uid) +
                      ", not by this process (uid " + std::to_string(::geteuid()) +
                      "); refusing to put credentials there"};
  const std::filesystem::path parent = parent_view.empty() ? path.parent_path() : parent_view;
  if (auto safe = check_parent(parent.empty() ? "." : parent, path.filename().string(), st, where);
      !safe)
    return xpu::Error{safe.error()};
  DestinationDirectory directory(path, std::move(fd));
  directory.created_ = created;
  if ((st.st_mode & 07777) != kDirectoryMode) {
    if (::fchmod(directory.fd_.get(), kDirectoryMode) != 0)
      return xpu::Error{where + ": cannot change mode from " + octal(st.st_mode) +
                        " to 0700: " + xpu::errno_text(errno)};
    if (!created) directory.fixed_mode_ = st.st_mode & 07777;
  }
  return directory;
}

xpu::Result<std::string> DestinationDirectory::write_temp_file(std::string_view name,
                                                               std::string_view content) {
  // O_EXCL never follows a symlink; a name that is taken (planted or left over) just moves on.
  constexpr int kMaxNameAttempts = 16;
  for (int attempt = 0; attempt < kMaxNameAttempts; ++attempt) {
    std::string temp = std::string(kTempFilePrefix) + std::string(name) + "." +
                       std::to_string(::getpid()) + "." + std::to_string(temp_counter_++);
    xpu::UniqueFd file(::openat(fd_.get(), temp.c_str(),
                                O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, kFileMode));
    if (!file.valid() && errno == EEXIST) continue;
    if (!file.valid())
      return xpu::Error{where(temp) + ": cannot create temp file: " + xpu::errno_text(errno)};
    auto fail = [&](const std::string& what) -> xpu::Result<std::string> {
      ::unlinkat(fd_.get(), temp.c_str(), 0);
      return xpu::Error{where(temp) + ": " + what};
    };
    if (auto written = xpu::write_all(file.get(), content); !written)
      return fail("cannot write: " + written.error());
    if (::fsync(file.get()) != 0) return fail("cannot fsync: " + xpu::errno_text(errno));
    // The create mode went through the umask and a pre-set ACL may widen it; set it exactly.
    if (::fchmod(file.get(), kFileMode) != 0)
      return fail("cannot chmod 0600: " + xpu::errno_text(errno));
    return temp;
  }
  return xpu::Error{where(name) + ": no free temp file name after " +
                    std::to_string(kMaxNameAttempts) + " tries"};
}

xpu::Result<DestinationDirectory::FileUpdate> DestinationDirectory::write_file(
    std::string_view name, std::string_view content) {
  const std::string file_name(name);
  FileUpdate update;
  update.size = content.size();
  update.change = Change::Created;

  xpu::UniqueFd existing(
      ::openat(fd_.get(), file_name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (existing.valid()) {
    struct stat st {};
    if (::fstat(existing.get(), &st) != 0)
      return xpu::Error{where(name) + ": cannot stat: " + xpu::errno_text(errno)};
    if (!S_ISREG(st.st_mode)) {
      update.change = Change::ReplacedSymlink;
    } else {
      update.change = Change::Replaced;
      update.previous_size = static_cast<std::uint64_t>(st.st_size);
      if (update.previous_size == content.size()) {
        auto same = has_content(existing.get(), content);
        if (!same) return xpu::Error{where(name) + ": cannot read back: " + same.error()};
        if (*same && (st.st_mode & 07777) == kFileMode) {
          update.change = Change::Unchanged;
          return update;
        }
        if (*same) {
          // The fd came from O_NOFOLLOW, so this changes our file and nothing it might point at.
          if (::fchmod(existing.get(), kFileMode) != 0)
            return xpu::Error{where(name) + ": cannot chmod 0600: " + xpu::errno_text(errno)};
          update.change = Change::ModeFixed;
          return update;
        }
      }
    }
  } else if (errno == ELOOP) {
    update.change = Change::ReplacedSymlink;
  } else if (errno != ENOENT) {
    // Unreadable for some other reason: replacing it is still the way to a good state.
    update.change = Change::Replaced;
  }
  existing.reset();

  auto temp = write_temp_file(name, content);
  if (!temp) return xpu::Error{temp.error()};
  if (::renameat(fd_.get(), temp->c_str(), fd_.get(), file_name.c_str()) != 0) {
    int error = errno;
    ::unlinkat(fd_.get(), temp->c_str(), 0);
    return xpu::Error{where(name) + ": cannot rename " + *temp +
                      " into place: " + xpu::errno_text(error)};
  }
  // The rename is durable only once the directory entry is on disk.
  if (::fsync(fd_.get()) != 0)
    return xpu::Error{path_.string() + ": cannot fsync directory: " + xpu::errno_text(errno)};
  return update;
}

std::vector<std::string> DestinationDirectory::remove_stale_temp_files() {
  std::vector<std::string> removed;
  // fdopendir takes ownership of its fd, so hand it a duplicate.
  int dup_fd = ::fcntl(fd_.get(), F_DUPFD_CLOEXEC, 0);
  if (dup_fd < 0) return removed;
  std::unique_ptr<DIR, DirCloser> dir(::fdopendir(dup_fd));
  if (!dir) {
    ::close(dup_fd);
    return removed;
  }
  std::vector<std::string> names;
  while (dirent* entry = ::readdir(dir.get())) {
    std::string_view name = entry->d_name;
    if (name.starts_with(kTempFilePrefix)) names.emplace_back(name);
  }
  dir.reset();
  for (const auto& name : names)
    if (::unlinkat(fd_.get(), name.c_str(), 0) == 0) removed.push_back(name);
  return removed;
}

}  // namespace shim::token_sync
