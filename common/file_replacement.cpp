#include "common/file_replacement.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/errno_text.h"
#include "common/unique_fd.h"
#include "common/write_all.h"

namespace xpu {
namespace {

std::string temp_name_for(const std::string& name) {
  return "." + name + ".tmp";
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

Result<bool> replace_file_if_changed(const std::filesystem::path& directory,
                                     const std::string& name, std::string_view content,
                                     FileReplacement how) {
  const std::string where = (directory / name).string();
  UniqueFd dir(::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir.valid())
    return Error{directory.string() + ": cannot open directory: " + errno_text(errno)};

  struct stat st {};
  if (::fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
      static_cast<std::uint64_t>(st.st_size) == content.size()) {
    UniqueFd existing(
        ::openat(dir.get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    if (existing.valid() && holds(existing.get(), content)) return false;
  }

  // A temp file left by a crash is ours to replace; O_EXCL then refuses anything planted since.
  const std::string temp_name = temp_name_for(name);
  ::unlinkat(dir.get(), temp_name.c_str(), 0);
  const std::string temp_where = (directory / temp_name).string();
  UniqueFd temp(::openat(dir.get(), temp_name.c_str(),
                         O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, how.mode));
  if (!temp.valid()) return Error{temp_where + ": cannot create: " + errno_text(errno)};
  auto fail = [&](const std::string& what) -> Result<bool> {
    ::unlinkat(dir.get(), temp_name.c_str(), 0);
    return Error{temp_where + ": " + what};
  };
  if (auto status = write_all(temp.get(), content); !status)
    return fail("cannot write: " + status.error());
  if (::fchmod(temp.get(), how.mode) != 0) {
    char mode[16];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(how.mode));
    return fail(std::string("cannot chmod ") + mode + ": " + errno_text(errno));
  }
  if (how.durable && ::fsync(temp.get()) != 0) return fail("cannot fsync: " + errno_text(errno));
  temp.reset();
  if (::renameat(dir.get(), temp_name.c_str(), dir.get(), name.c_str()) != 0) {
    int error = errno;
    ::unlinkat(dir.get(), temp_name.c_str(), 0);
    return Error{where + ": cannot rename " + temp_name + " into place: " + errno_text(error)};
  }
  if (how.durable && ::fsync(dir.get()) != 0)
    return Error{directory.string() + ": cannot fsync directory: " + errno_text(errno)};
  return true;
}

Result<bool> remove_replaced_file(const std::filesystem::path& directory, const std::string& name) {
  UniqueFd dir(::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir.valid()) return false;  // nothing of ours can be there
  ::unlinkat(dir.get(), temp_name_for(name).c_str(), 0);
  if (::unlinkat(dir.get(), name.c_str(), 0) == 0) return true;
  if (errno == ENOENT) return false;
  return Error{(directory / name).string() + ": cannot remove: " + errno_text(errno)};
}

}  // namespace xpu
