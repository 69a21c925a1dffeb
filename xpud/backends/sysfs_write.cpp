#include "xpud/backends/sysfs_write.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/unique_fd.h"

namespace xpud::sysfs {

std::optional<WriteFailure> write_attribute(const std::filesystem::path& file,
                                            std::string_view text) {
  xpu::UniqueFd fd(
      ::open(file.c_str(), O_WRONLY | O_TRUNC | O_NONBLOCK | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW));
  if (!fd.valid()) {
    const int error = errno;
    return WriteFailure{error, "cannot open " + file.string() + ": " + std::strerror(error)};
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) < 0 || !S_ISREG(st.st_mode))
    return WriteFailure{0, file.string() + " is not a regular file"};
  const ssize_t written = ::write(fd.get(), text.data(), text.size());
  if (written < 0) {
    const int error = errno;
    std::string shown(text);
    while (!shown.empty() && shown.back() == '\n') shown.pop_back();
    return WriteFailure{
        error, "writing " + shown + " to " + file.string() + " failed: " + std::strerror(error)};
  }
  if (static_cast<std::size_t>(written) != text.size())
    return WriteFailure{0, "short write to " + file.string()};
  return std::nullopt;
}

}  // namespace xpud::sysfs
