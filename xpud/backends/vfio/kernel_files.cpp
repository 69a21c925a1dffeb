#include "xpud/backends/vfio/kernel_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "common/unique_fd.h"

namespace xpud::vfio {
namespace {

class RealKernelFiles final : public KernelFiles {
 public:
  int write(const std::filesystem::path& file, std::string_view text) override {
    // O_NONBLOCK|O_NOFOLLOW: a FIFO or a symlink planted where an attribute should be cannot
    // hang or redirect the write.
    xpu::UniqueFd fd(
        ::open(file.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW));
    if (!fd.valid()) return errno;
    struct stat st {};
    if (::fstat(fd.get(), &st) < 0) return errno;
    if (!S_ISREG(st.st_mode)) return EINVAL;
    const ssize_t written = ::write(fd.get(), text.data(), text.size());
    if (written < 0) return errno;
    return static_cast<std::size_t>(written) == text.size() ? 0 : EIO;
  }

  int probe_group(const std::filesystem::path& node) override {
    xpu::UniqueFd fd(::open(node.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW));
    return fd.valid() ? 0 : errno;
  }
};

}  // namespace

std::unique_ptr<KernelFiles> KernelFiles::real() {
  return std::make_unique<RealKernelFiles>();
}

}  // namespace xpud::vfio
