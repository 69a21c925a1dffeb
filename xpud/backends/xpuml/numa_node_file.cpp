#include "xpud/backends/xpuml/numa_node_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <string_view>

#include "common/unique_fd.h"

namespace xpud::xpuml {
namespace {

// "-1\n" or "1023\n" fit with room to spare; a longer file is not a numa_node attribute.
constexpr std::size_t kMaxContentLength = 16;

}  // namespace

xpu::Result<int> read_numa_node(const std::filesystem::path& sysfs_root,
                                const std::string& bus_id) {
  const auto path = sysfs_root / "sys/bus/pci/devices" / bus_id / "numa_node";
  const std::string shown = path.string();
  // O_NONBLOCK: a FIFO planted in place of the attribute must not hang discovery.
  xpu::UniqueFd fd(::open(shown.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (!fd.valid()) {
    if (errno == ENOENT) return -1;
    return xpu::Error{"cannot open " + shown + ": " + std::strerror(errno)};
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0)
    return xpu::Error{"cannot stat " + shown + ": " + std::strerror(errno)};
  if (!S_ISREG(st.st_mode)) return xpu::Error{shown + " is not a regular file"};

  std::array<char, kMaxContentLength + 1> buffer{};
  std::size_t length = 0;
  while (length < buffer.size()) {
    ssize_t n = ::read(fd.get(), buffer.data() + length, buffer.size() - length);
    if (n < 0) {
      if (errno == EINTR) continue;
      return xpu::Error{"cannot read " + shown + ": " + std::strerror(errno)};
    }
    if (n == 0) break;
    length += static_cast<std::size_t>(n);
  }
  if (length > kMaxContentLength) return xpu::Error{shown + ": too long for a NUMA node number"};

  std::string_view text(buffer.data(), length);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  int node = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), node);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size()) {
    std::string printable(text);
    for (char& c : printable)
      if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) c = '?';
    return xpu::Error{shown + ": not a NUMA node number: \"" + printable + "\""};
  }
  if (node < -1 || node > kMaxNumaNode)
    return xpu::Error{shown + ": NUMA node " + std::to_string(node) + " out of range -1.." +
                      std::to_string(kMaxNumaNode)};
  return node;
}

}  // namespace xpud::xpuml
